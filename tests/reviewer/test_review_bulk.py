"""Bulk decisions, never blind, driven by keys: a duplicate cluster or a marked selection
is shown in full, then one key signs one record per item in one transaction."""

from __future__ import annotations

import sqlite3

import pytest

from engine.signoff.verify import verify_workspace
from engine.workspace import BacklogItem, Workspace
from reviewer.app import ReviewApp
from reviewer.bulk_screen import BulkScreen
from reviewer.session import open_session
from tests.support.review_app import notices, records, settle, text_of
from tests.support.review_payloads import CLUSTER, clustered_pairs

SIZE = (120, 36)
pytestmark = pytest.mark.anyio
PAIRS = "flagged_pairs"


class Desk:
    def __init__(self, ws: Workspace, enrol) -> None:
        self.ws = ws
        ws.ingest(
            clustered_pairs(),
            runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}},
        )
        self.rita = enrol("rita", "reviewer")
        self.ravi = enrol("ravi", "reviewer")
        self.lena = enrol("lena", "lead", "reviewer")

    def app(self, signer=None) -> ReviewApp:
        key = (signer or self.rita).path
        return ReviewApp(self.ws, open_session(self.ws, key=str(key)))


@pytest.fixture
def desk(workspace, enrol) -> Desk:
    return Desk(workspace, enrol)


def cursor_item(app: ReviewApp) -> str:
    return app.review.queue_list.current.item_id


def dialog_text(app: ReviewApp) -> str:
    screen = app.screen
    assert isinstance(screen, BulkScreen)
    items = screen.query_one("#bulk-items")
    rows = [str(items.get_option_at_index(i).prompt) for i in range(items.option_count)]
    return text_of(screen.query_one("#bulk-summary")) + "\n" + "\n".join(rows)


async def open_bulk(app: ReviewApp, pilot, key: str) -> str:
    await pilot.press(key)
    await settle(pilot, lambda: isinstance(app.screen, BulkScreen))
    return dialog_text(app)


def data_of(ws, item_id: str, principal: str) -> str | None:
    """Gives the signed data (canonical JSON) of a principal's decision on an item."""
    conn = sqlite3.connect(ws.db_path)
    try:
        (data,) = conn.execute(
            "SELECT json_extract(message, '$.data') FROM records WHERE item_id=? "
            "AND principal=? AND kind='decision'",
            (item_id, principal),
        ).fetchone()
    finally:
        conn.close()
    return data


