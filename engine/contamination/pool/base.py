"""Execution backends for a sharded pool, behind one interface, and the driver loop.

A backend runs ``shard_scan.scan_shard`` on its workers: ``local`` in worker
processes of this machine (``local.py``), ``ray`` in Ray actors (``ray.py``). Each
is given the job (eval index, fields, embedding plan) once, when it
starts, and then shards one by one; each shard gives back only its
matches. The driver (``run_shards``) keeps every worker busy, retries a
shard that failed (``--shard-retries`` times), records each finished shard
in the workspace, advances the progress stages from the workers' reports,
and hands the outcomes, in shard order, to the merge.

What a failure does: bad input in a shard (a row the scan refuses) is not
retried; the first such shard in pool order is reported in one line and
nothing is written. A shard that keeps failing otherwise (a worker killed,
a read that errors) is named in one line and the scan exits non-zero
WITHOUT writing a report or ingesting items: a contamination report that
silently lacks a shard would understate the leakage rate and could be
signed off. The shards that did finish are recorded, so rerunning the same
command scans only what is left.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, replace
from typing import Any, Protocol

from engine.contamination.inputs.pool_hash import PoolHasher, TreePiece
from engine.contamination.inputs.shards import Shard
from engine.contamination.pool.records import ShardRecords
from engine.contamination.pool.shard_scan import (
    RunCounts,
    ShardJob,
    ShardOutcome,
    ShardRefused,
    ShardReply,
    ShardSkipped,
    record_name,
)
from engine.errors import SealdeskError

_POLL_S = 0.25
_REPORT_EVERY_S = 0.2


class ShardFailed(SealdeskError):
    """A shard still failed after its retries; nothing was written."""

    exit_code = 6


class ShardCrash(Exception):
    """A shard's attempt failed for a reason other than its input (retried)."""


class Backend(Protocol):
    """Runs shard scans on some workers; the driver loop uses nothing else."""

    name: str
    workers: int

    def start(self, job: ShardJob) -> None:
        """Ships the job to every worker (once) and gets them ready."""

    def submit(self, shard: Shard, rescan: bool) -> Any:
        """Starts one shard; gives a handle (``rescan`` ignores its record)."""

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """Gives the handles that are done, waiting at most ``timeout`` seconds."""

    def result(self, handle: Any) -> ShardReply:
        """Gives a done shard's reply; raises ShardCrash when its attempt failed."""

    def progress(self) -> dict[int, int]:
        """Gives documents done per shard position since the last call."""

    def close(self) -> None:
        """Stops the workers (and whatever the backend started)."""


class ProgressReport:
    """A worker's report of documents done, sent at most every 0.2 s."""

    def __init__(self, position: int, send: Any) -> None:
        self.position, self.send = position, send
        self.pending = 0
        self.last = time.monotonic()

    def __call__(self, count: int) -> None:
        self.pending += count
        now = time.monotonic()
        if now - self.last >= _REPORT_EVERY_S:
            self.flush()
            self.last = now

    def flush(self) -> None:
        if self.pending:
            self.send(self.position, self.pending)
            self.pending = 0


# -- the driver ---------------------------------------------------------------
@dataclass
class _Stages:
    shards: Any
    docs: Any
    total_bytes: int | None
    bytes_done: int = 0
    docs_done: int = 0

    def shard_done(self, shard: Shard, n: int) -> None:
        if self.shards is not None:
            self.shards.advance(1)
        self.docs_done += n
        if shard.size is not None and self.total_bytes:
            self.bytes_done += shard.size
            if self.docs is not None and self.bytes_done:
                # documents per byte so far, applied to every byte listed
                self.docs.set_total(round(self.docs_done * self.total_bytes / self.bytes_done))


