"""The numbers a lead signs off have an author: a signed run record per producer run.

The attack: one ``INSERT INTO runs`` naming a hand-written
``artifacts/exam-rerun/exam-score.json`` made the sign-off show and bind
"precision 0.99 ... pass", and ``verify`` passed. A row in ``runs`` is
written by whoever can write the database; only a ``run`` record signed by
an enrolled key vouches for a run's files, and the sign-off binds nothing
else. A sign-off that bound a file no run record vouches for (as one made
before this rule did) is a fault for ``verify``.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3

import pytest

import engine.signoff.summary as summary_module
from engine.artifacts import write_json_artifact
from engine.canonical import canonical_json, sha256_hex
from engine.signoff.summary import sign_off
from tests.engine.signoff.test_artifacts import (
    LANE,
    TEXTS,
    assert_refused,
    exam_scored,
    records,
    signoff,
)
from tests.support.exam_builders import write_exam

FORGED = {
    "status": "PASS",
    "gates": [{"metric": "precision", "op": ">=", "threshold": 0.7, "value": 0.99, "pass": True}],
}


@pytest.fixture
def lena(enrol):
    return enrol("lena", "lead", "reviewer")


def insert_run(ws) -> str:
    """Writes artifacts/exam-rerun/exam-score.json by hand, newer than any other, and
    records it with one INSERT into the runs table, as an insider with the database
    can; gives the artifact's path under artifacts/."""
    path = ws.run_dir("exam-rerun") / "exam-score.json"
    write_json_artifact(path, FORGED)
    later = max(p.stat().st_mtime_ns for p in ws.artifacts_dir.rglob("*")) + 10**9
    os.utime(path, ns=(later, later))
    manifest = canonical_json(
        {
            "kind": "exam-score",
            "inputs": {},
            "artifacts": {path.name: sha256_hex(path.read_bytes())},
        }
    )
    conn = sqlite3.connect(ws.db_path)
    try:
        with conn:
            conn.execute(
                "INSERT INTO runs VALUES (?,?,?,?,?)",
                (
                    "exam-rerun",
                    "exam-score",
                    manifest.decode(),
                    hashlib.sha256(manifest).hexdigest(),
                    "2026-01-01T00:00:00.000000Z",
                ),
            )
    finally:
        conn.close()
    return "exam-rerun/exam-score.json"


def test_an_inserted_run_row_is_refused_at_signoff_and_shown_without_an_author(
    sealdesk, workspace, lena, tmp_path
):
    exam_scored(sealdesk, workspace, tmp_path, lena.path)
    forged = insert_run(workspace)
    before = records(workspace)
    done = signoff(sealdesk, workspace, lena)
    assert_refused(done, workspace, before, f"artifacts/{forged}")
    assert f"artifacts/{forged}: no signed run record vouches for it" in done.stderr
    # The summary still shows what it read, and says nobody produced it.
    assert f"from artifacts/{forged}, produced by NO AUTHOR" in done.stdout


def test_the_summary_and_the_record_name_who_produced_each_number(
    sealdesk, workspace, lena, tmp_path
):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    shown = sealdesk("signoff", "--summary-only", workspace=workspace.root, check=True).stdout
    [author] = workspace.conn.execute(
        "SELECT seq FROM records WHERE kind='run' "
        "AND json_extract(message, '$.data.artifacts.\"ex/exam-score.json\"') = ?",
        (sha256_hex(path.read_bytes()),),
    ).fetchall()
    assert "from artifacts/ex/exam-score.json, produced by lena (lead), run ex.exam-score-" in shown
    assert f", record #{author[0]}" in shown
    record = sign_off(workspace, lena)
    [run_record] = workspace.conn.execute(
        "SELECT record_hash FROM records WHERE seq=?", (author[0],)
    ).fetchone()
    assert record.body["data"]["run_records"]["ex/exam-score.json"] == run_record


def test_verify_flags_a_signoff_that_bound_a_number_without_an_author(
    sealdesk, workspace, lena, tmp_path, monkeypatch
):
    exam_scored(sealdesk, workspace, tmp_path, lena.path)
    forged = insert_run(workspace)
    # A sign-off made without the author check (as every sign-off once was).
    monkeypatch.setattr(summary_module, "artifact_problems", lambda *_: ([], []))
    record = sign_off(workspace, lena)
    assert record.body["data"]["status"]["exam"]["gates"][0]["value"] == 0.99
    done = sealdesk("verify", workspace=workspace.root)
    assert done.returncode == 1, done.stdout
    assert (
        f"sign-off #{record.seq} binds artifacts/{forged}, which no signed run record "
        "before it vouches for"
    ) in done.stdout + done.stderr


def test_a_run_made_without_a_key_is_signed_later_by_its_author(
    sealdesk, workspace, lena, tmp_path
):
    exam_scored(sealdesk, workspace, tmp_path, lena.path)
    # Another exam adjudicated without --key and with no agent: its run stays unsigned.
    exam = write_exam(tmp_path / "unsigned", TEXTS, LANE, LANE, sweep={c: [] for c in TEXTS})
    done = sealdesk(
        "exam",
        "adjudicate",
        "--run-id",
        "ex-u",
        *exam.cli_inputs(),
        workspace=workspace.root,
        env={"SSH_AUTH_SOCK": ""},
    )
    assert done.returncode == 0, done.stderr
    assert "warning: run ex-u is not signed (no --key and no ssh-agent)" in done.stderr
    listed = sealdesk("runs", "list", workspace=workspace.root, check=True).stdout.splitlines()
    assert [line for line in listed if line.startswith("ex-u\t")][0].endswith("\tUNSIGNED")
    before = records(workspace)
    assert_refused(signoff(sealdesk, workspace, lena), workspace, before, "artifacts/ex-u/")
    signed = sealdesk("runs", "sign", "ex-u", "--key", lena.path, workspace=workspace.root)
    assert signed.returncode == 0, signed.stderr
    assert "signed run ex-u" in signed.stdout and "by lena (lead)" in signed.stdout
    listed = sealdesk("runs", "list", workspace=workspace.root, check=True).stdout.splitlines()
    assert "\tsigned by lena (lead)" in [line for line in listed if line.startswith("ex-u\t")][0]
    done = signoff(sealdesk, workspace, lena)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sealdesk("verify", workspace=workspace.root).returncode == 0
