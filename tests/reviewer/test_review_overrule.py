"""The review app never overrules silently, and the end of a queue is a state.

Driven by keys (Textual Pilot) and checked against what is durably in the
ledger: a decision key on another's decision asks first (``y`` overrules,
``n`` or Esc signs nothing), a lead's decision is not the reviewer's to
replace, the same decision again signs nothing, and after the last item
decision keys sign nothing more.
"""

from __future__ import annotations

import pytest
from textual.screen import ModalScreen

from engine.canonical import strict_loads
from engine.ledger.signers import FileSigner
from engine.signoff.verify import verify_workspace
from reviewer.app import ReviewApp, binding_ids
from reviewer.config import load_config
from reviewer.session import open_session
from tests.support.review_app import dialog_text, notices, records, text_of

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


def rita_app(desk) -> ReviewApp:
    return ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.rita)))


def cursor_item(app: ReviewApp) -> str:
    return app.review.queue_list.current.item_id


def status(app: ReviewApp) -> str:
    return text_of(app.review.query_one("#status-bar"))


def signed_body(ws, seq: int) -> dict:
    return strict_loads(
        ws.conn.execute("SELECT message FROM records WHERE seq=?", (seq,)).fetchone()[0]
    )


@pytest.mark.parametrize("key", ["a", "x"])
async def test_a_reviewer_cannot_overrule_the_leads_decision_in_the_app(desk, key):
    desk.ws.decide(
        FileSigner(desk.lena), "weak_categories", "weak-obfuscation", "accept", role="lead"
    )
    before = records(desk.ws)
    app = rita_app(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")  # the weak-categories queue
        assert cursor_item(app) == "weak-obfuscation"
        await pilot.press(key)
        assert not isinstance(app.screen, ModalScreen)  # nothing to confirm: refused
        assert f"accept by lena as lead (#{desk.ws.head()[0]})" in notices(app)
        await pilot.press("y")  # a stray y signs nothing either
    assert records(desk.ws) == before


@pytest.mark.parametrize("cancel", ["n", "escape"])
async def test_a_key_on_anothers_decision_asks_and_cancelling_signs_nothing(desk, cancel):
    desk.ws.decide(FileSigner(desk.lena), "flagged_pairs", "fp-n-0000", "reject", role="reviewer")
    app = rita_app(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")  # the app opens on the first undecided item: up to lena's
        assert cursor_item(app) == "fp-n-0000"
        await pilot.press("a")
        assert isinstance(app.screen, ModalScreen)
        question = text_of(app.screen.query_one("#overrule-question"))
        assert f"reject by lena as reviewer (#{desk.ws.head()[0]})" in question
        assert "Overrule" in question
        await pilot.press(cancel)
        assert not isinstance(app.screen, ModalScreen)
        assert cursor_item(app) == "fp-n-0000"  # still there, nothing signed
        assert "not overruled" in status(app)
    assert len(records(desk.ws)) == 1


async def test_y_in_the_dialog_records_the_overrule_naming_what_it_replaces(desk):
    theirs = desk.ws.decide(
        FileSigner(desk.lena), "flagged_pairs", "fp-n-0000", "reject", role="reviewer"
    )
    app = rita_app(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g", "a", "y")  # up to lena's decision (the app opens below it)
        assert cursor_item(app) == "fp-n-0001"  # signed, then on to the next
        assert app.review.queue_list.row(0).status == "accept"
    assert [r[2:6] for r in records(desk.ws)] == [
        ("fp-n-0000", "reject", "lena", "reviewer"),
        ("fp-n-0000", "accept", "rita", "reviewer"),
    ]
    assert signed_body(desk.ws, theirs.seq + 1)["data"] == {"overrules": theirs.record_hash}
    assert verify_workspace(desk.ws).ok


async def test_the_same_decision_twice_signs_once_in_the_app(desk):
    first = desk.ws.head()[0] + 1  # after the genesis and the enrolments
    app = rita_app(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")  # fp-n-0000, then the cursor moves on
        await pilot.press("k", "a")  # back to it: accept again
        assert f"already accept by you (#{first})" in status(app)
    assert [r[2:4] for r in records(desk.ws)] == [("fp-n-0000", "accept")]


async def test_repeated_keys_at_the_end_of_a_filtered_queue_sign_nothing_more(desk):
    app = rita_app(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s", "G")  # status undecided; the last item
        last = cursor_item(app)
        await pilot.press("a")
        assert len(records(desk.ws)) == 1
        await pilot.press("a", "x", "space", "x")
        assert len(records(desk.ws)) == 1
        assert cursor_item(app) == last and "end of queue" in status(app)
        await pilot.press("k", "j", "x")  # gone back to it: a change of mind
    assert [r[2:4] for r in records(desk.ws)] == [(last, "accept"), (last, "reject")]


async def test_u_on_anothers_decision_is_refused_and_signs_nothing(desk):
    desk.ws.decide(FileSigner(desk.lena), "flagged_pairs", "fp-n-0000", "reject", role="reviewer")
    before = records(desk.ws)
    app = rita_app(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")  # the app opens on the first undecided item: up to lena's
        assert cursor_item(app) == "fp-n-0000"
        await pilot.press("u")
        assert "is lena's; undo takes back only your own" in notices(app)
    assert records(desk.ws) == before


async def test_a_config_keymap_rebinds_the_overrule_confirmation_by_its_id(desk, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[keymap]\n"overrule.yes" = "o"\n', encoding="utf-8")
    config = load_config(path, known_binding_ids=binding_ids())
    desk.ws.decide(FileSigner(desk.lena), "flagged_pairs", "fp-n-0000", "reject", role="reviewer")
    app = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.rita)), keymap=config.keymap)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g", "a", "y")  # y is no longer the overrule key
        assert isinstance(app.screen, ModalScreen)
        await pilot.press("o")
        assert cursor_item(app) == "fp-n-0001"
    assert [r[2:5] for r in records(desk.ws)][-1] == ("fp-n-0000", "accept", "rita")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_overrule_dialog_is_read_whole_at_80_and_120_columns(desk, size):
    desk.ws.decide(FileSigner(desk.lena), "flagged_pairs", "fp-n-0000", "reject", role="reviewer")
    app = rita_app(desk)
    async with app.run_test(size=size) as pilot:
        await pilot.press("g", "a")
        assert isinstance(app.screen, ModalScreen)
        await pilot.pause()
        drawn = dialog_text(app)
        # its last words are on the terminal, not cut at the dialog's edge
        assert "n or Esc cancels, nothing is signed" in drawn, drawn
        assert "y overrules (the signed record names the decision it replaces)" in drawn
        await pilot.press("n")


async def test_the_note_dialog_title_is_read_whole_at_80_columns(desk):
    app = rita_app(desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3", "n")  # weak categories: a long queue name and item id
        assert isinstance(app.screen, ModalScreen)
        await pilot.pause()
        title = f"Note on weak_categories/{cursor_item(app)} (signed; Enter saves, Esc cancels)"
        assert len(title) > 72  # longer than the dialog is wide
        assert title in dialog_text(app), dialog_text(app)
        await pilot.press("escape")
