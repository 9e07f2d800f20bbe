"""Verification: re-derive every hash and link, check every signature and role.

The ledger is cut into seq ranges; each worker process (one per core) opens
the database read-only, checks its range record by record (hash, canonical
form, columns against the signed body, SSHSIG, signer, role, item binding)
and the links inside it, and sends back only faults, its two boundary
links, the retracts that passed and its last sign-off. The parent joins the
boundaries and checks retractions, then replays who replaced whose decision
on the few items more than one principal decided (overrules), so almost all
the work runs in parallel and little crosses between processes.

Within a range, rows are parsed a batch at a time and the batch's Ed25519
checks then run back to back (``sshsig.run_deferred``).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import operator
import os
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from engine.canonical import canonical_json
from engine.errors import SealdeskError
from engine.ledger import clock, sshsig
from engine.ledger.authority import AUTHORITY_KINDS, SignerPolicy
from engine.ledger.fastbody import COMMON_FIELDS, common_fields
from engine.ledger.gold import GOLD_KIND, gold_fault, reveal_fault
from engine.ledger.plan import PLAN_KIND, draw_key, plan_fault, sampled
from engine.ledger.records import (
    BODY_FIELDS,
    DECISIONS,
    GENESIS_PREV,
    INDEXED_FIELDS,
    KINDS,
    RECORD_VERSION,
    decision_data_fault,
    parse_time,
    time_text,
)
from engine.roles import (
    NAMESPACE_BY_ROLE,
    QUEUE_ROLES,
    QUEUES,
    SIGNOFF_ROLE,
    outranks,
    rating_role,
)
from engine.sqlitedb import open_read_only

if TYPE_CHECKING:  # annotations only: multiprocessing.connection costs start-up time
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

_RANGE = 2000
_MIN_RANGE = 64
_BATCH = 64  # rows parsed before their Ed25519 checks run back to back
# The indexed columns after the five every row starts with (seq is already one of them).
_COLUMNS = tuple(name for name in INDEXED_FIELDS if name != "seq")
_indexed = operator.itemgetter(*_COLUMNS)  # body -> tuple of those columns
_KIND_COLUMN = 5 + _COLUMNS.index("kind")  # in a row of _ROW_SQL
# What joining ranges and checking retractions need of a record that passed, in this order.
_FACTS = ("time", "principal", "kind", "queue", "item_id", "role", "retracts")
_body_facts = operator.itemgetter(*_FACTS)  # from a body dict
_common_facts = operator.itemgetter(*(COMMON_FIELDS.index(name) for name in _FACTS))
_common_columns = operator.itemgetter(*(COMMON_FIELDS.index(name) for name in _COLUMNS))


@dataclass(frozen=True)
class Fault:
    """One problem found: the record's seq and why (seq 0: not a record, e.g. an item)."""

    seq: int
    reason: str

    @property
    def where(self) -> str:
        """Gives ``record N: reason``, or the reason alone for a fault outside the records."""
        return f"record {self.seq}: {self.reason}" if self.seq > 0 else self.reason


@dataclass
class Report:
    """What verification found."""

    records: int = 0
    head_hash: str = GENESIS_PREV
    faults: list[Fault] = field(default_factory=list)
    signers: dict[str, int] = field(default_factory=dict)
    last_signoff: int | None = None  # highest seq whose kind column says signoff
    authority: SignerPolicy | None = None  # who could sign what, as replayed
    # what was compared off the ledger, one line each ("3 receipts compared (DIR)")
    compared: list[str] = field(default_factory=list)
    # What an auditor should see that is no fault: each reset of the ledger's time
    notes: list[Fault] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.faults

    @property
    def first(self) -> Fault | None:
        return min(self.faults, key=lambda f: f.seq) if self.faults else None


@dataclass(frozen=True)
class Context:
    """What every record is checked against; inherited by each worker."""

    db_path: str
    workspace_id: str
    # who may sign which record: the ledger's replayed authority (an un-migrated
    # ledger: its legacy trust/allowed_signers, and a fault saying so)
    signers: SignerPolicy
    # (queue, item_id) -> (item sha, run manifest sha, why the stored bytes are bad or None)
    items: dict[tuple[str, str], tuple[str, str, str | None]]
    faults: tuple[Fault, ...] = ()  # stored items and runs whose bytes no longer hash right
    # A record signed after this time is dated ahead of the verifier's clock by more
    # than hosts may differ ("" checks nothing)
    horizon: str = ""


@dataclass
class RangeResult:
    """A worker's answer for one seq range."""

    count: int = 0
    first: tuple[int, str, str] | None = None  # (seq, prev_hash, time) of the first record
    last: tuple[int, str, str] | None = None  # (seq, record_hash, time) of the last record
    faults: list[Fault] = field(default_factory=list)
    signers: Counter = field(default_factory=Counter)
    # (seq, queue, item_id, role, target, principal) of each retract that passed
    retracts: list[tuple] = field(default_factory=list)
    last_signoff: int | None = None  # highest seq whose kind column says signoff
    clocks: list[int] = field(default_factory=list)  # seqs of clock records that passed
    ahead: list[tuple[int, str]] = field(default_factory=list)  # (seq, time) past the horizon


# (fault or None, the _FACTS of its body or None, deferred signature check or None,
#  fault if it verifies)
Staged = tuple[str | None, tuple | None, sshsig.Deferred | None, str | None]
# The same from the general path, with the whole body dict in place of its _FACTS.
Checked = tuple[str | None, dict | None, sshsig.Deferred | None, str | None]


