"""Flagged pair: what decides it first, then the eval item beside each match, spans marked.

The pane opens on the verdict-relevant facts (the triage, the channels, each
score against the threshold that flags it, the numbers of both texts), so they
are on the first screen even at 80x24; the two texts follow, side by side from
a 100-column terminal. A pair the scan's judge was asked about shows what it
suggests last among the facts, marked as a suggestion: it is a model's
reading, never the label or the decision.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from engine.terminal_text import visible
from reviewer.panes.anchors import match_anchor
from reviewer.panes.common import (
    Facts,
    SideBySide,
    as_list,
    boxed,
    compact_json,
    cut,
    fields,
    get,
    indent,
    number,
    section,
)
from reviewer.panes.spans import SHARED_STYLE, highlight, shared_spans

TITLE = "flagged pair"

# (label, keys it may be stored under, key of the threshold it is flagged at); the
# scores with a threshold decide a pair and open the pane, the rest follow the texts
_SCORES = (
    ("exact Jaccard", ("exact_jaccard", "jaccard", "jaccard_exact"), "jaccard"),
    ("containment", ("containment", "exact_containment"), "containment"),
    ("cosine", ("cosine", "embedding_cosine", "cos"), "cosine"),
    ("MinHash", ("minhash_jaccard", "minhash", "jaccard_minhash", "lsh_jaccard"), None),
)
_LABEL_WIDTH = 14
# Side by side once the pane is this wide: a 100-column terminal gives it ~56.
_SIDE_BY_SIDE = 52
# A judge's reason is a model's text: shown whole up to here.
_REASON_CHARS = 400
_SUGGESTS = {"same_problem": "same problem", "different_problem": "different problem"}
_TRIAGE = {
    "likely_leak": ("likely leak", "bold reverse"),
    "unclear": ("unclear", "bold"),
    "template_sibling": ("template sibling", "italic"),
}


def understands(payload: dict[str, Any]) -> bool:
    """Says whether the payload has an eval item and something it was matched with."""
    return isinstance(payload.get("eval"), dict) and (
        "matches" in payload or "match" in payload or "cluster" in payload or "members" in payload
    )


def _matches(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in as_list(get(payload, "matches", "match")) if isinstance(m, dict)]


def _who(side: dict[str, Any], default: str) -> str:
    kind = get(side, "kind", "source", default=default)
    ident = get(side, "id", default="?")
    index = get(side, "index")
    return f"{kind} {visible(ident)}" + (f" (#{number(index)})" if index is not None else "")


def _scores(match: dict[str, Any]) -> list[tuple[str, Any, str | None]]:
    """Gives (label, value, threshold key) for every score the match carries."""
    scores = get(match, "scores", default={})
    scores = scores if isinstance(scores, dict) else {}
    out = []
    for label, keys, limit in _SCORES:
        value = get(scores, *keys, default=get(match, *keys))
        if value is not None:
            out.append((label, value, limit))
    known = {k for _, keys, _ in _SCORES for k in keys}
    out += [(k.replace("_", " "), v, None) for k, v in sorted(scores.items()) if k not in known]
    return out


def _row(out: Facts, label: str, value: str, style: str = "") -> None:
    out.row(f"{label:<{_LABEL_WIDTH}}", value, style)


def _against(value: Any, limit: Any) -> str:
    """Gives a score beside its threshold: "0.903 ≥ 0.500 flags" or "0.612 < 0.800"."""
    shown = number(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return shown
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        return shown
    if value >= limit:
        return f"{shown} ≥ {number(limit)} flags"
    return f"{shown} < {number(limit)}"


def _names(values: Any) -> str:
    return ", ".join(visible(v) for v in as_list(values)) or "none"


def facts(match: dict[str, Any], thresholds: dict[str, Any]) -> Facts:
    """Gives what decides a match, first: its triage, channels, each score against the
    threshold that flags it, the numbers of both texts, and whether only numbers differ.
    A value too long for the pane wraps under itself (Facts)."""
    out = Facts()
    triage = get(match, "triage")
    if isinstance(triage, dict):
        word, style = _TRIAGE.get(str(get(triage, "label")), (visible(get(triage, "label")), ""))
        _row(out, "triage", "")
        out.append(word, style=style)
    channels = as_list(get(match, "channels", "channel"))
    via = as_list(get(match, "via"))
    _row(out, "channels", _names(channels) + (f" via {_names(via)}" if via else ""))
    for label, value, limit in _scores(match):
        if limit is not None:
            _row(out, label, _against(value, get(thresholds, limit)))
    if isinstance(triage, dict):
        # by side: this item's, then the match's (a pool document, or another eval item
        # for a duplicate inside the eval set, which "eval" alone would not tell apart)
        kind = get(match, "kind", default="match")
        side = "other eval" if kind == "eval" else visible(kind)
        _row(out, "numbers", f"this item {_names(get(triage, 'eval'))}")
        _row(out, "", f"{side} {_names(get(triage, 'match'))}")
        eval_numbers = as_list(get(triage, "eval"))
        weighted = get(triage, "weighted_kept")
        # rare numbers weigh more than small counts: the share of weight kept says how much
        weight = ""
        if isinstance(weighted, int | float) and not isinstance(weighted, bool):
            weight = f", {round(weighted * 100)}% of their weight"
        _row(
            out,
            "kept",
            f"{number(get(triage, 'shared'))} of {len(eval_numbers)} eval numbers{weight}"
            if eval_numbers
            else "no numbers in the eval text",
        )
    numbers_only = get(match, "numbers_only", "only_numbers_differ", "numbers_only_differ")
    if numbers_only is not None:
        _row(out, "differ in", "numbers only" if numbers_only else "words, not only numbers")
    judge = get(match, "judge")
    if isinstance(judge, dict):
        suggestion(out, judge)
    return out


def suggestion(out: Facts, judge: dict[str, Any]) -> None:
    """Adds the judge's rows: what it suggests and why, or why it could not say, and that
    this is a model's suggestion (every string from the endpoint shown, not obeyed)."""
    model = visible(get(judge, "model", default="the judge"))
    verdict = get(judge, "verdict")
    if verdict is None:
        failed = visible(get(judge, "failed", default="no answer"))
        attempts = number(get(judge, "attempts"))
        _row(out, "judge", f"no suggestion: {failed} ({attempts} attempt(s) to {model})")
        return
    reason = visible(get(judge, "reason", default=""))
    if len(reason) > _REASON_CHARS:
        reason = reason[:_REASON_CHARS] + "…"
    _row(out, "judge", "suggests: ")
    out.append(_SUGGESTS.get(str(verdict), visible(verdict)), style="bold")
    if reason:
        _row(out, "", f"— {reason}")
    _row(out, "", f"a suggestion from {model}, not a decision", style="italic")


