"""The lead's sign-off: what the summary shows and what the signed record binds."""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine.artifacts import write_json_artifact
from engine.canonical import canonical_sha256
from engine.errors import IntegrityError, NotReadyError, PermissionRefused
from engine.ledger.treehead import SIGNOFF_TYPE
from engine.signoff.summary import sign_off, signoff_summary
from engine.signoff.verify import verify_workspace
from engine.workspace import BacklogItem
from tests.support.backlog import record_run
from tests.support.signoff import mth


def messages(ws) -> list[bytes]:
    return [m.encode() for (m,) in ws.conn.execute("SELECT message FROM records ORDER BY seq")]


def enrolled_upto(ws) -> int:
    """Gives the seq of the last genesis or enrol record: decisions and sign-offs follow it."""
    return ws.conn.execute(
        "SELECT MAX(seq) FROM records WHERE kind IN ('genesis', 'enrol')"
    ).fetchone()[0]


def record_count(ws) -> int:
    """Gives how many records follow the genesis and enrolments."""
    return ws.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] - enrolled_upto(ws)


def add_items(ws, queue: str, n: int, run: str = "run-1", artifacts: dict | None = None):
    items = [
        BacklogItem.make(
            queue,
            f"{queue[:4]}-{i}",
            run,
            {"summary": {"title": f"{queue} {i}", "score": None, "tags": []}, "n": i},
        )
        for i in range(n)
    ]
    ws.ingest(items, runs={run: {"kind": "test", "artifacts": artifacts or {}, "inputs": {}}})
    return [i.item_id for i in items]


@pytest.fixture
def team(workspace, enrol):
    """A workspace with rita (reviewer), lena (lead) and three flagged pairs."""
    rita = enrol("rita", "reviewer")
    lena = enrol("lena", "lead")
    ids = add_items(workspace, "flagged_pairs", 3)
    return workspace, rita, lena, ids


def decide_all(ws, rita, ids, decision="accept"):
    for item_id in ids:
        ws.decide(rita, "flagged_pairs", item_id, decision)


def test_signoff_refuses_while_items_are_undecided_and_writes_nothing(team):
    ws, rita, lena, ids = team
    ws.decide(rita, "flagged_pairs", ids[0], "accept")
    with pytest.raises(NotReadyError, match="2 item"):
        sign_off(ws, lena)
    assert record_count(ws) == 1


def test_a_skipped_item_still_blocks_a_plain_signoff(team):
    ws, rita, lena, ids = team
    decide_all(ws, rita, ids[:2])
    ws.decide(rita, "flagged_pairs", ids[2], "skip")
    with pytest.raises(NotReadyError):
        sign_off(ws, lena)


def test_an_exam_pending_adjudication_holds_a_plain_signoff_back(team, sealdesk):
    ws, rita, lena, ids = team
    decide_all(ws, rita, ids)
    write_json_artifact(
        ws.run_dir("exam-9") / "exam-adjudication.json", {"status": "PENDING_ADJUDICATION"}
    )
    record_run(ws, "exam-9", "exam-adjudication.json")
    summary = signoff_summary(ws)
    assert not summary.ready and summary.holds[0].startswith("the exam is PENDING_ADJUDICATION")
    with pytest.raises(NotReadyError, match="the exam is PENDING_ADJUDICATION"):
        sign_off(ws, lena)
    cli = sealdesk("signoff", "--yes", "--key", lena.path, workspace=ws.root)
    assert cli.returncode != 0
    assert "NOT READY: the exam is PENDING_ADJUDICATION" in cli.stdout
    assert "not ready: the exam is PENDING_ADJUDICATION" in cli.stderr
    assert record_count(ws) == 4  # three decisions and the run record
    rec = sign_off(ws, lena, with_exceptions=True)
    assert rec.body["data"]["status"]["exam"]["adjudication"] == "PENDING_ADJUDICATION"


