"""Verification: re-derive every hash and link, check every signature and role.

Per-record work (JSON, hashes, SSHSIG, authorisation) runs in worker
processes, one per core; the chain walk and the retract bookkeeping, which
need order, run in the parent on small tuples. The first fault by seq is the
one reported, with its reason.
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from engine.canonical import canonical_json, sha256_hex, strict_loads
from engine.ledger import sshsig
from engine.ledger.allowed_signers import AllowedSigners
from engine.ledger.records import (
    BODY_FIELDS,
    DECISIONS,
    GENESIS_PREV,
    INDEXED_FIELDS,
    KINDS,
    RECORD_VERSION,
    parse_time,
)
from engine.roles import QUEUE_ROLES, SIGNOFF_ROLE, namespace_for

_CHUNK = 1024
_PARALLEL_FROM = 2048


@dataclass(frozen=True)
class Fault:
    """One problem found: the record's seq and why."""

    seq: int
    reason: str


@dataclass
class Report:
    """What verification found."""

    records: int = 0
    head_hash: str = GENESIS_PREV
    faults: list[Fault] = field(default_factory=list)
    signers: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.faults

    @property
    def first(self) -> Fault | None:
        return min(self.faults, key=lambda f: f.seq) if self.faults else None


@dataclass(frozen=True)
class Context:
    """What every record is checked against; shipped once to each worker."""

    workspace_id: str
    allowed: AllowedSigners
    items: dict[tuple[str, str], tuple[str, str]]  # (queue, item_id) -> (sha, run_sha)


_CTX: Context | None = None


def _init_worker(ctx: Context) -> None:
    global _CTX
    _CTX = ctx


def _check_record(ctx: Context, row: tuple) -> tuple:
    """Gives (seq, hash, prev, kind, queue, item_id, role, retracts, principal, fault)."""
    seq, record_hash, prev_hash, message_text, signature = row[:5]
    indexed = dict(zip(INDEXED_FIELDS, row[5:]))
    summary = [seq, record_hash, prev_hash, None, None, None, None, None, None]

    def fault(reason: str) -> tuple:
        return (*summary, reason)

    message = message_text.encode("utf-8")
    if sha256_hex(message) != record_hash:
        return fault("record hash does not match the signed message (message or hash edited)")
    try:
        body = strict_loads(message)
    except ValueError as exc:
        return fault(f"message is not JSON: {exc}")
    if not isinstance(body, dict) or canonical_json(body) != message:
        return fault("message is not canonical JSON")
    if set(body) != BODY_FIELDS or body.get("v") != RECORD_VERSION:
        return fault("message fields differ from a version-1 record")
    summary[3:9] = (body["kind"], body["queue"], body["item_id"], body["role"],
                    body["retracts"], body["principal"])
    if body["seq"] != seq:
        return fault(f"stored at seq {seq} but signed as seq {body['seq']} (reordered?)")
    if body["prev"] != prev_hash:
        return fault("stored previous-hash column differs from the signed one")
    for name, value in indexed.items():
        if body[name] != value:
            return fault(f"column '{name}' was edited: stored {value!r}, signed {body[name]!r}")
    if body["workspace"] != ctx.workspace_id:
        return fault("record belongs to another workspace")
    kind, role = body["kind"], body["role"]
    if kind not in KINDS:
        return fault(f"unknown record kind {kind!r}")
    try:
        namespace = namespace_for(role)
    except ValueError as exc:
        return fault(str(exc))
    try:
        sig = sshsig.verify(sshsig.dearmor(signature), message, namespace)
    except sshsig.SignatureError as exc:
        return fault(f"signature: {exc}")
    if sshsig.fingerprint(sig.public_key) != body["key"]:
        return fault("signature key differs from the record's key fingerprint")
    if not ctx.allowed.authorizes(body["principal"], sig.public_key, namespace,
                                  parse_time(body["time"])):
        return fault(
            f"{body['principal']} with key {body['key']} is not allowed to sign as "
            f"{role} ({namespace}) in trust/allowed_signers"
        )
    if kind == "signoff":
        if role != SIGNOFF_ROLE:
            return fault(f"sign-off made in role {role}, requires {SIGNOFF_ROLE}")
        return (*summary, None)
    queue = body["queue"]
    if queue not in QUEUE_ROLES:
        return fault(f"unknown queue {queue!r}")
    if role not in QUEUE_ROLES[queue]:
        return fault(f"role {role} may not decide items of queue {queue}")
    held = ctx.items.get((queue, body["item_id"]))
    if held is None:
        return fault(f"item {queue}/{body['item_id']} is not in the workspace")
    if held[0] != body["item_sha256"]:
        return fault(f"item hash {body['item_sha256'][:12]}… is not the workspace's item "
                     f"{queue}/{body['item_id']}")
    if held[1] != body["run_sha256"]:
        return fault("run artifact hash differs from the item's run")
    if kind == "decision" and body["decision"] not in DECISIONS:
        return fault(f"unknown decision {body['decision']!r}")
    if kind == "retract" and not body["retracts"]:
        return fault("retract record names no record")
    return (*summary, None)


