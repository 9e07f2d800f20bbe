"""Concurrent writers and killed writers never fork or corrupt the chain."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from engine.signoff.verify import verify_workspace
from tests.support.backlog import make_items

WRITER = """
import sys
from engine.workspace import Workspace
from engine.ledger.signers import FileSigner
ws = Workspace.open(sys.argv[1]); signer = FileSigner(sys.argv[2])
worker, n = int(sys.argv[3]), int(sys.argv[4])
# Each writer its own 12 items, each visit the other decision: the same decision
# again by the same signer would sign nothing, and every call must append.
for i in range(n):
    ws.decide(signer, "flagged_pairs", f"item-{worker * 12 + i % 12}",
              ("accept", "reject")[i // 12 % 2], note=f"w{worker}#{i}")
"""


@pytest.mark.slow
def test_four_processes_appending_500_each_make_one_unbroken_chain_of_2000(workspace, enrol):
    enrol("rita", "reviewer")
    workspace.ingest(make_items(50))
    base = workspace.head()[0]  # the genesis and rita's enrolment
    key = workspace.root.parent / "keys" / "rita"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(workspace.root), str(key), str(w), "500"]
        )
        for w in range(4)
    ]
    assert [p.wait(timeout=600) for p in procs] == [0, 0, 0, 0]
    report = verify_workspace(workspace)
    assert report.ok, report.first
    assert report.records == base + 2000
    notes = {
        row[0]
        for row in workspace.conn.execute(
            "SELECT json_extract(message, '$.note') FROM records WHERE kind = 'decision'"
        )
    }
    assert len(notes) == 2000  # every single append landed exactly once


PAUSING_WRITER = """
import sys, time
from pathlib import Path
from engine.workspace import Workspace
from engine.ledger.signers import FileSigner
ws = Workspace.open(sys.argv[1]); signer = FileSigner(sys.argv[2]); marker = Path(sys.argv[3])
def pause():
    marker.write_text("inside")   # the row is inserted, COMMIT not yet run
    time.sleep(600)
ws.conn.create_function("pause_here", 0, pause)
ws.conn.execute("CREATE TEMP TRIGGER pause AFTER INSERT ON main.records "
                "BEGIN SELECT pause_here(); END")
ws.decide(signer, "flagged_pairs", "item-3", "accept", note="never committed")
"""


def test_writer_killed_mid_append_leaves_a_verifying_ledger(workspace, enrol, tmp_path):
    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(5))
    decided = workspace.decide(rita, "flagged_pairs", "item-0", "accept")
    marker = tmp_path / "inside"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            PAUSING_WRITER,
            str(workspace.root),
            str(workspace.root.parent / "keys" / "rita"),
            str(marker),
        ]
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, "writer exited before reaching the insert"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    report = verify_workspace(workspace)
    assert report.ok and report.records == decided.seq
    # The lock died with the writer: the next append goes through right after.
    rec = workspace.decide(rita, "flagged_pairs", "item-1", "reject")
    assert rec.seq == decided.seq + 1 and verify_workspace(workspace).ok


def test_threads_sharing_one_workspace_never_lose_or_falsely_fail_a_decision(workspace, enrol):
    # The review app decides from worker threads on one open Workspace (one
    # SQLite connection): each append must own the connection's transaction.
    import threading

    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(40))
    base = workspace.head()[0]  # the genesis and rita's enrolment
    errors: list[BaseException] = []

    def decide(worker: int) -> None:
        for i in range(worker, 40, 4):
            try:
                workspace.decide(rita, "flagged_pairs", f"item-{i}", "accept", note=f"t{i}")
            except BaseException as exc:  # noqa: BLE001  (collected and asserted below)
                errors.append(exc)

    threads = [threading.Thread(target=decide, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    report = verify_workspace(workspace)
    assert report.ok and report.records == base + 40
