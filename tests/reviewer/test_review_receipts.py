"""The app leaves a receipt with the signer for every record it acknowledges."""

from __future__ import annotations

import json
import shutil

import pytest

from reviewer.app import ReviewApp
from reviewer.session import open_session
from tests.support.review_app import populate, settle

pytestmark = pytest.mark.anyio


async def test_each_key_that_signs_keeps_a_receipt_that_catches_a_rollback(
    workspace, enrol, tmp_path, monkeypatch, sealdesk
):
    receipts = tmp_path / "rita-state"
    monkeypatch.setenv("SEALDESK_RECEIPTS", str(receipts))  # rita's own state directory
    desk = populate(workspace, enrol)
    backup = tmp_path / "backup"
    shutil.copytree(desk.ws.root, backup)
    app = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.rita)))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("a", "x")
        await pilot.press("u")
        await settle(pilot, lambda: len(list(receipts.glob("*.jsonl"))) == 1)
    (path,) = receipts.glob("*.jsonl")
    kept = [json.loads(line) for line in path.read_text().splitlines()]
    rows = desk.ws.conn.execute(
        "SELECT seq, record_hash FROM records WHERE principal='rita' ORDER BY seq"
    ).fetchall()
    assert [(r["seq"], r["record_hash"]) for r in kept] == rows and len(rows) == 3
    assert all(r["tree_size"] == r["seq"] for r in kept)

    # The workspace copied back from before rita's session verifies for someone who
    # kept no receipt of it; her receipts say it lost what the app acknowledged, in her
    # own plain verify and wherever she hands them over.
    elsewhere = {"SEALDESK_RECEIPTS": str(tmp_path / "someone-else")}
    assert sealdesk("verify", workspace=backup, env=elsewhere).returncode == 0
    for args in ((), ("--receipts", receipts)):
        proc = sealdesk("verify", *args, workspace=backup)
        assert proc.returncode == 1 and "rolled back" in proc.stderr
