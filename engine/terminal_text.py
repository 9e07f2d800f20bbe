"""Text from data or from another person, made safe to put on a terminal.

A title, a text, an id, a note, a principal or an error message that quotes
input is hostile: an ``ESC ] 52`` in an eval item's id writes the terminal's
clipboard, ``ESC [ 2J`` clears the screen and draws a fake status, a U+202E
turns what follows backwards, a zero-width space makes two ids look alike.
Everything sealdesk prints that came from outside passes through
``visible`` first (the CLI's lines and tables, the review app's list and
panes, every error line), so that such characters are *shown*, never
interpreted:

- ESC and the other C0 controls as their Control Pictures (``␛ ␀ ␇ ␊ ␉``),
  DEL as ``␡``;
- C1 controls (U+0080–U+009F, of which U+009B is a one-byte CSI), format
  characters (bidi embeddings, overrides, isolates and marks, zero-width
  spaces and joiners, the BOM, tag characters), line and paragraph
  separators, lone surrogates, and the invisible fillers Unicode marks
  default-ignorable, by code point, e.g. ``⟨U+202E⟩``.

The variation selectors U+FE00–U+FE0F are left alone: they only choose a
glyph (the emoji form of ❤) and move no cursor.

Printed JSON stays exact JSON: ``json_text`` writes every such character
inside a string as its ``\\u`` escape (e.g. ``\\u202e``), which a JSON reader
turns back into the very same string (``json.dumps`` escapes only U+0000–U+001F; with
``ensure_ascii=False`` DEL, C1, bidi and zero-width characters would pass
raw). Files sealdesk writes (artifacts, exports) keep their canonical bytes:
only what is printed goes through here.

Rich markup is a separate matter with a separate rule: text from data is
given to Rich and Textual as ``Text`` objects, never as a markup string,
so a ``[bold red]`` or ``[link=…]`` in a title is shown as typed.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["json_text", "visible"]

# Every character a terminal could take as control, or that draws nothing: all of
# Unicode's Cc, Cf, Cs, Zl and Zp (as of Unicode 15.1; a test checks this list against
# the interpreter's own unicodedata), plus the default-ignorable fillers that draw as
# blank (U+034F, U+115F–U+1160, U+17B4–U+17B5, U+180B–U+180F, U+3164, U+FFA0, and
# the U+E0000 block's tags and ideographic variation selectors).
_BEYOND_C0 = (
    "\x7f-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2"
    "\u115f-\u1160\u17b4-\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\u3164\ud800-\udfff\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_HIDDEN = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
# A pane showing a whole text keeps its newlines and tabs (and shows every other C0).
_HIDDEN_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_BEYOND_C0}]")
# In JSON text json.dumps has escaped every C0 inside strings already, and the raw
# newlines left are its own indentation.
_HIDDEN_IN_JSON = re.compile(f"[{_BEYOND_C0}]")
_DEL = 0x7F


def _shown(match: re.Match[str]) -> str:
    """Gives the visible form of one hidden character."""
    point = ord(match.group())
    if point < 0x20:
        return chr(0x2400 + point)  # Control Pictures: ␀ … ␛ … ␟
    if point == _DEL:
        return "\u2421"  # ␡
    return f"\u27e8U+{point:04X}\u27e9"  # ⟨U+202E⟩


def visible(text: object, *, multiline: bool = False) -> str:
    """Gives text with every control, format and invisible character shown, none interpreted.

    ``None`` gives ``""``; any other non-string is shown as ``str()`` gives it.
    One line (the default) shows a newline and a tab too (``␊ ␉``), so a
    title or id stays on its row; ``multiline`` keeps newlines and tabs for
    a pane that shows a whole text (a carriage return is still shown: it
    would move the cursor back over what was drawn).
    """
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    pattern = _HIDDEN_BUT_LINES if multiline else _HIDDEN
    if pattern.search(text) is None:  # the common case: nothing to show, nothing copied
        return text
    return pattern.sub(_shown, text)


def _escaped(match: re.Match[str]) -> str:
    """Gives one hidden character as the JSON escape(s) that read back as it."""
    point = ord(match.group())
    if point < 0x10000:
        return f"\\u{point:04x}"
    point -= 0x10000  # beyond the BMP: a UTF-16 surrogate pair, as JSON spells it
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def json_text(value: Any, *, indent: int | None = None) -> str:
    """Gives value as JSON to print: exact, with no hidden character left raw.

    The same characters ``visible`` shows are written as ``\\u`` escapes (e.g. ``\\u202e``);
    everything else is as ``json.dumps(..., ensure_ascii=False)`` writes it.
    """
    dumped = json.dumps(value, ensure_ascii=False, indent=indent)
    # Outside strings JSON holds only ASCII (punctuation, digits, literals and the
    # indentation json.dumps chose): whatever this finds lies inside a string, where
    # its escape reads back as the same character.
    return _HIDDEN_IN_JSON.sub(_escaped, dumped)
