"""Flagged pair: what decides it first, then the eval item beside each match, spans marked.

The pane opens on the verdict-relevant facts (the triage, the channels, each
score against the threshold that flags it, the numbers of both texts), so they
are on the first screen even at 80x24; the two texts follow as one word diff
(shared runs folded, differing words marked: ``reviewer.panes.word_diff``), or,
one key away, whole and side by side from a 100-column terminal. A pair the
scan's judge was asked about shows what it suggests last among the facts,
marked as a suggestion: it is a model's reading, never the label or the decision.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from engine.terminal_text import visible
from reviewer.panes import word_diff
from reviewer.panes.anchors import match_anchor, texts_end_anchor
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
# Numbers listed per side before "… n more".
_NUMBERS_SHOWN = 8
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


def _flags(value: Any, limit: Any) -> bool:
    """Says whether a score reaches the threshold that flags a pair."""
    numbers = [x for x in (value, limit) if isinstance(x, int | float) and not isinstance(x, bool)]
    return len(numbers) == 2 and value >= limit


def _names(values: Any, most: int | None = None) -> str:
    """Gives values comma-separated, after the first ``most`` only how many more."""
    shown = [visible(v) for v in as_list(values)]
    if most is not None and len(shown) > most:
        return ", ".join(shown[:most]) + f" … {len(shown) - most} more"
    return ", ".join(shown) or "none"


def facts(match: dict[str, Any], thresholds: dict[str, Any], *, lists: bool = True) -> Facts:
    """Gives what decides a match, first: its triage, channels, each score against the
    threshold that flags it, the numbers of both texts, and whether only numbers differ.
    Without ``lists`` (the texts shown as one word diff, which marks every number and
    word that differs, by side) the numbers of each side and the "differ in" row are
    left out and only how many numbers the match keeps is said. A value too long for
    the pane wraps under itself (Facts)."""
    out = Facts()
    triage = get(match, "triage")
    if isinstance(triage, dict):
        word, style = _TRIAGE.get(str(get(triage, "label")), (visible(get(triage, "label")), ""))
        _row(out, "triage", "")
        out.append(word, style=style)
        if not lists:
            # what the triage rests on, beside it: the diff shows the numbers themselves
            out.append(f" · kept {_kept(triage)}")
    channels = as_list(get(match, "channels", "channel"))
    via = as_list(get(match, "via"))
    _row(out, "channels", _names(channels) + (f" via {_names(via)}" if via else ""))
    scored = [
        (label, value, get(thresholds, limit))
        for label, value, limit in _scores(match)
        if limit is not None
    ]
    if lists:
        for label, value, limit in scored:
            _row(out, label, _against(value, limit))
    else:
        # two rows, not one a score: the scores that flag the pair, then those under
        # their thresholds (each still beside its threshold)
        flagging = [(label, v, t) for label, v, t in scored if _flags(v, t)]
        under = [(label, v, t) for label, v, t in scored if not _flags(v, t)]
        for row, chosen in (("flagged by", flagging), ("not by", under)):
            if chosen:
                # "exact" goes: the estimate (MinHash) is only shown after the texts
                shown = ", ".join(
                    f"{label.removeprefix('exact ')} {_against(v, t)}" for label, v, t in chosen
                )
                _row(out, row, shown.replace(" flags", ""))
    if isinstance(triage, dict) and lists:
        # by side: this item's, then the match's (a pool document, or another eval item
        # for a duplicate inside the eval set, which "eval" alone would not tell apart)
        kind = get(match, "kind", default="match")
        side = "other eval" if kind == "eval" else visible(kind)
        # a long list (a pool document's worked answer) is cut to its first numbers: the
        # kept count below says how many the match keeps, the texts show where
        _row(out, "numbers", f"this item {_names(get(triage, 'eval'), _NUMBERS_SHOWN)}")
        _row(out, "", f"{side} {_names(get(triage, 'match'), _NUMBERS_SHOWN)}")
        _row(out, "kept", _kept(triage))
    numbers_only = get(match, "numbers_only", "only_numbers_differ", "numbers_only_differ")
    if numbers_only is not None and lists:
        _row(out, "differ in", "numbers only" if numbers_only else "words, not only numbers")
    judge = get(match, "judge")
    if isinstance(judge, dict):
        suggestion(out, judge)
    return out


def _kept(triage: dict[str, Any]) -> str:
    """Gives how many of the eval text's numbers the match keeps, and how much of their
    weight (rare numbers weigh more than small counts), when the scan said."""
    eval_numbers = as_list(get(triage, "eval"))
    if not eval_numbers:
        return "no numbers in the eval text"
    weighted = get(triage, "weighted_kept")
    weight = ""
    if isinstance(weighted, int | float) and not isinstance(weighted, bool):
        weight = f", {round(weighted * 100)}% by weight"
    return f"{number(get(triage, 'shared'))}/{len(eval_numbers)} numbers{weight}"


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


def _diff(ev: dict[str, Any], match: dict[str, Any], toggle_key: str) -> tuple[Text, Text]:
    """Gives the pair's two texts as one word diff, and the line under it saying which
    marker is which text, how many words they share and which key shows them whole."""
    a, b = get(ev, "text", default=""), get(match, "text", default="")
    kind = get(match, "kind", default="pool")
    shown, counted = word_diff.diff(a, b)
    key = word_diff.legend("eval", "other eval" if kind == "eval" else visible(kind))
    shared = counted.shared
    key.append(f" · {shared} word{'' if shared == 1 else 's'} shared", style="bold")
    key.append(f" · {toggle_key} whole texts", style="italic")
    return shown, key


def render_match(
    ev: dict[str, Any],
    match: dict[str, Any],
    n: int,
    total: int,
    thresholds: dict[str, Any] | None = None,
    *,
    full_texts: bool = False,
    toggle_key: str = "w",
) -> Group:
    """Gives one match: the facts that decide it, then the two texts as one word diff
    (or, with ``full_texts``, both whole and side by side with the spans they share
    marked)."""
    title = f"match {n} of {total}: {_who(match, 'pool')}"
    body: list[RenderableType] = [facts(match, thresholds or {}, lists=full_texts)]
    eval_spans, match_spans = shared_spans(get(match, "shared_spans", "spans", "overlaps"))
    if full_texts:
        left = cut(highlight(get(ev, "text", default=""), eval_spans))
        right = cut(highlight(get(match, "text", default=""), match_spans))
        body.append(
            SideBySide((_who(ev, "eval"), left), (_who(match, "pool"), right), _SIDE_BY_SIDE)
        )
        body.append(texts_end_anchor(n))
        body.append(Text(f"{toggle_key} word diff", style="italic"))
    else:
        diff, key = _diff(ev, match, toggle_key)
        body += [diff, texts_end_anchor(n), key]
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


def render(
    payload: dict[str, Any], *, full_texts: bool = False, toggle_key: str = "w"
) -> RenderableType:
    """Gives the flagged-pair pane for a payload this module understands: the verdict
    and the first match's facts open it, then each match, each after its anchor; each
    match's texts as one word diff, or whole with ``full_texts``."""
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
        parts.append(
            render_match(
                ev, match, n, len(matches), thresholds, full_texts=full_texts, toggle_key=toggle_key
            )
        )
    if not matches:
        parts.append(
            section(
                _who(ev, "eval"), boxed("text", cut(highlight(get(ev, "text", default=""), [])))
            )
        )
    for extra in (render_cluster(payload), _probe(payload), _provenance(payload)):
        if extra is not None:
            parts.append(extra)
    if full_texts or not matches:
        legend = Text("shared n-gram spans are shown ", style="italic")
        legend.append("like this", style=SHARED_STYLE)
        parts.append(legend)
    return Group(*parts)
