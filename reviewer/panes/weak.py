"""Weak category: its findings against thresholds, counts, the misses with attributed tokens."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from reviewer.panes.common import as_list, boxed, cut, fields, get, number, section
from reviewer.panes.spans import (NEGATIVE_STYLE, POSITIVE_STYLE, as_span, clean,
                                  find_token_spans, highlight)

TITLE = "weak category"


def understands(payload: dict[str, Any]) -> bool:
    """Says whether the payload names a category and what was found about it."""
    return isinstance(payload.get("category"), (str, dict)) and (
        "findings" in payload or "misses" in payload or "metrics" in payload)


def _findings(payload: dict[str, Any]) -> Table | Text:
    findings = [f for f in as_list(get(payload, "findings")) if isinstance(f, dict)]
    if not findings:
        return Text("no findings recorded", style="italic")
    table = Table(box=None, show_edge=False, pad_edge=False)
    for column in ("finding", "value", "previous", "delta", "threshold"):
        table.add_column(column, no_wrap=column != "finding")
    for f in findings:
        value = get(f, "value", "current", "recall", "fpr")
        previous = get(f, "previous", "prior", "baseline")
        delta = get(f, "delta")
        if delta is None and isinstance(value, (int, float)) and isinstance(previous, (int, float)):
            delta = value - previous
        delta_text = (f"{delta:+.3f}" if isinstance(delta, (int, float))
                      and not isinstance(delta, bool) else number(delta))
        issue = get(f, "issue", "kind", "finding", default="?")
        metric = get(f, "metric")
        table.add_row(clean(issue) + (f" ({clean(metric)})" if metric else ""), number(value),
                      number(previous), delta_text, number(get(f, "threshold", "limit")))
    return table


def _token_spans(text: str, tokens: Any) -> list[tuple[int, int]]:
    spans = []
    for tok in as_list(tokens):
        if isinstance(tok, dict):
            span = as_span((get(tok, "start", "char_start"), get(tok, "end", "char_end")))
            if span and span[1] <= len(text):
                spans.append(span)
                continue
            tok = get(tok, "token", "text", default="")
        if isinstance(tok, (list, tuple)) and tok and isinstance(tok[0], str):
            tok = tok[0]  # ("token", score) pairs
        if isinstance(tok, str):
            spans.extend(find_token_spans(text, tok.replace("##", "").replace("Ġ", "")))
    return spans


def _token_list(tokens: Any) -> str:
    out = []
    for tok in as_list(tokens)[:10]:
        if isinstance(tok, dict):
            name = get(tok, "token", "text", default="?")
            score = get(tok, "score", "attribution", "weight")
            out.append(f"{clean(name)} {number(score)}" if score is not None else clean(name))
        elif isinstance(tok, (list, tuple)) and len(tok) == 2:
            out.append(f"{clean(tok[0])} {number(tok[1])}")
        else:
            out.append(clean(tok))
    return ", ".join(out)


def render_miss(miss: dict[str, Any], n: int) -> RenderableType:
    """Gives one missed case with its top positive tokens in reverse, negative underlined."""
    text = clean(get(miss, "text", "input", default=""))
    # Tokens sit on the miss itself or inside its attribution record.
    attribution = get(miss, "attribution", default={})
    attribution = attribution if isinstance(attribution, dict) else {}
    positive = get(miss, "top_positive_tokens", "top_tokens", "positive_tokens", "tokens",
                   default=get(attribution, "top_positive_tokens", "top_tokens"))
    negative = get(miss, "top_negative_tokens", "negative_tokens",
                   default=get(attribution, "top_negative_tokens"))
    body = highlight(text, _token_spans(text, negative), NEGATIVE_STYLE)
    for start, end in _token_spans(text, positive):
        body.stylize(POSITIVE_STYLE, start, end)
    title = f"miss {n}: {clean(get(miss, 'case_id', 'id', default='?'))}"
    facts = fields([("label", get(miss, "label", "expected")),
                    ("prediction", get(miss, "prediction", "predicted")),
                    ("score", get(miss, "score", "probability")),
                    ("top +", _token_list(positive) or None),
                    ("top −", _token_list(negative) or None),
                    ("attribution", " ".join(str(x) for x in (
                        get(attribution, "status"), get(attribution, "method"),
                        get(attribution, "reason")) if x) or None),
                    ("convergence delta", get(attribution, "convergence_delta"))])
    return Group(boxed(title, cut(body, 4000)), facts)


def _actions(payload: dict[str, Any]) -> Text:
    out = Text()
    for n, action in enumerate(as_list(get(payload, "proposed_actions", "actions")), start=1):
        if out:
            out.append("\n")
        if isinstance(action, dict):
            name = get(action, "action", "kind", "title", default="?")
            detail = {k: v for k, v in action.items() if k not in ("action", "kind", "title")}
            out.append(f"{n}. {clean(name)}", style="bold")
            if detail:
                out.append(" " + ", ".join(f"{k}={number(v)}" for k, v in sorted(detail.items())))
        else:
            out.append(f"{n}. {clean(action)}")
    return out or Text("none proposed", style="italic")


def render(payload: dict[str, Any]) -> RenderableType:
    """Gives the weak-category pane for a payload this module understands."""
    category = payload["category"]
    name = get(category, "name", "id", default="?") if isinstance(category, dict) else category
    parts: list[RenderableType] = [
        section(f"category {clean(name)}", fields([
            ("release authority", get(payload, "release_authority")),
            ("detector", get(payload, "detector", "detector_id")),
        ]) or Text("")),
        section("findings", _findings(payload)),
    ]
    counts = get(payload, "counts")
    if isinstance(counts, dict) and counts:
        parts.append(section("counts", fields(sorted(counts.items()))))
    misses = [m for m in as_list(get(payload, "misses", "selected_misses")) if isinstance(m, dict)]
    if misses:
        legend = Text("top positive tokens ", style="italic")
        legend.append("like this", style=POSITIVE_STYLE)
        legend.append(", top negative ", style="italic")
        legend.append("like this", style=NEGATIVE_STYLE)
        parts.append(section(f"selected misses ({len(misses)})", legend,
                             *(render_miss(m, n) for n, m in enumerate(misses, start=1))))
    parts.append(section("proposed actions", _actions(payload)))
    return Group(*parts)
