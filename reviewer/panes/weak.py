"""Weak category: its findings against thresholds, counts, the misses with attributed tokens.

Also what a lead must see before accepting: the category's threat mappings
(MITRE ATLAS, OWASP LLM Top 10), and whether its misses were attributed by
the measured detector, by another model for a recorded reason, or not at
all. The lead's evidence claim (the item a lead approves) is shown here too.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from engine.terminal_text import visible
from reviewer.panes.common import add_row, as_list, boxed, cut, fields, get, number, section
from reviewer.panes.spans import (
    NEGATIVE_STYLE,
    POSITIVE_STYLE,
    as_span,
    find_token_spans,
    styled,
)

TITLE = "weak category"
CLAIM_KIND = "coverage.evidence_claim"
WARNING_STYLE = "bold reverse"


def understands(payload: dict[str, Any]) -> bool:
    """Says whether the payload names a category and what was found about it, or is a
    coverage evidence claim."""
    if payload.get("kind") == CLAIM_KIND:
        return isinstance(payload.get("weak_categories"), list)
    return isinstance(payload.get("category"), (str, dict)) and (
        "findings" in payload or "misses" in payload or "metrics" in payload
    )


def _ids(mapping: Any, name: str) -> list[str]:
    return [visible(i) for i in as_list(get(mapping, name)) if isinstance(i, str)]


def _threats(mapping: Any) -> Text:
    """Gives the ATLAS and OWASP ids of one category's mapping, or says there is none."""
    atlas, owasp = _ids(mapping, "mitre_atlas"), _ids(mapping, "owasp_llm_top10")
    if not atlas and not owasp:
        return Text("no threat mapping recorded for this category", style="italic")
    return fields([("MITRE ATLAS", atlas or None), ("OWASP LLM Top 10", owasp or None)])


def _short(digest: Any) -> str:
    return f"{visible(digest)[:16]}…" if isinstance(digest, str) and digest else "?"


def _attribution(record: Any, misses: int) -> Text | None:
    """Gives how the misses were attributed, flagged when they were not explained by
    the measured detector."""
    if not isinstance(record, dict) or "status" not in record:
        return None
    out = Text()
    if record.get("status") == "not_run":
        out.append("NOT RUN", style=WARNING_STYLE)
        out.append(
            f"  the {misses} selected miss(es) are not explained: nobody knows yet "
            "which tokens the detector missed them on"
        )
        if record.get("not_run_reason"):
            out.append(f" ({visible(record['not_run_reason'])})")
    elif record.get("binding") == "override":
        out.append("OTHER MODEL", style=WARNING_STYLE)
        out.append(
            f"  attributed with model {_short(record.get('model_sha256'))}, which is "
            f"not the measured detector {_short(record.get('detector_sha256'))}; "
            f"reason given: {visible(record.get('override_reason') or '?')}"
        )
    elif record.get("binding") == "measured_detector":
        out.append(f"explained by the measured detector {_short(record.get('model_sha256'))}")
    else:
        out.append(
            f"{visible(record.get('status'))} (model {_short(record.get('model_sha256'))}, "
            "binding to the measured detector not recorded)"
        )
    return out


def _real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
        # The change from previous to value: a fall is negative. The engine's own
        # "delta" of a recall_regression is the drop (previous - current, positive for
        # a regression), so the sign is worked out from the two values when both are
        # given, and a regression's drop given alone is shown as the fall it is.
        delta = get(f, "delta")
        if _real(value) and _real(previous):
            delta = value - previous
        elif _real(delta) and get(f, "issue") == "recall_regression":
            delta = -abs(delta)
        delta_text = f"{delta:+.3f}" if _real(delta) else number(delta)
        issue = get(f, "issue", "kind", "finding", default="?")
        metric = get(f, "metric")
        add_row(
            table,
            visible(issue) + (f" ({visible(metric)})" if metric else ""),
            number(value),
            number(previous),
            delta_text,
            number(get(f, "threshold", "limit")),
        )
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
            out.append(f"{visible(name)} {number(score)}" if score is not None else visible(name))
        elif isinstance(tok, (list, tuple)) and len(tok) == 2:
            out.append(f"{visible(tok[0])} {number(tok[1])}")
        else:
            out.append(visible(tok))
    return ", ".join(out)


