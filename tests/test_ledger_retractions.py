"""Verify's retraction rules, and its batched signature checks.

A retract must name an earlier decision on the same item, made in the same
role, not retracted before. The app and ``sealdesk decide`` refuse to sign
any other; these records are signed past them, straight through the store,
as a holder of an enrolled key could.
"""

from __future__ import annotations

import sqlite3

import pytest

from engine.ledger import store
from engine.ledger.audit import verify_workspace
from engine.ledger.verify import _BATCH
from tests.ledger_fixtures import make_items


QUEUE = "weak_categories"  # a reviewer or a lead may decide its items


@pytest.fixture
def desk(workspace, enrol):
    """Two items; rita (reviewer and lead) accepts item-0 and item-1, then writes a note."""
    rita = enrol("rita", "reviewer", "lead")
    workspace.ingest(make_items(2, queue=QUEUE))
    first = workspace.decide(rita, QUEUE, "item-0", "accept", role="reviewer")
    second = workspace.decide(rita, QUEUE, "item-1", "accept", role="reviewer")
    note = workspace.note(rita, QUEUE, "item-0", "checked twice", role="reviewer")
    return workspace, rita, first.record_hash, second.record_hash, note.record_hash


def signed_retract(ws, signer, item_id: str, target: str, role: str = "reviewer"):
    """Appends a signed retract of ``target`` on ``item_id`` with no rule checked."""
    return store.append(
        ws.db, signer, workspace_id=ws.workspace_id, principal="rita", role=role,
        kind="retract", queue=QUEUE, item_id=item_id, retracts=target,
        check=lambda conn: ws._item_binding(conn, QUEUE, item_id))


def faults(ws, processes: int = 1) -> list[tuple[int, str]]:
    return sorted((f.seq, f.reason) for f in verify_workspace(ws, processes=processes).faults)


def test_a_retract_of_an_earlier_decision_on_its_item_verifies(desk):
    ws, rita, first, _, _ = desk
    signed_retract(ws, rita, "item-0", first)
    assert faults(ws) == []


@pytest.mark.parametrize("processes", [1, 2])
def test_each_broken_retraction_rule_is_named_at_its_record(desk, processes):
    ws, rita, first, second, note = desk
    signed_retract(ws, rita, "item-0", note)                 # seq 4: a note, not a decision
    signed_retract(ws, rita, "item-0", "ab" * 32)            # seq 5: names no record at all
    signed_retract(ws, rita, "item-0", second)               # seq 6: item-1's decision
    signed_retract(ws, rita, "item-0", first, role="lead")   # seq 7: made as reviewer
    signed_retract(ws, rita, "item-0", first)                # seq 8: the one good retract
    signed_retract(ws, rita, "item-0", first)                # seq 9: retracts it again
    assert faults(ws, processes) == [
        (4, "retracts a record that is not an earlier decision"),
        (5, "retracts a record that is not an earlier decision"),
        (6, "retracts a decision about another item"),
        (7, "retract in role lead of a decision made as reviewer"),
        (9, "retracts a decision already retracted"),
    ]


def test_a_retract_of_a_faulty_decision_is_itself_refused(desk):
    ws, rita, first, _, _ = desk
    signed_retract(ws, rita, "item-0", first)
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript("DROP TRIGGER records_no_update;")
    conn.execute("UPDATE records SET decision='reject' WHERE seq=1")   # column edited
    assert faults(ws) == [
        (1, "column 'decision' was edited: stored 'reject', signed 'accept'"),
        (4, "retracts a record that is not an earlier decision"),
    ]


def test_bad_signatures_are_named_wherever_they_fall_in_a_batch(workspace, enrol):
    """Signatures are checked a batch at a time after parsing; a bad one must still be
    pinned to its own record, first, middle or last of a batch, and across batches."""
    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(3))
    total = 2 * _BATCH + 5
    for i in range(total):  # each visit the other decision: the same again signs nothing
        workspace.decide(rita, "flagged_pairs", f"item-{i % 3}",
                         ("accept", "reject")[i // 3 % 2])
    conn = sqlite3.connect(workspace.db_path, isolation_level=None)
    conn.executescript("DROP TRIGGER records_no_update;")
    sig = dict(conn.execute("SELECT seq, signature FROM records"))
    # Seq 1 is each worker's first signature by rita, checked in full; the rest are batched.
    broken = [2, _BATCH, _BATCH + 1, 2 * _BATCH, total]
    for seq in broken:  # each takes its neighbour's signature: well formed, wrong message
        conn.execute("UPDATE records SET signature=? WHERE seq=?", (sig[seq - 1], seq))
    for processes in (1, 2):
        assert faults(workspace, processes) == [
            (seq, "signature: signature does not verify") for seq in broken]


def test_a_retract_with_a_broken_link_counts_for_nothing(desk):
    """A record with any fault, its link included, cannot be the retraction of record."""
    ws, rita, first, _, _ = desk
    signed_retract(ws, rita, "item-0", first)      # seq 4
    signed_retract(ws, rita, "item-0", first)      # seq 5: "already retracted", unless 4 fails
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript("DROP TRIGGER records_no_update;")
    conn.execute("UPDATE records SET record_hash = ? WHERE seq = 3", ("ab" * 32,))
    assert faults(ws) == [
        (3, "record hash does not match the signed message (message or hash edited)"),
        (4, "previous-hash link broken (a record before it was removed, replaced or "
            "reordered)"),
    ]


def test_a_copy_of_the_retracted_decision_is_the_first_fault_not_the_retract(desk):
    """A table rebuilt without its UNIQUE record_hash can hold a decision twice. The copy
    is the bad record; the retract that names the decision's hash stays good, so the
    first fault verify names is the copy's seq."""
    ws, rita, first, _, _ = desk
    signed_retract(ws, rita, "item-0", first)      # seq 4: a good retract of seq 1
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript("ALTER TABLE records RENAME TO old; "
                       "CREATE TABLE records AS SELECT * FROM old; DROP TABLE old;")
    head = conn.execute("SELECT record_hash FROM records WHERE seq = 4").fetchone()[0]
    conn.execute("INSERT INTO records SELECT * FROM records WHERE seq = 1")
    conn.execute("UPDATE records SET seq = 5, prev_hash = ? "
                 "WHERE rowid = (SELECT MAX(rowid) FROM records)", (head,))
    assert faults(ws) == [(5, "stored at seq 5 but signed as seq 1 (reordered?)")]
