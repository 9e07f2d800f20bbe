"""A sign-off binds an artifact only if the run that produced it recorded exactly its bytes.

The attack: edit an artifact after its run (an exam PASS made FAIL, a HOLD
benchmark made ELIGIBLE), write a fresh ``.sha256`` sidecar, and have the
lead sign off. Each producer records its files' hashes in its immutable run
row; ``sealdesk signoff`` (the real CLI) and the app's sign-off screen refuse,
naming the file, and nothing is appended to the ledger.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from engine.artifacts import write_artifact, write_json_artifact
from engine.canonical import canonical_json, sha256_hex
from engine.coverage.evidence import make_evidence
from engine.coverage.findings import load_benchmark
from engine.coverage.run_backlog import run_backlog
from reviewer.app import ReviewApp
from reviewer.session import open_session
from reviewer.signoff_screen import SignoffScreen
from tests.support.backlog import record_run, sign_held_runs
from tests.support.coverage import SAMPLE, sample_benchmark
from tests.support.exam_builders import claim, write_exam, write_replay
from tests.support.review_app import notices, settle, text_of

V1 = "55c80d5d9e0d82337ab555b17e8505febf5e680758e1dd23ca7239e571eb1130"
V2 = "5642865473cf347f2c19ed920c162cf41c08e258c2452abfe33cc7db0606737c"
TEXTS = {
    "c1": "The API is live. The cache is warm.",
    "c2": "Nothing to report.",
    "c3": "The queue is empty.",
}
LANE = {
    "c1": [
        claim("The API is live.", "runtime", "API"),
        claim("The cache is warm.", "runtime", "cache"),
    ],
    "c2": [],
    "c3": [claim("The queue is empty.", "runtime", "queue")],
}
PASSING = {
    "c1": [("d1", "API is live", "runtime", "API"), ("d2", "cache", "runtime", "cache")],
    "c2": [],
    "c3": [("d3", "queue is empty", "runtime", "queue")],
}


@pytest.fixture
def lena(enrol):
    return enrol("lena", "lead", "reviewer")


def records(ws) -> int:
    conn = sqlite3.connect(ws.db_path)
    try:
        return conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    finally:
        conn.close()


def sha(path: Path) -> str:
    return sha256_hex(Path(path).read_bytes())


def relabel(path: Path, **changes) -> None:
    """Rewrites a JSON artifact with some fields changed and a matching new sidecar."""
    write_json_artifact(path, {**json.loads(path.read_bytes()), **changes})


def signoff(sealdesk, ws, lena):
    return sealdesk("signoff", "--yes", "--key", lena.path, workspace=ws.root)


def assert_refused(done, ws, before: int, *names: str) -> None:
    """The CLI exits 1 naming the first file in its error, lists each as a PROBLEM, and
    appends nothing."""
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("sealdesk: error: will not sign off: artifacts/")
    assert names[0] in done.stderr
    problems = [line for line in done.stdout.splitlines() if line.startswith("PROBLEM: ")]
    for name in names:
        assert any(name in line for line in problems), (name, problems)
    assert records(ws) == before


def exam_scored(sealdesk, ws, tmp_path: Path, key: Path, run: str = "ex") -> Path:
    """Gives exam-score.json of a PASS exam adjudicated and scored through the CLI, each
    run signed with ``key`` (its author)."""
    exam = write_exam(
        tmp_path / f"{run}-inputs", TEXTS, LANE, LANE, sweep={cid: [] for cid in TEXTS}
    )
    sealdesk(
        "exam",
        "adjudicate",
        "--run-id",
        run,
        "--key",
        key,
        *exam.cli_inputs(),
        workspace=ws.root,
        check=True,
    )
    replay = write_replay(tmp_path / f"{run}-replay.jsonl", PASSING, TEXTS)
    sealdesk(
        "exam",
        "score",
        "--run-id",
        run,
        "--key",
        key,
        "--expected-adjudication-sha256",
        sha(ws.artifacts_dir / run / "exam-adjudication.json"),
        *exam.cli_inputs(),
        "--replay",
        replay,
        "--expected-replay-sha256",
        sha(replay),
        workspace=ws.root,
        check=True,
    )
    path = ws.artifacts_dir / run / "exam-score.json"
    assert json.loads(path.read_bytes())["status"] == "PASS"
    return path


# -- laundering is refused -----------------------------------------------------------


def test_an_exam_score_turned_from_pass_to_fail_with_a_fresh_sidecar_is_refused(
    sealdesk, workspace, lena, tmp_path
):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    relabel(path, status="FAIL")
    before = records(workspace)
    done = signoff(sealdesk, workspace, lena)
    assert_refused(done, workspace, before, "artifacts/ex/exam-score.json")
    assert "bytes differ from the hash its run manifest recorded" in done.stderr


def test_a_benchmark_turned_from_hold_to_eligible_beside_its_signature_is_refused(
    sealdesk, workspace, lena, tmp_path
):
    root = tmp_path / "authority"
    sealdesk(
        "coverage", "keygen", "--trust-root", root / "trust", "--keys", root / "private", check=True
    )
    shutil.copy(SAMPLE / "holdout.json", root / "holdout.json")
    sealdesk(
        "coverage",
        "sign",
        "--role",
        "holdout",
        "--key",
        root / "private/holdout.key",
        root / "holdout.json",
        check=True,
    )
    sealdesk(
        "coverage", "store-init", "--store", root / "lineage.db", "--store-id", "t", check=True
    )
    # A genesis scope for v2, whose predictions miss obfuscation and flag benign: HOLD.
    template = root / "scope.toml"
    template.write_text(
        (SAMPLE / "scope-genesis.toml").read_text().replace(V1, V2).replace('"v1"', '"v2"')
    )
    sealdesk(
        "coverage",
        "scope",
        "--template",
        template,
        "--holdout",
        root / "holdout.json",
        "--genesis",
        "--out",
        root / "scope.json",
        check=True,
    )
    sealdesk(
        "coverage",
        "sign",
        "--role",
        "scope",
        "--key",
        root / "private/scope.key",
        root / "scope.json",
        check=True,
    )
    sealdesk(
        "coverage",
        "benchmark",
        "--trust-root",
        root / "trust",
        "--holdout",
        root / "holdout.json",
        "--scope",
        root / "scope.json",
        "--predictions",
        SAMPLE / "predictions_v2.jsonl",
        "--candidate-sha256",
        V2,
        "--candidate-version",
        "v2",
        "--store",
        root / "lineage.db",
        "--store-id",
        "t",
        "--benchmark-key",
        root / "private/benchmark.key",
        workspace=workspace.root,
        check=True,
    )
    [path] = workspace.artifacts_dir.glob("coverage-benchmark-*/benchmark.json")
    assert json.loads(path.read_bytes())["eligibility"] == "HOLD"
    relabel(path, eligibility="ELIGIBLE", weak_categories=[])
    before = records(workspace)
    done = signoff(sealdesk, workspace, lena)
    where = f"artifacts/{path.parent.name}/benchmark.json"
    assert_refused(done, workspace, before, where, where + ".sig")
    assert any(
        line.startswith(f"PROBLEM: {where}.sig: signature over {where} does not verify")
        for line in done.stdout.splitlines()
    ), done.stdout


def test_coverage_evidence_edited_with_a_fresh_sidecar_is_refused(
    sealdesk, workspace, enrol, lena, tmp_path
):
    rita = enrol("rita", "reviewer")
    auth, bench, sig = sample_benchmark(tmp_path / "authority")
    source = load_benchmark(bench, sig, auth.trust)[0]
    run_backlog(workspace, source, SAMPLE / "debug_rows.jsonl", SAMPLE / "attribution.toml", None)
    for item in workspace.items(queue="weak_categories"):
        workspace.decide(rita, "weak_categories", item["item_id"], "accept")
    path = make_evidence(workspace, bench, sig, auth.trust, lena).path
    sign_held_runs(workspace, lena)
    before = records(workspace)
    value = json.loads(path.read_bytes())
    value["benchmark"] = {**value["benchmark"], "eligibility": "ELIGIBLE"}
    write_artifact(path, canonical_json(value))
    done = signoff(sealdesk, workspace, lena)
    assert_refused(done, workspace, before, f"artifacts/{path.parent.name}/coverage_evidence.json")


def test_a_file_no_run_recorded_is_refused(sealdesk, workspace, lena, tmp_path):
    exam_scored(sealdesk, workspace, tmp_path, lena.path)
    write_json_artifact(
        workspace.artifacts_dir / "ex" / "exam-score-final.json", {"status": "PASS"}
    )
    before = records(workspace)
    done = signoff(sealdesk, workspace, lena)
    assert_refused(done, workspace, before, "artifacts/ex/exam-score-final.json")
    assert "no run recorded this file" in done.stderr


def test_a_signed_off_artifact_that_was_removed_is_refused(sealdesk, workspace, lena, tmp_path):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    assert signoff(sealdesk, workspace, lena).returncode == 0
    path.unlink()
    path.with_name(path.name + ".sha256").unlink()
    before = records(workspace)
    assert_refused(
        signoff(sealdesk, workspace, lena), workspace, before, "artifacts/ex/exam-score.json"
    )


def test_an_sshsig_beside_an_artifact_must_verify_over_it(
    sealdesk, workspace, lena, keygen, tmp_path
):
    key = keygen("auditor")

    def signed(run: str, signs: bytes) -> None:
        path = workspace.run_dir(run) / "report.json"
        write_artifact(path, canonical_json({"run": run}))
        message = tmp_path / f"{run}.msg"
        message.write_bytes(signs)
        subprocess.run(
            ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", "audit", str(message)],
            check=True,
            capture_output=True,
        )
        write_artifact(path.with_name("report.json.sig"), Path(f"{message}.sig").read_bytes())
        record_run(workspace, run, "report.json", "report.json.sig")

    signed("audit-1", canonical_json({"run": "audit-1"}))
    assert signoff(sealdesk, workspace, lena).returncode == 0
    signed("audit-2", canonical_json({"run": "another report"}))
    before = records(workspace)
    done = signoff(sealdesk, workspace, lena)
    assert_refused(done, workspace, before, "artifacts/audit-2/report.json.sig")
    assert "SSHSIG: signature does not verify" in done.stderr


# -- what still signs -----------------------------------------------------------------


def test_a_signoff_after_a_new_run_binds_it_with_the_run_that_recorded_it(
    sealdesk, workspace, lena, tmp_path
):
    exam_scored(sealdesk, workspace, tmp_path, lena.path)
    assert signoff(sealdesk, workspace, lena).returncode == 0
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path, run="ex-2")
    done = signoff(sealdesk, workspace, lena)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(
        workspace.conn.execute("SELECT message FROM records ORDER BY seq DESC LIMIT 1").fetchone()[
            0
        ]
    )["data"]
    assert data["artifacts"]["ex-2/exam-score.json"] == sha(path)
    # The adjudication run ex-2 is immutable, so the score was recorded by a run of its own.
    [(run_id, manifest)] = workspace.conn.execute(
        "SELECT run_id, manifest FROM runs WHERE run_id LIKE 'ex-2.exam-score-%'"
    ).fetchall()
    manifest = json.loads(manifest)
    assert manifest["artifacts_dir"] == "ex-2"
    assert manifest["artifacts"]["exam-score.json"] == sha(path)
    assert data["runs"][run_id] == sha256_hex(canonical_json(manifest))


def test_verify_names_an_artifact_that_differs_from_its_runs_record(
    sealdesk, workspace, lena, tmp_path
):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    assert sealdesk("verify", workspace=workspace.root).returncode == 0
    relabel(path, status="FAIL")
    done = sealdesk("verify", workspace=workspace.root)
    assert done.returncode == 1
    assert done.stderr.startswith(
        "FAIL: artifacts/ex/exam-score.json: bytes differ from the hash run ex.exam-score-"
    )


# -- the app --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_signoff_screen_shows_the_refusal_and_signs_nothing(
    sealdesk, workspace, lena, tmp_path
):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    relabel(path, status="FAIL")
    before = records(workspace)
    app = ReviewApp(workspace, open_session(workspace, key=str(lena.path)))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("S")
        await settle(
            pilot, lambda: isinstance(app.screen, SignoffScreen) and app.screen.summary is not None
        )
        body = text_of(app.screen.query_one("#signoff-body"))
        assert (
            "BLOCKED: will not sign off: artifacts/ex/exam-score.json: bytes differ from "
            "the hash its run manifest recorded" in " ".join(body.split())
        )
        screen = app.screen
        await pilot.press("s")
        assert app.screen is screen
        assert "artifacts/ex/exam-score.json: bytes differ" in notices(app)
    assert records(workspace) == before