def test_signoff_with_exceptions_lists_every_undecided_item_in_the_record(team):
    ws, rita, lena, ids = team
    ws.decide(rita, "flagged_pairs", ids[0], "accept")
    ws.decide(rita, "flagged_pairs", ids[1], "skip")
    rec = sign_off(ws, lena, with_exceptions=True, note="fp-2 waits for legal")
    data = rec.body["data"]
    assert data["with_exceptions"] is True
    held = {
        i.item_id: i
        for i in [
            BacklogItem.make(
                "flagged_pairs",
                ids[k],
                "run-1",
                {"summary": {"title": f"flagged_pairs {k}", "score": None, "tags": []}, "n": k},
            )
            for k in (1, 2)
        ]
    }
    assert data["exceptions"] == [
        {
            "queue": "flagged_pairs",
            "item_id": ids[1],
            "item_sha256": held[ids[1]].item_sha256,
            "status": "skip",
        },
        {
            "queue": "flagged_pairs",
            "item_id": ids[2],
            "item_sha256": held[ids[2]].item_sha256,
            "status": "undecided",
        },
    ]
    assert rec.body["note"] == "fp-2 waits for legal"


def test_signoff_binds_the_tree_head_over_every_earlier_record(team):
    ws, rita, lena, ids = team
    decide_all(ws, rita, ids)
    ws.decide(rita, "flagged_pairs", ids[0], "reject")
    before = messages(ws)
    base = enrolled_upto(ws)
    rec = sign_off(ws, lena)
    tree = rec.body["data"]["tree"]
    assert rec.body["data"]["type"] == SIGNOFF_TYPE
    assert rec.seq == base + 5 and tree["size"] == base + 4 == len(before)
    assert tree["root"] == mth(before).hex()
    assert tree["origin"] == f"sealdesk/{ws.workspace_id}"
    assert rec.body["role"] == "lead" and rec.body["kind"] == "signoff"


def test_second_signoff_covers_the_first_one(team):
    ws, rita, lena, ids = team
    decide_all(ws, rita, ids)
    sign_off(ws, lena)
    ws.decide(rita, "flagged_pairs", ids[1], "reject")
    rec = sign_off(ws, lena)
    covered = enrolled_upto(ws) + 5  # three decisions, the first sign-off, one more decision
    assert rec.body["data"]["tree"]["size"] == covered
    assert rec.body["data"]["tree"]["root"] == mth(messages(ws)[:covered]).hex()


def test_signoff_binds_the_sha256_of_every_artifact(workspace, enrol):
    lena = enrol("lena", "lead")
    run_dir = workspace.run_dir("scan-7")
    write_json_artifact(run_dir / "contamination_report.json", {"leakage_rate": 0.25})
    (run_dir / "flagged_pairs.jsonl").write_bytes(b'{"test_idx":1}\n')
    record_run(workspace, "scan-7", "contamination_report.json", "flagged_pairs.jsonl")
    rec = sign_off(workspace, lena)
    expected = {
        "scan-7/contamination_report.json": hashlib.sha256(
            (run_dir / "contamination_report.json").read_bytes()
        ).hexdigest(),
        "scan-7/flagged_pairs.jsonl": hashlib.sha256(b'{"test_idx":1}\n').hexdigest(),
    }
    assert rec.body["data"]["artifacts"] == expected


def test_signoff_refuses_an_artifact_that_differs_from_its_sidecar(team):
    ws, rita, lena, ids = team
    decide_all(ws, rita, ids)
    path = ws.run_dir("scan-7") / "contamination_report.json"
    write_json_artifact(path, {"leakage_rate": 0.25})
    record_run(ws, "scan-7", path.name)
    path.write_bytes(b'{"leakage_rate":0.0}')
    with pytest.raises(IntegrityError, match="sidecar"):
        sign_off(ws, lena)
    assert record_count(ws) == 4  # three decisions and the run record


def test_signoff_refuses_an_artifact_that_differs_from_its_run_manifest(workspace, enrol):
    lena = enrol("lena", "lead")
    report = {"leakage_rate": 0.25}
    add_items(
        workspace,
        "weak_categories",
        0,
        run="scan-8",
        artifacts={"report.json": canonical_sha256(report)},
    )
    write_json_artifact(workspace.run_dir("scan-8") / "report.json", {"leakage_rate": 0.0})
    with pytest.raises(IntegrityError, match="run manifest"):
        sign_off(workspace, lena)