def run_shards(
    backend: Backend,
    job: ShardJob,
    shards: list[Shard],
    records: ShardRecords | None,
    *,
    retries: int = 2,
    rep: Any = None,
) -> tuple[list[ShardOutcome], RunCounts]:
    """Gives every shard's outcome in shard order; raises on bad input or a failed shard."""
    counts = RunCounts(shards=len(shards))
    sizes = [s.size for s in shards if s.size is not None]
    pending: deque[tuple[Shard, bool]] = deque((s, False) for s in shards)
    in_flight: dict[Any, Shard] = {}
    reported: Counter[int] = Counter()
    attempts: Counter[int] = Counter()
    outcomes: dict[int, ShardOutcome] = {}
    fold = _InOrder(len(shards))
    refused: ShardRefused | None = None
    failed: dict[int, str] = {}
    clock = time.perf_counter()
    backend.start(job)
    counts.startup_seconds = time.perf_counter() - clock
    clock = time.perf_counter()
    # the stages start once the workers are up, so that their rates are the scan's
    stages = _Stages(
        rep.stage("pool shards", total=len(shards), unit="shards") if rep else None,
        rep.stage("scanning pool", total=None, unit="docs") if rep else None,
        sum(sizes) if len(sizes) == len(shards) else None,
    )
    try:
        while pending or in_flight:
            while pending and len(in_flight) < 2 * backend.workers:
                shard, rescan = pending.popleft()
                if refused is None or shard.position < refused.position:
                    in_flight[backend.submit(shard, rescan)] = shard
            if not in_flight:
                break
            ready = backend.wait(list(in_flight), _POLL_S)
            _advance(stages, backend.progress(), reported, set(outcomes) | set(failed))
            for handle in ready:
                shard = in_flight.pop(handle)
                try:
                    reply = backend.result(handle)
                except ShardCrash as crash:
                    _uncount(stages, reported, shard.position)
                    attempts[shard.position] += 1
                    if attempts[shard.position] <= retries:
                        counts.retries[shard.url] = attempts[shard.position]
                        pending.appendleft((shard, False))
                    else:
                        failed[shard.position] = str(crash)
                    continue
                if isinstance(reply, ShardRefused):
                    if refused is None or reply.position < refused.position:
                        refused = reply
                    continue
                if isinstance(reply, ShardSkipped):
                    outcome = (
                        records.load(reply.record, shard.position, shard.url)
                        if records is not None
                        else None
                    )
                    if outcome is None:  # an unreadable record: scan the shard after all
                        pending.appendleft((shard, True))
                        continue
                    counts.from_records += 1
                else:
                    outcome = reply
                    counts.scanned += 1
                    if records is not None and outcome.file_sha256 is not None:
                        records.save(record_name(shard, outcome.file_sha256), outcome)
                outcomes[shard.position] = outcome
                fold.take(outcomes)
                _uncount(stages, reported, shard.position)
                if stages.docs is not None:
                    stages.docs.advance(outcome.n)
                stages.shard_done(shard, outcome.n)
        counts.scan_seconds = time.perf_counter() - clock
    finally:
        backend.close()
    if refused is not None:
        raise refused.error()
    if failed:
        counts.failed = {shards[p].url: reason for p, reason in sorted(failed.items())}
        raise _failure(shards, failed, retries, len(outcomes))
    counts.pool_sha256 = fold.hasher.hexdigest()
    for stage in (stages.shards, stages.docs):
        if stage is not None:
            if stage is stages.docs:
                stage.set_total(stages.docs_done)
                stage.advance(stages.docs_done - stage.done)
            stage.finish()
    return [outcomes[s.position] for s in shards], counts


class _InOrder:
    """Folds finished shards' pieces into the pool hash as soon as all before them are in.

    A piece is about 1 MB (a shard's two partial blocks); folded at once and
    dropped, the driver holds only the pieces of shards that finished early.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self.next = 0
        self.hasher = PoolHasher()

    def take(self, outcomes: dict[int, ShardOutcome]) -> None:
        while self.next < self.count and self.next in outcomes:
            outcome = outcomes[self.next]
            self.hasher.add(outcome.piece)
            outcomes[self.next] = replace(
                outcome, piece=TreePiece(outcome.piece.n, False, b"", b"", b"")
            )
            self.next += 1


def _advance(
    stages: _Stages, progress: dict[int, int], reported: Counter[int], finished: set[int]
) -> None:
    for position, count in progress.items():
        if position in finished:
            continue  # a report that arrived after its shard's outcome: already counted
        reported[position] += count
        if stages.docs is not None:
            stages.docs.advance(count)


def _uncount(stages: _Stages, reported: Counter[int], position: int) -> None:
    """Takes back what a shard's workers reported (its outcome or retry counts afresh)."""
    count = reported.pop(position, 0)
    if count and stages.docs is not None:
        stages.docs.advance(-count)


def _failure(
    shards: list[Shard], failed: dict[int, str], retries: int, finished: int
) -> ShardFailed:
    first = min(failed)
    more = f" (and {len(failed) - 1} more shard(s) failed)" if len(failed) > 1 else ""
    left = len(shards) - finished
    return ShardFailed(
        f"pool shard {shards[first].url} failed {retries + 1} time(s): {failed[first]}{more}; "
        f"no report was written and nothing ingested; {finished} finished shard(s) are "
        f"recorded, so rerunning the same command scans only the {left} left"
    )
