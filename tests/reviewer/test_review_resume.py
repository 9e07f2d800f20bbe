"""Resuming: the app opens where there is work for this person, remembers each user's
filter, sort and theme in their own config dir (never in the workspace), and says when
a queue is done and what comes next."""

from __future__ import annotations

import json
import os

import pytest

from engine.ledger.signers import FileSigner
from reviewer.app import ReviewApp
from reviewer.session import open_session
from reviewer.state import state_path
from tests.support.review_app import notices

SIZE = (100, 30)
pytestmark = pytest.mark.anyio

PAIRS = [f"fp-n-{i:04d}" for i in range(30)]


def app_for(desk, key=None, **kw) -> ReviewApp:
    return ReviewApp(desk.ws, open_session(desk.ws, key=str(key or desk.rita)), **kw)


def cursor_item(app: ReviewApp) -> str:
    return app.review.queue_list.current.item_id


def all_pairs_but(desk, signer_key, *left: str) -> None:
    """Decides every flagged pair except ``left``, in one transaction."""
    ids = [i["item_id"] for i in desk.ws.items("flagged_pairs")]
    desk.ws.decide_many(
        FileSigner(signer_key),
        "flagged_pairs",
        [i for i in ids if i not in left],
        "reject",
        role="reviewer",
    )


def files_under(root) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


async def test_the_app_opens_on_the_first_undecided_item(desk):
    desk.ws.decide_many(FileSigner(desk.rita), "flagged_pairs", PAIRS[:2], "accept")
    app = app_for(desk)
    async with app.run_test(size=SIZE):
        assert (app.review.queue, cursor_item(app)) == ("flagged_pairs", "fp-n-0002")


async def test_with_its_pairs_all_decided_a_reviewer_opens_on_the_weak_categories(desk):
    all_pairs_but(desk, desk.rita)
    app = app_for(desk)
    async with app.run_test(size=SIZE):
        assert app.review.queue == "weak_categories"
        assert app.review.queue_list.current.status == "undecided"


async def test_filter_and_sort_come_back_next_time_from_the_users_config_dir(
    desk, own_state_dir, tmp_path, monkeypatch
):
    in_workspace = files_under(desk.ws.root)
    async with app_for(desk).run_test(size=SIZE) as pilot:
        # sort: score ascending; filter: status rejected, chosen in the dialog's list
        await pilot.press("o", "f", "space", *"rej", "enter", "enter")
        await pilot.pause()
    saved = state_path(desk.ws.workspace_id)
    assert saved.parent == own_state_dir and saved.is_file()
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
    assert json.loads(saved.read_text())["views"]["flagged_pairs"] == {
        "filters": {"status": "reject"},
        "sort": "score_asc",
    }
    assert files_under(desk.ws.root) - in_workspace <= {"sealdesk.db-wal", "sealdesk.db-shm"}

    app = app_for(desk)
    async with app.run_test(size=SIZE):
        view = app.review.view
        assert (view.filters.status, view.sort) == ("reject", "score_asc")
        assert "filter and sort as you left them" in app.review.message
    # Another user (another config dir) on the same workspace starts from the defaults.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "lenas-config"))
    app = app_for(desk, desk.lena)
    async with app.run_test(size=SIZE):
        assert (app.review.view.filters.status, app.review.view.sort) == (None, "score_desc")


async def test_the_theme_chosen_in_the_app_is_the_next_sessions(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        chosen = app.theme
    assert chosen != "sealdesk-dark"
    app = app_for(desk)
    async with app.run_test(size=SIZE):
        assert app.theme == chosen


async def test_a_state_file_it_cannot_use_is_named_and_the_app_starts_plain(desk):
    saved = state_path(desk.ws.workspace_id)
    saved.parent.mkdir(parents=True)
    saved.write_text('{"type": "sealdesk.review-state/v1", "views": {"nope": {}}}')
    app = app_for(desk)
    async with app.run_test(size=SIZE):
        assert f"{saved}: field 'views'" in notices(app)
        assert app.review.view.sort == "score_desc" and app.theme == "sealdesk-dark"


async def test_deciding_the_last_pair_says_the_queue_is_done_and_enter_goes_on(desk):
    all_pairs_but(desk, desk.rita, "fp-n-0029")
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        assert cursor_item(app) == "fp-n-0029"
        await pilot.press("a")
        assert "pairs done, all 34 decided · ⏎: go on to weak cats (1 to decide)" in (
            app.review.message
        )
        await pilot.press("enter")
        assert app.review.queue == "weak_categories"
        assert app.review.queue_list.current.status == "undecided"
        await pilot.press("a")
        assert "weak cats done, all 1 decided · nothing is left to decide in your queues" in (
            app.review.message
        )


async def test_an_adjudication_queue_done_by_skips_says_what_still_blocks_the_exam(desk):
    app = app_for(desk, desk.adam)
    async with app.run_test(size=SIZE) as pilot:
        assert app.review.queue == "adjudication"
        await pilot.press("space")
        assert (
            "adjudicate done, all 1 decided · 1 skipped: accept or reject them before the "
            "exam can be resolved" in app.review.message
        )
        assert "resolves the exam" not in app.review.message


async def test_the_lead_is_offered_the_sign_off_once_every_queue_is_decided(desk):
    all_pairs_but(desk, desk.lena)
    cand = desk.ws.items("adjudication")[0]["item_id"]
    desk.ws.decide(FileSigner(desk.adam), "adjudication", cand, "accept", role="adjudicator")
    app = app_for(desk, desk.lena)
    async with app.run_test(size=SIZE) as pilot:
        assert app.review.queue == "weak_categories"
        await pilot.press("a")
        assert "S: every queue is decided: sign off" in app.review.message
        await pilot.press("S")
        assert app.screen.__class__.__name__ == "SignoffScreen"


async def test_a_view_that_cannot_be_saved_is_said_once_and_the_review_goes_on(
    desk, tmp_path, monkeypatch
):
    not_a_dir = tmp_path / "config-is-a-file"
    not_a_dir.write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(not_a_dir))
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o", "o", "a")
        said = notices(app)
    assert said.count("the view will not be remembered for next time") == 1, said
    assert app.review.decided_here  # the decision was still signed