class RecordChecker:
    """Checks single records; caches what repeats (keys, authorisations)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._allows = ctx.signers.allows
        self._verifier = sshsig.Verifier()

    def stage_batch(self, rows: list[tuple]) -> list[Staged]:
        """Checks a batch of stored rows up to the Ed25519 arithmetic, which it defers.

        Gives, per row, (fault reason or None, the body's _FACTS or None, the
        deferred signature check or None, the fault reason should the
        signature verify). Each step that touches a lot of code (SHA-256,
        reading the body, dearmoring, SHA-512) runs across the whole batch
        before the next: one step's code then stays in the CPU's instruction
        cache instead of every record evicting every step. Under cachegrind
        the L1 instruction and data misses per record fell by about 40%
        (3,412 to 2,037 and 1,745 to 1,001); on this VM the wall-clock gain
        was within its noise.

        A row of the common shape first takes ``_pass_common``, which can only
        pass it; anything it does not pass takes the general path, which
        passes it or names its fault.
        """
        try:
            texts = [row[3] for row in rows]
            messages = [t.encode("utf-8") if type(t) is str else None for t in texts]
            hashes = [None if m is None else _sha256(m).hexdigest() for m in messages]
            fields = [
                None if m is None else common_fields(t)
                for t, m in zip(texts, messages, strict=True)
            ]
            blobs = [_dearmored(row[4]) for row in rows]
            digests = [None if m is None else _sha512(m).digest() for m in messages]
        except Exception:  # e.g. text that will not encode: each row then says why itself
            return [self._guarded(row) for row in rows]
        return [
            (f is not None and self._pass_common(row, message, h, f, blob, digest))
            or self._guarded(row, message, h, None, blob, digest)
            for row, message, h, f, blob, digest in zip(
                rows, messages, hashes, fields, blobs, digests, strict=True
            )
        ]

    def _pass_common(
        self,
        row: tuple,
        message: bytes,
        message_hash: str,
        fields: tuple,
        blob: bytes | None,
        digest: bytes,
    ) -> Staged | None:
        """Passes a fault-free row of the common shape in fewer steps than ``_stage``.

        ``fields`` are the message's COMMON_FIELDS (``fastbody.common_fields``:
        the message is canonical and well typed). Each test is one of
        ``_stage``'s, on the fields' text, with no dict built; where any fails
        it gives None and says nothing more: ``_stage`` then checks the row
        again and names the fault. So this path can only ever pass a row
        ``_stage`` passes, which a property test holds it to.
        """
        (
            decision,
            item_id,
            item_sha256,
            key,
            kind,
            note,
            prev,
            principal,
            queue,
            retracts,
            role,
            run_sha256,
            seq,
            time,
            v,
            workspace,
        ) = fields
        if (
            message_hash != row[1]
            or v != _VERSION_TEXT
            or type(row[0]) is not int
            or seq != str(row[0])
            or prev != row[2]
            or _common_columns(fields) != row[5:]
            or workspace != self.ctx.workspace_id
            or blob is None
        ):
            return None
        # A field only one kind carries is null elsewhere ("data" is null in this shape).
        if kind == "decision":
            if decision not in DECISIONS or retracts is not None:
                return None
        elif kind == "retract":
            if decision is not None or not retracts:
                return None
        elif kind != "note" or decision is not None or retracts is not None or not note:
            return None  # a sign-off, or a kind sealdesk does not write
        namespace = NAMESPACE_BY_ROLE.get(role)
        if (
            namespace is None
            or role not in QUEUE_ROLES.get(queue, ())
            or self.ctx.items.get((queue, item_id)) != (item_sha256, run_sha256, None)
        ):
            return None
        try:
            public_blob, key_fingerprint, deferred = self._verifier.prepare(
                blob, message, namespace, sha512_digest=digest
            )
        except sshsig.SignatureError:
            return None
        if key_fingerprint != key or not self._allows(principal, public_blob, role, row[0], time):
            return None
        return None, _common_facts(fields), deferred, None

    def _guarded(self, row: tuple, *ready) -> Staged:
        try:
            reason, body, deferred, after = self._stage(row, *ready)
            return reason, None if body is None else _body_facts(body), deferred, after
        except Exception as exc:  # a rebuilt table can hold anything: a fault, never a crash
            return f"record cannot be checked ({type(exc).__name__}: {exc})", None, None, None

    def _stage(
        self,
        row: tuple,
        message: bytes | None = None,
        message_hash: str | None = None,
        body: dict | None = None,
        blob: bytes | None = None,
        digest: bytes | None = None,
    ) -> Checked:
        """Checks one row; gives (fault or None, body or None, deferred check or None, fault
        if it verifies). What ``stage_batch`` computed already comes in (else None)."""
        seq, record_hash, prev_hash, message_text, signature = row[:5]
        if not isinstance(message_text, str) or not isinstance(signature, str):
            return "message or signature column does not hold text", None, None, None
        if message is None:
            message = message_text.encode("utf-8")
        if (message_hash or _sha256(message).hexdigest()) != record_hash:
            return (
                "record hash does not match the signed message (message or hash edited)",
                None,
                None,
                None,
            )
        if body is None:  # not the common shape: the general path accepts it or says why not
            body, reason = _read_body(message_text, message)
            if body is None:  # then reason says why
                return reason, None, None, None
        reason = self._read_columns(body, row)
        if reason is not None:
            return reason, body, None, None
        namespace = NAMESPACE_BY_ROLE.get(body["role"])
        if namespace is None:
            return f"unknown role {body['role']!r}", body, None, None
        try:
            public_blob, key_fingerprint, deferred = self._verifier.prepare(
                blob or sshsig.dearmor(signature), message, namespace, sha512_digest=digest
            )
        except sshsig.SignatureError as exc:
            return f"signature: {exc}", body, None, None
        return (
            None,
            body,
            deferred,
            self._after_signature(body, public_blob, key_fingerprint, namespace),
        )

    def _read_columns(self, body: dict, row: tuple) -> str | None:
        """Gives why a well-formed body disagrees with its row or is of no known kind."""
        if body["v"] != RECORD_VERSION:
            return "message fields differ from a version-1 record"
        if body["seq"] != row[0]:
            return f"stored at seq {row[0]} but signed as seq {body['seq']} (reordered?)"
        if body["prev"] != row[2]:
            return "stored previous-hash column differs from the signed one"
        if _indexed(body) != row[5:]:
            for name, value in zip(_COLUMNS, row[5:], strict=True):
                if body[name] != value:
                    return f"column '{name}' was edited: stored {value!r}, signed {body[name]!r}"
        if body["workspace"] != self.ctx.workspace_id:
            return "record belongs to another workspace"
        if body["kind"] not in KINDS:
            return f"unknown record kind {body['kind']!r}"
        return _field_of_another_kind(body)

    def _after_signature(
        self, body: dict, public_blob: bytes, key_fingerprint: str, namespace: str
    ) -> str | None:
        """Gives the fault a record has even with a good signature, or None."""
        kind, role = body["kind"], body["role"]
        if key_fingerprint != body["key"]:
            return "signature key differs from the record's key fingerprint"
        if kind in AUTHORITY_KINDS:
            # Replayed in order before the ranges were cut: its verdict is ready.
            return self.ctx.signers.verdict(body["seq"], kind)
        if not self._allows(body["principal"], public_blob, role, body["seq"], body["time"]):
            return self.ctx.signers.why_not(
                body["principal"], public_blob, role, body["seq"], body["time"]
            )
        if kind == "signoff":
            if role != SIGNOFF_ROLE:
                return f"sign-off made in role {role}, requires {SIGNOFF_ROLE}"
            return None
        if kind == clock.CLOCK_KIND:
            if role != SIGNOFF_ROLE:
                return f"clock record made in role {role}: only a {SIGNOFF_ROLE} resets time"
            return None
        if kind in (PLAN_KIND, GOLD_KIND):
            if role != SIGNOFF_ROLE:
                return f"a {kind} record signed in role {role}: only a {SIGNOFF_ROLE} signs one"
            return None
        if kind == "run":
            return None  # whoever ran a producer signs its run, in a role they hold
        queue = body["queue"]
        if queue not in QUEUE_ROLES:
            return f"unknown queue {queue!r}"
        if role not in QUEUE_ROLES[queue]:
            return f"role {role} may not decide items of queue {queue}"
        held = self.ctx.items.get((queue, body["item_id"]))
        if held is None:
            return f"item {queue}/{body['item_id']} is not in the workspace"
        if held[0] != body["item_sha256"]:
            return (
                f"item hash {str(body['item_sha256'])[:12]}… is not the workspace's item "
                f"{queue}/{body['item_id']}"
            )
        if held[1] != body["run_sha256"]:
            return "run artifact hash differs from the item's run"
        if held[2] is not None:
            return held[2]
        if kind == "decision" and body["decision"] not in DECISIONS:
            return f"unknown decision {body['decision']!r}"
        if kind == "retract" and not body["retracts"]:
            return "retract record names no record"
        return None


_sha256 = hashlib.sha256
_sha512 = hashlib.sha512
_VERSION_TEXT = str(RECORD_VERSION)


def _dearmored(signature: object) -> bytes | None:
    """Gives the SSHSIG blob of armored text, or None (the row's own check says why)."""
    try:
        return sshsig.dearmor(signature) if type(signature) is str else None
    except sshsig.SignatureError:
        return None


def _read_body(message_text: str, message: bytes) -> tuple[dict | None, str | None]:
    """Gives (body, None) or (None, why) for any message: the general path."""
    try:
        body = json.loads(message_text)
        # Re-encoding also refuses duplicate keys and NaN: they cannot round-trip.
        canonical = isinstance(body, dict) and canonical_json(body) == message
    except RecursionError:  # a forged message may nest deeper than Python recurses
        return None, "message is not canonical JSON: nested too deeply to parse"
    except (ValueError, SealdeskError) as exc:
        return None, f"message is not canonical JSON: {exc}"
    if not canonical:
        return None, "message is not canonical JSON"
    if body.keys() != BODY_FIELDS:
        return None, "message fields differ from a version-1 record"
    wrong = _wrong_type(body)
    if wrong is not None:
        return None, wrong
    return body, None


_TEXT = ("workspace", "prev", "kind", "principal", "role", "key", "time")
_TEXT_OR_NULL = ("queue", "item_id", "item_sha256", "run_sha256", "decision", "note", "retracts")


def _wrong_type(body: dict) -> str | None:
    """Gives why a signed body's field has the wrong JSON type, or None.

    Python's ``True == 1`` and loose comparisons would otherwise let signed
    bytes say something other than what sealdesk reads from them.
    """
    for name in ("v", "seq"):
        if type(body[name]) is not int:
            return f"signed field '{name}' is {type(body[name]).__name__}, not an integer"
    for name in _TEXT:
        if not isinstance(body[name], str):
            return f"signed field '{name}' is not text"
    for name in _TEXT_OR_NULL:
        if body[name] is not None and not isinstance(body[name], str):
            return f"signed field '{name}' is neither text nor null"
    try:
        parse_time(body["time"])
    except ValueError:
        return (
            f"signed time {body['time'][:40]!r} is not a UTC timestamp "
            "(YYYY-MM-DDTHH:MM:SS.ffffffZ) on a real date"
        )
    return None


# A field only one kind of record carries; anywhere else it must be null, so the
# signed bytes say one thing (a note cannot also read as an accept). "data" is a
# sign-off's and an authority record's, and on a decision null or an object of the keys
# records.DECISION_DATA names (what it overrules, its reason, ...).
_KIND_OF_FIELD = {"decision": ("decision",), "retracts": ("retract",)}
_ITEM_FIELDS = ("queue", "item_id", "item_sha256", "run_sha256")
_RECORD_HASH = re.compile(r"[0-9a-f]{64}")


def _field_of_another_kind(body: dict) -> str | None:
    """Gives why a record carries a field its kind never has, or None."""
    kind = body["kind"]
    for name, owners in _KIND_OF_FIELD.items():
        if body[name] is not None and kind not in owners:
            return (
                f"a {kind} record carries '{name}', which only a {' or '.join(owners)} record has"
            )
    if kind in AUTHORITY_KINDS:
        return None  # the authority replay reads the rest of its fields
    data = body["data"]
    if kind == clock.CLOCK_KIND:
        named = [name for name in (*_ITEM_FIELDS, "note") if body[name] is not None]
        if named:
            return f"a clock record carries '{named[0]}': it is about the ledger's time only"
        return clock.data_fault(data)
    if data is not None and kind not in ("signoff", "decision", "run", PLAN_KIND, GOLD_KIND):
        return (
            f"a {kind} record carries 'data', which only a signoff, decision, run, plan, "
            "gold, clock or authority record has"
        )
    if kind == "run":
        return _run_fault(body)
    if kind in (PLAN_KIND, GOLD_KIND):
        named = [name for name in (*_ITEM_FIELDS, "note") if body[name] is not None]
        if named:
            return f"a {kind} record carries '{named[0]}': it is about a queue, not one item"
        return plan_fault(data, QUEUES) if kind == PLAN_KIND else gold_fault(data, QUEUES)
    if kind == "decision":
        fault = decision_data_fault(data)
        if fault is not None:
            return fault
    if kind == "signoff":
        named = [name for name in _ITEM_FIELDS if body[name] is not None]
        if named:
            return f"a signoff record carries '{named[0]}': a sign-off is about no one item"
    if kind == "note" and not body["note"]:
        return "a note record carries no 'note'"
    return None


def _run_fault(body: dict) -> str | None:
    """Gives why a run record is not one producer run's manifest hash and artifact
    hashes, or None. A run is about no one item."""
    named = [name for name in _ITEM_FIELDS if body[name] is not None]
    if named:
        return f"a run record carries '{named[0]}': a run is about no one item"
    data = body["data"]
    if (
        type(data) is not dict
        or data.keys() != {"type", "run_id", "producer", "manifest_sha256", "artifacts"}
        or data["type"] != "run"
        or type(data["run_id"]) is not str
        or type(data["producer"]) is not str
        or type(data["manifest_sha256"]) is not str
        or not _RECORD_HASH.fullmatch(data["manifest_sha256"])
        or type(data["artifacts"]) is not dict
        or not all(type(v) is str and _RECORD_HASH.fullmatch(v) for v in data["artifacts"].values())
    ):
        return (
            "a run record's 'data' is not {type: run, run_id, producer, manifest_sha256, "
            "artifacts: {path: sha256}}"
        )
    return None


_CTX: Context | None = None
# Held by the verify whose context the globals below are: two verifies in threads of
# one process take turns (each checks its ranges with every core anyway). Reentrant, so
# that a whole-workspace verify can hold it around all its SQLite reads: a fork while
# another thread is inside SQLite copies SQLite's held mutexes into the child, which
# then waits on them for ever.
_ONE_AT_A_TIME = threading.RLock()


def one_verify_at_a_time() -> threading.RLock:
    """Gives the lock a verify holds while it reads SQLite or forks its workers."""
    return _ONE_AT_A_TIME


_CONN: sqlite3.Connection | None = None  # this process's read-only connection
_CHECKER: RecordChecker | None = None  # and checker, kept across its ranges


def _init_worker(ctx: Context | None) -> None:
    """Sets this process's context; None closes what it opened."""
    global _CTX, _CONN, _CHECKER
    if _CONN is not None:
        _CONN.close()
    _CTX, _CONN, _CHECKER = ctx, None, None


_ROW_SQL = (
    "SELECT seq, record_hash, prev_hash, message, signature, "
    + ", ".join(_COLUMNS)
    + " FROM records WHERE seq BETWEEN ? AND ? ORDER BY seq"
)


def check_range(bounds: tuple[int, int]) -> RangeResult:
    """Gives the result of checking records with seq in [lo, hi] (worker entry point)."""
    global _CONN, _CHECKER
    assert _CTX is not None
    if _CONN is None or _CHECKER is None:
        # One connection and one checker per process: opening a connection costs
        # about half a millisecond, and the checker caches keys and signers.
        _CONN = open_read_only(Path(_CTX.db_path))
        _CHECKER = RecordChecker(_CTX)
    return _check_rows(_CHECKER, _CONN.execute(_ROW_SQL, bounds))


def _ranges(start: int, hi: int, procs: int) -> list[tuple[int, int]]:
    """Cuts [start, hi] into ranges that shrink towards the end (guided scheduling).

    Large ranges first amortise each range's query; small ones last mean no
    process idles long while another finishes a big final range.
    """
    out, a = [], start
    while a <= hi:
        size = max(_MIN_RANGE, min(_RANGE, -(-(hi - a + 1) // (2 * procs))))
        out.append((a, min(a + size - 1, hi)))
        a += size
    return out


def _check_rows(checker: RecordChecker, cursor: sqlite3.Cursor) -> RangeResult:
    """Checks a range's rows a batch at a time: everything but Ed25519 across the batch,
    then the batch's Ed25519 checks back to back (see ``sshsig.run_deferred``)."""
    out = RangeResult()
    while batch := cursor.fetchmany(_BATCH):
        _finish(batch, checker.stage_batch(batch), out)
    return out


def _finish(rows: list[tuple], staged: list[Staged], out: RangeResult) -> None:
    """Runs a batch's deferred signature checks and adds its rows to ``out``."""
    horizon = _CTX.horizon if _CTX is not None else ""
    at = [i for i, checked in enumerate(staged) if checked[2] is not None]
    deferred = [check for _, _, check, _ in staged if check is not None]
    not_verified = {at[i] for i in sshsig.run_deferred(deferred)}
    for position, (row, (reason, facts, _, after)) in enumerate(zip(rows, staged, strict=True)):
        seq, record_hash, stored_prev = row[0], row[1], row[2]
        if reason is None:
            reason = f"signature: {sshsig.NOT_VERIFIED}" if position in not_verified else after
        # The time column was compared with the signed body; an unreadable record has none.
        time = facts[0] if reason is None and facts is not None else ""
        out.count += 1
        if out.last is None:
            out.first = (seq, stored_prev, time)
            prev_time = ""
        else:
            prev_seq, prev_hash, prev_time = out.last
            if seq != prev_seq + 1:
                out.faults.append(_gap_fault(prev_seq, seq))
            elif stored_prev != prev_hash:
                out.faults.append(_link_fault(seq))
            elif time and time < prev_time and (facts is None or facts[2] != clock.CLOCK_KIND):
                # a clock record's step back is judged whole by _check_clocks
                out.faults.append(_time_fault(seq, time, prev_time))
        if reason is not None:
            out.faults.append(Fault(seq, reason))
        elif facts is not None:
            _, principal, kind, queue, item_id, role, retracts = facts
            out.signers[principal] += 1
            if kind == "retract":
                out.retracts.append((seq, queue, item_id, role, retracts, principal))
            elif kind == clock.CLOCK_KIND:
                out.clocks.append(seq)
            if horizon and time > horizon:
                out.ahead.append((seq, time))
        if row[_KIND_COLUMN] == "signoff":  # the column, as the sign-off checks read it
            out.last_signoff = seq
        out.last = (seq, record_hash, time or prev_time)


def _time_fault(seq: int, time: str, prev_time: str) -> Fault:
    return Fault(
        seq, f"signed time {time} is earlier than the record before it ({prev_time}): backdated"
    )


def _gap_fault(prev_seq: int, seq: int) -> Fault:
    missing = prev_seq + 1 if seq > prev_seq else seq
    return Fault(
        missing, f"chain jumps from seq {prev_seq} to {seq}: record {missing} missing or moved"
    )


def _link_fault(seq: int) -> Fault:
    return Fault(
        seq, "previous-hash link broken (a record before it was removed, replaced or reordered)"
    )


def load_context(
    conn: sqlite3.Connection, db_path: Path, workspace_id: str, signers: SignerPolicy
) -> Context:
    """Gives the verification context read from the workspace database.

    The hash columns are not taken on trust: each item's stored payload and
    each run's stored manifest must still hash to them, since a record binds
    the hash and a person was shown (and the engine folds back) the bytes.
    """
    faults: list[Fault] = []
    bad_runs: dict[str, str] = {}
    for run_id, manifest, digest in conn.execute(
        "SELECT run_id, manifest, manifest_sha256 FROM runs ORDER BY run_id"
    ):
        if _text_sha256(manifest) != digest:
            bad_runs[run_id] = (
                f"run {run_id}: stored manifest no longer hashes to its "
                "manifest_sha256 (edited after ingest)"
            )
            faults.append(Fault(0, bad_runs[run_id]))
    items = {}
    for q, i, sha, payload, run_id, run_sha in conn.execute(
        "SELECT items.queue, items.item_id, items.item_sha256, items.payload, run_id, "
        "runs.manifest_sha256 FROM items JOIN runs USING (run_id) "
        "ORDER BY items.queue, items.item_id"
    ):
        why = bad_runs.get(run_id)
        if _text_sha256(payload) != sha:
            why = (
                f"item {q}/{i}: stored payload no longer hashes to its item_sha256 "
                "(edited after ingest)"
            )
            faults.append(Fault(0, why))
        items[(q, i)] = (sha, run_sha, why)
    return Context(
        str(db_path),
        workspace_id,
        signers,
        items,
        tuple(faults) + tuple(Fault(seq, why) for seq, why in signers.faults()),
        time_text(datetime.now(UTC) + timedelta(seconds=clock.SKEW_S)),
    )


def _text_sha256(text: object) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if isinstance(text, str) else None


@dataclass(frozen=True)
class StandingElsewhere:
    """What can stand on an item besides its own decisions, for the overrule replay: a
    decision made on another item that counts as the item's own (``engine.subjects``
    gives it: the ledger knows nothing of what relates items)."""

    # SELECT queue, item_id: further items whose decisions the replay must judge
    contested_sql: str
    # The decision standing on (queue, item_id) from elsewhere when record seq was
    # appended (seq, decision, principal, role, record_hash, carried_from), or None
    at: Callable[[sqlite3.Connection, str, str, int], dict | None]


def verify_ledger(
    conn: sqlite3.Connection,
    ctx: Context,
    *,
    processes: int | None = None,
    progress=None,
    elsewhere: StandingElsewhere | None = None,
) -> Report:
    """Gives the report over every record of the database in ``ctx``; ``elsewhere``
    says what else stands on an item when its own decisions do not."""
    report = Report()
    report.faults.extend(ctx.faults)
    # Only a table rebuilt without its INTEGER PRIMARY KEY can hold a seq that is not
    # an integer. The ranges below are of integers and would never reach such a row,
    # yet the app could read it: each one is a fault. (About 1.5 ms at 10k records:
    # SQLite scans a covering index.)
    stray = [
        seq for (seq,) in conn.execute("SELECT seq FROM records WHERE typeof(seq) != 'integer'")
    ]
    report.faults.extend(
        Fault(
            0,
            f"a record is stored with seq {seq!r}, not an integer "
            "(the records table was rebuilt): it has no place in "
            "the chain",
        )
        for seq in stray
    )
    # One aggregate per query: SQLite then reads MIN or MAX off the rowid b-tree
    # instead of scanning every record.
    only_integers = " WHERE typeof(seq) = 'integer'" if stray else ""
    lo = conn.execute("SELECT MIN(seq) FROM records" + only_integers).fetchone()[0]
    hi = conn.execute("SELECT MAX(seq) FROM records" + only_integers).fetchone()[0]
    if lo is None:
        return report
    # A tampered table may not start at 1; ranges still cover every stored seq.
    start = min(lo, 1)
    procs = processes if processes is not None else (os.cpu_count() or 1)
    ranges = _ranges(start, hi, procs)
    with _ONE_AT_A_TIME:  # the worker globals are this process's: one verify holds them
        _init_worker(ctx)
        try:
            results = _check_ranges(ranges, min(procs, len(ranges)), progress)
        finally:
            _init_worker(None)
    retracts = _join(results, report)
    _check_retractions(conn, report, retracts)
    _check_overrules(conn, report, elsewhere)
    _check_gold(conn, report)
    _check_clocks(
        conn,
        report,
        [seq for part in results for seq in part.clocks],
        [late for part in results for late in part.ahead],
    )
    return report


def _check_clocks(
    conn: sqlite3.Connection,
    report: Report,
    clocks: list[int],
    ahead: list[tuple[int, str]],
) -> None:
    """Adds faults for clock records that step time back wrongly and for records dated
    ahead of the verifier's clock that no clock record reset; notes each reset.

    A clock record passed its own check (a lead's, well formed); here it must
    name the time of the record just before it and step back from it by more
    than ``clock.SKEW_S``. The records before it dated after it are those it
    reset: noted, with their seqs, for the auditor. Its time and the stored
    time column of the record before it were compared with their signed
    bodies by the per-record check.
    """
    resets: list[tuple[int, str]] = []  # (seq, time) of each clock record that stands
    for seq in clocks:
        row = conn.execute("SELECT message FROM records WHERE seq=?", (seq,)).fetchone()
        body = json.loads(row[0])
        before = conn.execute("SELECT time FROM records WHERE seq=?", (seq - 1,)).fetchone()
        why = clock.reset_fault(body["time"], body["data"]["resets"], before and before[0])
        if why is not None:
            report.faults.append(Fault(seq, why))
            continue
        resets.append((seq, body["time"]))
        lo, hi, count = conn.execute(
            "SELECT MIN(seq), MAX(seq), COUNT(*) FROM records WHERE seq < ? AND time > ?",
            (seq, body["time"]),
        ).fetchone()
        report.notes.append(
            Fault(
                seq,
                f"{body['principal']} (lead) reset the ledger's time from "
                f"{body['data']['resets']} to {body['time']}: {count} earlier record(s) "
                f"({lo}-{hi}) claim a time after it",
            )
        )
    for seq, time in ahead:
        if any(seq < reset and at < time for reset, at in resets):
            continue  # reset, and noted at its clock record
        report.faults.append(
            Fault(
                seq,
                f"signed time {time} is ahead of this verifier's clock by more than the "
                f"{clock.SKEW_S:.0f} s hosts may differ: dated in the future (a lead "
                "resets the ledger's time with sealdesk keys reset-clock)",
            )
        )


_DIED = "a verify worker process died before it reported; run sealdesk verify again"


def _check_ranges(ranges: list[tuple[int, int]], workers: int, progress) -> list[RangeResult]:
    """Gives the result of each range, in order, checked by this process and ``workers - 1``
    forked children.

    Each process claims the next unchecked range until none is left, so a
    process that runs slow simply claims fewer. This process works too: on
    two cores, one fork and no pool threads (a multiprocessing.Pool's start-up
    and tear-down came to about 20 ms per verify). Only this process reports
    progress: a callback may take locks (rich's bar does) that a fork would
    leave held in the child.
    """
    if workers <= 1:  # no fork, no semaphore: works where multiprocessing cannot
        in_order: list[RangeResult] = []
        done = 0
        for bounds in ranges:
            in_order.append(check_range(bounds))
            done += in_order[-1].count
            if progress is not None:
                progress(done)
        return in_order
    mp = multiprocessing.get_context("fork")
    lock = mp.Lock()
    claimed = mp.RawValue("q", 0)  # next range to claim
    checked = mp.RawValue("q", 0)  # records checked so far, for the progress bar
    children: list[tuple[BaseProcess, Connection]] = []
    parent = os.getpid()

    def check_children() -> None:
        # A child killed (say by the OOM killer) while holding the lock, or before it
        # reports, would leave this process waiting for ever: it looks while it waits.
        if any(child.exitcode not in (None, 0) for child, _ in children):
            raise SealdeskError(_DIED)

    @contextmanager
    def locked():
        if os.getpid() == parent:
            while not lock.acquire(timeout=0.2):
                check_children()
        else:
            lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def work(report) -> list[tuple[int, RangeResult]]:
        out: list[tuple[int, RangeResult]] = []
        while True:
            with locked():
                index = claimed.value
                claimed.value = index + 1
            if index >= len(ranges):
                return out
            result = check_range(ranges[index])
            out.append((index, result))
            with locked():
                checked.value += result.count
                done = checked.value
            if report is not None:
                report(done)

    try:
        for _ in range(workers - 1):
            receive, send = mp.Pipe(duplex=False)
            child = mp.Process(target=_child, args=(work, send), daemon=True)
            child.start()
            send.close()  # the child holds the only write end: its death reads as EOF
            children.append((child, receive))
        results = work(progress)
        for _, receive in children:
            while not receive.poll(0.2):
                check_children()
            try:
                status, payload = receive.recv()
            except EOFError:
                raise SealdeskError(_DIED) from None
            if status != "ok":
                raise SealdeskError(f"a verify worker process failed: {payload}")
            results.extend(payload)
    finally:
        for process, pipe in children:
            pipe.close()
            if process.is_alive():
                process.terminate()
            process.join()
    if progress is not None:
        progress(checked.value)
    return [result for _, result in sorted(results, key=operator.itemgetter(0))]


def _child(work, send) -> None:
    """A forked child's whole life: check ranges, send back what it found."""
    try:
        send.send(("ok", work(None)))
    except BaseException as exc:  # reported by the parent, which raises
        send.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        send.close()


def _join(results: list[RangeResult], report: Report) -> list[tuple]:
    """Joins the ranges' results into the report; gives the retract records that passed."""
    expected_seq, prev_hash, prev_time = 1, GENESIS_PREV, ""
    signers: Counter = Counter()
    retracts: list[tuple] = []
    for part in results:
        report.faults.extend(part.faults)
        signers.update(part.signers)
        retracts.extend(part.retracts)
        report.records += part.count
        if part.last_signoff is not None:
            report.last_signoff = part.last_signoff
        if part.first is not None and part.last is not None:  # a range with records has both
            seq, first_prev, first_time = part.first
            if seq != expected_seq:
                report.faults.append(_gap_fault(expected_seq - 1, seq))
            elif first_prev != prev_hash:
                report.faults.append(_link_fault(seq))
            elif first_time and first_time < prev_time and seq not in part.clocks[:1]:
                report.faults.append(_time_fault(seq, first_time, prev_time))
            expected_seq, prev_hash = part.last[0] + 1, part.last[1]
            prev_time = part.last[2] or prev_time
            report.head_hash = part.last[1]
    report.signers = dict(signers)
    return retracts


def _check_retractions(conn: sqlite3.Connection, report: Report, retracts: list[tuple]) -> None:
    """Adds faults for retracts that name no earlier decision on the same item.

    ``retracts`` holds only records that passed their own check, read from
    their signed bodies; each target is looked up by its record hash, whose
    columns are trusted only if the target passed its own check too.

    A table rebuilt without its UNIQUE record_hash can hold one record twice;
    at most one copy can pass (each signs its own seq), and that copy is the
    target: the other is a fault of its own, not of the retract.
    """
    bad = {f.seq for f in report.faults}
    targets: dict[str, tuple] = {}
    hashes = sorted({r[4] for r in retracts})
    for start in range(0, len(hashes), 500):  # within SQLite's bound-parameter limit
        chunk = hashes[start : start + 500]
        for row in conn.execute(
            "SELECT record_hash, seq, kind, queue, item_id, role, principal FROM records "
            f"WHERE record_hash IN ({', '.join('?' * len(chunk))}) ORDER BY seq",
            chunk,
        ):
            held = targets.get(row[0])
            if held is None or (held[0] in bad and row[1] not in bad):
                targets[row[0]] = row[1:]
    seen: set[str] = set()
    for seq, queue, item_id, role, target, principal in retracts:
        if seq in bad:  # a link or time fault too: it cannot count as the retraction
            continue
        t_seq, t_kind, t_queue, t_item, t_role, t_principal = targets.get(target, (None,) * 6)
        if t_seq is None or t_kind != "decision" or t_seq >= seq or t_seq in bad:
            reason = "retracts a record that is not an earlier decision"
        elif (t_queue, t_item) != (queue, item_id):
            reason = "retracts a decision about another item"
        elif target in seen:
            reason = "retracts a decision already retracted"
        elif t_role != role:
            reason = f"retract in role {role} of a decision made as {t_role}"
        elif t_principal != principal:
            reason = (
                f"retracts {t_principal}'s decision: an undo takes back only its signer's "
                "own (another's is replaced by an explicit overrule)"
            )
        else:
            seen.add(target)
            continue
        report.faults.append(Fault(seq, reason))


# Every decision and retract on each item where deciding was contested: decisions by
# more than one principal or in more than one role, or one naming what it overrules.
# "data" sorts first in a canonical body, so a version-1 record with "data" null starts
# with exactly _NO_DATA; in any other decision that passed its check, _OVERRULES occurs
# only as the key of "data.overrules" (a '"' inside any string is escaped with a
# backslash there, so no text a person typed can spell it), followed by the 64 hex
# digits of the hash it names:
# the query reads the messages and parses none.
_NO_DATA = '{"data":null,'
_OVERRULES = '"overrules":"'
_ELSEWHERE = "-- and the items decided elsewhere"
_NAMES_OVERRULE = (
    f"(substr(message, 1, {len(_NO_DATA)}) <> '{_NO_DATA}' AND instr(message, '{_OVERRULES}') > 0)"
)
# A decision made under a review plan: replayed too, so that the plan judges it.
_PLAN = '"plan":{"'
_NAMES_PLAN = (
    f"(substr(message, 1, {len(_NO_DATA)}) <> '{_NO_DATA}' AND instr(message, '{_PLAN}') > 0)"
)
_CONTESTED_SQL = f"""
WITH contested AS (
    SELECT queue, item_id FROM records WHERE kind = 'decision'
    GROUP BY queue, item_id
    HAVING MIN(principal) <> MAX(principal) OR MIN(role) <> MAX(role)
        OR MAX({_NAMES_OVERRULE}) OR MAX({_NAMES_PLAN})
    {_ELSEWHERE}
)
SELECT r.queue, r.item_id, r.seq, r.kind, r.principal, r.role, r.retracts, r.record_hash,
       CASE WHEN {_NAMES_OVERRULE.replace("message", "r.message")}
            THEN substr(r.message, instr(r.message, '{_OVERRULES}') + {len(_OVERRULES)}, 64) END,
       CASE WHEN {_NAMES_PLAN.replace("message", "r.message")}
            THEN json_extract(r.message, '$.data.plan') END
FROM contested c JOIN records r ON r.queue = c.queue AND r.item_id = c.item_id
WHERE r.kind IN ('decision', 'retract')
ORDER BY r.queue, r.item_id, r.seq
"""


def _check_overrules(
    conn: sqlite3.Connection, report: Report, elsewhere: StandingElsewhere | None = None
) -> None:
    """Adds faults for decisions that replace a standing decision they may not, or
    without naming it in ``overrules``, or that name a record not standing.

    Replays, item by item in seq order, which decision stood when each one was
    signed (the latest not yet retracted, as ``store.effective_decisions``
    reads it then; with none, what ``elsewhere`` says stood on it then), over
    the items where more than one principal or role decided or a decision
    names an overrule, and the further items ``elsewhere`` names; on any
    other item no decision can replace another's. Like ``_check_retractions``
    it trusts the columns of records that passed their own check (and of
    retracts that passed that check too) and skips the rest; ``overrules`` is
    read from the signed message, whose shape ``_field_of_another_kind`` has
    checked.

    A decision made under a review plan (every one carries data, so every one is
    replayed here) is also judged against its plan (``_planned_fault``), and a
    blind rating replaces nobody: only other ratings may stand before it.
    """
    bad = {f.seq for f in report.faults}
    item: tuple | None = None
    # unretracted: (seq, hash, principal, role, the item it was made on if another)
    standing: list[tuple[int, str, str, str, str | None]] = []
    ratings: set[str] = set()  # the blind ratings under a plan among them
    plans: dict[str, tuple[int, dict]] = {}  # plan record hash -> (seq, its queues)
    more = f"UNION {elsewhere.contested_sql}" if elsewhere is not None else ""
    for (
        queue,
        item_id,
        seq,
        kind,
        principal,
        role,
        retracts,
        record_hash,
        overrules,
        planned,
    ) in conn.execute(_CONTESTED_SQL.replace(_ELSEWHERE, more)):
        if (queue, item_id) != item:
            item, standing = (queue, item_id), []
        if type(seq) is not int or seq in bad:
            continue
        if kind == "retract":
            standing = [d for d in standing if d[1] != retracts]
            continue
        stood = standing[-1] if standing else None
        if stood is None and elsewhere is not None:
            found = elsewhere.at(conn, queue, item_id, seq)
            if found is not None:
                stood = (
                    found["seq"],
                    found["record_hash"],
                    found["principal"],
                    found["role"],
                    found["carried_from"],
                )
        under = json.loads(planned) if kind == "decision" and planned is not None else None
        if under is not None:
            reason = _planned_fault(conn, plans, seq, queue, item_id, principal, role, under)
            if reason is not None:
                report.faults.append(Fault(seq, reason))
        if under is not None and under.get("blind") is True:
            # An independent rating under a plan replaces nobody: what stands beside it is
            # at most other principals' ratings in the same role (check_plans judges it).
            if stood is not None and (stood[1] not in ratings or stood[3] != role):
                report.faults.append(
                    Fault(seq, f"a blind rating made after record {stood[0]}, which is no rating")
                )
            ratings.add(record_hash)
            standing.append((seq, record_hash, principal, role, None))
            continue
        reason = _overrule_fault(stood, principal, role, overrules)
        if reason is not None:
            report.faults.append(Fault(seq, reason))
        # It stood from then on whatever its fault: a later decision is judged against
        # what the ledger showed its signer, not against a replay that skips it.
        standing.append((seq, record_hash, principal, role, None))


def _check_gold(conn: sqlite3.Connection, report: Report) -> None:
    """Adds faults for gold reveals that are not what their commit bound, that name no
    earlier commit or one revealed already, or whose items someone decided before the
    commit (gold chosen after seeing decisions); and for a commit naming an item its
    queue does not hold."""
    bad = {f.seq for f in report.faults}
    commits: dict[str, tuple[int, dict]] = {}
    revealed: set[str] = set()
    for seq, record_hash, message in conn.execute(
        "SELECT seq, record_hash, message FROM records WHERE kind = 'gold' ORDER BY seq"
    ):
        if type(seq) is not int or seq in bad:
            continue
        data = json.loads(message)["data"]
        if data["type"] == "commit":
            commits[record_hash] = (seq, data)
            continue
        found = commits.get(data["commit"])
        reason = None
        if found is None:
            reason = f"reveals gold for {data['commit'][:12]}…, which is no earlier gold commit"
        elif data["commit"] in revealed:
            reason = f"reveals gold commit record {found[0]} a second time"
        else:
            commit_seq, commit = found
            reason = reveal_fault(commit, data) or _decided_before(
                conn, commit["queue"], data["answers"], commit_seq
            )
            revealed.add(data["commit"])
        if reason is not None:
            report.faults.append(Fault(seq, reason))


def _decided_before(
    conn: sqlite3.Connection, queue: str, answers: dict[str, str], commit_seq: int
) -> str | None:
    """Gives why the gold answered is not a queue's items undecided at its commit, or None."""
    for item_id in sorted(answers):
        if (
            conn.execute(
                "SELECT 1 FROM items WHERE queue = ? AND item_id = ?", (queue, item_id)
            ).fetchone()
            is None
        ):
            return f"reveals gold for {queue}/{item_id}, which the workspace does not hold"
        early = conn.execute(
            "SELECT seq FROM records WHERE queue = ? AND item_id = ? AND kind = 'decision' "
            "AND seq < ? ORDER BY seq LIMIT 1",
            (queue, item_id, commit_seq),
        ).fetchone()
        if early is not None:
            return (
                f"gold item {queue}/{item_id} was decided (record {early[0]}) before its "
                f"answer was committed (record {commit_seq}): gold chosen after a decision"
            )
    return None


def _draw_key(conn: sqlite3.Connection, queue: str, item_id: str, seq: int) -> str:
    """Gives the draw key the plan sampled a decided item by: its subject, read from the
    item's payload only when that payload is the one the decision signed (its SHA-256);
    else its id."""
    row = conn.execute(
        "SELECT i.payload FROM items i JOIN records r ON r.seq = ? "
        "AND r.item_sha256 = i.item_sha256 WHERE i.queue = ? AND i.item_id = ?",
        (seq, queue, item_id),
    ).fetchone()
    if row is None:
        return item_id
    return draw_key(queue, item_id, json.loads(row[0]))


def _planned_fault(
    conn: sqlite3.Connection,
    plans: dict[str, tuple[int, dict]],
    seq: int,
    queue: str,
    item_id: str,
    principal: str,
    role: str,
    under: dict,
) -> str | None:
    """Gives why a decision made under a plan (``under``: its signed ``data.plan``) is one
    the plan does not allow, or None: a blind rating on an item its plan does not sample,
    by someone not in it, in another role than the queue's rating role, or under a plan
    signed after it; a resolution from a role not above the rating role, or naming
    records that are not earlier ratings on the item. ``plans`` caches the plan records
    read."""
    if under["record"] not in plans:
        row = conn.execute(
            "SELECT seq, message FROM records WHERE record_hash = ? AND kind = ?",
            (under["record"], PLAN_KIND),
        ).fetchone()
        if row is None:
            return f"made under plan {under['record'][:12]}…, which is no plan record"
        plans[under["record"]] = (row[0], json.loads(row[1])["data"]["queues"])
    plan_seq, queues = plans[under["record"]]
    if plan_seq >= seq:
        return f"made under plan record {plan_seq}, signed after it"
    rated_as = rating_role(queue)
    if "resolves" in under:
        if not outranks(role, rated_as):
            return f"resolves ratings from role {role}, which is not above {rated_as}"
        for h in under["resolves"]:
            row = conn.execute(
                "SELECT queue, item_id, seq, json_extract(message, '$.data.plan.blind') "
                "FROM records WHERE record_hash = ? AND kind = 'decision'",
                (h,),
            ).fetchone()
            if row is None or (row[0], row[1]) != (queue, item_id) or row[2] >= seq or row[3] != 1:
                return f"resolves record {h[:12]}…, which is no earlier rating on the item"
        return None
    q = queues.get(queue)
    if q is None or not sampled(q, queue, _draw_key(conn, queue, item_id, seq)):
        return f"a blind rating on {queue}/{item_id}, which its plan does not sample"
    if principal not in q["principals"]:
        return f"a blind rating by {principal}, who is not in the plan for {queue}"
    if role != rated_as:
        return f"a blind rating made as {role}; {queue} is rated as {rated_as}"
    return None


def _overrule_fault(
    standing: tuple[int, str, str, str, str | None] | None,
    principal: str,
    role: str,
    overrules: str | None,
) -> str | None:
    """Gives why a decision by principal in role may not replace ``standing`` (naming
    ``overrules``), or None."""
    if standing is None:
        if overrules is not None:
            return f"overrules record {overrules[:12]}…, but no decision stood on the item"
        return None
    seq, record_hash, by, made_as, made_on = standing
    where = f"record {seq}" + (f", carried from {made_on}" if made_on is not None else "")
    if outranks(made_as, role):
        return f"replaces the decision {by} made as {made_as} ({where}) from the lower role {role}"
    if by == principal:
        if overrules is not None:
            return (
                f"overrules record {overrules[:12]}…, but the standing decision ({where}) "
                "is its own signer's"
            )
        return None
    if overrules is None:
        return (
            f"replaces {by}'s standing decision ({where}) without naming it in "
            "'overrules': a silent overrule"
        )
    if overrules != record_hash:
        return (
            f"overrules record {overrules[:12]}…, which is not the standing decision "
            f"({where}, by {by})"
        )
    return None
