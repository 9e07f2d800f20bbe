"""The review app driven by keys (Textual Pilot), checked against what lands in the ledger."""

from __future__ import annotations

import pytest

from engine.canonical import canonical_json
from engine.errors import PermissionRefused
from engine.signoff.verify import verify_workspace
from reviewer.app import ReviewApp, binding_ids
from reviewer.modals import HelpScreen
from reviewer.session import open_session, read_only_session
from tests.support.review_app import notices, records, settle, text_of
from tests.support.review_payloads import numbered_pairs

SIZE = (100, 30)
# Async tests run on asyncio through anyio's pytest plugin (anyio comes with httpx).
pytestmark = pytest.mark.anyio


def app_for(desk, key=None, **kw) -> ReviewApp:
    session = open_session(desk.ws, key=str(key or desk.rita))
    return ReviewApp(desk.ws, session, **kw)


def cursor_item(app: ReviewApp) -> str:
    return app.review.queue_list.current.item_id


# -- deciding ---------------------------------------------------------------------


@pytest.mark.parametrize("key, decision", [("a", "accept"), ("x", "reject"), ("space", "skip")])
async def test_a_decision_key_signs_the_highlighted_item_then_advances(desk, key, decision):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        first = cursor_item(app)
        await pilot.press(key)
        assert records(desk.ws) == [
            ("decision", "flagged_pairs", first, decision, "rita", "reviewer", None, None)
        ]
        assert app.review.queue_list.cursor == 1
        assert app.review.queue_list.row(0).status == decision
    assert verify_workspace(desk.ws).ok


