"""Helpers shared by the review app's tests: a populated workspace and ledger reads."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from engine.ledger.authority import AUTHORITY_KINDS
from engine.workspace import Workspace
from tests.support.review_payloads import demo_items, numbered_pairs


@dataclass
class Desk:
    """A workspace with items of every shape and enrolled keys (paths to private keys)."""

    ws: Workspace
    rita: Path  # reviewer
    adam: Path  # adjudicator
    lena: Path  # lead and reviewer


def populate(ws: Workspace, enrol) -> Desk:
    """Gives the desk after ingesting demo items and 30 numbered pairs, and enrolling three."""
    ws.ingest(demo_items() + numbered_pairs(30))
    rita = enrol("rita", "reviewer")
    adam = enrol("adam", "adjudicator")
    lena = enrol("lena", "lead", "reviewer")
    return Desk(ws, rita.path, adam.path, lena.path)


def records(ws: Workspace) -> list[tuple]:
    """Gives (kind, queue, item_id, decision, principal, role, note, retracts) per record
    after the ledger's opening run of authority records (the genesis and the enrolments
    made before any work), read through a separate connection, i.e. what the people under
    test durably added. An authority record written later is still listed."""
    conn = sqlite3.connect(ws.db_path)
    try:
        rows = conn.execute(
            "SELECT kind, queue, item_id, decision, principal, role, "
            "json_extract(message, '$.note'), retracts "
            "FROM records ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    opening = 0
    while opening < len(rows) and rows[opening][0] in AUTHORITY_KINDS:
        opening += 1
    return rows[opening:]


def text_of(widget) -> str:
    """Gives the plain text a Static widget currently shows."""
    from rich.console import Console
    from rich.text import Text

    content = widget.content
    if isinstance(content, str):
        return content
    if isinstance(content, Text):
        return content.plain
    console = Console(width=200, record=True, file=open("/dev/null", "w"), color_system=None)
    console.print(content)
    return console.export_text()


async def type_text(pilot, text: str) -> None:
    """Types text into the focused widget: the key event of each character, as
    ``pilot.press`` sends it, all sent at once (a fast typist's keys, in order), then waits
    until the app is idle. ``pilot.press`` waits for the app after every key (40 ms or more
    a key), which makes a typed command line take seconds."""
    from textual import events
    from textual.keys import _character_to_key

    driver = pilot.app._driver
    for character in text:
        event = events.Key(_character_to_key(character), character)
        event.set_sender(pilot.app)
        driver.send_message(event)
    await pilot.pause()


async def settle(pilot, predicate, timeout: float = 30.0):
    """Lets the app run until predicate() holds; fails at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if predicate():
            return
    raise AssertionError("app did not reach the expected state in time")


def notices(app) -> str:
    """Gives the text of every notification the app has shown."""
    return "\n".join(str(n.message) for n in app._notifications)


def detail_on_screen(screen) -> list[str]:
    """Gives the lines of the detail pane a person sees now: the window it is scrolled to."""
    from textual.geometry import Region

    pane = screen.query_one("#detail-pane")
    detail = screen.query_one("#detail")
    top = round(pane.scroll_y)
    window = Region(0, top, detail.size.width, pane.scrollable_content_region.height)
    return [strip.text.rstrip() for strip in detail.render_lines(window)]


def screen_lines(app) -> list[str]:
    """Gives the lines of the whole terminal as the app draws it now (every screen on the
    stack, dialogs over what they cover), as text: what a person can read."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text().splitlines()


def dialog_text(app) -> str:
    """Gives the words the open dialog shows on the terminal, its lines joined: a word cut
    at the dialog's edge is missing from it."""
    box = app.screen.query_one(".dialog").region
    lines = screen_lines(app)[box.y : box.bottom]
    inside = [line[box.x : box.right].strip("│╭╮╰╯─ ") for line in lines]
    return " ".join(" ".join(line.split()) for line in inside if line)


def queue_lines(app) -> dict[str, str]:
    """Gives the queue list's drawn line per item id (every row fits on the screen)."""
    lst = app.review.queue_list
    return {lst.row(i).item_id: lst.render_line(i).text for i in range(lst.total)}


def claim_holders(ws: Workspace, queue: str | None = None) -> dict[str, str]:
    """Gives who holds which item now, by item id (the item each app shows: engine.claims)."""
    return {item_id: c.principal for (_, item_id), c in ws.claims(queue).items()}