async def test_c_shows_the_cluster_and_one_key_signs_one_record_per_member(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        assert cursor_item(app) == "fp-q-1"
        shown = await open_bulk(app, pilot, "c")
        await pilot.press("a")
        await settle(pilot, lambda: len(records(desk.ws)) == 3)
        await settle(pilot, lambda: app.screen is app.review and not app.review.bulk_signing)
        status = text_of(app.review.query_one("#status-bar"))
        at = cursor_item(app)
    assert "3 item(s) will be signed as rita (reviewer)" in shown
    for eval_id in ("q-1", "q-2", "q-3"):
        assert f"eval {eval_id}" in shown and f"fp-{eval_id}" in shown
    assert "eval q-9 (#9)" in shown and "no item of this queue and run" in shown
    assert [r[:6] for r in records(desk.ws)] == [
        ("decision", PAIRS, f"fp-{e}", "accept", "rita", "reviewer") for e in ("q-1", "q-2", "q-3")
    ]
    for eval_id, _, _ in CLUSTER:  # each record binds exactly the bytes of its own item
        item = desk.ws.item(PAIRS, f"fp-{eval_id}")
        assert item["decision"]["decision"] == "accept"
    assert "accept on 3 item(s), one signed record each" in status
    assert at == "fp-s0"  # off the cluster, on to the first undecided row
    assert verify_workspace(desk.ws).ok


async def test_cluster_members_are_navigable(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        await open_bulk(app, pilot, "c")
        await pilot.press("j", "enter")  # the second member, q-2
        await settle(pilot, lambda: app.screen is app.review)
        assert cursor_item(app) == "fp-q-2"
        await open_bulk(app, pilot, "c")
        await pilot.press("j", "j", "enter")  # q-3; q-9 below it is no item, not selectable
        await settle(pilot, lambda: app.screen is app.review)
        assert cursor_item(app) == "fp-q-3"
    assert records(desk.ws) == []


async def test_escape_signs_nothing(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        await open_bulk(app, pilot, "c")
        await pilot.press("escape")
        assert app.screen is app.review
        assert "bulk decision cancelled: nothing signed" in text_of(
            app.review.query_one("#status-bar")
        )
    assert records(desk.ws) == []


async def test_the_dialog_lists_an_overrule_and_the_record_names_what_it_replaces(desk):
    theirs = desk.ws.decide(desk.ravi, PAIRS, "fp-q-2", "accept")
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        shown = await open_bulk(app, pilot, "c")
        await pilot.press("x")
        await settle(pilot, lambda: len(records(desk.ws)) == 4)
    flat = " ".join(shown.split())
    assert "3 item(s) will be signed as rita (reviewer), 1 of them overruling" in flat
    assert "accept by ravi (reviewer)" in flat and "→ OVERRULES it" in flat
    assert data_of(desk.ws, "fp-q-2", "rita") == f'{{"overrules":"{theirs.record_hash}"}}'
    assert data_of(desk.ws, "fp-q-1", "rita") is None
    assert verify_workspace(desk.ws).ok


async def test_a_decision_landing_after_the_dialog_was_shown_makes_it_sign_nothing(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        shown = await open_bulk(app, pilot, "c")
        with Workspace.open(desk.ws.root) as other:  # ravi decides a member meanwhile
            other.decide(desk.ravi, PAIRS, "fp-q-3", "reject")
        await pilot.press("a")
        await settle(pilot, lambda: "nothing was signed" in notices(app))
    assert "OVERRULES" not in shown
    assert [r[4] for r in records(desk.ws)] == ["ravi"]


async def test_marked_items_are_decided_together_and_only_they(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m", "j", "m")  # fp-q-1 and fp-s1 (m moves down, j skips fp-s0)
        assert "2 marked" in text_of(app.review.query_one("#filter-line"))
        shown = await open_bulk(app, pilot, "D")
        await pilot.press("x")
        await settle(pilot, lambda: len(records(desk.ws)) == 2)
        await settle(pilot, lambda: not app.review.bulk_signing)
        line = text_of(app.review.query_one("#filter-line"))
    assert "2 item(s) will be signed" in shown
    assert [r[2:4] for r in records(desk.ws)] == [("fp-q-1", "reject"), ("fp-s1", "reject")]
    assert "marked" not in line  # the marks went with the decision


async def test_filter_then_mark_all_selects_what_is_shown(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"template", "enter")
        await settle(pilot, lambda: app.review.queue_list.total == 2)
        await pilot.press("M")
        await pilot.press("escape")  # the whole queue again; the marks stay
        await settle(pilot, lambda: app.review.queue_list.total == 7)
        shown = await open_bulk(app, pilot, "D")
        await pilot.press("x")
        await settle(pilot, lambda: len(records(desk.ws)) == 2)
    assert "fp-s1" in shown and "fp-s2" in shown and "fp-s0" not in shown
    assert {r[2] for r in records(desk.ws)} == {"fp-s1", "fp-s2"}


async def test_mark_all_again_unmarks_and_decide_marked_with_none_says_how_to_mark(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("M")
        assert "7 marked" in text_of(app.review.query_one("#filter-line"))
        await pilot.press("M", "D")
        assert app.screen is app.review
    assert "nothing is marked in this queue: m marks the highlighted item, M every" in notices(app)
    assert records(desk.ws) == []


async def test_an_item_decided_in_a_higher_role_is_listed_and_left_out(desk, workspace):
    weak = [
        BacklogItem.make(
            "weak_categories", f"weak-{n}", "run-1", {"summary": {"title": f"w{n}", "score": n}}
        )
        for n in range(2)
    ]
    workspace.ingest(weak)
    workspace.decide(desk.lena, "weak_categories", "weak-1", "reject", role="lead")
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "M")
        shown = await open_bulk(app, pilot, "D")
        await pilot.press("a")
        await settle(pilot, lambda: len(records(desk.ws)) == 2)
    flat = " ".join(shown.split())
    assert "1 item(s) will be signed as rita (reviewer); 1 left out (listed)" in flat
    assert "reject by lena (lead)" in flat and "left as it is: decided in a higher role" in flat
    assert records(desk.ws)[-1][2:5] == ("weak-0", "accept", "rita")


async def test_after_a_bulk_decision_the_next_key_skips_what_it_decided(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        await open_bulk(app, pilot, "c")
        await pilot.press("a")
        await settle(pilot, lambda: len(records(desk.ws)) == 3)
        await settle(pilot, lambda: not app.review.bulk_signing)
        await pilot.press("x", "x", "x", "x")  # fp-s0, fp-s1, fp-s2, then fp-s3 past fp-q-2
    assert [r[2] for r in records(desk.ws)[3:]] == ["fp-s0", "fp-s1", "fp-s2", "fp-s3"]


async def test_a_read_only_session_sees_the_cluster_but_signs_nothing(desk):
    from reviewer.session import read_only_session

    app = ReviewApp(desk.ws, read_only_session("started with --read-only"))
    async with app.run_test(size=SIZE) as pilot:
        await open_bulk(app, pilot, "c")
        await pilot.press("a")
        await settle(pilot, lambda: app.screen is app.review)
        assert "read-only session" in notices(app)
    assert records(desk.ws) == []


async def test_the_detail_of_a_cluster_member_names_the_key_that_lists_the_members(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        member = text_of(app.review.query_one("#detail"))
        await pilot.press("j")  # fp-s0, in no cluster
        await pilot.pause()
        single = text_of(app.review.query_one("#detail"))
    assert "duplicate cluster of 4 · c lists its members" in member
    assert "duplicate cluster" not in single


async def palette(app: ReviewApp, pilot, title: str) -> None:
    await pilot.press("ctrl+p", *title)
    await settle(
        pilot,
        lambda: (
            app.screen.query("CommandList")
            and title in str(app.screen.query_one("CommandList").get_option_at_index(0).prompt)
        ),
    )
    await pilot.press("enter")


async def test_the_palette_shows_the_marked_items_only_and_clears_the_marks(desk):
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m", "j", "m")  # fp-q-1 and fp-s1
        await palette(app, pilot, "Show the marked items only")
        await settle(pilot, lambda: app.review.queue_list.total == 2)
        only = text_of(app.review.query_one("#filter-line"))
        await palette(app, pilot, "Clear the marks")
        await settle(
            pilot, lambda: "no item is marked" in text_of(app.review.query_one("#status-bar"))
        )
        await pilot.press("D")
    assert "only marked (2)" in only and "2 marked" in only
    assert "nothing is marked in this queue" in notices(app)
    assert records(desk.ws) == []


async def test_a_cluster_listing_more_members_than_can_be_shown_is_refused(desk, workspace):
    members = [{"id": f"m-{n}", "index": n} for n in range(1001)]
    workspace.ingest(
        [
            BacklogItem.make(
                PAIRS,
                "fp-huge",
                "run-1",
                {
                    "eval": {"id": "m-0", "index": 0, "text": "huge"},
                    "matches": [],
                    "cluster": members,
                    "summary": {"title": "huge cluster", "score": 0.99, "tags": []},
                },
            )
        ]
    )
    app = desk.app()
    async with app.run_test(size=SIZE) as pilot:
        assert cursor_item(app) == "fp-huge"
        await pilot.press("c")
        await pilot.pause()
        assert app.screen is app.review
    assert "fp-huge's cluster lists 1,001 members, more than 1000 to show at once" in notices(app)
    assert records(desk.ws) == []
