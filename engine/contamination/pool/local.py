"""The local backend: worker processes on this machine, one shard each at a time.

It implements ``base.Backend`` for the driver (``base.run_shards``); each worker
process holds the job (eval index, fields, embedding plan) from its start and
scans the shards it is given with ``shard_scan.scan_shard``. Workers come from
the same fork server as the one-stream path (``stream.worker_context``).
"""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from queue import Empty
from typing import Any

from engine.contamination.inputs.shards import Shard
from engine.contamination.pool.base import ProgressReport, ShardCrash
from engine.contamination.pool.shard_scan import (
    ShardAttemptFailed,
    ShardJob,
    ShardReply,
    one_line,
    prepare_worker,
    scan_shard,
)

_LOCAL: dict[str, Any] = {}


def _local_init(job: ShardJob, queue: Any, threads: int) -> None:
    _LOCAL.update(job=job, queue=queue, embedder=prepare_worker(job, threads))


def _ready() -> bool:
    return True


def _local_scan(shard: Shard, rescan: bool) -> ShardReply:
    job: ShardJob = _LOCAL["job"]
    if rescan:
        job = replace(job, done=frozenset())
    embedder = _LOCAL["embedder"]
    report = ProgressReport(shard.position, lambda p, k: _LOCAL["queue"].put((p, k)))
    reply = scan_shard(job, shard, report, embedder)
    report.flush()
    return reply


class LocalBackend:
    """Worker processes on this machine, one shard each at a time.

    With one worker the shards are scanned in this process, one after the
    other (no process to start, and nothing to ship).
    """

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._executor: ProcessPoolExecutor | None = None
        self._job: ShardJob | None = None
        self._queue: Any = None
        self._here: Counter[int] = Counter()

    def start(self, job: ShardJob) -> None:
        from engine.contamination.pool.stream import worker_context

        self._job = job
        if self.workers == 1:
            _LOCAL.update(job=job, queue=None, embedder=prepare_worker(job))
            return
        context = worker_context()
        self._queue = context.Queue()
        self._open_pool(context)

    def _fresh_queue(self) -> None:
        """Gives the next pool a progress queue of its own.

        A worker killed in the middle of a report may die holding the queue's
        write lock; every worker started on that queue would then block on its
        next report, and the pool's shutdown would wait for them forever. The
        counts left in the old queue are dropped: the shards they came from are
        scanned again and report again.
        """
        from engine.contamination.pool.stream import worker_context

        if self._queue is not None:
            self._queue.cancel_join_thread()
            self._queue.close()
        self._queue = worker_context().Queue()

    def _open_pool(self, context: Any = None) -> None:
        """Starts the worker processes and waits until each holds the job.

        The pool starts workers lazily; starting them here keeps their
        start-up out of the scan's time. A worker that dies while starting
        is started again (twice at most).
        """
        from engine.contamination.pool.stream import worker_context

        context = context or worker_context()
        assert self._job is not None, "start() gives the job first"
        threads = max(1, (os.cpu_count() or 1) // self.workers)
        for attempt in range(3):
            executor = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=context,
                initializer=_local_init,
                initargs=(self._job, self._queue, threads),
            )
            try:
                for future in [executor.submit(_ready) for _ in range(self.workers)]:
                    future.result()
            except (BrokenProcessPool, OSError):
                executor.shutdown(wait=False, cancel_futures=True)
                if attempt == 2:
                    raise
                continue
            self._executor = executor
            return

    def submit(self, shard: Shard, rescan: bool) -> Future:
        if self.workers == 1:
            return self._scan_here(shard, rescan)
        if self._executor is None:  # a worker died and took the pool with it
            self._fresh_queue()
            self._open_pool()
        assert self._executor is not None
        try:
            return self._executor.submit(_local_scan, shard, rescan)
        except (BrokenProcessPool, OSError) as exc:
            # a worker died while the pool was starting it: an attempt that failed
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
            failed: Future = Future()
            failed.set_exception(BrokenProcessPool(str(exc)))
            return failed

    def _scan_here(self, shard: Shard, rescan: bool) -> Future:
        future: Future = Future()
        assert self._job is not None, "start() gives the job first"
        job = replace(self._job, done=frozenset()) if rescan else self._job
        report = ProgressReport(
            shard.position, lambda position, count: self._here.update({position: count})
        )
        try:
            future.set_result(scan_shard(job, shard, report, _LOCAL["embedder"]))
        except Exception as exc:
            future.set_exception(exc)
        report.flush()
        return future

    def wait(self, handles: list[Future], timeout: float) -> list[Future]:
        done, _ = wait_futures(handles, timeout=timeout, return_when=FIRST_COMPLETED)
        return list(done)

    def result(self, handle: Future) -> ShardReply:
        try:
            return handle.result()
        except BrokenProcessPool as exc:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
            raise ShardCrash("a worker process died (killed, or out of memory)") from exc
        except Exception as exc:  # the shard's read or scan raised: retried
            raise ShardCrash(
                str(exc) if isinstance(exc, ShardAttemptFailed) else one_line(exc)
            ) from exc

    def progress(self) -> dict[int, int]:
        done, self._here = self._here, Counter()
        while self._queue is not None:
            try:
                position, count = self._queue.get_nowait()
            except (Empty, OSError, ValueError):
                break
            done[position] += count
        return dict(done)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        if self._queue is not None:
            self._queue.close()
            self._queue.join_thread()
            self._queue = None
        _LOCAL.clear()
