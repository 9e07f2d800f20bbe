"""A virtual list of a queue's rows: draws only what is on screen, fetches pages on demand.

It never holds the whole queue. ``fetch(offset, limit)`` gives a page of
rows (from SQLite); pages are kept in a small LRU cache, so scrolling 100,000
items costs one indexed query per 100 rows shown and memory for a few pages.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Container

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from engine.item_query import ItemRow
from engine.terminal_text import visible
from reviewer.actions import bindings
from reviewer.panes.common import CARRIED_MARK, REOPENED_GLYPH, STATUS_GLYPH

PAGE = 100
MAX_PAGES = 40

Fetch = Callable[[int, int], list[ItemRow]]


class QueueList(ScrollView, can_focus=True):
    """The rows of one queue under the current filter and sort, with a cursor."""

    SCOPE = "queue"
    BINDINGS = bindings(SCOPE)
    COMPONENT_CLASSES = {
        "queue-list--cursor",
        "queue-list--accept",
        "queue-list--reject",
        "queue-list--skip",
        "queue-list--undecided",
        "queue-list--score",
    }
    DEFAULT_CSS = """
    /* The scrollbar's column is kept whether or not the list scrolls: titles end before
       it, at the same column in a short list as in a long one, and never under it. */
    QueueList { background: $surface; overflow-x: hidden; scrollbar-gutter: stable; }
    QueueList > .queue-list--cursor { background: $block-cursor-blurred-background; }
    QueueList:focus > .queue-list--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    QueueList > .queue-list--accept { color: $success; text-style: bold; }
    QueueList > .queue-list--reject { color: $error; text-style: bold; }
    QueueList > .queue-list--skip { color: $warning; }
    QueueList > .queue-list--undecided { color: $foreground-muted; }
    QueueList > .queue-list--score { color: $foreground-muted; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    class Highlighted(Message):
        """The cursor moved to a row (None when the list is empty)."""

        def __init__(self, index: int, row: ItemRow | None) -> None:
            super().__init__()
            self.index, self.row = index, row

    def __init__(self, fetch: Fetch, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._fetch = fetch
        self._pages: OrderedDict[int, list[ItemRow]] = OrderedDict()
        self.total = 0
        self.fetches = 0  # pages read from the database (the benchmark reports it)
        self.marks: Container[str] = frozenset()  # ids drawn as marked (for a bulk decision)

    # -- data -----------------------------------------------------------------
    def reset(self, total: int, fetch: Fetch | None = None, cursor: int = 0) -> None:
        """Starts over with a new total (and fetcher), the cursor at an index."""
        if fetch is not None:
            self._fetch = fetch
        self._pages.clear()
        self.total = total
        # As wide as the rows are drawn (the scrollbar's column left out): a width
        # counting that column let the list scroll sideways by one, under the bar.
        self.virtual_size = Size(self.scrollable_content_region.width, total)
        self.cursor = max(0, min(cursor, total - 1)) if total else 0
        # The new height applies on the next layout; scroll to the cursor after it.
        self.call_after_refresh(self._scroll_to_cursor)
        self.refresh()

    def forget(self) -> None:
        """Drops cached rows so they are read again (others may have decided)."""
        self._pages.clear()
        self.refresh()

    def row(self, index: int) -> ItemRow | None:
        """Gives the row at an index, reading its page if it is not cached."""
        if not 0 <= index < self.total:
            return None
        number, within = divmod(index, PAGE)
        page = self._pages.get(number)
        if page is None:
            page = self._fetch(number * PAGE, PAGE)
            self.fetches += 1
            self._pages[number] = page
            while len(self._pages) > MAX_PAGES:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(number)
        return page[within] if within < len(page) else None

    def replace(self, index: int, row: ItemRow) -> None:
        """Puts a changed row (a new decision) in place without reading the page again."""
        number, within = divmod(index, PAGE)
        page = self._pages.get(number)
        if page is not None and within < len(page):
            page[within] = row
        self.refresh()

    @property
    def current(self) -> ItemRow | None:
        """Gives the row under the cursor."""
        return self.row(self.cursor)

    # -- cursor ---------------------------------------------------------------
    def watch_cursor(self, index: int) -> None:
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.Highlighted(index, self.row(index)))

    def _scroll_to_cursor(self) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def move(self, delta: int) -> None:
        """Moves the cursor by delta rows, staying inside the list."""
        if self.total:
            self.cursor = max(0, min(self.total - 1, self.cursor + delta))

    def action_cursor_down(self) -> None:
        self.move(1)

    def action_cursor_up(self) -> None:
        self.move(-1)

    def action_page_down_rows(self) -> None:
        self.move(max(1, self.scrollable_content_region.height - 1))

    def action_page_up_rows(self) -> None:
        self.move(-max(1, self.scrollable_content_region.height - 1))

    def action_first(self) -> None:
        if self.total:
            self.cursor = 0

    def action_last(self) -> None:
        if self.total:
            self.cursor = self.total - 1

    def on_click(self, event: events.Click) -> None:
        index = round(self.scroll_y) + event.y
        if 0 <= index < self.total:
            self.cursor = index

    # -- drawing --------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        index = round(self.scroll_y) + y
        if index >= self.total:
            if self.total == 0 and y == 0:
                return Strip([Segment(" nothing matches", base + Style(italic=True))]).crop_extend(
                    0, width, base
                )
            return Strip.blank(width, base)
        row = self.row(index)
        if row is None:
            return Strip([Segment(" …", base)]).crop_extend(0, width, base)
        status_style = self.get_component_rich_style(f"queue-list--{row.status}")
        score_style = self.get_component_rich_style("queue-list--score")
        line_style = base
        if index == self.cursor:
            line_style = base + self.get_component_rich_style("queue-list--cursor")
            status_style = line_style + Style(bold=True)
            score_style = line_style
        score = "  –  " if row.score is None else f"{row.score:5.3f}"[:5]
        # Drawn as segments, never parsed as markup; what would act on the terminal is shown.
        title = " ".join(visible(row.title or row.item_id).split())
        mark = "●" if row.item_id in self.marks else " "
        # three columns before the score, whatever the state: the carried mark has its own
        # (it ran into the score, "✓ᶜ1.000", when it took the space)
        glyph = f"{STATUS_GLYPH.get(row.status, '?')}  "
        if row.carry == "carried":
            glyph = f"{glyph[0]}{CARRIED_MARK} "
        elif row.carry == "reopened":
            glyph = f"{REOPENED_GLYPH}  "
        segments = [
            Segment(f"{mark}{glyph}", status_style),
            Segment(score, score_style),
            Segment(" " + title, line_style),
        ]
        if row.earlier and width > 24:
            # Earlier runs' items of the same subject fold under this row (v lists them):
            # said at the right edge, over the end of a long title rather than cut off.
            runs = "run" if row.earlier == 1 else "runs"
            folded = f" +{row.earlier} {runs} "
            left = Strip(segments).crop_extend(0, width - len(folded), line_style)
            return Strip([*left, Segment(folded, score_style)])
        return Strip(segments).crop_extend(0, width, line_style)