def _more_scores(match: dict[str, Any], thresholds: dict[str, Any]) -> list[tuple[str, Any]]:
    """Gives the scores that do not flag a pair (estimates, counts), for after the texts."""
    out = []
    for label, value, limit in _scores(match):
        if limit is None:
            if label == "MinHash":
                label = "MinHash Jaccard (estimate)"
            elif label == "shared shingles" and get(thresholds, "ngram_n"):
                label = f"shared {number(get(thresholds, 'ngram_n'))}-grams"
            out.append((label, value))
    return out


def render_match(
    ev: dict[str, Any],
    match: dict[str, Any],
    n: int,
    total: int,
    thresholds: dict[str, Any] | None = None,
) -> Group:
    """Gives one match: the facts that decide it, then both texts side by side with the
    spans they share marked."""
    eval_spans, match_spans = shared_spans(get(match, "shared_spans", "spans", "overlaps"))
    left = cut(highlight(get(ev, "text", default=""), eval_spans))
    right = cut(highlight(get(match, "text", default=""), match_spans))
    title = f"match {n} of {total}: {_who(match, 'pool')}"
    body: list[RenderableType] = [
        facts(match, thresholds or {}),
        SideBySide((_who(ev, "eval"), left), (_who(match, "pool"), right), _SIDE_BY_SIDE),
    ]
    extra = fields(
        [
            *_more_scores(match, thresholds or {}),
            (
                "shared spans",
                f"{len(eval_spans)} in eval, {len(match_spans)} in match"
                if eval_spans or match_spans
                else None,
            ),
            ("probe", get(match, "probe")),
        ]
    )
    if extra:
        body.append(extra)
    return section(title, *body)


