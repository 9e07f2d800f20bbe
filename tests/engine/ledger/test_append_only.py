"""The records table refuses every way of changing the past."""

from __future__ import annotations

import sqlite3

import pytest

from engine.signoff.verify import verify_workspace
from tests.support.backlog import make_items


@pytest.fixture
def decided(workspace, enrol):
    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(2))
    workspace.decide(rita, "flagged_pairs", "item-0", "accept")
    workspace.decide(rita, "flagged_pairs", "item-1", "reject")
    return workspace


def decision_seqs(ws) -> list[int]:
    """Gives the seqs of the decisions (after the genesis and the enrolment)."""
    seqs = [
        s
        for (s,) in ws.conn.execute("SELECT seq FROM records WHERE kind = 'decision' ORDER BY seq")
    ]
    assert len(seqs) == 2 and seqs[0] > 1
    return seqs


def connect(ws):
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.execute("PRAGMA recursive_triggers=ON")
    return conn


def test_update_is_refused(decided):
    first, _ = decision_seqs(decided)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        connect(decided).execute("UPDATE records SET decision='reject' WHERE seq=?", (first,))


def test_delete_is_refused(decided):
    _, second = decision_seqs(decided)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        connect(decided).execute("DELETE FROM records WHERE seq=?", (second,))


def test_insert_or_replace_is_refused(decided):
    conn = connect(decided)
    first, _ = decision_seqs(decided)
    head_seq, head_hash = decided.head()
    # A well-formed next link whose record_hash collides with the first decision: REPLACE
    # would delete that record first, which the DELETE trigger (recursive) refuses.
    row = list(conn.execute("SELECT * FROM records WHERE seq=?", (first,)).fetchone())
    row[0], row[2] = head_seq + 1, head_hash
    placeholders = ",".join("?" * len(row))
    with pytest.raises(sqlite3.IntegrityError, match="append-only: DELETE"):
        conn.execute(f"INSERT OR REPLACE INTO records VALUES ({placeholders})", row)
    assert verify_workspace(decided).ok


def test_insert_that_does_not_extend_the_head_is_refused(decided):
    conn = connect(decided)
    first, _ = decision_seqs(decided)
    row = list(conn.execute("SELECT * FROM records WHERE seq=?", (first,)).fetchone())
    # Next seq, but prev_hash still points at the record before the first decision.
    row[0], row[1] = decided.head()[0] + 1, "f" * 64
    with pytest.raises(sqlite3.IntegrityError, match="chain head"):
        conn.execute(f"INSERT INTO records VALUES ({','.join('?' * len(row))})", row)


def test_items_are_immutable(decided):
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        connect(decided).execute("UPDATE items SET payload='{}'")
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        connect(decided).execute("DELETE FROM items")


def test_undo_appends_a_retract_and_recomputes_the_effective_decision(decided, enrol):
    rita_again = decided  # same workspace
    from engine.ledger.signers import FileSigner

    signer = FileSigner(decided.root.parent / "keys" / "rita")
    before = decided.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    rec = decided.retract(signer, "flagged_pairs", "item-0")
    assert rec.body["kind"] == "retract"
    assert decided.item("flagged_pairs", "item-0")["decision"] is None
    assert [h["retracted"] for h in decided.history("flagged_pairs", "item-0")] == [True, False]
    decided.decide(signer, "flagged_pairs", "item-0", "reject")
    assert decided.item("flagged_pairs", "item-0")["decision"]["decision"] == "reject"
    assert rita_again.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == before + 2
    assert verify_workspace(decided).ok
