"""Character spans from producers' payloads, made safe, and highlighted in text.

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


def clean(text: Any) -> str:
    """Gives text safe to draw: a string, with control characters but newlines/tabs shown."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "\ufffd", text)


def highlight(text: Any, spans: Iterable[Span], style: str = SHARED_STYLE) -> Text:
    """Gives text with each in-range span styled; spans past the end are clipped."""
    text = clean(text)
    out = Text(text)
    n = len(text)
    for start, end in spans:
        start, end = max(0, start), min(n, end)
        if start < end:
            out.stylize(style, start, end)
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
