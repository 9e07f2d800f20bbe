"""Nothing cut at 80 columns, driven by keys at 80x24: the status bar, the filter line,
the jobs panel's header and the bulk list read whole on the terminal as drawn
(screen_lines), a wrapped value of a match's facts keeps its column, and the queue's
titles end before its scrollbar."""

from __future__ import annotations

import pytest

from engine.workspace import BacklogItem, Workspace
from reviewer.app import ReviewApp
from reviewer.bulk_screen import BulkScreen
from reviewer.jobs_screen import JobsScreen
from reviewer.session import open_session, read_only_session
from tests.support.review_app import (
    detail_on_screen,
    dialog_text,
    screen_lines,
    settle,
    text_of,
)
from tests.support.review_payloads import JUDGE_REASON, evidence_pair, judged_pair

SIZE = (80, 24)
pytestmark = pytest.mark.anyio


def drawn(app, selector: str) -> str:
    """Gives the words a widget of the current screen shows on the terminal, its lines
    joined: a word cut at the widget's edge, or a line it has no room for, is missing."""
    box = app.screen.query_one(selector).region
    lines = screen_lines(app)[box.y : box.bottom]
    return " ".join(" ".join(line[box.x : box.right].split()) for line in lines)


def words(widget) -> str:
    return " ".join(text_of(widget).split())


def rita_app(desk) -> ReviewApp:
    return ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.rita)))


async def test_a_status_message_longer_than_the_bar_leaves_is_read_whole(desk):
    app = rita_app(desk)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.review.queue_list.current is not None)
        # status filter "accept" (nothing accepted yet), then Enter: the undecided items
        # are all outside the filter, and the status bar says how to clear it
        await pilot.press("s", "s")
        await settle(pilot, lambda: app.review.view.filters.status == "accept")
        await pilot.press("enter")
        await settle(pilot, lambda: "outside the filter" in app.review.message)
        bar = app.review.query_one("#status-bar")
        assert len(words(bar)) > 80  # longer than one line of the terminal
        assert words(bar) == drawn(app, "#status-bar")
        assert app.review.message in drawn(app, "#status-bar")


async def test_the_filter_line_shows_every_filter_in_force(desk):
    app = rita_app(desk)
    search = "pair 1 of the numbered pairs"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.review.queue_list.current is not None)
        # every run's items, two marked, a search and a status filter: more than three
        # lines of the queue pane
        await pilot.press("v", "m", "m", "slash", *search, "enter", "s")
        line = app.review.query_one("#filter-line")
        await settle(pilot, lambda: "undecided" in text_of(line) and "shown" in text_of(line))
        for part in (f"/{search}", "all runs", "2 marked", "status undecided"):
            assert part in words(line)
        assert line.size.height > 3
        assert words(line) == drawn(app, "#filter-line")


async def test_the_jobs_panel_header_is_read_whole(desk):
    app = rita_app(desk)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.review.queue_list.current is not None)
        await pilot.press("b")
        await settle(pilot, lambda: isinstance(app.screen, JobsScreen))
        shown = dialog_text(app)
    assert "Engine runs · Enter starts one · Ctrl+K cancels the newest · Esc closes" in shown


@pytest.fixture
def judged(tmp_path):
    ws = Workspace.init(tmp_path / "ws")
    ws.ingest(
        [
            BacklogItem.make("flagged_pairs", "fp-embedded", "run-test", evidence_pair()),
            BacklogItem.make("flagged_pairs", "fp-judged", "run-test", judged_pair()),
        ]
    )
    yield ws
    ws.close()


