"""Appending records to SQLite: one ``BEGIN IMMEDIATE`` per record, or per batch.

The chain head is read and the new record written inside the same write
transaction, so concurrent writers (several reviewers, scripts, the app)
serialise and the chain never forks. Triggers make the table append-only:
UPDATE and DELETE abort, and with ``recursive_triggers`` on, INSERT OR
REPLACE fires the DELETE trigger and aborts too. A further trigger refuses
any insert that is not exactly the next link.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.errors import InputError, LedgerDiverged
from engine.ledger import clock, sshsig
from engine.ledger.records import (
    GENESIS_PREV,
    INDEXED_FIELDS,
    Record,
    encode_body,
    make_body,
    utc_now,
)
from engine.ledger.signers import Signer
from engine.roles import namespace_for
from engine.sqlitedb import detached_file, write_transaction

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY,
    record_hash TEXT NOT NULL UNIQUE,
    prev_hash TEXT NOT NULL,
    kind TEXT NOT NULL,
    queue TEXT,
    item_id TEXT,
    item_sha256 TEXT,
    decision TEXT,
    principal TEXT NOT NULL,
    role TEXT NOT NULL,
    retracts TEXT,
    time TEXT NOT NULL,
    message TEXT NOT NULL,
    signature TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS records_item ON records(queue, item_id, seq);
CREATE INDEX IF NOT EXISTS records_retracts ON records(retracts) WHERE retracts IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_authority ON records(seq)
  WHERE kind IN ('genesis', 'enrol', 'revoke');
CREATE INDEX IF NOT EXISTS records_plan ON records(seq) WHERE kind = 'plan';
CREATE INDEX IF NOT EXISTS records_gold ON records(seq) WHERE kind = 'gold';
CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records
BEGIN SELECT RAISE(ABORT, 'ledger records are append-only: UPDATE refused'); END;
CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
BEGIN SELECT RAISE(ABORT, 'ledger records are append-only: DELETE refused'); END;
CREATE TRIGGER IF NOT EXISTS records_next_link BEFORE INSERT ON records
WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM records)
  OR NEW.prev_hash IS NOT COALESCE(
       (SELECT record_hash FROM records ORDER BY seq DESC LIMIT 1), '{GENESIS_PREV}')
BEGIN SELECT RAISE(ABORT, 'ledger records must extend the chain head'); END;
"""


def create_schema(conn: sqlite3.Connection) -> None:
    """Creates the records table and its append-only triggers."""
    conn.executescript(SCHEMA)


# Indexes a database made before them lacks: the replay and every signer check look the
# authority records up through the first, every decision and listing the newest review
# plan through the second, verify and the sign-off the gold answers through the third.
LATER_INDEXES = {
    "records_authority": (
        "CREATE INDEX IF NOT EXISTS records_authority ON records(seq) "
        "WHERE kind IN ('genesis', 'enrol', 'revoke')"
    ),
    "records_plan": "CREATE INDEX IF NOT EXISTS records_plan ON records(seq) WHERE kind = 'plan'",
    "records_gold": "CREATE INDEX IF NOT EXISTS records_gold ON records(seq) WHERE kind = 'gold'",
}


def add_missing_indexes(conn: sqlite3.Connection) -> None:
    """Adds the indexes added since a database was made (``LATER_INDEXES``)."""
    for name, ddl in LATER_INDEXES.items():
        found = conn.execute(
            "SELECT 1 FROM sqlite_schema WHERE type='index' AND name=?", (name,)
        ).fetchone()
        if found is None:
            conn.execute(ddl)


def head(conn: sqlite3.Connection) -> tuple[int, str]:
    """Gives the chain head: (last seq, its hash), or (0, genesis) when empty."""
    row = conn.execute("SELECT seq, record_hash FROM records ORDER BY seq DESC LIMIT 1").fetchone()
    return (0, GENESIS_PREV) if row is None else (row[0], row[1])


def _next_time(conn: sqlite3.Connection, head_seq: int, kind: str) -> str:
    """Gives the new record's time by the ledger's time rule (``clock.next_time``):
    this host's clock, never earlier than the head's time unless it is a lead's
    clock record resetting a head dated too far ahead."""
    head = None
    if head_seq:
        row = conn.execute(
            "SELECT time, principal FROM records WHERE seq=?", (head_seq,)
        ).fetchone()
        head = (head_seq, row[0], row[1])
    return clock.next_time(head, utc_now(), kind)


