"""Verify's retraction rules, and its batched signature checks.

A retract must name an earlier decision on the same item, made in the same
role, not retracted before. The app and ``sealdesk decide`` refuse to sign
any other; these records are signed past them, straight through the store,
as a holder of an enrolled key could.
"""

from __future__ import annotations

import sqlite3

import pytest

from engine.ledger.verify import _BATCH
from engine.signoff.verify import verify_workspace
from tests.support.backlog import make_items
from tests.support.below_policy import append_unchecked

QUEUE = "weak_categories"  # a reviewer or a lead may decide its items


@pytest.fixture
def desk(workspace, enrol):
    """Two items; rita (reviewer and lead) accepts item-0 and item-1, then writes a note.

    Gives the workspace, rita, the three records' hashes and the seq of the
    first decision (the genesis and rita's enrolment come before it).
    """
    rita = enrol("rita", "reviewer", "lead")
    workspace.ingest(make_items(2, queue=QUEUE))
    first_seq = workspace.head()[0] + 1
    first = workspace.decide(rita, QUEUE, "item-0", "accept", role="reviewer")
    second = workspace.decide(rita, QUEUE, "item-1", "accept", role="reviewer")
    note = workspace.note(rita, QUEUE, "item-0", "checked twice", role="reviewer")
    assert first.seq == first_seq
    return workspace, rita, first.record_hash, second.record_hash, note.record_hash, first_seq


def signed_retract(ws, signer, item_id: str, target: str, role: str = "reviewer"):
    """Appends a signed retract of ``target`` on ``item_id`` with no rule checked."""
    return append_unchecked(
        ws, signer, "rita", role, "retract", queue=QUEUE, item_id=item_id, retracts=target
    )


def faults(ws, processes: int = 1) -> list[tuple[int, str]]:
    return sorted((f.seq, f.reason) for f in verify_workspace(ws, processes=processes).faults)


def test_a_retract_of_an_earlier_decision_on_its_item_verifies(desk):
    ws, rita, first, _, _, _ = desk
    signed_retract(ws, rita, "item-0", first)
    assert faults(ws) == []


@pytest.mark.parametrize("processes", [1, 2])
def test_each_broken_retraction_rule_is_named_at_its_record(desk, processes):
    ws, rita, first, second, note, _ = desk
    base = ws.head()[0]
    signed_retract(ws, rita, "item-0", note)  # base+1: a note, not a decision
    signed_retract(ws, rita, "item-0", "ab" * 32)  # base+2: names no record at all
    signed_retract(ws, rita, "item-0", second)  # base+3: item-1's decision
    signed_retract(ws, rita, "item-0", first, role="lead")  # base+4: made as reviewer
    signed_retract(ws, rita, "item-0", first)  # base+5: the one good retract
    signed_retract(ws, rita, "item-0", first)  # base+6: retracts it again
    assert faults(ws, processes) == [
        (base + 1, "retracts a record that is not an earlier decision"),
        (base + 2, "retracts a record that is not an earlier decision"),
        (base + 3, "retracts a decision about another item"),
        (base + 4, "retract in role lead of a decision made as reviewer"),
        (base + 6, "retracts a decision already retracted"),
    ]


def test_a_retract_of_a_faulty_decision_is_itself_refused(desk):
    ws, rita, first, _, _, first_seq = desk
    retract = signed_retract(ws, rita, "item-0", first)
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript("DROP TRIGGER records_no_update;")
    conn.execute("UPDATE records SET decision='reject' WHERE seq=?", (first_seq,))  # edited
    assert faults(ws) == [
        (first_seq, "column 'decision' was edited: stored 'reject', signed 'accept'"),
        (retract.seq, "retracts a record that is not an earlier decision"),
    ]


def test_bad_signatures_are_named_wherever_they_fall_in_a_batch(workspace, enrol):
    """Signatures are checked a batch at a time after parsing; a bad one must still be
    pinned to its own record, first, middle or last of a batch, and across batches."""
    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(3))
    base = workspace.head()[0]  # the genesis and rita's enrolment
    total = 2 * _BATCH + 5
    for i in range(total):  # each visit the other decision: the same again signs nothing
        workspace.decide(rita, "flagged_pairs", f"item-{i % 3}", ("accept", "reject")[i // 3 % 2])
    conn = sqlite3.connect(workspace.db_path, isolation_level=None)
    conn.executescript("DROP TRIGGER records_no_update;")
    sig = dict(conn.execute("SELECT seq, signature FROM records"))
    # Seq base+1 is each worker's first signature by rita, checked in full; the rest are
    # batched. Batches are cut at multiples of _BATCH: last, first, last, and the very end.
    assert base + 2 < _BATCH
    broken = [base + 2, _BATCH, _BATCH + 1, 2 * _BATCH, base + total]
    for seq in broken:  # each takes its neighbour's signature: well formed, wrong message
        conn.execute("UPDATE records SET signature=? WHERE seq=?", (sig[seq - 1], seq))
    for processes in (1, 2):
        assert faults(workspace, processes) == [
            (seq, "signature: signature does not verify") for seq in broken
        ]


def test_a_retract_with_a_broken_link_counts_for_nothing(desk):
    """A record with any fault, its link included, cannot be the retraction of record."""
    ws, rita, first, _, _, _ = desk
    note_seq = ws.head()[0]
    signed_retract(ws, rita, "item-0", first)  # note_seq+1
    signed_retract(ws, rita, "item-0", first)  # "already retracted", unless the first fails
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript("DROP TRIGGER records_no_update;")
    conn.execute("UPDATE records SET record_hash = ? WHERE seq = ?", ("ab" * 32, note_seq))
    assert faults(ws) == [
        (note_seq, "record hash does not match the signed message (message or hash edited)"),
        (
            note_seq + 1,
            "previous-hash link broken (a record before it was removed, replaced or reordered)",
        ),
    ]


def test_a_copy_of_the_retracted_decision_is_the_first_fault_not_the_retract(desk):
    """A table rebuilt without its UNIQUE record_hash can hold a decision twice. The copy
    is the bad record; the retract that names the decision's hash stays good, so the
    first fault verify names is the copy's seq."""
    ws, rita, first, _, _, first_seq = desk
    retract = signed_retract(ws, rita, "item-0", first)  # a good retract of the decision
    copy_seq = retract.seq + 1
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript(
        "ALTER TABLE records RENAME TO old; "
        "CREATE TABLE records AS SELECT * FROM old; DROP TABLE old;"
    )
    head = conn.execute("SELECT record_hash FROM records WHERE seq = ?", (retract.seq,)).fetchone()[
        0
    ]
    conn.execute("INSERT INTO records SELECT * FROM records WHERE seq = ?", (first_seq,))
    conn.execute(
        "UPDATE records SET seq = ?, prev_hash = ? WHERE rowid = (SELECT MAX(rowid) FROM records)",
        (copy_seq, head),
    )
    assert faults(ws) == [
        (copy_seq, f"stored at seq {copy_seq} but signed as seq {first_seq} (reordered?)")
    ]
