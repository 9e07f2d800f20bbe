"""The sign-off screen driven by keys (Textual Pilot), checked against what lands in the ledger.

Also: what each app shows when other people (other connections) decide or
sign off while it is open.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from engine.artifacts import write_json_artifact
from engine.ledger.signers import FileSigner
from engine.signoff.summary import sign_off
from engine.signoff.verify import verify_workspace
from engine.workspace import Workspace
from reviewer.app import ReviewApp
from reviewer.modals import HelpScreen
from reviewer.review_screen import POLL_SECONDS
from reviewer.session import open_session, read_only_session
from reviewer.signoff_screen import ConfirmSignoff, SignoffScreen
from tests.support.backlog import record_run
from tests.support.review_app import notices, records, settle, text_of
from tests.support.signoff import WEAK, mth, pair, write_run_artifacts

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


# The ledger a Team starts from: the founder's genesis, then the enrolments of rita, ravi
# and lena. Every tree size and record number below counts these first.
AUTHORITY = 4


class Team:
    """rita and ravi (reviewers), lena (lead); three flagged pairs and one weak category."""

    def __init__(self, ws: Workspace, enrol) -> None:
        self.ws = ws
        self.rita = enrol("rita", "reviewer")
        self.ravi = enrol("ravi", "reviewer")
        self.lena = enrol("lena", "lead")
        assert ws.watermark().head_seq == AUTHORITY
        ws.ingest(
            [pair(0), pair(1), pair(2), WEAK],
            runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}},
        )

    def decide_all_but(self, *left: str) -> None:
        for n in range(3):
            if f"fp-{n}" not in left:
                self.ws.decide(self.rita, "flagged_pairs", f"fp-{n}", "accept")
        if WEAK.item_id not in left:
            self.ws.decide(self.lena, "weak_categories", WEAK.item_id, "reject")

    def app(self, signer: FileSigner | None) -> ReviewApp:
        session = (
            open_session(self.ws, key=str(signer.path))
            if signer
            else read_only_session("started with --read-only")
        )
        return ReviewApp(self.ws, session)


@pytest.fixture
def team(workspace, enrol) -> Team:
    return Team(workspace, enrol)


def messages(ws) -> list[bytes]:
    conn = sqlite3.connect(ws.db_path)
    try:
        return [m.encode() for (m,) in conn.execute("SELECT message FROM records ORDER BY seq")]
    finally:
        conn.close()


def signoff_data(ws) -> list[dict]:
    """Gives the signed data of every sign-off record, read through a separate connection."""
    return [json.loads(m)["data"] for m in messages(ws) if json.loads(m)["kind"] == "signoff"]


async def open_signoff(app: ReviewApp, pilot, key: str = "S") -> SignoffScreen:
    await pilot.press(key)
    await settle(
        pilot, lambda: isinstance(app.screen, SignoffScreen) and app.screen.summary is not None
    )
    return app.screen


def body(screen: SignoffScreen) -> str:
    return text_of(screen.query_one("#signoff-body"))


# -- signing -------------------------------------------------------------------------


async def test_the_lead_signs_off_and_the_record_binds_the_tree_head(team):
    team.decide_all_but()
    before = messages(team.ws)
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        assert "READY: every item is accepted or rejected;" in body(screen)
        await pilot.press("s")
        assert isinstance(app.screen, ConfirmSignoff)
        await pilot.press("enter")
        await settle(pilot, lambda: screen.signed is not None)
        shown = text_of(screen.query_one("#signoff-result"))
        await pilot.press("escape")  # the sign-off screen hands its records back on closing
        await settle(pilot, lambda: app.screen is app.review)
        status = text_of(app.review.query_one("#status-bar"))
    assert records(team.ws)[-1] == ("signoff", None, None, None, "lena", "lead", None, None)
    (data,) = signoff_data(team.ws)
    assert data["tree"]["size"] == AUTHORITY + 4 and data["tree"]["root"] == mth(before).hex()
    assert data["with_exceptions"] is False and data["exceptions"] == []
    assert verify_workspace(team.ws).ok
    signed = AUTHORITY + 4 + 1
    assert f"SIGNED OFF: record #{signed}" in shown and screen.signed.record_hash in shown
    assert "sealdesk checkpoint export > checkpoint.txt" in shown
    assert f"ledger #{signed} {screen.signed.record_hash[:10]} signed off by lena" in status


async def test_a_reviewer_sees_the_summary_but_may_not_sign(team):
    team.decide_all_but()
    app = team.app(team.rita)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        assert f"{AUTHORITY + 4} record(s)" in body(screen)
        await pilot.press("s", "e")
        assert app.screen is screen
        assert "rita holds reviewer; signing off needs the lead role" in notices(app)
    assert [r[0] for r in records(team.ws)] == ["decision"] * 4


async def test_a_read_only_session_may_not_sign(team):
    team.decide_all_but()
    app = team.app(None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        await pilot.press("s")
        assert app.screen is screen
        assert "read-only session: started with --read-only" in notices(app)
    assert len(records(team.ws)) == 4


async def test_undecided_items_refuse_a_plain_signoff_before_any_confirmation(team):
    team.decide_all_but("fp-2")
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        assert "NOT READY: 1 item(s) undecided" in body(screen)
        assert "flagged_pairs/fp-2" in body(screen)
        await pilot.press("s")
        assert app.screen is screen
        said = notices(app)
    assert "1 item(s) are undecided: flagged_pairs/fp-2" in said
    assert "(e signs with exceptions)" in said
    assert signoff_data(team.ws) == []


async def test_signing_with_exceptions_lists_each_undecided_item_in_the_record(team):
    team.decide_all_but("fp-2")
    team.ws.decide(team.rita, "flagged_pairs", "fp-1", "skip")  # skipped is not decided
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        await pilot.press("e")
        question = text_of(app.screen.query_one("#signoff-question"))
        await pilot.press(*"fp-2 waits for legal", "enter")
        await settle(pilot, lambda: screen.signed is not None)
        shown = text_of(screen.query_one("#signoff-result"))
    assert (
        "WITH 2 EXCEPTION(S), listed in the record: flagged_pairs/fp-1, "
        "flagged_pairs/fp-2" in question
    )
    (data,) = signoff_data(team.ws)
    assert data["with_exceptions"] is True
    assert data["exceptions"] == [
        {
            "queue": "flagged_pairs",
            "item_id": "fp-1",
            "item_sha256": pair(1).item_sha256,
            "status": "skip",
        },
        {
            "queue": "flagged_pairs",
            "item_id": "fp-2",
            "item_sha256": pair(2).item_sha256,
            "status": "undecided",
        },
    ]
    assert records(team.ws)[-1][4:7] == ("lena", "lead", "fp-2 waits for legal")
    assert (
        "2 item(s) listed in the record: flagged_pairs/fp-1 (skip), "
        "flagged_pairs/fp-2 (undecided)" in shown
    )


async def test_cancelling_the_confirmation_writes_nothing(team):
    team.decide_all_but()
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        await pilot.press("s", "escape")
        assert app.screen is screen
        assert "sign-off cancelled: nothing was written" in text_of(screen.query_one("#status-bar"))
    assert signoff_data(team.ws) == []


async def test_a_ledger_that_moved_while_the_lead_confirmed_is_not_signed(team):
    team.decide_all_but("fp-2")
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        await pilot.press("e")
        with Workspace.open(team.ws.root) as other:  # a reviewer decides meanwhile
            other.decide(team.rita, "flagged_pairs", "fp-2", "reject")
        await pilot.press("enter")
        await settle(pilot, lambda: "changed while you reviewed" in notices(app))
        await settle(pilot, lambda: screen.summary.tree.size == AUTHORITY + 4)
        assert screen.signed is None
    assert signoff_data(team.ws) == []


def pending_exam(ws) -> None:
    """Writes an exam run whose adjudication is still PENDING_ADJUDICATION (not resolved)."""
    write_json_artifact(
        ws.run_dir("exam-9") / "exam-adjudication.json", {"status": "PENDING_ADJUDICATION"}
    )
    record_run(ws, "exam-9", "exam-adjudication.json")


async def test_an_exam_pending_adjudication_is_not_ready_and_refuses_a_plain_signoff(team):
    team.decide_all_but()  # every item decided: only the exam holds the sign-off back
    pending_exam(team.ws)
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        shown = body(screen)
        await pilot.press("s")
        assert app.screen is screen  # no confirmation is asked for
        said = notices(app)
    assert "READY: every item" not in shown
    assert "NOT READY: the exam is PENDING_ADJUDICATION" in " ".join(shown.split())
    assert "not ready: the exam is PENDING_ADJUDICATION" in said
    assert "(e signs with exceptions)" in said
    assert signoff_data(team.ws) == []


async def test_signing_with_exceptions_over_a_pending_exam_says_so_and_binds_its_status(team):
    team.decide_all_but()
    pending_exam(team.ws)
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        await pilot.press("e")
        question = text_of(app.screen.query_one("#signoff-question"))
        await pilot.press("enter")
        await settle(pilot, lambda: screen.signed is not None)
    assert "WHILE NOT READY: the exam is PENDING_ADJUDICATION" in " ".join(question.split())
    (data,) = signoff_data(team.ws)
    assert data["status"]["exam"]["state"] == "PENDING_ADJUDICATION"


# -- what the screen shows -------------------------------------------------------------


async def test_the_screen_shows_counts_runs_undecided_tree_head_and_artifact_hashes(team):
    team.decide_all_but("fp-2")
    hashes = write_run_artifacts(team.ws)
    held = messages(team.ws)  # every record: the decisions, the runs' signed records
    root = mth(held).hex()
    app = team.app(team.lena)
    async with app.run_test(size=(160, 48)) as pilot:
        text = body(await open_signoff(app, pilot))
    lines = [" ".join(line.split()) for line in text.splitlines()]
    for expected in (
        "queue total decided accepted rejected skipped undecided",
        "flagged_pairs 3 2 2 0 0 1",
        "weak_categories 1 1 0 1 0 0",
        # the confirmed rate: 3 dropped of 40 (what was flagged is the scan's line)
        "review leakage rate 7.50% confirmed (3 of 40 eval items accepted as leaks)",
        "scan flagged (pending review) 5 of 40 eval items (12.50%)",
        "items dropped 3 · eval size 40 → –",
        "power min_detectable_difference 0.2100 → 0.2300",
        "Exam FAIL",
        "recall 0.350 >= 0.40 FAIL",
        "Coverage HOLD",
        "obfuscation HOLD low_recall",
        "benign ELIGIBLE",
        "Undecided 1 item(s)",
        "flagged_pairs/fp-2 undecided pair 2",
        f"root {root}",
        f"size {len(held)} record(s)",
    ):
        assert any(expected in line for line in lines), (expected, text)
    for path, digest in hashes.items():
        assert path in text and digest in text


async def test_the_signoff_screen_reads_the_summary_again_when_others_decide(team):
    team.decide_all_but("fp-2")
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        assert screen.summary.tree.size == AUTHORITY + 3
        with Workspace.open(team.ws.root) as other:
            other.decide(team.rita, "flagged_pairs", "fp-2", "accept")
        await settle(pilot, lambda: screen.summary.tree.size == AUTHORITY + 4)
        assert "READY: every item is accepted or rejected;" in body(screen)


# -- keys ----------------------------------------------------------------------------------


async def test_the_signoff_keys_are_rebound_by_binding_id(team):
    team.decide_all_but()
    session = open_session(team.ws, key=str(team.lena.path))
    app = ReviewApp(team.ws, session, keymap={"review.signoff": "ctrl+o", "signoff.sign": "y"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("S")
        assert app.screen is app.review
        screen = await open_signoff(app, pilot, key="ctrl+o")
        assert "; y signs off" in body(screen)
        await pilot.press("s")
        assert app.screen is screen
        await pilot.press("y")
        assert isinstance(app.screen, ConfirmSignoff)
        await pilot.press("escape", "escape")
        assert app.screen is app.review


async def test_the_command_palette_opens_the_signoff_screen(team):
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p", *"Sign-off")
        await settle(
            pilot,
            lambda: (
                app.screen.query("CommandList")
                and "Sign-off"
                in str(app.screen.query_one("CommandList").get_option_at_index(0).prompt)
            ),
        )
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, SignoffScreen))


async def test_help_lists_the_signoff_keys_with_their_ids(team):
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        rows = {row[2]: row[0] for row in app.screen.rows}
        assert isinstance(app.screen, HelpScreen)
    assert (rows["review.signoff"], rows["signoff.sign"], rows["signoff.sign_exceptions"]) == (
        "S",
        "s",
        "e",
    )


# -- other people's records appear ----------------------------------------------------------


async def test_a_signoff_made_elsewhere_appears_in_the_status_bar(team):
    team.decide_all_but()
    app = team.app(team.rita)
    async with app.run_test(size=SIZE) as pilot:
        with Workspace.open(team.ws.root) as other:
            record = sign_off(other, team.lena)
        bar = app.review.query_one("#status-bar")
        await settle(pilot, lambda: "signed off by lena" in text_of(bar))
        signed = AUTHORITY + 4 + 1
        assert record.seq == signed
        assert f"ledger #{signed} {record.record_hash[:10]} signed off by lena" in text_of(bar)
        with Workspace.open(team.ws.root) as other:  # rita decided fp-0: an explicit overrule
            other.decide(team.ravi, "flagged_pairs", "fp-0", "reject", overrule=True)
        await settle(pilot, lambda: f"ledger #{signed + 1}" in text_of(bar))
        assert f"(sign-off #{signed})" in text_of(bar)


async def test_others_decisions_refresh_the_visible_rows_counts_and_detail(team):
    app = team.app(team.rita)
    async with app.run_test(size=SIZE) as pilot:
        lst = app.review.queue_list
        assert lst.current.item_id == "fp-0" and lst.current.status == "undecided"
        with Workspace.open(team.ws.root) as other:
            other.decide(team.ravi, "flagged_pairs", "fp-0", "reject")
            other.decide(team.ravi, "flagged_pairs", "fp-1", "accept")
        await settle(pilot, lambda: lst.row(1).status == "accept")
        assert lst.row(0).status == "reject" and lst.row(0).principal == "ravi"
        assert app.review.progress["flagged_pairs"].decided == 2
        assert "2/3" in text_of(app.review.query_one("#queue-tabs"))
        assert "ravi" in text_of(app.review.query_one("#detail"))
        assert lst.cursor == 0


async def test_under_the_undecided_filter_others_decisions_leave_the_list(team):
    app = team.app(team.rita)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s", "j")  # status: undecided; on fp-1
        lst = app.review.queue_list
        assert lst.total == 3 and lst.current.item_id == "fp-1"
        with Workspace.open(team.ws.root) as other:
            other.decide(team.ravi, "flagged_pairs", "fp-0", "accept")
        await settle(pilot, lambda: lst.total == 2)
        assert lst.current.item_id == "fp-1"  # the cursor stays on its item
        await pilot.press("a")
    assert [r[2:5] for r in records(team.ws)] == [
        ("fp-0", "accept", "ravi"),
        ("fp-1", "accept", "rita"),
    ]


async def test_an_artifact_that_differs_from_its_sidecar_blocks_signing_and_says_why(team):
    team.decide_all_but()
    write_run_artifacts(team.ws)
    (team.ws.artifacts_dir / "exam-1" / "exam-score.json").write_bytes(b'{"status":"PASS"}')
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        assert (
            "PROBLEM: artifacts/exam-1/exam-score.json: bytes differ from its .sha256 "
            "sidecar" in body(screen)
        )
        assert "BLOCKED: will not sign off" in body(screen)
        await pilot.press("e")
        assert app.screen is screen
        assert "exam-score.json: bytes differ from its .sha256 sidecar" in notices(app)
    assert signoff_data(team.ws) == []


async def test_a_covered_review_screen_stops_polling_and_catches_up_when_shown_again(team):
    app = team.app(team.rita)
    async with app.run_test(size=SIZE) as pilot:
        lst = app.review.queue_list
        reads = []
        watermark = app.review.ws.watermark
        app.review.ws.watermark = lambda: reads.append(1) or watermark()
        await pilot.press("question_mark")
        await settle(pilot, lambda: isinstance(app.screen, HelpScreen))
        reads.clear()
        with Workspace.open(team.ws.root) as other:
            other.decide(team.ravi, "flagged_pairs", "fp-0", "reject")
        await pilot.pause(3 * POLL_SECONDS)
        assert reads == [] and lst.row(0).status == "undecided"  # hidden: no polling
        await pilot.press("escape")
        await settle(pilot, lambda: lst.row(0).status == "reject")  # shown: caught up
        assert lst.row(0).principal == "ravi"


# -- READY only when it is -------------------------------------------------------------


async def test_after_signing_the_screen_no_longer_says_ready(team):
    team.decide_all_but()
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_signoff(app, pilot)
        assert "READY: every item is accepted or rejected; s signs off" in body(screen)
        await pilot.press("s", "enter")
        await settle(pilot, lambda: screen.signed is not None)
        signed = screen.signed.seq
        await settle(pilot, lambda: f"#{signed}" in body(screen))  # read again after signing
        shown = " ".join(body(screen).split())
    assert "READY" not in shown and "s signs off" not in shown, shown
    assert f"SIGNED OFF: #{signed} by lena is the newest record; nothing new to sign" in shown


async def test_once_signed_off_the_review_no_longer_offers_the_sign_off(team):
    team.decide_all_but(WEAK.item_id)
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")  # the last undecided item: the sign-off is offered
        assert "S: every queue is decided: sign off" in app.review.message
        screen = await open_signoff(app, pilot)
        await pilot.press("s", "enter")
        await settle(pilot, lambda: screen.signed is not None)
        signed = screen.signed.seq
        await pilot.press("escape")
        await settle(pilot, lambda: app.screen is app.review)
        assert app.review.message == f"signed off: #{signed} by lena"
    # opened again: every queue decided, and the newest record is that sign-off
    again = team.app(team.rita)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: "decided" in again.review.message)
        said = again.review.message
    assert "every queue is decided and signed off by lena" in said, said
    assert "signs off next" not in said and "sign off" not in said, said


async def test_deciding_the_last_item_while_the_exam_is_pending_does_not_offer_the_sign_off(
    team,
):
    team.decide_all_but(WEAK.item_id)
    pending_exam(team.ws)
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        assert app.review.queue == "weak_categories"
        await pilot.press("x")
        said = app.review.message
    assert "sign off" not in said, said
    assert "every queue is decided; sign-off NOT READY: the exam is PENDING_ADJUDICATION" in said


@pytest.fixture
def running_scan(team):
    """Gives the job id of a scan the jobs panel would show as running (its supervisor a
    live process of this test's), until the test ends."""
    import subprocess
    import sys

    from engine import jobs
    from tests.support.ssh import wait_for

    path = jobs.jobs_dir(team.ws.root) / "20261206T000000-5ca115"
    path.mkdir(parents=True)
    (path / "job.json").write_text(
        json.dumps(
            {
                "argv": ["scan", "contamination", "--eval", "e.jsonl", "--pool", "p.jsonl"],
                "workspace": str(team.ws.root),
                "started": "2026-12-06T00:00:00.000000Z",
            }
        )
    )
    supervisor = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", "supervise", str(path)]
    )
    (path / "pid").write_text(str(supervisor.pid))
    # Running once its process shows the job's path on its command line (just after
    # the start it may still show the parent's).
    wait_for(lambda: jobs.read_job(path).state == "running", "the scan to read as running")
    yield path.name
    supervisor.kill()
    supervisor.wait()


async def test_a_scan_still_running_holds_the_sign_off_back(team, running_scan):
    team.decide_all_but(WEAK.item_id)
    app = team.app(team.lena)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")  # the last undecided item
        said = app.review.message
        screen = await open_signoff(app, pilot)
        shown = " ".join(body(screen).split())
        await pilot.press("s")
        assert app.screen is screen  # no confirmation is asked for
    running = f"sealdesk scan is still running (job {running_scan})"
    assert "sign off" not in said and f"sign-off NOT READY: {running}" in said, said
    assert f"NOT READY: {running}" in shown and "READY: every item" not in shown
    assert f"not ready: {running} (e signs with exceptions)" in notices(app)
    assert signoff_data(team.ws) == []
