"""The review app shows carried and re-opened items as such, driven by keys (Textual Pilot)."""

from __future__ import annotations

import pytest
from textual.geometry import Region

from reviewer.app import ReviewApp
from reviewer.session import open_session
from tests.support.review_app import queue_lines, records, settle
from tests.support.subjects import QUEUE, rescanned_twice

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


@pytest.fixture
def rescanned(workspace, enrol, keygen):
    """Gives (workspace, rita's key) after two runs (``rescanned_twice``)."""
    return rescanned_twice(workspace, enrol)


def shown(app: ReviewApp) -> str:
    """Gives the first lines the detail pane draws, as one line (the pane wraps them)."""
    detail = app.review.query_one("#detail")
    drawn = detail.render_lines(Region(0, 0, detail.size.width, 6))
    return " ".join(line for strip in drawn if (line := " ".join(strip.text.split())))


async def go_to(pilot, app: ReviewApp, item_id: str) -> None:
    for _ in range(app.review.queue_list.total):
        if app.review.queue_list.current.item_id == item_id:
            return
        await pilot.press("down")
    raise AssertionError(f"{item_id} is not in the list")


async def test_the_list_marks_carried_decisions_and_reopened_items(rescanned):
    ws, rita = rescanned
    app = ReviewApp(ws, open_session(ws, key=str(rita)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("v")  # every run's items: the decided ones and their re-runs
        await settle(pilot, lambda: app.review.queue_list.total == 6)
        drawn = queue_lines(app)
        assert drawn["a2"].startswith(" ↺  0.900 q-1 in run-2")
        assert drawn["b2"].startswith(" ✗ᶜ 0.500 q-2 in run-2")
        assert drawn["c2"].startswith(" ✓ᶜ 0.700 q-3 in run-2")
        assert drawn["a1"].startswith(" ✗  0.600 q-1 in run-1")  # decided on itself: no mark

        await go_to(pilot, app, "a2")
        header = shown(app)
        day = ws.item(QUEUE, "a1")["decision"]["time"][:10]
        assert f"↺ re-opened: new evidence since rita's reject of {day} on a1: " in header
        assert "on a1: new match pool:doc-2 match 1 of 2: pool doc-1" in header

        await go_to(pilot, app, "b2")
        header = shown(app)
        assert f"✗ᶜ reject carried: rita's reject of {day} on b1 (#" in header


async def test_changing_the_decided_item_re_reads_what_carries_to_its_subject(rescanned):
    # rita changes her mind on q-1's first item: the accept carries to the re-opened one.
    ws, rita = rescanned
    app = ReviewApp(ws, open_session(ws, key=str(rita)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("v")  # every run's items: the decided ones and their re-runs
        await settle(pilot, lambda: app.review.queue_list.total == 6)
        await go_to(pilot, app, "a1")
        await pilot.press("a")
        await settle(pilot, lambda: queue_lines(app)["a2"].startswith(" ✓ᶜ 0.900"))
        # The re-opened item's own decision, once made, is shown without the mark.
        await go_to(pilot, app, "b2")
        await pilot.press("a")
        await settle(pilot, lambda: queue_lines(app)["b2"].startswith(" ✓  0.500"))
    assert [r[2:5] for r in records(ws)][3:] == [("a1", "accept", "rita"), ("b2", "accept", "rita")]
    assert ws.item(QUEUE, "a2")["carried_from"]["item_id"] == "a1"
