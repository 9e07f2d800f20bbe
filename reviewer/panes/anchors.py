"""Named places in a detail pane (each match, the history) and the line each starts on.

A pane marks a place by putting an ``Anchor`` (a renderable with no height) in
its ``Group`` before it. The jump keys render the pane's parts at the pane's
width, count lines up to each anchor and scroll there, so a place is found by
what it is, not by guessing how tall the parts above it are.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult

HISTORY = "history"
MATCH = "match:"
TEXTS_END = "texts-end:"


class Anchor:
    """Marks where a named place starts; draws nothing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        return iter(())


def match_anchor(n: int) -> Anchor:
    """Gives the anchor of match n (1-based)."""
    return Anchor(f"{MATCH}{n}")


def texts_end_anchor(n: int) -> Anchor:
    """Gives the anchor just after match n's texts (1-based): reading them whole means
    scrolling until this line is on screen."""
    return Anchor(f"{TEXTS_END}{n}")


def anchor_lines(renderable: Any, width: int) -> dict[str, int]:
    """Gives the line each anchor of a (nested) Group starts on, drawn at ``width``."""
    console = Console(
        width=max(1, width), file=io.StringIO(), color_system=None, legacy_windows=False
    )
    options = console.options.update_width(max(1, width))
    found: dict[str, int] = {}
    line = 0

    def walk(part: Any) -> None:
        nonlocal line
        if isinstance(part, Anchor):
            found.setdefault(part.name, line)
        elif isinstance(part, Group):
            for child in part.renderables:
                walk(child)
        else:
            line += len(console.render_lines(part, options, pad=False))

    walk(renderable)
    return found


def jump_target(lines: dict[str, int], at: float, where: str) -> tuple[int | None, str]:
    """Gives (line to scroll to, or None to stay; what to say) for a jump from scroll
    offset ``at``, given the line of each anchor (``anchor_lines``).

    ``where`` is ``next_match``, ``prev_match`` or ``history``. The first match is
    the top of the pane (its facts open it), so "previous" from the second match
    goes back to the top, and "next" from the top goes to the second.
    """
    if where == HISTORY:
        return (lines[HISTORY], "history") if HISTORY in lines else (None, "no history here")
    matches = sorted(
        (line, int(name[len(MATCH) :])) for name, line in lines.items() if name.startswith(MATCH)
    )
    total = len(matches)
    if not matches:
        return None, "this item has no matches"
    if where == "next_match":
        later = [(line, n) for line, n in matches[1:] if line > at]
        if not later:
            return None, f"no match after this one ({total} in all)"
        line, n = later[0]
        return line, f"match {n} of {total}"
    if where == "prev_match":
        earlier = [(line, n) for line, n in matches if line < at]
        if not earlier:
            return None, f"no match before this one ({total} in all)"
        line, n = earlier[-1]
        return (0 if n == matches[0][1] else line), f"match {n} of {total}"
    raise ValueError(f"unknown jump {where!r}")
