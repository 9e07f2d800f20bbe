"""Keys as a person has them: a keymap that would leave an action without its key is
refused before the app starts, and the key line at 80 columns keeps help and the keys
the screen needs most."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from reviewer.app import ReviewApp, binding_ids
from reviewer.config import load_config
from reviewer.session import open_session, read_only_session
from reviewer.widgets.bars import KeyHints
from tests.support.review_app import text_of

pytestmark = pytest.mark.anyio


def _config(tmp_path, keymap: str):
    path = tmp_path / "config.toml"
    path.write_text('theme = "dark"\n\n[keymap]\n' + keymap)
    return path


def test_giving_accept_the_reject_key_is_refused_naming_both_but_a_swap_is_not(tmp_path):
    path = _config(tmp_path, '"review.accept" = "x"\n')
    with pytest.raises(InputError) as err:
        load_config(path, known_binding_ids=binding_ids())
    assert (err.value.line, err.value.field) == (4, "keymap.review.accept")
    assert "'x' is bound to both review.accept (Accept) and review.reject (Reject)" in str(
        err.value
    )
    # Swapped, the two keys clash with nothing.
    path = _config(tmp_path, '"review.accept" = "x"\n"review.reject" = "a"\n')
    config = load_config(path, known_binding_ids=binding_ids())
    assert config.keymap == {"review.accept": "x", "review.reject": "a"}


def test_a_clash_with_an_app_wide_key_is_refused_one_on_another_screen_is_not(tmp_path):
    path = _config(tmp_path, '"review.note" = "q"\n')
    with pytest.raises(InputError, match="review.note .* and app.quit"):
        load_config(path, known_binding_ids=binding_ids())
    # The overrule dialog's answer and the review's accept are never live together.
    path = _config(tmp_path, '"overrule.yes" = "a"\n')
    assert load_config(path, known_binding_ids=binding_ids()).keymap == {"overrule.yes": "a"}


def test_a_letter_for_a_dialog_with_a_text_field_is_refused(tmp_path):
    # Typed into the note, the key would never close the dialog.
    path = _config(tmp_path, '"note.cancel" = "c"\n')
    with pytest.raises(InputError, match="types into the note dialog's text field"):
        load_config(path, known_binding_ids=binding_ids())


def test_review_with_a_clashing_keymap_stops_with_one_line_and_writes_nothing(
    sealdesk, workspace, tmp_path
):
    path = _config(tmp_path, '"review.accept" = "x"\n')
    before = (workspace.root / "sealdesk.db").read_bytes()
    proc = sealdesk("review", "--read-only", "--config", path, workspace=workspace.root)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"{path}:4: field 'keymap.review.accept'" in proc.stderr
    assert "review.reject" in proc.stderr
    assert (workspace.root / "sealdesk.db").read_bytes() == before
    assert not (tmp_path / "user-config" / "sealdesk" / "state").exists()


def test_an_app_given_a_clashing_keymap_does_not_start(desk):
    with pytest.raises(InputError, match="review.skip .* and review.accept"):
        ReviewApp(desk.ws, read_only_session("test"), keymap={"review.skip": "a"})


async def _key_line(app: ReviewApp, size=(80, 24)) -> str:
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        line = text_of(app.screen.query_one(KeyHints))
    # What does not fit is cut off the screen, so all of it must fit to be seen.
    assert len(line.rstrip()) <= size[0], line
    return line


async def test_at_80_columns_a_reviewers_key_line_keeps_help_and_the_deciding_keys(desk):
    line = await _key_line(ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.rita))))
    for shown in ("a accept", "x reject", "space skip", "? help"):
        assert shown in line, line


async def test_at_80_columns_a_leads_key_line_shows_the_sign_off_key(desk):
    line = await _key_line(ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.lena))))
    assert "S sign-off" in line and "? help" in line and "a accept" in line, line


async def test_a_read_only_key_line_leaves_out_the_keys_that_sign(desk):
    line = await _key_line(ReviewApp(desk.ws, read_only_session("browsing")))
    assert "? help" in line and "/ search" in line, line
    assert "a accept" not in line and "u undo" not in line, line


async def test_the_key_line_shows_help_as_the_keymap_binds_it(desk):
    app = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.rita)), keymap={"app.help": "H"})
    line = await _key_line(app)
    assert "H help" in line and "? help" not in line, line


def test_every_dialog_is_known_to_the_clash_check_as_one():
    # Over a dialog the app's q, t and ? give way: the check must know which scopes are
    # dialogs, or it refuses keymaps that are fine there (and misses what is not).
    from textual.screen import ModalScreen

    from reviewer.actions import DIALOGS
    from reviewer.bulk_screen import BulkScreen
    from reviewer.calibration_screen import CalibrationScreen, RatesScreen
    from reviewer.jobs_screen import JobsScreen
    from reviewer.modals import (
        ConfirmOverrule,
        FilterScreen,
        HelpScreen,
        NoteScreen,
        ReasonScreen,
    )
    from reviewer.signoff_screen import ConfirmSignoff, SignoffScreen

    screens = (
        BulkScreen,
        CalibrationScreen,
        RatesScreen,
        JobsScreen,
        ConfirmOverrule,
        FilterScreen,
        HelpScreen,
        NoteScreen,
        ReasonScreen,
        ConfirmSignoff,
        SignoffScreen,
    )
    modal = {s.SCOPE for s in screens if issubclass(s, ModalScreen)}
    assert modal == set(DIALOGS)
