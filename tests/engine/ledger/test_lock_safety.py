"""A process that holds its workspace open keeps SQLite's locks, so no acknowledged record
is ever lost to another writer; and when something outside sealdesk drops them anyway,
the process stops signing instead of acknowledging records that reach no file."""

from __future__ import annotations

import json
import sqlite3

import pytest

from engine.errors import LedgerDiverged
from engine.ledger.signers import FileSigner
from engine.workspace import Workspace
from tests.support.cli_workspace import decide_args
from tests.support.held_workspace import Held


def cli_decide(sealdesk, ws, key, item: str, receipts) -> dict:
    """Gives the acknowledgement the CLI printed for one decision: its receipt."""
    sealdesk(
        *decide_args(key, item), workspace=ws, env={"SEALDESK_RECEIPTS": str(receipts)}, check=True
    )
    (path,) = receipts.glob("*.jsonl")
    return json.loads(path.read_text().splitlines()[-1])


@pytest.mark.parametrize("how", ["reopen", "another"])
def test_decisions_acknowledged_beside_a_process_that_reopens_its_workspace_all_stay(
    two_reviewers_ws, sealdesk, tmp_path, how
):
    # The app's way: one connection held for the session, the workspace opened again
    # by a screen while it lives; the CLI deciding in another shell meanwhile.
    ws, keys = two_reviewers_ws
    held_receipts, cli_receipts = tmp_path / "rita-receipts", tmp_path / "ben-receipts"
    held = Held(ws, keys["rita"], held_receipts)
    acks = []
    try:
        assert held.ask(how) == {"ok": how}
        acks.append(held.ask("decide item-0 accept"))
        acks.append(cli_decide(sealdesk, ws, keys["ben"], "item-1", cli_receipts))
        acks.append(held.ask("decide item-2 accept"))
        acks.append(cli_decide(sealdesk, ws, keys["ben"], "item-3", cli_receipts))
        acks.append(cli_decide(sealdesk, ws, keys["ben"], "item-4", cli_receipts))
        assert held.ask(how) == {"ok": how}
        acks.append(held.ask("decide item-5 accept"))
    finally:
        held.quit()
    assert all("error" not in ack for ack in acks), acks
    seqs = [ack["seq"] for ack in acks]
    assert len(set(seqs)) == len(seqs), f"a seq was acknowledged twice: {seqs}"
    with sqlite3.connect(ws / "sealdesk.db") as db:
        held_by_seq = dict(db.execute("SELECT seq, record_hash FROM records"))
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    lost = [ack for ack in acks if held_by_seq.get(ack["seq"]) != ack["record_hash"]]
    assert not lost, f"acknowledged but not in the ledger: {lost}"
    for receipts in (held_receipts, cli_receipts):
        proc = sealdesk("verify", "--receipts", receipts, workspace=ws)
        assert proc.returncode == 0, proc.stderr


def test_a_process_whose_log_was_deleted_under_it_stops_signing_and_says_so(
    two_reviewers_ws, sealdesk
):
    # Something outside sealdesk (a library, a plug-in) opens and closes the database
    # file in the process that holds it: POSIX drops every lock the process holds on
    # it. Another writer then checkpoints and deletes the -wal the process writes into.
    ws_root, keys = two_reviewers_ws
    ws = Workspace.open(ws_root)
    try:
        rita = FileSigner(keys["rita"])
        ws.decide(rita, "flagged_pairs", "item-0", "accept")
        with open(ws_root / "sealdesk.db", "rb") as outside:  # what sealdesk never does
            outside.read(16)
        sealdesk(
            "decide",
            *("--queue", "flagged_pairs", "--item", "item-1", "--decision", "reject"),
            *("--key", keys["ben"]),
            workspace=ws_root,
            check=True,
        )
        assert not (ws_root / "sealdesk.db-wal").exists()  # the other writer deleted it
        with pytest.raises(LedgerDiverged, match="sealdesk.db-wal was deleted") as first:
            ws.decide(rita, "flagged_pairs", "item-2", "accept")
        assert "nothing was signed" in str(first.value)
        # And it stays stopped: nothing more is signed from this connection.
        with pytest.raises(LedgerDiverged, match="nothing more is signed"):
            ws.decide(rita, "flagged_pairs", "item-3", "accept")
    finally:
        ws.close()
    proc = sealdesk("verify", workspace=ws_root)
    assert proc.returncode == 0, proc.stderr
    assert "3 record(s)" not in proc.stdout
    with sqlite3.connect(ws_root / "sealdesk.db") as db:
        decided = {
            row[0] for row in db.execute("SELECT item_id FROM records WHERE kind='decision'")
        }
    assert decided == {"item-0", "item-1"}