def _check_chunk(rows: list[tuple]) -> list[tuple]:
    assert _CTX is not None
    return [_check_record(_CTX, row) for row in rows]


def _chunks(rows: Iterable[tuple]) -> Iterator[list[tuple]]:
    chunk: list[tuple] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def load_context(conn: sqlite3.Connection, workspace_id: str, allowed: AllowedSigners) -> Context:
    """Gives the verification context read from the workspace database."""
    items = {
        (q, i): (sha, run_sha)
        for q, i, sha, run_sha in conn.execute(
            "SELECT items.queue, items.item_id, items.item_sha256, runs.manifest_sha256 "
            "FROM items JOIN runs USING (run_id)"
        )
    }
    return Context(workspace_id, allowed, items)


def verify_rows(rows: Iterable[tuple], ctx: Context, *, total: int | None = None,
                processes: int | None = None, progress=None) -> Report:
    """Gives the report over rows in seq order (see ``store.iter_records``)."""
    report = Report()
    procs = processes if processes is not None else (os.cpu_count() or 1)
    if procs > 1 and (total is None or total >= _PARALLEL_FROM):
        mp = multiprocessing.get_context("fork")
        with mp.Pool(procs, initializer=_init_worker, initargs=(ctx,)) as pool:
            results = pool.imap(_check_chunk, _chunks(rows), chunksize=1)
            _walk(results, report, progress)
    else:
        _init_worker(ctx)
        _walk((_check_chunk(c) for c in _chunks(rows)), report, progress)
    return report


def _walk(results: Iterable[list[tuple]], report: Report, progress) -> None:
    expected_seq, prev_hash = 1, GENESIS_PREV
    decisions: dict[str, tuple] = {}  # hash -> (seq, kind, queue, item_id, role)
    retracted: set[str] = set()
    for chunk in results:
        for (seq, rhash, rprev, kind, queue, item_id, role, retracts, principal,
             fault) in chunk:
            report.records += 1
            if seq != expected_seq:
                missing = expected_seq if seq > expected_seq else seq
                report.faults.append(Fault(missing, f"chain jumps from seq {expected_seq - 1} "
                                           f"to {seq}: record {missing} missing or moved"))
            elif rprev != prev_hash:
                report.faults.append(Fault(seq, "previous-hash link broken (a record before "
                                           "it was removed, replaced or reordered)"))
            if fault is not None:
                report.faults.append(Fault(seq, fault))
            elif kind == "decision":
                decisions[rhash] = (seq, kind, queue, item_id, role)
            elif kind == "retract":
                target = decisions.get(retracts)
                if target is None:
                    report.faults.append(Fault(seq, "retracts a record that is not an earlier "
                                               "decision"))
                elif (target[2], target[3]) != (queue, item_id):
                    report.faults.append(Fault(seq, "retracts a decision about another item"))
                elif retracts in retracted:
                    report.faults.append(Fault(seq, "retracts a decision already retracted"))
                elif target[4] != role:
                    report.faults.append(Fault(seq, f"retract in role {role} of a decision "
                                               f"made as {target[4]}"))
                else:
                    retracted.add(retracts)
            if principal:
                report.signers[principal] = report.signers.get(principal, 0) + 1
            expected_seq, prev_hash = seq + 1, rhash
            report.head_hash = rhash
        if progress is not None:
            progress(report.records)
