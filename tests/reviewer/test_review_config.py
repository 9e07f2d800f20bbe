"""The review app's config file, themes and command line, outside the app."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from reviewer.app import binding_ids
from reviewer.config import load_config
from reviewer.theming import choose_theme, load_themes


def test_a_missing_default_config_file_is_an_empty_config(tmp_path, monkeypatch):
    monkeypatch.delenv("SEALDESK_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    config = load_config()
    assert (config.theme, config.key, config.keymap) == (None, None, {})


def test_a_named_config_file_that_is_not_there_is_an_error(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="absent.toml: config file not found"):
        load_config(tmp_path / "absent.toml")
    monkeypatch.setenv("SEALDESK_CONFIG", str(tmp_path / "gone.toml"))
    with pytest.raises(InputError, match="gone.toml: config file not found"):
        load_config()


def test_config_gives_theme_key_and_keymap(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('theme = "light"\nkey = "/keys/rita"\n[keymap]\n"review.accept" = "y"\n')
    config = load_config(path, known_binding_ids=binding_ids())
    assert (config.theme, config.key, config.keymap) == (
        "light",
        "/keys/rita",
        {"review.accept": "y"},
    )


def test_an_unknown_binding_id_names_its_line_and_field(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('theme = "dark"\n\n[keymap]\n"review.acept" = "y"\n')
    with pytest.raises(InputError) as err:
        load_config(path, known_binding_ids=binding_ids())
    assert (err.value.line, err.value.field) == (4, "keymap.review.acept")
    assert str(err.value).startswith(f"{path}:4: field 'keymap.review.acept': no binding")


def test_bad_toml_names_the_line(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('theme = "dark"\nkey = \n')
    with pytest.raises(InputError) as err:
        load_config(path)
    assert err.value.line == 2


def test_an_unknown_setting_is_refused(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('colour = "red"\n')
    with pytest.raises(InputError) as err:
        load_config(path)
    assert (err.value.line, err.value.field) == (1, "colour")


def test_every_binding_has_an_id_and_ids_are_unique():
    from textual.binding import Binding

    from reviewer.app import ReviewApp
    from reviewer.jobs_screen import JobsScreen
    from reviewer.modals import FilterScreen, HelpScreen, NoteScreen
    from reviewer.review_screen import ReviewScreen
    from reviewer.widgets.queue_list import QueueList

    ids = []
    for owner in (
        ReviewScreen,
        QueueList,
        ReviewApp,
        JobsScreen,
        FilterScreen,
        HelpScreen,
        NoteScreen,
    ):
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding) and binding.id, (owner, binding)
            ids.append(binding.id)
    assert len(ids) == len(set(ids))


def test_the_three_themes_load_and_high_contrast_uses_only_ansi_colours():
    themes = load_themes()
    assert {"sealdesk-dark", "sealdesk-light", "sealdesk-high-contrast"} <= set(themes)
    hc = themes["sealdesk-high-contrast"]
    assert hc.ansi
    colours = [
        hc.primary,
        hc.secondary,
        hc.accent,
        hc.warning,
        hc.error,
        hc.success,
        hc.foreground,
        hc.background,
        hc.surface,
        hc.panel,
        *(v for k, v in hc.variables.items() if not k.endswith("text-style")),
    ]
    assert all(c.startswith("ansi_") for c in colours)


def test_theme_choice_flag_then_env_then_config(monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("TEXTUAL_THEME", "light")
    assert choose_theme("high-contrast", "dark") == "sealdesk-high-contrast"
    assert choose_theme(None, "dark") == "sealdesk-light"
    monkeypatch.delenv("TEXTUAL_THEME")
    assert choose_theme(None, "dark") == "sealdesk-dark"
    assert choose_theme(None, None) == "sealdesk-dark"


def test_a_16_colour_terminal_starts_in_high_contrast_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)
    monkeypatch.delenv("COLORTERM", raising=False)
    monkeypatch.setenv("TERM", "screen")
    assert choose_theme(None, None) == "sealdesk-high-contrast"
    assert choose_theme(None, "light") == "sealdesk-light"


def test_review_refuses_an_unenrolled_key_before_drawing_anything(sealdesk, workspace, keygen):
    stranger = keygen("stranger")
    proc = sealdesk("review", "--key", stranger, workspace=workspace.root)
    assert proc.returncode == 3
    assert "is not enrolled in" in proc.stderr and "--read-only" in proc.stderr


def test_review_without_a_terminal_says_what_to_use_instead(sealdesk, workspace):
    proc = sealdesk("review", "--read-only", workspace=workspace.root)
    assert proc.returncode == 2
    assert "needs a terminal" in proc.stderr and "sealdesk decide" in proc.stderr


def test_review_with_a_bad_config_names_file_line_and_field(sealdesk, workspace, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[keymap]\n"nope" = "y"\n')
    proc = sealdesk("review", "--config", cfg, workspace=workspace.root)
    assert proc.returncode == 2
    assert f"{cfg}:2: field 'keymap.nope'" in proc.stderr


def test_review_refuses_a_theme_it_does_not_have_before_starting(sealdesk, workspace):
    proc = sealdesk("review", "--read-only", "--theme", "nope-theme", workspace=workspace.root)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "field 'theme': no theme named 'nope-theme'" in proc.stderr
    assert "high-contrast" in proc.stderr and "nord" in proc.stderr
    ok = sealdesk("review", "--read-only", "--theme", "nord", workspace=workspace.root)
    assert "needs a terminal" in ok.stderr  # a Textual theme passes the check


def test_review_with_a_named_config_that_is_not_there_stops(sealdesk, workspace, tmp_path):
    proc = sealdesk(
        "review", "--read-only", "--config", tmp_path / "nope.toml", workspace=workspace.root
    )
    assert proc.returncode == 2 and "nope.toml: config file not found" in proc.stderr


def test_a_refused_review_start_leaves_an_old_workspace_unmigrated(sealdesk, workspace):
    import sqlite3

    conn = sqlite3.connect(workspace.root / "sealdesk.db", isolation_level=None)
    conn.execute("DROP INDEX IF EXISTS records_signoff")  # as a workspace made before it
    schema = conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    proc = sealdesk("review", "--read-only", workspace=workspace.root)
    assert "needs a terminal" in proc.stderr
    assert conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall() == schema
    conn.close()


@pytest.mark.parametrize(
    "setting, queues",
    [
        ("", ()),
        ("ask_reason = false", ()),
        ("ask_reason = true", ("flagged_pairs", "adjudication", "weak_categories")),
        ('ask_reason = ["adjudication"]', ("adjudication",)),
    ],
)
def test_ask_reason_names_the_queues_whose_decision_keys_ask(tmp_path, setting, queues):
    path = tmp_path / "config.toml"
    path.write_text(f'theme = "light"\n{setting}\n')
    assert load_config(path).ask_reason == queues


def test_an_ask_reason_naming_no_queue_names_its_line_and_field(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('theme = "light"\nask_reason = ["pairs"]\n')
    with pytest.raises(InputError) as err:
        load_config(path)
    assert err.value.line == 2 and err.value.field == "ask_reason"