def test_only_a_lead_may_sign_off(team):
    ws, rita, _lena, ids = team
    decide_all(ws, rita, ids)
    with pytest.raises(PermissionRefused):
        sign_off(ws, rita)
    assert record_count(ws) == 3


def test_signoff_refuses_when_the_ledger_moved_since_the_summary(team):
    ws, rita, lena, ids = team
    decide_all(ws, rita, ids[:2])
    seen = signoff_summary(ws).tree.size
    ws.decide(rita, "flagged_pairs", ids[2], "accept")
    with pytest.raises(NotReadyError, match="changed while you reviewed"):
        sign_off(ws, lena, expected_size=seen)
    assert record_count(ws) == 3


def test_summary_counts_each_queue(team):
    ws, rita, _lena, ids = team
    ws.decide(rita, "flagged_pairs", ids[0], "accept")
    ws.decide(rita, "flagged_pairs", ids[1], "reject")
    ws.decide(rita, "flagged_pairs", ids[2], "skip")
    fp = {q.queue: q for q in signoff_summary(ws).queues}["flagged_pairs"]
    assert (fp.total, fp.accepted, fp.rejected, fp.skipped, fp.undecided, fp.decided) == (
        3,
        1,
        1,
        1,
        1,
        2,
    )


def test_summary_says_not_run_for_producers_that_left_no_artifact(workspace):
    s = signoff_summary(workspace)
    assert (s.contamination.state, s.exam.state, s.coverage.state) == ("not run",) * 3
    assert s.tree.size == 1 == workspace.head()[0]  # the genesis alone
    assert s.last_signoff is None and s.ready


def test_summary_reads_leakage_power_exam_gates_and_coverage_from_the_latest_artifacts(workspace):
    scan = workspace.run_dir("contam-1")
    write_json_artifact(
        scan / "contamination_report.json",
        {
            "test": {"name": "gsm", "n": 40},
            "counts": {"total_flagged_items": 5},
            "leakage_rate": 0.125,
        },
    )
    write_json_artifact(
        workspace.run_dir("clean-1") / "clean_report.json",
        {
            "leakage_rate_before": 0.125,
            "leakage_rate_after": 0.0,
            "dropped": ["q1", "q7", "q9"],
            "power": {
                "before": {"min_detectable_difference": 0.21},
                "after": {"min_detectable_difference": 0.23},
            },
        },
    )
    write_json_artifact(
        workspace.run_dir("exam-1") / "exam-score.json",
        {
            "status": "FAIL",
            "gates": {
                "precision": {"value": 0.75, "threshold": ">= 0.70", "passed": True},
                "recall": {"value": 0.35, "threshold": ">= 0.40", "passed": False},
            },
        },
    )
    write_json_artifact(
        workspace.run_dir("exam-1") / "exam-adjudication.json", {"status": "COMPLETE"}
    )
    write_json_artifact(
        workspace.run_dir("cov-1") / "coverage-evidence.json",
        {
            "benchmark": {
                "eligibility": "HOLD",
                "stratified_report": [{"category": "benign"}, {"category": "obfuscation"}],
                "weak_categories": [{"category": "obfuscation", "issue": "low_recall"}],
            }
        },
    )
    s = signoff_summary(workspace)
    c = s.contamination
    # an older scan report's leakage_rate counted flagged items; the confirmed rate is the
    # 3 dropped of the 40 eval items
    assert (c.state, c.flagged_rate, c.leakage_rate, c.dropped_items, c.flagged_items) == (
        "cleaned",
        0.125,
        3 / 40,
        3,
        5,
    )
    assert [(p.before, p.after) for p in c.power] == [(0.21, 0.23)]
    assert (s.exam.state, s.exam.adjudication) == ("FAIL", "COMPLETE")
    assert [(g.name, g.value, g.passed) for g in s.exam.gates] == [
        ("precision", 0.75, True),
        ("recall", 0.35, False),
    ]
    assert s.coverage.state == "HOLD"
    assert [(k.category, k.eligibility, k.findings) for k in s.coverage.categories] == [
        ("benign", "ELIGIBLE", ()),
        ("obfuscation", "HOLD", ("low_recall",)),
    ]


