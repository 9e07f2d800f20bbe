"""Pieces every detail pane uses: headings, key/value lines, numbers, side-by-side texts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from engine.terminal_text import visible
from reviewer.panes.anchors import Anchor

MAX_JSON_CHARS = 40_000
MAX_TEXT_CHARS = 20_000
STATUS_GLYPH = {"accept": "✓", "reject": "✗", "skip": "↷", "undecided": "·"}
# A decision carried from another item of the subject keeps its glyph, marked; an item
# new evidence re-opened shows this instead of the undecided dot.
CARRIED_MARK = "ᶜ"
REOPENED_GLYPH = "↺"


def heading(title: str) -> Text:
    """Gives a section heading."""
    return Text(title, style="bold underline")


def number(value: Any, digits: int = 3) -> str:
    """Gives a number formatted for reading, or the value as text, or an en dash if absent."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return visible(value, multiline=True)


class Facts(Text):
    """Label/value lines (a Text, so its plain text and appends work as on any) drawn
    with a hanging indent: a value too long for the pane wraps under itself, its
    continuation lines at the value's column rather than at column 0 under the label.

    ``row`` starts a line; what is appended after it belongs to that line's value.
    """

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[int, int]] = []  # (offset of the line's start, label length)

    def row(self, label: str, value: str = "", style: str = "") -> None:
        """Starts a line: a bold label (its width is the value's column), then a value."""
        if self:
            self.append("\n")
        self.rows.append((len(self), len(label)))
        self.append(label, style="bold")
        self.append(value, style=style)

    def __rich_console__(  # type: ignore[override]  # yields Texts, not only Segments
        self, console: Console, options: ConsoleOptions
    ) -> RenderResult:
        if not self.rows:
            yield from super().__rich_console__(console, options)  # no line: drawn as empty
            return
        width = options.max_width
        ends = [start for start, _ in self.rows[1:]] + [len(self) + 1]
        for (start, label_chars), end in zip(self.rows, ends, strict=True):
            line = self[start : end - 1]  # without the newline that ends it
            label, value = line[:label_chars], line[label_chars:]
            column = label.cell_len
            if width - column < 10:
                # too narrow to hang anything: the line wraps as plain text does
                yield line
                continue
            for n, part in enumerate(value.wrap(console, width - column)):
                yield (label if n == 0 else Text(" " * column)) + part


def fields(pairs: Iterable[tuple[str, Any]], *, digits: int = 3) -> Facts:
    """Gives 'label: value' lines for the pairs whose value is present, each value's
    continuation lines under the value (Facts)."""
    out = Facts()
    for label, value in pairs:
        if value is None or value == "" or value == [] or value == {}:
            continue
        out.row(f"{label}: ")
        if isinstance(value, (list, tuple)):
            out.append(", ".join(number(v, digits) for v in value))
        elif isinstance(value, dict):
            out.append(compact_json(value))
        else:
            out.append(number(value, digits))
    return out


def compact_json(value: Any, limit: int = 400) -> str:
    """Gives a one-line JSON rendering of a value, cut at limit characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return visible(text if len(text) <= limit else text[:limit] + "…")


def get(obj: Any, *keys: str, default: Any = None) -> Any:
    """Gives the first present key's value of a dict (producers differ in naming)."""
    if not isinstance(obj, dict):
        return default
    for key in keys:
        if key in obj and obj[key] is not None:
            return obj[key]
    return default


def as_list(value: Any) -> list[Any]:
    """Gives value as a list: itself, [itself] for a single object, or []."""
    if isinstance(value, list):
        return value
    if value is None or value == "":
        return []
    return [value]


def cut(text: Text, limit: int = MAX_TEXT_CHARS) -> Text:
    """Gives text cut to a readable length, saying so."""
    if len(text) <= limit:
        return text
    out = text[:limit]
    out.append(f"\n… {len(text) - limit} more characters", style="italic")
    return out


def raw_json(payload: Any) -> RenderableType:
    """Gives a payload as indented JSON (cut when huge), readable without colour."""
    try:
        text = json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(payload)
    if len(text) > MAX_JSON_CHARS:
        text = text[:MAX_JSON_CHARS] + f"\n… {len(text) - MAX_JSON_CHARS} more characters"
    return Text(visible(text, multiline=True))


def boxed(title: str, body: RenderableType) -> Panel:
    """Gives a body in a titled box."""
    # A Panel reads a string title as markup: a Text is drawn as written.
    return Panel(body, title=Text(visible(title)), title_align="left", padding=(0, 1))


class SideBySide:
    """Two boxed texts side by side, stacked when the pane is too narrow for both."""

    def __init__(
        self,
        left: tuple[str, RenderableType],
        right: tuple[str, RenderableType],
        min_width: int = 64,
    ) -> None:
        self.left, self.right, self.min_width = left, right, min_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width < self.min_width:
            yield boxed(*self.left)
            yield boxed(*self.right)
            return
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(ratio=1)
        grid.add_column(ratio=1)
        grid.add_row(boxed(*self.left), boxed(*self.right))
        yield grid


def add_row(table: Table, *cells: RenderableType) -> None:
    """Adds a row whose string cells are drawn as written: a Table reads a string cell
    as Rich markup, so a "[link=…]" or "[bold]" from data would be taken as style."""
    table.add_row(*(Text(cell) if isinstance(cell, str) else cell for cell in cells))


def indent(body: RenderableType) -> Padding:
    """Gives a body indented under its heading."""
    return Padding(body, (0, 0, 0, 2))


def section(title: str, *body: RenderableType) -> Group:
    """Gives a heading followed by its indented body and a blank line (an anchor among
    the body stays as it is, so the jump keys still find it)."""
    return Group(
        heading(title), *(b if isinstance(b, Anchor) else indent(b) for b in body), Text("")
    )