def render_miss(miss: dict[str, Any], n: int) -> RenderableType:
    """Gives one missed case with its top positive tokens in reverse, negative underlined."""
    text = get(miss, "text", "input", default="")
    text = text if isinstance(text, str) else str(text)
    # Tokens sit on the miss itself or inside its attribution record.
    attribution = get(miss, "attribution", default={})
    attribution = attribution if isinstance(attribution, dict) else {}
    positive = get(
        miss,
        "top_positive_tokens",
        "top_tokens",
        "positive_tokens",
        "tokens",
        default=get(attribution, "top_positive_tokens", "top_tokens"),
    )
    negative = get(
        miss,
        "top_negative_tokens",
        "negative_tokens",
        default=get(attribution, "top_negative_tokens"),
    )
    body = styled(
        text,
        [(span, NEGATIVE_STYLE) for span in _token_spans(text, negative)]
        + [(span, POSITIVE_STYLE) for span in _token_spans(text, positive)],
    )
    title = f"miss {n}: {visible(get(miss, 'case_id', 'id', default='?'))}"
    facts = fields(
        [
            ("label", get(miss, "label", "expected")),
            ("prediction", get(miss, "prediction", "predicted")),
            ("score", get(miss, "score", "probability")),
            ("top +", _token_list(positive) or None),
            ("top −", _token_list(negative) or None),
            (
                "attribution",
                " ".join(
                    str(x)
                    for x in (
                        get(attribution, "status"),
                        get(attribution, "method"),
                        get(attribution, "reason"),
                    )
                    if x
                )
                or None,
            ),
            ("convergence delta", get(attribution, "convergence_delta")),
        ]
    )
    return Group(boxed(title, cut(body, 4000)), facts)


def _actions(payload: dict[str, Any]) -> Text:
    out = Text()
    for n, action in enumerate(as_list(get(payload, "proposed_actions", "actions")), start=1):
        if out:
            out.append("\n")
        if isinstance(action, dict):
            name = get(action, "action", "kind", "title", default="?")
            detail = {k: v for k, v in action.items() if k not in ("action", "kind", "title")}
            out.append(f"{n}. {visible(name)}", style="bold")
            if detail:
                out.append(" " + ", ".join(f"{k}={number(v)}" for k, v in sorted(detail.items())))
        else:
            out.append(f"{n}. {visible(action)}")
    return out or Text("none proposed", style="italic")


def _claim_notice(claim: dict[str, Any]) -> Text | None:
    from engine.coverage.evidence import attribution_notice

    stated = claim.get("attribution")
    if not isinstance(stated, dict):
        return Text(
            "the claim does not say how the reviewed misses were attributed", style="italic"
        )
    notice = attribution_notice(stated)
    if notice is None:
        return Text("every reviewed category's misses were explained by the measured detector")
    out = Text(
        "NOT EXPLAINED" if stated.get("state") != "explained_with_override" else "OTHER MODEL",
        style=WARNING_STYLE,
    )
    out.append(f"  {visible(notice)}")
    return out


def render_claim(claim: dict[str, Any]) -> RenderableType:
    """Gives the pane of a coverage evidence claim: what the lead's approval binds."""
    weak = [f for f in claim["weak_categories"] if isinstance(f, dict)]
    mappings = get(claim, "threat_mappings", default={})
    categories = Table(box=None, show_edge=False, pad_edge=False)
    for column in ("category", "finding", "MITRE ATLAS", "OWASP LLM Top 10"):
        categories.add_column(column)
    for f in weak:
        mapping = get(mappings, str(f.get("category")), default={})
        add_row(
            categories,
            visible(f.get("category", "?")),
            visible(f.get("issue", "?")),
            ", ".join(_ids(mapping, "mitre_atlas")) or "–",
            ", ".join(_ids(mapping, "owasp_llm_top10")) or "–",
        )
    reviews = Text()
    for r in as_list(get(claim, "reviews")):
        if isinstance(r, dict):
            if reviews:
                reviews.append("\n")
            reviews.append(
                f"{visible(r.get('category', '?'))}: {visible(r.get('decision', '?'))} "
                f"by {visible(r.get('principal', '?'))} ({visible(r.get('role', '?'))}),"
                f" #{r.get('seq', '?')}"
            )
    detector = (
        f"{visible(get(claim, 'detector_version', default='?'))} "
        f"{_short(get(claim, 'detector_sha256'))}"
    )
    holdout = (
        f"{visible(get(claim, 'holdout_id', default='?'))} "
        f"{visible(get(claim, 'holdout_version', default=''))}"
    )
    parts: list[RenderableType] = [
        section(
            "coverage evidence claim",
            fields(
                [
                    ("eligibility", get(claim, "eligibility")),
                    ("detector", detector),
                    ("holdout", holdout),
                    ("benchmark", _short(get(claim, "benchmark_sha256"))),
                    ("release authority", get(claim, "release_authority")),
                ]
            ),
        ),
    ]
    notice = _claim_notice(claim)
    if notice is not None:
        parts.append(section("attribution", notice))
    parts.append(
        section(
            f"weak categories ({len(weak)})",
            categories if weak else Text("none: ELIGIBLE", style="italic"),
        )
    )
    parts.append(section("reviews", reviews or Text("none", style="italic")))
    return Group(*parts)


