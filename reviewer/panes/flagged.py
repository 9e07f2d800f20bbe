"""Flagged pair: the eval item beside its match, shared n-gram spans highlighted in both."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from reviewer.panes.common import (
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
from reviewer.panes.spans import SHARED_STYLE, clean, highlight, shared_spans

TITLE = "flagged pair"

_SCORES = (
    ("MinHash Jaccard", ("minhash_jaccard", "minhash", "jaccard_minhash", "lsh_jaccard")),
    ("exact Jaccard", ("exact_jaccard", "jaccard", "jaccard_exact")),
    ("containment", ("containment", "exact_containment")),
    ("cosine", ("cosine", "embedding_cosine", "cos")),
)


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
    return f"{kind} {clean(ident)}" + (f" (#{number(index)})" if index is not None else "")


def _scores(match: dict[str, Any]) -> list[tuple[str, Any]]:
    scores = get(match, "scores", default={})
    scores = scores if isinstance(scores, dict) else {}
    out = []
    for label, keys in _SCORES:
        out.append((label, get(scores, *keys, default=get(match, *keys))))
    known = {k for _, keys in _SCORES for k in keys}
    out += [(k, v) for k, v in sorted(scores.items()) if k not in known]
    return out


def render_match(ev: dict[str, Any], match: dict[str, Any], n: int, total: int) -> Group:
    """Gives one match: both texts side by side with shared spans, then its numbers."""
    eval_spans, match_spans = shared_spans(get(match, "shared_spans", "spans", "overlaps"))
    left = cut(highlight(get(ev, "text", default=""), eval_spans))
    right = cut(highlight(get(match, "text", default=""), match_spans))
    channels = get(match, "channels", "channel")
    numbers_only = get(match, "numbers_only", "only_numbers_differ", "numbers_only_differ")
    title = f"match {n} of {total}: {_who(match, 'pool')}"
    body: list[RenderableType] = [
        SideBySide((_who(ev, "eval"), left), (_who(match, "pool"), right)),
        fields(
            [
                ("channels", as_list(channels)),
                *_scores(match),
                ("only numbers differ", numbers_only),
                (
                    "shared spans",
                    f"{len(eval_spans)} in eval, {len(match_spans)} in match"
                    if eval_spans or match_spans
                    else None,
                ),
                ("probe", get(match, "probe")),
            ]
        ),
    ]
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
            text = clean(get(member, "text", default=""))[:300]
            if text:
                lines.append(f": {text}")
        else:
            lines.append(clean(member))
    size = get(cluster, "size") if isinstance(cluster, dict) else None
    return section(f"cluster: {number(size) if size is not None else len(members)} members", lines)


def _probe(payload: dict[str, Any]) -> Group | None:
    probe = get(payload, "probe")
    if probe is None:
        return None
    if isinstance(probe, dict):
        body = fields([(k, v) for k, v in sorted(probe.items())])
    else:
        body = Text(clean(probe))
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


def render(payload: dict[str, Any]) -> RenderableType:
    """Gives the flagged-pair pane for a payload this module understands."""
    ev = payload["eval"]
    matches = _matches(payload)
    parts: list[RenderableType] = []
    for n, match in enumerate(matches, start=1):
        parts.append(render_match(ev, match, n, len(matches)))
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
