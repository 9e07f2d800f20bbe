"""After a re-run, a queue lists one row per subject (its newest item), driven by keys
(Textual Pilot) and through the CLI: `v` lists every run's items, `h` on a re-run's item
shows the records made on its subject's earlier items, and the sign-off summary says how
many subjects the items span."""

from __future__ import annotations

import json

import pytest
from textual.geometry import Region

from engine.item_query import ItemFilter
from engine.signoff.summary import signoff_summary
from reviewer.app import ReviewApp
from reviewer.session import open_session
from tests.support.review_app import queue_lines, settle, text_of
from tests.support.subjects import QUEUE, rescanned_twice

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


@pytest.fixture
def rescanned(workspace, enrol):
    """Gives (workspace, rita's key) after two runs (``rescanned_twice``)."""
    return rescanned_twice(workspace, enrol)


def detail_text(app: ReviewApp) -> str:
    """Gives every line the detail pane draws, one per line, spaces squeezed."""
    detail = app.review.query_one("#detail")
    drawn = detail.render_lines(Region(0, 0, detail.size.width, detail.virtual_size.height))
    return "\n".join(" ".join(strip.text.split()) for strip in drawn)


async def test_a_rescanned_queue_lists_each_subject_once_and_v_lists_every_run(rescanned):
    ws, rita = rescanned
    app = ReviewApp(ws, open_session(ws, key=str(rita)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.review.queue_list.total == 3)
        drawn = queue_lines(app)
        assert sorted(drawn) == ["a2", "b2", "c2"]  # the newest run's item of each subject
        assert all(line.endswith(" +1 run ") for line in drawn.values()), drawn
        filter_line = text_of(app.review.query_one("#filter-line"))
        assert filter_line.startswith(" 3 shown") and "all runs" not in filter_line

        await pilot.press("v")
        await settle(pilot, lambda: app.review.queue_list.total == 6)
        assert sorted(queue_lines(app)) == ["a1", "a2", "b1", "b2", "c1", "c2"]
        assert "· all runs" in text_of(app.review.query_one("#filter-line"))
        assert app.review.message == "every run's items listed (v: newest only)"

        await pilot.press("v")
        await settle(pilot, lambda: app.review.queue_list.total == 3)
        assert app.review.message == "one row per subject: its newest item (v: every run)"


async def test_history_on_a_reopened_item_shows_the_decision_it_reopens(rescanned):
    ws, rita = rescanned
    app = ReviewApp(ws, open_session(ws, key=str(rita)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.review.queue_list.total == 3)
        await pilot.press("g")
        for _ in range(3):
            if app.review.queue_list.current.item_id == "a2":
                break
            await pilot.press("down")
        assert app.review.queue_list.current.item_id == "a2"
        await pilot.press("h")
        await settle(pilot, lambda: app.review.message == "a2: history")
        shown = detail_text(app)
        history = " ".join(shown[shown.rindex("history") :].split())
        assert "no records yet" not in history
        assert "rita (reviewer) reject on a1 (an earlier run: run-1)" in history
        # only the chain of its own subject: q-2's and q-3's decisions are not in it
        assert "b1" not in history and "c1" not in history


async def test_the_signoff_screen_says_how_many_items_the_subjects_span(rescanned):
    ws, rita = rescanned
    app = ReviewApp(ws, open_session(ws, key=str(rita)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.review.queue_list.total == 3)
        await pilot.press("S")
        await settle(pilot, lambda: app.screen is not app.review)
        await settle(
            pilot, lambda: "subjects over" in text_of(app.screen.query_one("#signoff-body"))
        )
        assert "flagged_pairs: 3 subjects over 6 items" in text_of(
            app.screen.query_one("#signoff-body")
        )


def test_counts_and_status_filters_fold_the_earlier_runs(rescanned):
    ws, _ = rescanned
    newest = ItemFilter(newest_only=True)
    assert ws.count(QUEUE, newest) == 3 and ws.count(QUEUE) == 6
    # c1's own accept and the accept it carries to c2: one subject, one row
    accepted = ItemFilter(status="accept", newest_only=True)
    assert [r.item_id for r in ws.page(QUEUE, accepted)] == ["c2"]
    assert ws.count(QUEUE, accepted) == 1
    assert ws.count(QUEUE, ItemFilter(status="accept")) == 2
    (queue,) = [q for q in signoff_summary(ws).queues if q.queue == QUEUE]
    assert (queue.subjects, queue.total, queue.span()) == (3, 6, "3 subjects over 6 items")


def test_sealdesk_items_lists_one_row_per_subject_unless_all_runs(rescanned, sealdesk_main):
    ws, _ = rescanned
    root = ws.root
    rows = json.loads(sealdesk_main("items", "--json", workspace=root, check=True).stdout)
    assert [(r["item_id"], r["earlier"], r["newest"]) for r in rows] == [
        ("a2", 1, True),
        ("b2", 1, True),
        ("c2", 1, True),
    ]
    every = json.loads(
        sealdesk_main("items", "--json", "--all-runs", workspace=root, check=True).stdout
    )
    assert [r["item_id"] for r in every] == ["a1", "a2", "b1", "b2", "c1", "c2"]
    text = sealdesk_main("items", workspace=root, check=True).stdout
    assert "3 item(s), one per subject, of 6 held: the newest run's (--all-runs lists" in text
    assert "+1 earlier" in text
    assert "6 item(s)\n" in sealdesk_main("items", "--all-runs", workspace=root).stdout
    summary = sealdesk_main("signoff", "--summary-only", workspace=root).stdout
    assert "flagged_pairs: 3 subjects over 6 items" in summary