def test_summary_takes_the_newest_report_of_a_kind(workspace):
    import os

    old = workspace.run_dir("a-old") / "exam-score.json"
    new = workspace.run_dir("b-new") / "exam-score.json"
    write_json_artifact(new, {"status": "PASS"})
    write_json_artifact(old, {"status": "PENDING_ADJUDICATION"})
    os.utime(old, ns=(1_000_000_000, 1_000_000_000))
    assert signoff_summary(workspace).exam.state == "PASS"


def test_an_unreadable_producer_artifact_is_a_warning_not_a_crash(workspace):
    from engine.artifacts import write_artifact

    write_artifact(workspace.run_dir("exam-2") / "exam-score.json", b"{not json")
    s = signoff_summary(workspace)
    assert s.exam.state == "not run"
    assert any("exam-score.json" in w for w in s.warnings)


def test_verify_accepts_a_signoff_made_by_sign_off(team):
    ws, rita, lena, ids = team
    decide_all(ws, rita, ids)
    sign_off(ws, lena)
    report = verify_workspace(ws)
    assert report.ok, report.faults


def test_verify_flags_a_lead_signed_tree_head_that_the_records_do_not_hash_to(team):
    ws, rita, lena, ids = team
    decide_all(ws, rita, ids)
    good = sign_off(ws, lena).body["data"]
    # The right size (every record so far, the first sign-off too), a root they do not hash to.
    size = good["tree"]["size"] + 1
    assert size == ws.head()[0]
    wrong = {**good, "tree": {**good["tree"], "size": size, "root": "ab" * 32}}
    rec = ws.signoff(lena, wrong)
    report = verify_workspace(ws)
    assert [f.seq for f in report.faults] == [rec.seq]
    assert "no longer hash to the root" in report.faults[0].reason


# -- the command line ----------------------------------------------------------


def _paths(ws, tmp_path: Path) -> tuple[str, str]:
    return str(ws.root), str(tmp_path / "keys" / "lena")


def test_cli_signoff_asks_and_a_no_writes_nothing(team, sealdesk, tmp_path):
    ws, rita, _lena, ids = team
    decide_all(ws, rita, ids)
    root, key = _paths(ws, tmp_path)
    proc = sealdesk("signoff", "--key", key, workspace=root, input="n\n")
    assert proc.returncode == 1, proc.stderr
    assert f"Sign off {enrolled_upto(ws) + 3} record(s) as lena (lead)?" in proc.stdout
    assert "not signed" in proc.stdout
    assert record_count(ws) == 3


def test_cli_signoff_with_stdin_ended_before_an_answer_is_an_error_not_an_abort(
    team, sealdesk, tmp_path
):
    ws, rita, _lena, ids = team
    decide_all(ws, rita, ids)
    root, key = _paths(ws, tmp_path)
    proc = sealdesk("signoff", "--key", key, workspace=root, input="")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "sealdesk: error: standard input ended before a yes to the prompt; nothing was signed "
        "(pass --yes to sign without asking)"
    ]
    assert record_count(ws) == 3


def test_cli_signoff_asks_and_a_yes_signs(team, sealdesk, tmp_path):
    ws, rita, _lena, ids = team
    decide_all(ws, rita, ids)
    root, key = _paths(ws, tmp_path)
    proc = sealdesk("signoff", "--key", key, workspace=root, input="y\n")
    assert proc.returncode == 0, proc.stderr
    assert f"signed off: record #{enrolled_upto(ws) + 4}" in proc.stdout
    assert record_count(ws) == 4


def test_cli_signoff_summary_shows_counts_and_undecided_items(team, sealdesk):
    ws, rita, _lena, ids = team
    ws.decide(rita, "flagged_pairs", ids[0], "reject")
    proc = sealdesk("signoff", "--summary-only", workspace=ws.root, check=True)
    assert "flagged_pairs          3         0         1        0          2" in proc.stdout
    assert f"flagged_pairs/{ids[1]}  undecided" in proc.stdout
    assert "Contamination: not run" in proc.stdout


def test_cli_signoff_yes_refuses_undecided_items_with_exit_5(team, sealdesk, tmp_path):
    ws, *_ = team
    root, key = _paths(ws, tmp_path)
    proc = sealdesk("signoff", "--yes", "--key", key, workspace=root)
    assert proc.returncode == 5
    assert "sealdesk: error: 3 item(s) are undecided" in proc.stderr
    assert record_count(ws) == 0