@dataclass(frozen=True)
class Entry:
    """One record of a batch: its kind, its fields, and the check run just before it."""

    kind: str
    fields: dict[str, Any] = field(default_factory=dict)
    # Runs inside the batch's write transaction, after the entries before it were
    # appended; may raise to refuse the whole batch, return extra body fields, or
    # return None to append nothing for this entry.
    check: Callable[[sqlite3.Connection], dict[str, Any] | None] | None = None


def append(
    db,
    signer: Signer,
    *,
    workspace_id: str,
    principal: str,
    role: str,
    kind: str,
    check: Callable[[sqlite3.Connection], dict[str, Any]] | None = None,
    **fields: Any,
) -> Record:
    """Gives the record after signing it and durably appending it to the chain.

    ``check`` runs inside the write transaction (so nothing can land between
    it, the head it extends and the signature); it may raise to refuse, and
    may return extra body fields (for example the item's current hash). The
    connection must be in autocommit mode (``isolation_level=None``).
    """
    (record,) = append_many(
        db,
        signer,
        workspace_id=workspace_id,
        principal=principal,
        role=role,
        entries=[
            Entry(kind, fields, lambda conn: (check(conn) if check is not None else {}) or {})
        ],
    )
    assert record is not None  # the check above never asks to skip
    return record


def append_many(
    db,
    signer: Signer,
    *,
    workspace_id: str,
    principal: str,
    role: str,
    entries: Sequence[Entry],
) -> list[Record | None]:
    """Gives each entry's record (None where its check skipped it) after signing and
    durably appending them all in one write transaction: all or nothing.

    Each record is chained to the one before it and signed on its own, exactly
    as ``append`` would; only the transaction (and so the fsync) is shared. A
    refusal by any entry's check, or any signing error, rolls back the batch.
    """
    conn = db.conn
    namespace = namespace_for(role)
    for entry in entries:
        note = entry.fields.get("note")
        if note is not None and not isinstance(note, str):
            # verify faults a non-text note: never sign a record that cannot verify
            raise InputError("a note must be text", field="note")
    _refuse_if_diverged(conn)
    out: list[Record | None] = []
    with write_transaction(conn):
        table = db["records"]
        for entry in entries:
            extra = entry.check(conn) if entry.check is not None else {}
            if extra is None:
                out.append(None)
                continue
            seq, prev = head(conn)
            body = make_body(
                workspace=workspace_id,
                seq=seq + 1,
                prev=prev,
                kind=entry.kind,
                principal=principal,
                role=role,
                key=signer.public_key.fingerprint,
                time=_next_time(conn, seq, entry.kind),
                **{**entry.fields, **extra},
            )
            message, record_hash = encode_body(body)
            signature = sshsig.armor(signer.sign(message, namespace))
            row = {name: body[name] for name in INDEXED_FIELDS}
            row.update(
                record_hash=record_hash,
                prev_hash=prev,
                message=message.decode("utf-8"),
                signature=signature,
            )
            table.insert(row)
            out.append(Record(seq + 1, record_hash, prev, message, signature, body))
    _confirm_on_disk(conn, [r for r in out if r is not None])
    return out


def _diverged(conn: sqlite3.Connection, why: str) -> LedgerDiverged:
    """Gives the error that stops this connection signing, and marks it so."""
    if hasattr(conn, "diverged"):
        conn.diverged = why
    return LedgerDiverged(why)


def _refuse_if_diverged(conn: sqlite3.Connection) -> None:
    """Raises before anything is signed when this connection's writes no longer reach
    the database on disk (found now, or by an earlier append)."""
    why = getattr(conn, "diverged", None)
    if why is not None:
        raise LedgerDiverged(f"nothing more is signed from this process: {why}")
    gone = detached_file(conn)
    if gone is not None:
        raise _diverged(
            conn,
            f"{gone} was deleted while this process had it open, so what it writes reaches "
            "no one; nothing was signed: quit, run sealdesk verify, then decide again",
        )


