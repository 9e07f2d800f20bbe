"""Character spans from producers' payloads, made safe, and highlighted in text that is
shown through the one sanitiser (``engine.terminal_text.visible``).

Producers are written in parallel and by hand, so spans arrive in several
shapes (``[s, e]``, ``(s, e)``, ``{"start", "end"}``, keyed by side as each
reader's docstring lists); every reader here accepts those, drops what is
malformed or out of range, and never raises on bad data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rich.text import Text

from engine.terminal_text import visible

Span = tuple[int, int]

# Styles that read without colour (NO_COLOR, monochrome terminals) as well as
# with it: emphasis by reverse video and weight, never by hue alone.
SHARED_STYLE = "bold reverse"
CANDIDATE_STYLE = "bold underline reverse"
POSITIVE_STYLE = "bold reverse"
NEGATIVE_STYLE = "italic underline"


def as_span(value: Any) -> Span | None:
    """Gives (start, end) from [s, e], (s, e) or {"start", "end"}, or None if unusable."""
    if isinstance(value, dict):
        value = (value.get("start"), value.get("end"))
    if isinstance(value, (list, tuple)) and len(value) == 2:
        start, end = value
        if (
            isinstance(start, int)
            and isinstance(end, int)
            and not isinstance(start, bool)
            and not isinstance(end, bool)
            and 0 <= start < end
        ):
            return (start, end)
    return None


_SIDE_KEYS = {
    "left": ("eval", "a", "left", "eval_span", "source", "test"),
    "right": ("match", "b", "right", "match_span", "pool", "other", "target", "sibling"),
}


def _side(entry: dict[str, Any], side: str) -> Span | None:
    for key in _SIDE_KEYS[side]:
        if key in entry:
            return as_span(entry[key])
    prefix = "eval" if side == "left" else "match"
    return as_span((entry.get(f"{prefix}_start"), entry.get(f"{prefix}_end")))


def shared_spans(raw: Any) -> tuple[list[Span], list[Span]]:
    """Gives (spans in the eval text, spans in the match text) from any accepted shape.

    Accepted: a list of {"eval": [s, e], "match": [s, e]} (or eval_start/...),
    a list of [[s, e], [s, e]] pairs, or {"eval": [[s, e], ...], "match": [...]}.
    """
    left: list[Span] = []
    right: list[Span] = []
    if isinstance(raw, dict):
        for key in _SIDE_KEYS["left"]:
            if isinstance(raw.get(key), list):
                left = [s for s in map(as_span, raw[key]) if s]
                break
        for key in _SIDE_KEYS["right"]:
            if isinstance(raw.get(key), list):
                right = [s for s in map(as_span, raw[key]) if s]
                break
        return left, right
    if not isinstance(raw, list):
        return left, right
    for entry in raw:
        if isinstance(entry, dict):
            a, b = _side(entry, "left"), _side(entry, "right")
        elif isinstance(entry, (list, tuple)) and len(entry) == 2:
            a, b = as_span(entry[0]), as_span(entry[1])
        else:
            continue
        if a:
            left.append(a)
        if b:
            right.append(b)
    return left, right


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def highlight(text: Any, spans: Iterable[Span], style: str = SHARED_STYLE) -> Text:
    """Gives text shown safely (``visible``), each in-range span styled; spans past the
    end are clipped. Spans count characters of the text as given."""
    return styled(text, [(span, style) for span in spans])


def styled(text: Any, spans: Iterable[tuple[Span, str]]) -> Text:
    """Gives text shown safely, with each (span, style) applied where the span's
    characters are drawn.

    A hidden character is drawn wider than it is (U+202E as ``⟨U+202E⟩``), so the
    text is shown piece by piece between span edges and each edge is moved to where
    its character landed: a span still covers exactly its own characters.
    """
    raw = _text(text)
    n = len(raw)
    kept = [(max(0, s), min(n, e), how) for (s, e), how in spans if max(0, s) < min(n, e)]
    edges = sorted({0, n, *(s for s, _, _ in kept), *(e for _, e, _ in kept)})
    out = Text()
    drawn_at = {0: 0}
    for start, end in zip(edges, edges[1:], strict=False):
        out.append(visible(raw[start:end], multiline=True))
        drawn_at[end] = len(out)
    for start, end, how in kept:
        out.stylize(how, drawn_at[start], drawn_at[end])
    return out


def find_token_spans(text: str, token: str, limit: int = 20) -> list[Span]:
    """Gives where a token occurs in text: as a whole word if it is one, else anywhere."""
    token = token.strip()
    if not token or not text:
        return []
    body = re.escape(token)
    word = token[0].isalnum() and token[-1].isalnum()
    pattern = rf"(?<!\w){body}(?!\w)" if word else body
    spans = [(m.start(), m.end()) for m in re.finditer(pattern, text)]
    if not spans:
        spans = [(m.start(), m.end()) for m in re.finditer(pattern, text, re.IGNORECASE)]
    return spans[:limit]