def render_cluster(payload: dict[str, Any]) -> Group | None:
    """Gives the members of an internal-duplicate cluster, or None if there is none."""
    cluster = get(payload, "cluster", default={})
    # {"members": [...]}, or the member list itself.
    members = as_list(get(cluster, "members") if isinstance(cluster, dict) else cluster)
    members = members or as_list(get(payload, "members"))
    if not members:
        return None
    lines = Text()
    for member in members:
        if lines:
            lines.append("\n")
        if isinstance(member, dict):
            lines.append(_who(member, "eval"), style="bold")
            text = visible(get(member, "text", default=""))[:300]
            if text:
                lines.append(f": {text}")
        else:
            lines.append(visible(member))
    size = get(cluster, "size") if isinstance(cluster, dict) else None
    return section(f"cluster: {number(size) if size is not None else len(members)} members", lines)


def _probe(payload: dict[str, Any]) -> Group | None:
    probe = get(payload, "probe")
    if probe is None:
        return None
    body: Text
    if isinstance(probe, dict):
        body = fields([(k, v) for k, v in sorted(probe.items())])
    else:
        body = Text(visible(probe, multiline=True))
    return section("behavioral probe", body)


def _provenance(payload: dict[str, Any]) -> Group | None:
    prov = get(payload, "provenance", "datasets")
    if not prov:
        return None
    if not isinstance(prov, dict):
        return section("provenance", Text(compact_json(prov)))
    parts: list[RenderableType] = []
    for side, info in sorted(prov.items()):
        if isinstance(info, dict):
            parts.append(Text(f"{side}", style="bold"))
            parts.append(indent(fields(sorted(info.items()))))
        else:
            parts.append(fields([(side, info)]))
    return section("provenance", *parts)


def _verdict(payload: dict[str, Any], matches: list[dict[str, Any]]) -> Text | None:
    """Gives, for an item with several matches, how their triage went (one match's own
    triage line says it all)."""
    labels = [get(get(m, "triage", default={}), "label") for m in matches]
    if len(matches) < 2 or not any(labels):
        return None
    counts = [
        f"{labels.count(key)} {shown}" for key, (shown, _) in _TRIAGE.items() if key in labels
    ]
    out = Text()
    out.append(f"{len(matches)} matches: ", style="bold")
    out.append(", ".join(counts))
    return out


def render(payload: dict[str, Any]) -> RenderableType:
    """Gives the flagged-pair pane for a payload this module understands: the verdict
    and the first match's facts open it, then each match, each after its anchor."""
    ev = payload["eval"]
    matches = _matches(payload)
    thresholds = get(payload, "thresholds", default={})
    thresholds = thresholds if isinstance(thresholds, dict) else {}
    parts: list[RenderableType] = []
    verdict = _verdict(payload, matches)
    if verdict is not None:
        parts.append(verdict)
    for n, match in enumerate(matches, start=1):
        parts.append(match_anchor(n))
        parts.append(render_match(ev, match, n, len(matches), thresholds))
    if not matches:
        parts.append(
            section(
                _who(ev, "eval"), boxed("text", cut(highlight(get(ev, "text", default=""), [])))
            )
        )
    for extra in (render_cluster(payload), _probe(payload), _provenance(payload)):
        if extra is not None:
            parts.append(extra)
    legend = Text("shared n-gram spans are shown ", style="italic")
    legend.append("like this", style=SHARED_STYLE)
    parts.append(legend)
    return Group(*parts)