def _confirm_on_disk(conn: sqlite3.Connection, records: Sequence[Record]) -> None:
    """Raises instead of acknowledging when, read back after the commit, the ledger does
    not hold each record at its seq with its hash, or holds it only in a file that is
    gone from disk (another process deleted the log this process wrote into)."""
    for record in records:
        row = conn.execute(
            "SELECT record_hash FROM records WHERE seq = ?", (record.seq,)
        ).fetchone()
        if row is None or row[0] != record.record_hash:
            held = "nothing" if row is None else f"{row[0][:12]}…"
            raise _diverged(
                conn,
                f"record #{record.seq} was written as {record.record_hash[:12]}… but the "
                f"ledger holds {held} there; not acknowledged: run sealdesk verify",
            )
    gone = detached_file(conn) if records else None
    if gone is not None:
        first = records[0].seq
        raise _diverged(
            conn,
            f"record #{first} was written into {gone}, which another process deleted while "
            "this one had it open: it is not in the ledger, so it is not acknowledged; "
            "quit, run sealdesk verify, then decide again",
        )


def iter_records(conn: sqlite3.Connection, start: int = 1):
    """Yields raw rows (seq, record_hash, prev_hash, message, signature, *indexed)."""
    cols = ", ".join(INDEXED_FIELDS)
    yield from conn.execute(
        f"SELECT seq, record_hash, prev_hash, message, signature, {cols} "
        "FROM records WHERE seq >= ? ORDER BY seq",
        (start,),
    )


def get_record(conn: sqlite3.Connection, seq_or_hash: int | str) -> Record | None:
    """Gives one record by seq or by hash (prefix of at least 8 hex allowed)."""
    from engine.canonical import strict_loads

    if isinstance(seq_or_hash, int):
        row = conn.execute(
            "SELECT seq, record_hash, prev_hash, message, signature FROM records WHERE seq=?",
            (seq_or_hash,),
        ).fetchone()
    else:
        rows = conn.execute(
            "SELECT seq, record_hash, prev_hash, message, signature FROM records "
            "WHERE record_hash LIKE ? LIMIT 2",
            (seq_or_hash + "%",),
        ).fetchall()
        row = rows[0] if len(rows) == 1 else None
    if row is None:
        return None
    return Record(row[0], row[1], row[2], row[3].encode("utf-8"), row[4], strict_loads(row[3]))


EFFECTIVE_SQL = """
SELECT r.queue, r.item_id, r.seq, r.decision, r.principal, r.role, r.time, r.record_hash
FROM records r
JOIN (
    SELECT queue, item_id, MAX(seq) AS seq FROM records d
    WHERE d.kind = 'decision'
      AND NOT EXISTS (SELECT 1 FROM records x WHERE x.kind = 'retract'
                      AND x.retracts = d.record_hash)
    GROUP BY queue, item_id
) latest ON latest.seq = r.seq
"""


def effective_decisions(
    conn: sqlite3.Connection, queue: str | None = None
) -> dict[tuple[str, str], dict[str, Any]]:
    """Gives the effective decision per (queue, item_id): latest unretracted one."""
    sql = EFFECTIVE_SQL + (" WHERE r.queue = ?" if queue else "")
    out = {}
    for row in conn.execute(sql, (queue,) if queue else ()):
        out[(row[0], row[1])] = {
            "seq": row[2],
            "decision": row[3],
            "principal": row[4],
            "role": row[5],
            "time": row[6],
            "record_hash": row[7],
        }
    return out


def effective_decisions_for(
    conn: sqlite3.Connection, queue: str, item_id: str, before: int | None = None
) -> dict[str, Any] | None:
    """Gives one item's effective decision (latest unretracted), or None; with ``before``,
    the one that stood when record ``before`` was appended (verify replays it)."""
    limit = 2**63 - 1 if before is None else before
    row = conn.execute(
        "SELECT seq, decision, principal, role, time, record_hash FROM records d "
        "WHERE queue=? AND item_id=? AND kind='decision' AND seq < ? AND NOT EXISTS ("
        "  SELECT 1 FROM records x WHERE x.kind='retract' AND x.retracts=d.record_hash "
        "  AND x.seq < ?) "
        "ORDER BY seq DESC LIMIT 1",
        (queue, item_id, limit, limit),
    ).fetchone()
    if row is None:
        return None
    return {
        "seq": row[0],
        "decision": row[1],
        "principal": row[2],
        "role": row[3],
        "time": row[4],
        "record_hash": row[5],
    }
