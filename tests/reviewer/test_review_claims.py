"""Two people on one queue are not sent to the same item, by key presses: the app claims
the undecided item it shows, opens on (and goes on to) an item nobody else holds, says
who holds one opened anyway, still lets it be decided, and gives its claim back on
quitting. What is checked is the screen and the claims in the workspace's database.

Two apps at once, each over its own SSH session, are in test_review_signoff_ssh.py.
"""

from __future__ import annotations

import time

import pytest

from engine.item_query import ItemFilter
from reviewer.app import ReviewApp
from reviewer.session import open_session
from tests.support.review_app import claim_holders, records, settle, text_of

SIZE = (100, 30)
PAIRS = "flagged_pairs"
pytestmark = pytest.mark.anyio


def detail(app: ReviewApp) -> str:
    return text_of(app.review.query_one("#detail"))


def current(app: ReviewApp) -> str | None:
    row = app.review.queue_list.current
    return row.item_id if row is not None else None


def claim_as(ws, who: str, item_id: str, now: float | None = None) -> None:
    """Claims an item as who would from their own app or `sealdesk claim`."""
    with ws.another() as theirs:
        theirs.viewer = who
        theirs.claim(PAIRS, [item_id], seconds=600, now=now)


@pytest.fixture
def first_three(desk):
    rows = desk.ws.page(PAIRS, ItemFilter(status="undecided", newest_only=True), "score_desc", 0, 3)
    return [r.item_id for r in rows]


async def test_the_app_opens_past_an_item_a_colleague_holds_and_says_whose_it_is(
    desk, enrol, first_three
):
    sam = enrol("sam", "reviewer")
    ws = desk.ws
    first, second, third = first_three
    claim_as(ws, "rita", first)
    app = ReviewApp(ws, open_session(ws, key=str(sam.path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: current(app) == second)
        assert claim_holders(ws) == {first: "rita", second: "sam"}
        assert "is on this item" not in detail(app)
        await pilot.press("k")  # up to the one rita holds: shown, said, not taken
        await settle(pilot, lambda: current(app) == first)
        await settle(pilot, lambda: "rita is on this item since" in detail(app))
        assert "· ⏎ goes to a free one" in detail(app)
        assert claim_holders(ws) == {first: "rita", second: "sam"}
        await pilot.press("enter")  # the next undecided item: one nobody else holds
        await settle(pilot, lambda: current(app) == second)
        await pilot.press("x")
        # decided, it goes on to the next free one and holds that instead
        await settle(pilot, lambda: current(app) == third)
        await settle(pilot, lambda: claim_holders(ws) == {first: "rita", third: "sam"})
    assert claim_holders(ws) == {first: "rita"}  # quitting gave sam's claim back at once
    assert [(r[2], r[3], r[4]) for r in records(ws)] == [(second, "reject", "sam")]


async def test_an_item_held_by_a_colleague_can_still_be_decided(desk, enrol, first_three):
    sam = enrol("sam", "reviewer")
    ws = desk.ws
    first, second, _ = first_three
    claim_as(ws, "rita", first)
    app = ReviewApp(ws, open_session(ws, key=str(sam.path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: current(app) == second)
        await pilot.press("k")
        await settle(pilot, lambda: "rita is on this item" in detail(app))
        await pilot.press("a")  # a claim is advice: the decision is signed
        await settle(pilot, lambda: len(records(ws)) == 1)
    assert [(r[2], r[3], r[4]) for r in records(ws)] == [(first, "accept", "sam")]
    # rita's claim runs out on its own; a decided item is shown as nobody's work
    (row,) = [r for r in ws.items(queue=PAIRS) if r["item_id"] == first]
    assert row["status"] == "accept" and row["claim"] is None


async def test_a_claim_that_ran_out_holds_nothing(desk, enrol, first_three):
    sam = enrol("sam", "reviewer")
    ws = desk.ws
    first, _, _ = first_three
    claim_as(ws, "rita", first, now=time.time() - 3600)  # her app crashed an hour ago
    app = ReviewApp(ws, open_session(ws, key=str(sam.path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: current(app) == first)
        await settle(pilot, lambda: claim_holders(ws) == {first: "sam"})
        assert "is on this item" not in detail(app)


async def test_a_read_only_session_claims_nothing(desk, first_three, monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    ws = desk.ws
    app = ReviewApp(ws, open_session(ws, key=None))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: current(app) is not None)
        await pilot.press("j", "j")
        await settle(pilot, lambda: current(app) is not None)
        assert claim_holders(ws) == {}


async def test_when_colleagues_hold_every_undecided_item_the_app_says_so(desk, enrol):
    sam = enrol("sam", "reviewer")
    ws = desk.ws
    undecided = [
        r.item_id
        for r in ws.page(PAIRS, ItemFilter(status="undecided", newest_only=True), "id_asc", 0, 500)
    ]
    claim_as(ws, "rita", undecided[0])
    with ws.another() as theirs:
        theirs.viewer = "lena"
        theirs.claim(PAIRS, undecided[1:], seconds=600)
    app = ReviewApp(ws, open_session(ws, key=str(sam.path)))
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, lambda: current(app) is not None)
        await pilot.press("1", "enter")
        await settle(pilot, lambda: "held by colleagues" in app.review.message)
        assert f"the {len(undecided)} undecided item(s) here are held by colleagues" in (
            app.review.message
        )
        assert "outside the filter" not in app.review.message
    assert set(claim_holders(ws).values()) == {"rita", "lena"}  # sam's app took none of theirs


async def test_one_who_holds_the_most_claims_reviews_on_without_one(
    desk, enrol, first_three, monkeypatch
):
    from engine import claims

    monkeypatch.setattr(claims, "MAX_HELD", 2)
    sam = enrol("sam", "reviewer")
    ws = desk.ws
    first, second, third = first_three
    # sam holds two items from the command line, far down the queue: the most he may
    far = ws.page(PAIRS, ItemFilter(status="undecided", newest_only=True), "score_asc", 0, 2)
    for row in far:
        claim_as(ws, "sam", row.item_id)
    app = ReviewApp(ws, open_session(ws, key=str(sam.path)))
    async with app.run_test(size=SIZE) as pilot:
        # the first item is shown, not claimed (he may hold no more), and no colleague's
        await settle(pilot, lambda: current(app) == first)
        assert "is on this item" not in detail(app)
        await pilot.press("x")
        await settle(pilot, lambda: current(app) == second)
    assert [(r[2], r[3], r[4]) for r in records(ws)] == [(first, "reject", "sam")]
    assert sorted(claim_holders(ws)) == sorted(r.item_id for r in far)
