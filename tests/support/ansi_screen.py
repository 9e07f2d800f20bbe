"""A terminal screen as tmux holds it (``capture-pane -e``): each cell's character and
pen (foreground, background, attributes), and the colours a person would see.

A terminal's own default foreground and background are not known to the program
drawing on it (a dark or a light profile), so ``seen`` resolves a pen on both a
dark and a light one: text is readable only if it is on each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

SGR = re.compile(r"\x1b\[([0-9;:]*)m")
ATTRIBUTES = ("bold", "underline", "reverse")  # what marks a highlight without colour

Colour = tuple[str, int] | tuple[str, int, int, int] | None  # None: the terminal's default

# xterm's default 16 colours, then its 6x6x6 cube and grey ramp (256-colour indexes).
XTERM16 = (
    (0, 0, 0),
    (205, 0, 0),
    (0, 205, 0),
    (205, 205, 0),
    (0, 0, 238),
    (205, 0, 205),
    (0, 205, 205),
    (229, 229, 229),
    (127, 127, 127),
    (255, 0, 0),
    (0, 255, 0),
    (255, 255, 0),
    (92, 92, 255),
    (255, 0, 255),
    (0, 255, 255),
    (255, 255, 255),
)
# A dark and a light terminal profile: (default foreground, default background).
PROFILES = {"dark": ((229, 229, 229), (0, 0, 0)), "light": ((0, 0, 0), (255, 255, 255))}


@dataclass(frozen=True)
class Pen:
    """How a cell is drawn: colours as the program sent them, and its attributes."""

    fg: Colour = None
    bg: Colour = None
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False
    reverse: bool = False

    def attributes(self) -> frozenset[str]:
        """Gives the highlighting attributes set (bold, underline, reverse)."""
        return frozenset(a for a in ATTRIBUTES if getattr(self, a))


def _after(pen: Pen, params: str) -> Pen:
    """Gives the pen after one SGR sequence's parameters."""
    ps = [int(p) if p else 0 for p in re.split("[;:]", params)] if params else [0]
    i = 0
    while i < len(ps):
        p = ps[i]
        simple = {
            1: {"bold": True},
            2: {"dim": True},
            3: {"italic": True},
            4: {"underline": True},
            7: {"reverse": True},
            22: {"bold": False, "dim": False},
            23: {"italic": False},
            24: {"underline": False},
            27: {"reverse": False},
            39: {"fg": None},
            49: {"bg": None},
        }
        if p == 0:
            pen = Pen()
        elif p in simple:
            pen = replace(pen, **simple[p])
        elif 30 <= p <= 37 or 90 <= p <= 97:
            pen = replace(pen, fg=("i", p - 30 if p < 90 else p - 82))
        elif 40 <= p <= 47 or 100 <= p <= 107:
            pen = replace(pen, bg=("i", p - 40 if p < 100 else p - 92))
        elif p in (38, 48) and i + 1 < len(ps):
            key = "fg" if p == 38 else "bg"
            if ps[i + 1] == 5:
                pen = replace(pen, **{key: ("i", ps[i + 2])})
                i += 2
            elif ps[i + 1] == 2:
                pen = replace(pen, **{key: ("rgb", *ps[i + 2 : i + 5])})
                i += 4
        i += 1
    return pen


def parse(captured: str) -> list[list[tuple[str, Pen]]]:
    """Gives the rows of (character, pen) of a ``capture-pane -e`` text (tmux carries the
    pen across line ends)."""
    pen = Pen()
    rows = []
    for line in captured.split("\n"):
        row: list[tuple[str, Pen]] = []
        at = 0
        for m in SGR.finditer(line):
            row += [(ch, pen) for ch in line[at : m.start()]]
            pen = _after(pen, m.group(1))
            at = m.end()
        row += [(ch, pen) for ch in line[at:]]
        rows.append(row)
    return rows


def rgb(colour: Colour, default: tuple[int, int, int]) -> tuple[int, int, int]:
    """Gives the RGB a colour is drawn in (xterm's palette for indexes)."""
    if colour is None:
        return default
    if colour[0] == "rgb":
        return colour[1], colour[2], colour[3]  # type: ignore[misc]
    n = colour[1]
    if n < 16:
        return XTERM16[n]
    if n < 232:
        steps = (0, 95, 135, 175, 215, 255)
        n -= 16
        return steps[n // 36], steps[n // 6 % 6], steps[n % 6]
    grey = 8 + 10 * (n - 232)
    return grey, grey, grey


def seen(pen: Pen, profile: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Gives the (foreground, background) RGB a person sees, on a dark or light terminal."""
    default_fg, default_bg = PROFILES[profile]
    fg, bg = rgb(pen.fg, default_fg), rgb(pen.bg, default_bg)
    return (bg, fg) if pen.reverse else (fg, bg)


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """Gives the WCAG contrast ratio of two colours (1: the same, 21: black on white)."""

    def luminance(c: tuple[int, int, int]) -> float:
        def channel(v: int) -> float:
            s = v / 255
            return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

        r, g, b_ = (channel(v) for v in c)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b_

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def find(rows: list[list[tuple[str, Pen]]], text: str, left: int = 0) -> tuple[int, int]:
    """Gives (row, column) where text first appears at or right of a column."""
    for y, row in enumerate(rows):
        at = "".join(ch for ch, _ in row).find(text, left)
        if at >= 0:
            return y, at
    raise AssertionError(f"{text!r} is not on the screen")


def pens(rows: list[list[tuple[str, Pen]]], text: str, left: int = 0) -> set[Pen]:
    """Gives the pens of the non-blank characters of text where it first appears."""
    y, x = find(rows, text, left)
    return {pen for ch, pen in rows[y][x : x + len(text)] if ch.strip()}