def _meaning(name: str) -> Text:
    """Gives what an accept and a reject of this category stand for."""
    out = Text()
    out.append("accept", style="bold")
    out.append(f": {name} is a real weakness; it goes into the next hardening cycle")
    out.append(" (the proposed actions below)\n")
    out.append("reject", style="bold")
    out.append(": not a weakness to act on; say why in a note (n)\n")
    out.append("neither changes a model or a release", style="italic")
    return out


def _measured(payload: dict[str, Any]) -> list[tuple[str, Any]]:
    """Gives the detector and the benchmark (or report) the findings were measured on,
    as a coverage backlog item records them under ``source``."""
    source = get(payload, "source", default={})
    source = source if isinstance(source, dict) else {}
    attribution = get(payload, "attribution", default={})
    digest = get(source, "detector_sha256") or get(attribution, "detector_sha256")
    version = get(source, "detector_version") or get(payload, "detector", "detector_id")
    detector: str | None = " ".join(
        x for x in (visible(version) if version else "", _short(digest)) if x
    )
    if digest is None:
        detector = visible(version) if version else None
    measured = None
    if source.get("sha256"):
        kind = visible(source.get("kind") or "source")
        measured = f"{kind} {_short(source['sha256'])}"
        if source.get("evaluation_set_id"):
            measured += f" on {visible(source['evaluation_set_id'])}"
        if source.get("eligibility"):
            measured += f" ({visible(source['eligibility'])})"
    return [("detector", detector), ("measured by", measured)]


def render(payload: dict[str, Any]) -> RenderableType:
    """Gives the weak-category pane for a payload this module understands."""
    if payload.get("kind") == CLAIM_KIND:
        return render_claim(payload)
    category = payload["category"]
    name = get(category, "name", "id", default="?") if isinstance(category, dict) else category
    misses = [m for m in as_list(get(payload, "misses", "selected_misses")) if isinstance(m, dict)]
    parts: list[RenderableType] = [
        section(
            f"category {visible(name)}",
            fields(
                [
                    *_measured(payload),
                    ("release authority", get(payload, "release_authority")),
                ]
            )
            or Text(""),
        ),
        section("deciding", _meaning(visible(name))),
    ]
    attribution = _attribution(get(payload, "attribution"), len(misses))
    if attribution is not None:
        parts.append(section("attribution", attribution))
    if "threats" in payload:
        parts.append(section("threat mappings", _threats(payload["threats"])))
    parts.append(section("findings", _findings(payload)))
    counts = get(payload, "counts")
    if isinstance(counts, dict) and counts:
        parts.append(section("counts", fields(sorted(counts.items()))))
    if misses:
        legend = Text("top positive tokens ", style="italic")
        legend.append("like this", style=POSITIVE_STYLE)
        legend.append(", top negative ", style="italic")
        legend.append("like this", style=NEGATIVE_STYLE)
        parts.append(
            section(
                f"selected misses ({len(misses)})",
                legend,
                *(render_miss(m, n) for n, m in enumerate(misses, start=1)),
            )
        )
    parts.append(section("proposed actions", _actions(payload)))
    return Group(*parts)
