"""A decision's reason in the review app, by key presses: X (or x when the config asks)
opens the queue's reasons, one digit signs with one, Enter or the decision's own key
again signs none, Esc signs nothing; the history shows the reason, and the pane shows
the queue's guidelines, sanitised, while their SHA-256 is signed in each decision."""

from __future__ import annotations

import sqlite3

import pytest

from engine.canonical import sha256_hex, strict_loads
from engine.ledger.signers import FileSigner
from engine.signoff.verify import verify_workspace
from reviewer.app import ReviewApp
from reviewer.modals import ReasonScreen
from reviewer.session import open_session
from tests.support.review_app import records, text_of

SIZE = (100, 30)
PAIRS = "flagged_pairs"
pytestmark = pytest.mark.anyio


def app_for(desk, **kw) -> ReviewApp:
    return ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.rita)), **kw)


def data_of_last(ws):
    conn = sqlite3.connect(ws.db_path)
    try:
        (message,) = conn.execute(
            "SELECT message FROM records ORDER BY seq DESC LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    return strict_loads(message)["data"]


async def test_shift_x_then_a_digit_signs_a_reject_with_that_reason(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        first = app.review.queue_list.current.item_id
        await pilot.press("X")
        assert isinstance(app.screen, ReasonScreen)
        await pilot.press("2")
        assert not isinstance(app.screen, ReasonScreen)
        assert app.review.queue_list.cursor == 1
    (rec,) = records(desk.ws)
    assert rec[:4] == ("decision", PAIRS, first, "reject")
    assert data_of_last(desk.ws) == {"reason": "paraphrase"}
    assert verify_workspace(desk.ws).ok


@pytest.mark.parametrize("again", ["enter", "X", "x"])
async def test_enter_or_the_decision_key_again_signs_no_reason(desk, again):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("X", again)
        assert not isinstance(app.screen, ReasonScreen)
    (rec,) = records(desk.ws)
    assert rec[3] == "reject" and data_of_last(desk.ws) is None


async def test_escape_cancels_and_signs_nothing(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("A", "escape")
        assert not isinstance(app.screen, ReasonScreen)
        assert app.review.queue_list.cursor == 0
        assert "nothing signed" in app.review.message
    assert records(desk.ws) == []


async def test_a_digit_past_the_queues_reasons_signs_nothing(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("X", "9")  # flagged pairs have five reasons
        assert isinstance(app.screen, ReasonScreen)
        await pilot.press("escape")
    assert records(desk.ws) == []


async def test_with_ask_reason_set_x_asks_and_a_digit_signs(desk):
    app = app_for(desk, ask_reason=(PAIRS,))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        assert isinstance(app.screen, ReasonScreen)
        await pilot.press("5")
        await pilot.press("space")  # a skip never asks
        assert not isinstance(app.screen, ReasonScreen)
    reject, skip = records(desk.ws)
    assert (reject[3], skip[3]) == ("reject", "skip")
    assert data_of_last(desk.ws) is None


async def test_without_ask_reason_x_signs_at_once(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        assert not isinstance(app.screen, ReasonScreen)
    assert [r[3] for r in records(desk.ws)] == ["reject"]


async def test_the_history_shows_the_reason(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("X", "1")
        await pilot.press("k")  # back to the item just decided
        await pilot.pause()
        shown = text_of(app.review.query_one("#detail"))
    assert "reject · exact-copy" in shown


async def test_the_pane_shows_guidelines_sanitised_and_decisions_carry_their_sha256(desk, tmp_path):
    hostile = tmp_path / "pairs.md"
    hostile.write_bytes("Reject copies.\x1b[2J\x1b]52;c;cGF3bmVk\x07 Fake\u202e.\n".encode())
    desk.ws.set_guidelines(FileSigner(desk.lena), PAIRS, hostile)
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = text_of(app.review.query_one("#detail"))
        assert "guidelines" in shown and "Reject copies." in shown
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
        assert "␛[2J␛]52;c;cGF3bmVk␇" in shown and "⟨U+202E⟩" in shown
        # nothing of the file reaches the terminal as a control sequence
        screen = app.export_screenshot()
        assert "cGF3bmVk\x07" not in screen and "\x1b]52" not in screen
        await pilot.press("X", "3")
    assert data_of_last(desk.ws) == {
        "guidelines_sha256": sha256_hex(hostile.read_bytes()),
        "reason": "new-numbers",
    }