async def test_decisions_follow_the_list_in_score_order(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a", "x", "a")
    # numbered pairs score 1 - i/31, above every other item's score.
    assert [r[2:4] for r in records(desk.ws)] == [
        ("fp-n-0000", "accept"),
        ("fp-n-0001", "reject"),
        ("fp-n-0002", "accept"),
    ]


async def test_undo_retracts_the_last_decision_and_goes_back_to_it(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")
        await pilot.press("u")
        assert cursor_item(app) == "fp-n-0000"
        assert app.review.queue_list.current.status == "undecided"
    decision, retract = records(desk.ws)
    assert decision[:4] == ("decision", "flagged_pairs", "fp-n-0000", "accept")
    assert retract[:3] == ("retract", "flagged_pairs", "fp-n-0000")
    history = desk.ws.history("flagged_pairs", "fp-n-0000")
    assert retract[7] == history[0]["record_hash"] and history[0]["retracted"]


async def test_undo_under_the_undecided_filter_retracts_what_was_just_decided(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")  # status: undecided
        await pilot.press("a", "x")  # fp-n-0000, fp-n-0001
        await pilot.press("u")
        assert cursor_item(app) == "fp-n-0001"
        assert app.review.queue_list.current.status == "undecided"
    assert [r[:3] for r in records(desk.ws)][-1] == ("retract", "flagged_pairs", "fp-n-0001")
    assert desk.ws.item("flagged_pairs", "fp-n-0001")["decision"] is None
    assert desk.ws.item("flagged_pairs", "fp-n-0000")["decision"]["decision"] == "accept"


async def test_undo_with_nothing_to_undo_says_so_and_writes_nothing(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("u")
        assert "nothing to undo" in notices(app)
    assert records(desk.ws) == []


async def test_a_note_is_signed_onto_the_item_without_moving_on(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await pilot.press(*"same problem, new numbers")
        await pilot.press("enter")
        assert cursor_item(app) == "fp-n-0000"
    assert records(desk.ws) == [
        (
            "note",
            "flagged_pairs",
            "fp-n-0000",
            None,
            "rita",
            "reviewer",
            "same problem, new numbers",
            None,
        )
    ]


async def test_a_cancelled_note_writes_nothing(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "h", "i", "escape")
    assert records(desk.ws) == []


async def test_the_detail_pane_shows_each_records_history(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a", "u")
        text = text_of(app.review.query_one("#detail"))
    assert "accept" in text and "(retracted)" in text and "retract of" in text


# -- refusals ------------------------------------------------------------------------


async def test_a_role_that_may_not_decide_a_queue_is_refused_with_a_message(desk):
    app = app_for(desk)  # rita is only a reviewer
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")  # adjudication
        assert cursor_item(app) == "cand-7-1"
        await pilot.press("a")
        assert "need the adjudicator role" in notices(app)
        assert cursor_item(app) == "cand-7-1"
    assert records(desk.ws) == []


async def test_the_adjudicator_decides_adjudication_items(desk):
    app = app_for(desk, key=desk.adam)
    async with app.run_test(size=SIZE) as pilot:
        assert app.review.queue == "adjudication"  # opens where adam may decide
        await pilot.press("x")
    assert records(desk.ws) == [
        ("decision", "adjudication", "cand-7-1", "reject", "adam", "adjudicator", None, None)
    ]


async def test_read_only_browses_and_refuses_every_decision(desk):
    app = ReviewApp(desk.ws, read_only_session("started with --read-only"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("j", "a", "x", "space", "n")
        assert cursor_item(app) == "fp-n-0001"
        assert "read-only session" in notices(app)
        banner = text_of(app.review.query_one("#banner"))
        assert "READ-ONLY" in banner
    assert records(desk.ws) == []


def test_a_key_not_enrolled_in_the_ledger_cannot_start_a_decision_session(desk, keygen):
    stranger = keygen("stranger")
    with pytest.raises(PermissionRefused) as err:
        open_session(desk.ws, key=str(stranger))
    assert "not enrolled in this workspace's ledger" in str(err.value)
    assert "--read-only" in str(err.value)


def test_no_key_at_all_gives_a_read_only_session(desk):
    session = open_session(desk.ws, key=None)
    assert session.read_only and "no signing key" in session.read_only_reason


def test_a_read_only_session_has_no_signer_to_sign_with_and_says_why(desk):
    session = open_session(desk.ws, key=None)
    with pytest.raises(PermissionRefused) as err:
        session.require_signer()
    assert str(err.value) == f"read-only session: {session.read_only_reason}"


# -- browsing ------------------------------------------------------------------------


async def test_status_filter_then_accept_lands_on_the_first_undecided_item(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a", "a")  # fp-n-0000, fp-n-0001
        await pilot.press("s")  # status: undecided
        assert app.review.queue_list.total == 34 - 2
        await pilot.press("a")
    assert [r[2] for r in records(desk.ws)] == ["fp-n-0000", "fp-n-0001", "fp-n-0002"]


async def test_filter_dialog_score_range_narrows_the_queue(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        # status, decided by, channel/tag, then the two score fields
        await pilot.press("f", "tab", "tab", "tab", *"0.55", "tab", *"0.6", "enter")
        await pilot.pause()
        listed = [app.review.queue_list.row(i).item_id for i in range(app.review.queue_list.total)]
        await pilot.press("a")
    # scores 1 - i/31 in [0.55, 0.6]: i = 13 (0.5806), 14 (0.5484 < 0.55: out), 12 (0.6129: out)
    # plus fp-pair (0.62: out): only fp-n-0013.
    assert listed == ["fp-n-0013"]
    assert [r[2] for r in records(desk.ws)] == ["fp-n-0013"]


# Tab stops in the filter dialog, in order (decided-by only for a signing session).
FILTER_FIELDS = ("status", "decided-by", "tag", "score-min", "score-max", "text")


async def _filter_with(pilot, **choices):
    """Opens the filter dialog and picks each named list's choice the way a person does:
    Tab to the field, Space opens its list, typing jumps to the choice, Enter picks it;
    then Enter on the list (closed again) applies the whole form."""
    await pilot.press("f")
    at = 0
    for field, typed in choices.items():
        target = FILTER_FIELDS.index(field)
        await pilot.press(*["tab"] * (target - at), "space", *typed, "enter")
        at = target
    await pilot.press("enter")
    await pilot.pause()


async def test_filter_decided_by_others_then_overrule_with_my_own_decision(desk):
    from engine.ledger.signers import FileSigner

    desk.ws.decide(FileSigner(desk.lena), "flagged_pairs", "fp-n-0005", "accept", role="reviewer")
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await _filter_with(pilot, **{"decided-by": "oth"})
        assert app.review.queue_list.total == 1 and cursor_item(app) == "fp-n-0005"
        await pilot.press("x", "y")  # lena's decision: the overrule is confirmed first
    assert [r[2:5] for r in records(desk.ws)] == [
        ("fp-n-0005", "accept", "lena"),
        ("fp-n-0005", "reject", "rita"),
    ]


async def test_filter_by_channel_tag(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await _filter_with(pilot, tag="intern")
        assert app.review.queue_list.total == 1
        await pilot.press("a")
    assert [r[2] for r in records(desk.ws)] == ["fp-cluster"]


async def test_search_finds_text_inside_payloads(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"times 13", "enter")
        await settle(pilot, lambda: app.review.queue_list.total == 1)
        assert cursor_item(app) == "fp-cluster"
        await pilot.press("x")
        await pilot.press("escape")
        assert app.review.queue_list.total == 34
    assert [r[2:4] for r in records(desk.ws)] == [("fp-cluster", "reject")]


async def test_esc_drops_the_match_count_with_the_search(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.review.query_one("#status-bar")
        await pilot.press("slash", *"times 13", "enter")
        await settle(pilot, lambda: app.review.queue_list.total == 1)
        assert "1 match(es)" in text_of(bar)
        await pilot.press("escape")
        assert app.review.queue_list.total == 34
        assert "match" not in text_of(bar)


async def test_a_queue_emptied_by_a_filter_says_so(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s", "s", "s", "s")  # status: undecided, accept, reject, skip
        assert app.review.queue_list.total == 0
        assert text_of(app.review.query_one("#detail")) == "nothing here under this filter"


async def test_an_empty_queue_without_a_filter_does_not_blame_one(workspace, enrol):
    rita = enrol("rita", "reviewer")
    app = ReviewApp(workspace, open_session(workspace, key=str(rita.path)))
    async with app.run_test(size=SIZE):
        assert app.review.queue_list.total == 0
        shown = text_of(app.review.query_one("#detail"))
        assert "filter" not in shown and "empty" in shown


async def test_sort_by_id_changes_which_item_is_decided(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o", "o")  # score ↑, then id ↑
        assert cursor_item(app) == "fp-n-0000"  # a new order keeps the item in view
        await pilot.press("g", "a")  # top of id order
    assert [r[2] for r in records(desk.ws)] == ["fp-bad"]


async def test_a_payload_no_pane_understands_is_shown_as_json_and_decidable(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        # id order is the titles' order: "broken producer output" (fp-bad), "cluster of 3",
        # "legacy export row" (fp-unknown), "Natalia sold", "pair 0" ...
        await pilot.press("o", "o", "g")
        for item_id in ("fp-bad", "fp-cluster"):
            assert cursor_item(app) == item_id
            await pilot.press("j")
        assert cursor_item(app) == "fp-unknown"
        text = text_of(app.review.query_one("#detail"))
        assert "shown as JSON" in text and '"legacy"' in text
        await pilot.press("a")
    assert [r[2:4] for r in records(desk.ws)] == [("fp-unknown", "accept")]


# -- keys, help, palette, themes -------------------------------------------------------


async def test_a_keymap_rebinds_a_decision_key_by_binding_id(desk):
    app = app_for(desk, keymap={"review.accept": "y"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")
        assert records(desk.ws) == []
        await pilot.press("y")
    assert [r[3] for r in records(desk.ws)] == ["accept"]


async def test_help_lists_every_key_with_its_binding_id(desk):
    app = app_for(desk, keymap={"review.reject": "r"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = {row[2]: row[0] for row in app.screen.rows}
        assert rows["review.reject"] == "r" and rows["review.accept"] == "a"
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_help_lists_exactly_the_keys_the_keymap_may_rebind(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        listed = [row[2] for row in app.screen.rows]
    assert sorted(listed) == sorted(binding_ids())


async def test_the_command_palette_filters_by_status_as_the_status_key_would(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")  # fp-n-0000 accepted
        await pilot.press("ctrl+p", *"Show status: accept")
        await settle(
            pilot,
            lambda: (
                app.screen.query("CommandList")
                and "Show status: accept"
                in str(app.screen.query_one("CommandList").get_option_at_index(0).prompt)
            ),
        )
        await pilot.press("enter")
        await settle(pilot, lambda: app.review.queue_list.total == 1)
        assert cursor_item(app) == "fp-n-0000"


async def test_the_command_palette_runs_a_decision(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"Reject item")
        await settle(
            pilot,
            lambda: (
                app.screen.query("CommandList")
                and "Reject item"
                in str(app.screen.query_one("CommandList").get_option_at_index(0).prompt)
            ),
        )
        await pilot.press("enter")
        await settle(pilot, lambda: len(records(desk.ws)) == 1)
    assert [r[2:4] for r in records(desk.ws)] == [("fp-n-0000", "reject")]


async def test_the_theme_key_cycles_the_sealdesk_themes(desk):
    app = app_for(desk, theme="sealdesk-dark")
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "sealdesk-dark"
        await pilot.press("t")
        assert app.theme == "sealdesk-light"
        await pilot.press("t")
        assert app.theme == "sealdesk-high-contrast"
        assert app.current_theme.ansi
        await pilot.press("a")  # deciding works the same in any theme
    assert len(records(desk.ws)) == 1


# -- background jobs ---------------------------------------------------------------------


def _items_file(path, items):
    path.write_text(
        "".join(canonical_json(i.to_json()).decode() + "\n" for i in items), encoding="utf-8"
    )
    return path


@pytest.mark.slow
async def test_a_job_started_from_the_app_shows_progress_and_its_items_appear(desk, tmp_path):
    src = _items_file(tmp_path / "more.jsonl", numbered_pairs(5, prefix="fp-new"))
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        assert app.review.progress["flagged_pairs"].total == 34
        await pilot.press("b")
        await pilot.press(*f"ingest {src}", "enter")  # typed into the focused command field
        body = app.screen.query_one("#jobs-body")
        await settle(pilot, lambda: "SUCCEEDED" in text_of(body))
        text = text_of(body)
        assert "ingest more.jsonl: 5/5 items" in text
        await pilot.press("escape")
        # The app notices the new items by itself (no restart, no key).
        await settle(pilot, lambda: app.review.progress["flagged_pairs"].total == 39)
        assert app.review.queue_list.total == 39
        # The run's items can land a moment before its supervisor records the exit.
        strip = app.review.query_one("#jobs-strip")
        await settle(pilot, lambda: "done" in text_of(strip))
        await pilot.press("slash", *"fp-new-0003", "enter")
        await settle(pilot, lambda: app.review.queue_list.total == 1)
        await pilot.press("a")
    assert [r[2:4] for r in records(desk.ws)] == [("fp-new-0003", "accept")]


@pytest.mark.slow
async def test_a_failed_job_shows_its_error(desk, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"queue":"flaged_pairs"}\n', encoding="utf-8")
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("b")
        await pilot.press(*f"ingest {bad}", "enter")
        body = app.screen.query_one("#jobs-body")
        await settle(pilot, lambda: "FAILED" in text_of(body))
        assert f"sealdesk: error: {bad}:1: field 'item_id': missing" in text_of(body)


async def test_the_jobs_panel_refuses_what_is_not_engine_work(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("b")
        await pilot.press(*"decide --queue flagged_pairs", "enter")
        assert "not background engine work" in text_of(app.screen.query_one("#jobs-error"))
    assert not (desk.ws.root / "jobs").exists()


@pytest.fixture
def agent(tmp_path, monkeypatch):
    """A real ssh-agent on a private socket, SSH_AUTH_SOCK pointing at it."""
    import os
    import signal
    import subprocess

    from tests.conftest import require_tool

    require_tool("ssh-agent")
    sock = tmp_path / "agent.sock"
    out = subprocess.run(
        ["ssh-agent", "-s", "-a", str(sock)], capture_output=True, text=True, check=True
    ).stdout
    pid = int(out.split("SSH_AGENT_PID=")[1].split(";")[0])
    monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
    yield sock
    os.kill(pid, signal.SIGTERM)


async def test_with_ssh_agent_running_the_app_signs_through_the_agent(desk, agent):
    import subprocess

    subprocess.run(["ssh-add", "-q", str(desk.lena)], check=True, capture_output=True)
    session = open_session(desk.ws, key=None)
    assert (session.source, session.principal, session.roles) == (
        "ssh-agent",
        "lena",
        ("reviewer", "lead"),
    )
    app = ReviewApp(desk.ws, session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "a")  # weak categories: lena decides as reviewer
    assert records(desk.ws) == [
        (
            "decision",
            "weak_categories",
            "weak-obfuscation",
            "accept",
            "lena",
            "reviewer",
            None,
            None,
        )
    ]
    assert verify_workspace(desk.ws).ok


async def test_a_burst_of_keys_after_slash_never_becomes_decisions(desk):
    """Keys that arrive together with "/" (a paste, a fast typist over a slow link) are
    routed before the search box has focus; they must not sign anything or restyle."""
    from textual import events

    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        for key, char in [("slash", "/"), *((c, c) for c in "taxa")]:
            event = events.Key(key, char)
            event.set_sender(app)
            app._driver.send_message(event)  # queued at once, as a terminal delivers them
        await pilot.pause()
        assert app.focused is app.review.query_one("#search")
        assert app.theme == "sealdesk-dark"
        await pilot.press(*"taxa", "enter")  # typed once the box is open: a search
        await pilot.pause()
        assert app.review.view.filters.text == "taxa"
    assert records(desk.ws) == []


async def test_letters_typed_in_the_filter_dialog_never_quit_or_restyle(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f", "q", "t", "question_mark")
        assert app.screen.__class__.__name__ == "FilterScreen"
        assert app.theme == "sealdesk-dark"
        await pilot.press("escape")
        assert app.screen is app.review


async def test_a_cursor_kept_deep_in_a_reloaded_list_is_scrolled_into_view(desk):
    app = app_for(desk)
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.press("slash", *"pair 29", "enter")  # one match: a one-row list
        await settle(pilot, lambda: app.review.queue_list.total == 1)
        await pilot.press("escape")  # whole queue again, same item
        await pilot.pause()
        lst = app.review.queue_list
        assert cursor_item(app) == "fp-n-0029" and lst.cursor > 20
        top = round(lst.scroll_y)
        assert top <= lst.cursor < top + lst.scrollable_content_region.height


async def test_a_decision_while_another_writer_holds_the_ledger_is_refused_not_lost(
    desk, monkeypatch
):
    import sqlite3

    from reviewer import review_screen

    monkeypatch.setattr(review_screen, "BUSY_TIMEOUT_MS", 100)
    app = app_for(desk)
    other = sqlite3.connect(desk.ws.db_path, isolation_level=None)
    async with app.run_test(size=SIZE) as pilot:
        other.execute("BEGIN IMMEDIATE")  # an engine run mid-ingest
        await pilot.press("a")
        assert "workspace is busy" in notices(app) and "nothing was recorded" in notices(app)
        assert cursor_item(app) == "fp-n-0000"  # the cursor did not move on
        other.execute("ROLLBACK")
        await pilot.press("a")
        assert cursor_item(app) == "fp-n-0001"
    other.close()
    assert [r[2:4] for r in records(desk.ws)] == [("fp-n-0000", "accept")]


async def test_a_search_that_fails_in_the_background_is_shown_not_fatal(desk):
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        (desk.ws.root / "sealdesk.db").rename(desk.ws.root / "moved.db")  # reader cannot open
        await pilot.press("slash", *"pair", "enter")
        await settle(pilot, lambda: "search failed" in notices(app))
        assert app.is_running
        (desk.ws.root / "moved.db").rename(desk.ws.root / "sealdesk.db")


def test_an_empty_ssh_agent_means_browse_only_with_the_reason(desk, agent):
    session = open_session(desk.ws, key=None)
    assert session.read_only and "ssh-agent holds no ssh-ed25519 key" in session.read_only_reason


def test_an_agent_key_not_enrolled_is_refused(desk, agent, keygen):
    import subprocess

    subprocess.run(["ssh-add", "-q", str(keygen("stranger"))], check=True, capture_output=True)
    with pytest.raises(PermissionRefused) as err:
        open_session(desk.ws, key=None)
    # The ledger decides who may sign: the refusal points there, not at the generated file.
    assert "none of ssh-agent's keys" in str(err.value)
    assert "is enrolled in this workspace's ledger" in str(err.value)
    assert "sealdesk keys add" in str(err.value)
    assert "allowed_signers" not in str(err.value)


def test_role_picks_the_agent_key_enrolled_in_it(desk, agent):
    import subprocess

    for key in (desk.rita, desk.lena):  # a reviewer key first, as a lead's agent may list it
        subprocess.run(["ssh-add", "-q", str(key)], check=True, capture_output=True)
    assert open_session(desk.ws, key=None).principal == "rita"
    session = open_session(desk.ws, key=None, role="lead")
    assert (session.principal, session.source, session.signoff_refusal()) == (
        "lena",
        "ssh-agent",
        None,
    )
    with pytest.raises(PermissionRefused, match="rita with key .* is not enrolled as lead"):
        open_session(desk.ws, key=str(desk.rita), role="lead")


def test_role_with_no_key_refuses_rather_than_browsing(desk, agent):
    with pytest.raises(PermissionRefused, match="--role lead: ssh-agent holds no ssh-ed25519 key"):
        open_session(desk.ws, key=None, role="lead")
    assert open_session(desk.ws, key=None).read_only  # without --role, browsing is fine


def test_role_falls_back_to_the_config_key_when_the_agent_lacks_it(desk, agent):
    import subprocess

    subprocess.run(["ssh-add", "-q", str(desk.rita)], check=True, capture_output=True)
    session = open_session(desk.ws, key=None, config_key=str(desk.lena), role="lead")
    assert (session.principal, session.source) == ("lena", f"key file {desk.lena}")
    with pytest.raises(
        PermissionRefused, match="not enrolled as lead .*use a key enrolled as lead"
    ):
        open_session(desk.ws, key=str(desk.rita), role="lead")


async def test_enter_in_an_open_filter_list_picks_the_choice_and_keeps_the_dialog(desk):
    from engine.ledger.signers import FileSigner

    desk.ws.decide(FileSigner(desk.lena), "flagged_pairs", "fp-n-0003", "reject", role="reviewer")
    app = app_for(desk)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f", "space", *"rej", "enter")  # status: rejected, picked
        assert app.screen.__class__.__name__ == "FilterScreen"
        await pilot.press("tab", "space", "down", "down", "enter")  # decided by: others
        assert app.screen.__class__.__name__ == "FilterScreen"
        await pilot.press("tab", "space", "down", "escape")  # Esc closes only the list
        assert app.screen.__class__.__name__ == "FilterScreen"
        await pilot.press("shift+tab")
        await pilot.press("enter")  # on the closed list: applies the form
        await pilot.pause()
        assert app.screen is app.review
        f = app.review.view.filters
        assert (f.status, f.decided_by) == ("reject", "others")
        assert app.review.queue_list.total == 1 and cursor_item(app) == "fp-n-0003"


# -- the weak-category pane on what the coverage engine writes -------------------------


async def test_a_weak_category_says_what_deciding_means_and_what_was_measured(
    workspace, enrol, tmp_path
):
    from engine.coverage.run_backlog import run_backlog
    from tests.conftest import REPO
    from tests.support.coverage import sample_source

    lena = enrol("lena", "lead")
    source = sample_source(tmp_path / "benchmark")
    coverage = REPO / "sample_data" / "coverage"
    run = run_backlog(
        workspace, source, coverage / "debug_rows.jsonl", coverage / "attribution.toml", None
    )
    app = ReviewApp(workspace, open_session(workspace, key=str(lena.path)))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3", "g")
        item = workspace.item("weak_categories", cursor_item(app))
        assert item["run_id"] == run.run_id
        shown = " ".join(text_of(app.review.query_one("#detail")).split())
        category = item["payload"]["category"]
        assert f"detector: {source.detector_version} {source.detector_sha256[:16]}…" in shown
        assert (
            f"measured by: benchmark {source.sha256[:16]}… on {source.evaluation_set_id} "
            f"({source.eligibility})"
        ) in shown
        assert f"accept: {category} is a real weakness" in shown
        assert "reject: not a weakness to act on" in shown
