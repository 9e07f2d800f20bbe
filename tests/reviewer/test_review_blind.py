"""Blind double review in the app, by key presses: under a plan asking two decisions on
every flagged pair, the second reviewer sees neither the first one's decision nor who
made it until they have decided, decides without being asked to overrule, and then sees
the disagreement; what is checked is the screen and the signed ledger."""

from __future__ import annotations

import pytest
from textual.screen import ModalScreen

from engine.canonical import strict_loads
from engine.ledger.signers import FileSigner
from reviewer.app import ReviewApp
from reviewer.session import open_session
from reviewer.signoff_screen import SignoffScreen
from tests.support.review_app import settle, text_of
from tests.support.review_payloads import numbered_pairs

SIZE = (100, 30)
PAIRS = "flagged_pairs"
pytestmark = pytest.mark.anyio


@pytest.fixture
def planned(desk, enrol):
    sam = enrol("sam", "reviewer")
    desk.ws.set_plan(
        FileSigner(desk.lena),
        {PAIRS: {"k": 2, "share": 1.0, "seed": 1, "principals": ["rita", "sam"]}},
    )
    return desk, sam.path


def detail(app: ReviewApp) -> str:
    return text_of(app.review.query_one("#detail"))


def bodies(ws, item_id: str) -> list[dict]:
    return [
        strict_loads(m)
        for (m,) in ws.conn.execute(
            "SELECT message FROM records WHERE kind='decision' AND item_id=? ORDER BY seq",
            (item_id,),
        )
    ]


async def test_the_second_reviewer_decides_blind_and_then_sees_the_disagreement(planned):
    desk, sam_key = planned
    rita = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.rita)))
    async with rita.run_test(size=SIZE) as pilot:
        await pilot.press("1")  # the flagged pairs
        item = rita.review.queue_list.current.item_id
        assert "double review" in detail(rita) and "blind" in detail(rita)
        await pilot.press("a")
        await settle(pilot, lambda: len(bodies(desk.ws, item)) == 1)
    with desk.ws.another() as ws:
        sam = ReviewApp(ws, open_session(ws, key=str(sam_key)))
        async with sam.run_test(size=SIZE) as pilot:
            await pilot.press("1")
            await settle(pilot, lambda: sam.review.queue_list.current is not None)
            assert sam.review.queue_list.current.item_id == item  # still undecided to sam
            shown = detail(sam)
            assert "1 of 2 in" in shown and "blind" in shown
            assert "rita" not in shown and "accept" not in shown.split("history")[-1]
            await pilot.press("x")
            assert not isinstance(sam.screen, ModalScreen)  # nobody is overruled
            await settle(pilot, lambda: len(bodies(ws, item)) == 2)
            await pilot.press("k")  # back to the item just decided
            await settle(pilot, lambda: "unresolved" in detail(sam))
            assert "rita (reviewer) accept" in detail(sam)
    said = bodies(desk.ws, item)
    assert [(b["principal"], b["decision"]) for b in said] == [
        ("rita", "accept"),
        ("sam", "reject"),
    ]
    assert all(b["data"]["plan"]["blind"] is True for b in said)


async def test_the_leads_sign_off_shows_the_plan_and_the_agreement_and_waits_for_it(planned):
    desk, sam_key = planned
    ids = [r[0] for r in desk.ws.conn.execute(
        "SELECT item_id FROM items WHERE queue = ? ORDER BY item_id", (PAIRS,)
    )]  # fmt: skip
    rita, sam = FileSigner(desk.rita), FileSigner(sam_key)
    for n, item in enumerate(ids):
        desk.ws.decide(rita, PAIRS, item, "accept" if n % 3 else "reject")
        desk.ws.decide(sam, PAIRS, item, "accept" if n % 3 or n == 0 else "reject")
    lead = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.lena)))
    async with lead.run_test(size=(120, 60)) as pilot:
        await pilot.press("S")
        await settle(
            pilot,
            lambda: isinstance(lead.screen, SignoffScreen) and lead.screen.summary is not None,
        )
        shown = text_of(lead.screen.query_one("#signoff-body"))
        assert f"{len(ids) - 1} unanimous, 0 adjudicated, 1 unresolved, 0 pending" in shown
        assert "Gwet's AC1" in shown and "rita vs sam" in shown
        assert "1 disagreement(s) unresolved" in shown and "READY" not in shown.replace(
            "NOT READY", ""
        )


async def test_a_reviewer_opens_on_their_own_share_of_the_plan_first(desk, enrol):
    """With three people asked for two decisions each, the app opens the queue on the first
    item the plan assigns to the reviewer, not on the first item listed."""
    from engine.ledger.plan import assigned

    enrol("sam", "reviewer")
    enrol("tom", "reviewer")
    ws = desk.ws
    listed = [r.item_id for r in ws.page(PAIRS, sort="score_desc", limit=1000)]
    for seed in range(50):  # a seed whose first listed item is not rita's
        plan = {"k": 2, "share": 1.0, "seed": seed, "principals": ["rita", "sam", "tom"]}
        if "rita" not in assigned(plan, PAIRS, listed[0]):
            break
    ws.set_plan(FileSigner(desk.lena), {PAIRS: plan})
    first_mine = next(i for i in listed if "rita" in assigned(plan, PAIRS, i))
    rita = ReviewApp(ws, open_session(ws, key=str(desk.rita)))
    async with rita.run_test(size=SIZE) as pilot:
        await pilot.press("1")
        await settle(pilot, lambda: rita.review.queue_list.current is not None)
        assert listed[0] != first_mine
        assert rita.review.queue_list.current.item_id == first_mine
        assert "you: 0/" in detail(rita)


