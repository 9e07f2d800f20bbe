"""A decision carried to a re-run's item stands in the app as its maker's, driven by keys
(Textual Pilot) and checked against what is durably in the ledger: a decision key on it
asks to overrule it (or refuses, when it was made in a higher role), and a bulk decision
lists it as decided and applies the same rule."""

from __future__ import annotations

import sqlite3

import pytest
from textual.screen import ModalScreen

from engine.signoff.verify import verify_workspace
from reviewer.app import ReviewApp
from reviewer.bulk_screen import BulkScreen
from reviewer.session import open_session
from tests.support.review_app import notices, records, settle, text_of
from tests.support.subjects import WEAK, weak

SIZE = (120, 36)
pytestmark = pytest.mark.anyio


@pytest.fixture
def rerun(workspace, enrol):
    """Gives (workspace, rita's key, lena's accept, ravi's accept): in the first run lena
    accepted weak category wc-0 as lead and ravi wc-1 as reviewer; a re-run found each
    category again with one more miss (wc-0b, wc-1b), to which the accepts carry."""
    rita, ravi, lena = enrol("rita", "reviewer"), enrol("ravi", "reviewer"), enrol("lena", "lead")
    workspace.ingest(
        [
            weak("wc-0", "run-1", "obfuscation", ["obf-1"]),
            weak("wc-1", "run-1", "paraphrase", ["par-1"]),
        ]
    )
    lead = workspace.decide(lena, WEAK, "wc-0", "accept", role="lead")
    peer = workspace.decide(ravi, WEAK, "wc-1", "accept")
    workspace.ingest(
        [
            weak("wc-0b", "run-2", "obfuscation", ["obf-1", "obf-2"]),
            weak("wc-1b", "run-2", "paraphrase", ["par-1", "par-2"]),
        ]
    )
    return workspace, rita.path, lead, peer


def lines(app: ReviewApp) -> dict[str, str]:
    """Gives the queue list's drawn line per item id (every row fits on the screen)."""
    lst = app.review.queue_list
    return {lst.row(i).item_id: lst.render_line(i).text for i in range(lst.total)}


async def open_weak_queue(app: ReviewApp, pilot) -> None:
    await pilot.press("3", "v")  # every run's items: the decided ones and their re-runs
    await settle(pilot, lambda: app.review.queue_list.total == 4)


async def go_to(pilot, app: ReviewApp, item_id: str) -> None:
    await pilot.press("g")  # the top, then down to it
    for _ in range(app.review.queue_list.total):
        if app.review.queue_list.current.item_id == item_id:
            return
        await pilot.press("down")
    raise AssertionError(f"{item_id} is not in the list")


def data_of(ws, seq: int) -> str | None:
    conn = sqlite3.connect(ws.db_path)
    try:
        (data,) = conn.execute(
            "SELECT json_extract(message, '$.data') FROM records WHERE seq=?", (seq,)
        ).fetchone()
    finally:
        conn.close()
    return data


@pytest.mark.parametrize("key", ["a", "x"])
async def test_a_key_on_a_leads_carried_decision_is_refused(rerun, key):
    ws, rita, lead, _ = rerun
    before = records(ws)
    app = ReviewApp(ws, open_session(ws, key=str(rita)))
    async with app.run_test(size=SIZE) as pilot:
        await open_weak_queue(app, pilot)
        await go_to(pilot, app, "wc-0b")
        assert lines(app)["wc-0b"].startswith(" ✓ᶜ")
        await pilot.press(key)
        assert not isinstance(app.screen, ModalScreen)  # nothing to confirm: refused
        assert f"accept by lena as lead (#{lead.seq}, carried from wc-0)" in notices(app)
        await pilot.press("y")  # a stray y signs nothing either
    assert records(ws) == before


async def test_x_on_a_peers_carried_decision_asks_and_y_records_the_overrule(rerun):
    ws, rita, _, peer = rerun
    app = ReviewApp(ws, open_session(ws, key=str(rita)))
    async with app.run_test(size=SIZE) as pilot:
        await open_weak_queue(app, pilot)
        await go_to(pilot, app, "wc-1b")
        await pilot.press("x")
        assert isinstance(app.screen, ModalScreen)
        question = text_of(app.screen.query_one("#overrule-question"))
        assert f"accept by ravi as reviewer (#{peer.seq}, carried from wc-1)" in question
        await pilot.press("y")
        await settle(pilot, lambda: len(records(ws)) == 3)
        await settle(pilot, lambda: lines(app)["wc-1b"].startswith(" ✗  "))
    assert records(ws)[-1][2:6] == ("wc-1b", "reject", "rita", "reviewer")
    assert data_of(ws, peer.seq + 1) == f'{{"overrules":"{peer.record_hash}"}}'
    assert verify_workspace(ws).ok


async def test_bulk_lists_carried_items_as_decided_and_applies_the_rank_rule(rerun):
    ws, rita, lead, peer = rerun
    app = ReviewApp(ws, open_session(ws, key=str(rita)))
    async with app.run_test(size=SIZE) as pilot:
        await open_weak_queue(app, pilot)
        await pilot.press("M")
        await pilot.press("D")
        await settle(pilot, lambda: isinstance(app.screen, BulkScreen))
        screen = app.screen
        items = screen.query_one("#bulk-items")
        rows = {
            items.get_option_at_index(i).id: " ".join(
                str(items.get_option_at_index(i).prompt).split()
            )
            for i in range(items.option_count)
        }
        summary = text_of(screen.query_one("#bulk-summary"))
        await pilot.press("x")
        await settle(pilot, lambda: len(records(ws)) == 4)
        await settle(pilot, lambda: not app.review.bulk_signing)
    assert "2 item(s) will be signed as rita (reviewer), 2 of them overruling" in summary
    assert "2 left out (listed)" in summary
    assert rows["wc-0b"].startswith("✓ᶜ wc-0b")
    assert f"accept by lena (lead) #{lead.seq} on wc-0, carried" in rows["wc-0b"]
    assert "left as it is: decided in a higher role" in rows["wc-0b"]
    assert f"accept by ravi (reviewer) #{peer.seq} on wc-1, carried" in rows["wc-1b"]
    assert "OVERRULES it" in rows["wc-1b"]
    assert not any("undecided" in row for row in rows.values())
    assert "nothing was signed" not in notices(app)
    signed = records(ws)[2:]
    assert sorted(r[2:5] for r in signed) == [
        ("wc-1", "reject", "rita"),
        ("wc-1b", "reject", "rita"),
    ]
    # Listed first, wc-1b is signed first: each record names ravi's accept it replaced.
    assert [r[2] for r in signed] == ["wc-1b", "wc-1"]
    overrules = f'{{"overrules":"{peer.record_hash}"}}'
    assert [data_of(ws, peer.seq + n) for n in (1, 2)] == [overrules, overrules]
    assert ws.item(WEAK, "wc-0b")["carried_from"]["principal"] == "lena"  # left as it was
    assert verify_workspace(ws).ok