def test_cli_signoff_json_summary_is_machine_readable(team, sealdesk):
    ws, rita, _lena, ids = team
    decide_all(ws, rita, ids)
    proc = sealdesk("signoff", "--summary-only", "--json", workspace=ws.root, check=True)
    summary = json.loads(proc.stdout)
    assert summary["tree"]["size"] == enrolled_upto(ws) + 3
    assert summary["tree"]["root"] == mth(messages(ws)).hex()
    assert summary["ready"] is True


@contextmanager
def agent_holding(tmp_path, monkeypatch, *keys: Path):
    """Runs a real ssh-agent holding keys in this order, as SSH_AUTH_SOCK."""
    import os
    import subprocess
    import time

    from tests.conftest import require_tool

    require_tool("ssh-agent")
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        for key in keys:
            subprocess.run(["ssh-add", "-q", str(key)], env=env, check=True, capture_output=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        yield
    finally:
        agent.terminate()
        agent.wait(timeout=10)


def test_the_lead_key_is_chosen_from_an_agent_that_holds_a_reviewer_key_first(
    team, tmp_path, monkeypatch
):
    from engine.signoff.summary import lead_signer

    ws, rita, lena, _ids = team
    with agent_holding(tmp_path, monkeypatch, rita.path, lena.path):  # rita's key first
        chosen = lead_signer(ws)
        assert chosen.public_key.blob == lena.public_key.blob
        assert type(chosen).__name__ == "AgentSigner"


def test_an_expired_lead_key_first_in_the_agent_is_passed_over(
    team, tmp_path, monkeypatch, keygen, founder_key
):
    from engine.ledger.enrol import enrol
    from engine.ledger.signers import FileSigner, read_public_key
    from engine.signoff.summary import lead_signer

    ws, _rita, lena, _ids = team
    old = keygen("lena-2019")
    # lena's second lead key, enrolled by a lead with a window that has closed.
    enrol(
        ws.db,
        ws.workspace_id,
        FileSigner(founder_key),
        "lena",
        ("lead",),
        read_public_key(Path(f"{old}.pub")),
        valid_before="2020-01-01T00:00:00.000000Z",
    )
    assert sorted(
        g.valid_before[:4] for g in ws.authority().in_force() if g.principal == "lena"
    ) == ["2020", "~"]
    with agent_holding(tmp_path, monkeypatch, old, lena.path):  # the expired key first
        chosen = lead_signer(ws)
        assert chosen.public_key.blob == lena.public_key.blob
        assert ws.identify(chosen, None, "lead") == ("lena", "lead")


@pytest.fixture
def signed_artifact(team):
    """A sign-off that bound scan-7/contamination_report.json: (ws, its path, the record)."""
    ws, rita, lena, ids = team
    decide_all(ws, rita, ids)
    path = ws.run_dir("scan-7") / "contamination_report.json"
    write_json_artifact(path, {"leakage_rate": 0.25})
    record_run(ws, "scan-7", path.name)
    return ws, path, sign_off(ws, lena)


def test_verify_flags_an_artifact_rewritten_after_the_signoff_that_bound_it(signed_artifact):
    ws, path, rec = signed_artifact
    write_json_artifact(ws.run_dir("scan-9") / "later.json", {"new": True})  # added later: fine
    assert verify_workspace(ws).ok
    write_json_artifact(path, {"leakage_rate": 0.0})  # bytes and sidecar agree again
    report = verify_workspace(ws)
    # Flagged at the sign-off that bound it, and (seq 0) against the run that recorded it.
    assert [(f.seq, "scan-7/contamination_report.json" in f.reason) for f in report.faults] == [
        (rec.seq, True),
        (0, True),
    ]


def test_verify_flags_an_artifact_removed_after_the_signoff_that_bound_it(signed_artifact):
    ws, path, rec = signed_artifact
    path.unlink()
    report = verify_workspace(ws)
    assert [f.seq for f in report.faults] == [rec.seq, 0]
    assert all("gone" in f.reason for f in report.faults)
