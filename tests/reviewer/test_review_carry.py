"""The review app shows carried and re-opened items as such, driven by keys (Textual Pilot)."""

from __future__ import annotations

import pytest
from textual.geometry import Region

from reviewer.app import ReviewApp
from reviewer.session import open_session
from tests.support.review_app import records, settle
from tests.support.subjects import QUEUE, flagged

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


@pytest.fixture
def rescanned(workspace, enrol, keygen):
    """Gives (workspace, rita's key): rita rejected q-1 and q-2 and accepted q-3 on the
    first run; the second run found q-1 with a new match (re-opened), q-2 with nothing new
    (the reject carries) and q-3 with a new match (the accept carries regardless)."""
    rita = enrol("rita", "reviewer")
    workspace.ingest(
        [
            flagged("a1", "run-1", "q-1", {"doc-1": 0.6}),
            flagged("b1", "run-1", "q-2", {"doc-3": 0.5}),
            flagged("c1", "run-1", "q-3", {"doc-4": 0.4}),
        ]
    )
    for item_id, decision in (("a1", "reject"), ("b1", "reject"), ("c1", "accept")):
        workspace.decide(rita, QUEUE, item_id, decision)
    workspace.ingest(
        [
            flagged("a2", "run-2", "q-1", {"doc-1": 0.6, "doc-2": 0.9}),
            flagged("b2", "run-2", "q-2", {"doc-3": 0.5}),
            flagged("c2", "run-2", "q-3", {"doc-4": 0.4, "doc-5": 0.7}),
        ]
    )
    return workspace, rita.path


def lines(app: ReviewApp) -> dict[str, str]:
    """Gives the queue list's drawn line per item id (every row fits on the screen)."""
    lst = app.review.queue_list
    return {lst.row(i).item_id: lst.render_line(i).text for i in range(lst.total)}


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
        drawn = lines(app)
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
        await settle(pilot, lambda: lines(app)["a2"].startswith(" ✓ᶜ 0.900"))
        # The re-opened item's own decision, once made, is shown without the mark.
        await go_to(pilot, app, "b2")
        await pilot.press("a")
        await settle(pilot, lambda: lines(app)["b2"].startswith(" ✓  0.500"))
    assert [r[2:5] for r in records(ws)][3:] == [("a1", "accept", "rita"), ("b2", "accept", "rita")]
    assert ws.item(QUEUE, "a2")["carried_from"]["item_id"] == "a1"
