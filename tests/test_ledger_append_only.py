"""The records table refuses every way of changing the past."""

from __future__ import annotations

import sqlite3

import pytest

from engine.ledger.audit import verify_workspace
from tests.ledger_fixtures import make_items


@pytest.fixture
def decided(workspace, enrol):
    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(2))
    workspace.decide(rita, "flagged_pairs", "item-0", "accept")
    workspace.decide(rita, "flagged_pairs", "item-1", "reject")
    return workspace


def connect(ws):
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.execute("PRAGMA recursive_triggers=ON")
    return conn


def test_update_is_refused(decided):
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        connect(decided).execute("UPDATE records SET decision='reject' WHERE seq=1")


def test_delete_is_refused(decided):
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        connect(decided).execute("DELETE FROM records WHERE seq=2")


def test_insert_or_replace_is_refused(decided):
    conn = connect(decided)
    # A well-formed next link whose record_hash collides with record 1: REPLACE
    # would delete record 1 first, which the DELETE trigger (recursive) refuses.
    row = list(conn.execute("SELECT * FROM records WHERE seq=1").fetchone())
    row[0], row[2] = 3, conn.execute("SELECT record_hash FROM records WHERE seq=2").fetchone()[0]
    placeholders = ",".join("?" * len(row))
    with pytest.raises(sqlite3.IntegrityError, match="append-only: DELETE"):
        conn.execute(f"INSERT OR REPLACE INTO records VALUES ({placeholders})", row)
    assert verify_workspace(decided).ok


def test_insert_that_does_not_extend_the_head_is_refused(decided):
    conn = connect(decided)
    row = list(conn.execute("SELECT * FROM records WHERE seq=1").fetchone())
    row[0], row[1] = 3, "f" * 64  # next seq, but prev_hash still points at genesis
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
    rec = decided.retract(signer, "flagged_pairs", "item-0")
    assert rec.body["kind"] == "retract"
    assert decided.item("flagged_pairs", "item-0")["decision"] is None
    assert [h["retracted"] for h in decided.history("flagged_pairs", "item-0")] == [True, False]
    decided.decide(signer, "flagged_pairs", "item-0", "reject")
    assert decided.item("flagged_pairs", "item-0")["decision"]["decision"] == "reject"
    assert rita_again.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 4
    assert verify_workspace(decided).ok