async def test_a_wrapped_fact_keeps_the_column_of_its_value(judged):
    app = ReviewApp(judged, read_only_session("judge"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.review.queue_list.current is not None)
        await pilot.press("j")
        await settle(pilot, lambda: app.review.queue_list.current.item_id == "fp-judged")
        await settle(pilot, lambda: "not a decision" in " ".join(_detail_words(app)))
        seen = detail_on_screen(app.review)
    first = next(n for n, line in enumerate(seen) if line.lstrip().startswith("triage"))
    last = max(n for n, line in enumerate(seen) if line.rstrip().endswith("decision"))
    column = seen[first].index("unclear")  # where every value of the facts starts
    labels = {"triage", "channels", "exact Jaccard", "containment", "cosine", "numbers"}
    labels |= {"flagged by", "not by", "kept", "differ in", "judge", ""}  # "": a next line
    for line in seen[first : last + 1]:
        label, value = line[:column], line[column:]
        assert label.strip() in labels and value[:1] not in ("", " "), line
    facts = " ".join(" ".join(line.split()) for line in seen[first : last + 1])
    reason = JUDGE_REASON.replace("\u202e", "⟨U+202E⟩").replace("\x1b", "␛")
    assert f"— {reason}" in facts  # wrapped, every word of it, under the value
    assert "a suggestion from judge-model-2025-01, not a decision" in facts


def _detail_words(app) -> list[str]:
    return " ".join(detail_on_screen(app.review)).split()


LONG = (
    "Natalia sold clips to forty-eight of her friends in April, and then she sold half "
    "as many clips in May. How many clips did she sell?"
)


def _long_titled(n: int) -> BacklogItem:
    text = f"{LONG} ({n})"
    members = [{"id": f"q-{k}", "index": k, "text": f"{LONG} ({k})"} for k in range(3)]
    return BacklogItem.make(
        "flagged_pairs",
        f"fp-long-{n}",
        "run-1",
        {
            "eval": {"id": f"q-{n}", "index": n, "text": text},
            "matches": [],
            "cluster": members,
            "summary": {"title": f"q-{n}: {text}", "score": 0.9 - n / 10, "tags": ["internal"]},
        },
    )


def _list_lines(app) -> list[str]:
    """Gives the bulk list's lines as drawn, inside its frame."""
    box = app.screen.query_one("#bulk-items").region
    inside = [line[box.x : box.right] for line in screen_lines(app)[box.y : box.bottom]]
    return [line.strip("▊▎▔▁ ") for line in inside if line.strip("▊▎▔▁ ")]


@pytest.mark.parametrize("keys", [("c",), ("m", "m", "D")], ids=["cluster", "marked"])
async def test_bulk_list_titles_stay_on_their_line(workspace, enrol, keys):
    workspace.ingest(
        [_long_titled(n) for n in range(3)],
        runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}},
    )
    lena = enrol("lena", "lead", "reviewer")
    app = ReviewApp(workspace, open_session(workspace, key=str(lena.path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.review.queue_list.current is not None)
        await pilot.press(*keys)
        await settle(pilot, lambda: isinstance(app.screen, BulkScreen))
        await settle(pilot, lambda: len(_list_lines(app)) >= 4)
        lines = _list_lines(app)
    # Each line is a title (an eval item's, an item's) cut with an ellipsis at the
    # list's edge, or what stands on an item: no piece of a title on a line of its own.
    for line in lines:
        if line.startswith(("eval q-", "· fp-long-")):
            assert "Natalia sold clips to forty-eight" in line and line.endswith("…"), line
        else:
            assert line.startswith("undecided · sha256"), line


def _list_rows(app) -> tuple[list[str], list[str]]:
    """Gives the queue list's rows as drawn on the terminal, without and with the
    scrollbar's column (the list's last)."""
    box = app.review.queue_list.region
    lines = screen_lines(app)[box.y : box.bottom]
    return [line[box.x : box.right - 1] for line in lines], [line[box.right - 1] for line in lines]


async def test_queue_titles_end_before_the_scrollbar_whether_or_not_the_list_scrolls(desk):
    app = rita_app(desk)
    async with app.run_test(size=SIZE) as pilot:
        ql = app.review.queue_list
        await settle(pilot, lambda: ql.current is not None)
        # 34 rows: the list scrolls, its bar in the last column, beside the titles
        rows, bar = _list_rows(app)
        assert ql.show_vertical_scrollbar and any(c.strip() for c in bar)
        assert any("cluster of 3: What" in row for row in rows)
        # another queue and back: the list is no wider than its rows, so nothing
        # scrolls sideways under the bar
        await pilot.press("2")
        await settle(pilot, lambda: app.review.queue == "adjudication")
        await pilot.press("1")
        await settle(pilot, lambda: app.review.queue == "flagged_pairs" and ql.total == 34)
        assert ql.max_scroll_x == 0
        # one row: no bar to draw, and the title still ends where it ends beside one
        await pilot.press("slash", *"cluster", "enter")
        await settle(pilot, lambda: ql.total == 1)
        rows, bar = _list_rows(app)
        assert not ql.show_vertical_scrollbar
        assert any(row.rstrip().endswith("cluster of 3: What") for row in rows), rows
        assert "".join(bar).strip() == ""