async def test_the_adjudicator_opens_on_the_disagreement(planned):
    """Items the two reviewers agree on come first in the list; the adjudicator's app opens
    on the one they disagree on."""
    desk, sam_key = planned
    ws = desk.ws
    listed = [r.item_id for r in ws.page(PAIRS, sort="score_desc", limit=1000)]
    rita, sam = FileSigner(desk.rita), FileSigner(sam_key)
    for item in listed[:3]:
        ws.decide(rita, PAIRS, item, "accept")
        ws.decide(sam, PAIRS, item, "accept" if item != listed[2] else "reject")
    adam = ReviewApp(ws, open_session(ws, key=str(desk.adam)))
    async with adam.run_test(size=SIZE) as pilot:
        await pilot.press("1")
        await settle(pilot, lambda: adam.review.queue_list.current is not None)
        assert adam.review.queue_list.current.item_id == listed[2]
        shown = detail(adam)
        # not one of the plan's raters, the adjudicator sees both decisions
        assert "unresolved" in shown and "blind" not in shown
        assert "rita (reviewer) accept" in shown and "sam (reviewer) reject" in shown
        await pilot.press("x")
        await settle(pilot, lambda: len(bodies(ws, listed[2])) == 3)
    body = bodies(ws, listed[2])[-1]
    assert body["principal"] == "adam" and body["role"] == "adjudicator"
    assert len(body["data"]["plan"]["resolves"]) == 2


async def test_the_adjudicator_lists_the_disputed_items_and_resolves_one_from_the_list(planned):
    desk, sam_key = planned
    ids = [r[0] for r in desk.ws.conn.execute(
        "SELECT item_id FROM items WHERE queue = ? ORDER BY item_id", (PAIRS,)
    )]  # fmt: skip
    rita, sam = FileSigner(desk.rita), FileSigner(sam_key)
    disputed, agreed = ids[3], ids[4]
    desk.ws.decide(rita, PAIRS, disputed, "accept")
    desk.ws.decide(sam, PAIRS, disputed, "reject")
    desk.ws.decide(rita, PAIRS, agreed, "reject")
    desk.ws.decide(sam, PAIRS, agreed, "reject")
    adam = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.adam)))
    async with adam.run_test(size=SIZE) as pilot:
        await pilot.press("1", "d")
        await settle(pilot, lambda: isinstance(adam.screen, ModalScreen))
        listed = text_of_options(adam.screen)
        assert f"{disputed}" in listed and "rita accept · sam reject (2 of 2 in)" in listed
        assert agreed not in listed
        await pilot.press("enter")
        await settle(pilot, lambda: not isinstance(adam.screen, ModalScreen))
        await settle(pilot, lambda: adam.review.queue_list.current.item_id == disputed)
        assert adam.review.queue_list.total == 1  # only the disputed items are listed
        assert "only disputed (1)" in text_of(adam.review.query_one("#filter-line"))
        await pilot.press("a")
        await settle(pilot, lambda: len(bodies(desk.ws, disputed)) == 3)
        await pilot.press("d")
        await settle(pilot, lambda: "no disputed items in" in adam.review.message)
    resolution = bodies(desk.ws, disputed)[-1]
    assert (resolution["principal"], resolution["decision"]) == ("adam", "accept")
    assert len(resolution["data"]["plan"]["resolves"]) == 2


def text_of_options(screen) -> str:
    from textual.widgets import OptionList

    options = screen.query_one(OptionList)
    return "\n".join(
        str(options.get_option_at_index(i).prompt) for i in range(options.option_count)
    )


async def test_an_adjudicator_with_nothing_of_her_own_opens_on_the_disagreement(
    workspace, enrol, founder_key
):
    """The pairs are not an adjudicator's own queue, but a plan's disagreements there are
    her work: with her own queues empty, the app opens the pairs on the disagreement
    rather than on an empty queue of her own."""
    ws = workspace
    ws.ingest(numbered_pairs(4))
    rita, sam = enrol("rita", "reviewer"), enrol("sam", "reviewer")
    ada = enrol("ada", "adjudicator")
    ws.set_plan(
        FileSigner(founder_key),
        {PAIRS: {"k": 2, "share": 1.0, "seed": 1, "principals": ["rita", "sam"]}},
    )
    listed = [r.item_id for r in ws.page(PAIRS, sort="score_desc", limit=1000)]
    for item in listed:
        ws.decide(rita, PAIRS, item, "accept")
        ws.decide(sam, PAIRS, item, "accept" if item != listed[1] else "reject")
    app = ReviewApp(ws, open_session(ws, key=str(ada.path)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.review.queue_list.current is not None)
        assert app.review.queue == PAIRS
        assert app.review.queue_list.current.item_id == listed[1]
        assert "unresolved" in detail(app)
