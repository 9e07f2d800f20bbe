"""Streams a one-stream pool (a plain file, a hub dataset) through the eval index on every core.

The main process reads batches (``datasets``) and hands them to worker
processes, which match each against the eval index and the registered pool
channels; at most a few batches are in flight, so memory stays flat however
large the pool. Results are taken back in order, so the content hash, the
id checks and the first error are the same as a single-process run. The
stream is then merged as a pool of one shard (``merge``), so its pool
hash and provenance are those a sharded scan of the same rows gives.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import closing
from dataclasses import replace
from itertools import chain
from typing import Any

import numpy as np

from engine.canonical import canonical_json
from engine.contamination.channels.ngram import BatchResult, EvalIndex
from engine.contamination.inputs.sources import (
    Batch,
    Source,
    iter_batches,
    locate,
    row_error,
)
from engine.contamination.pool.merge import PoolScan, merge
from engine.contamination.pool.shard_scan import (
    BatchAccumulator,
    Hits,
    PoolReader,
    canonical_texts,
    checked_ids,
    match_and_read,
    refuse_bad_row,
    stream_worker_init,
    stream_worker_match,
)
from engine.errors import InputError

BATCH_SIZE = 2048


# sees each checked batch: the batch, its ids and its documents' canonical texts
BatchConsumer = Callable[[Batch, list[Any], list[str]], None]


Matched = Generator[tuple[Batch, tuple[BatchResult, Hits]], None, None]


def _in_process(
    index: EvalIndex, readers: tuple[PoolReader, ...], batches: Iterable[Batch]
) -> Matched:
    for batch in batches:
        yield batch, match_and_read(index, readers, batch.matchable)


def worker_context() -> Any:
    """Gives the multiprocessing context: a fork server where there is one, else spawn.

    Workers must not be forks of this process (its reader threads and its
    memory would come along); a fork server is a small clean process that
    has imported numpy and the matcher once, so each worker starts in
    milliseconds instead of re-importing everything as spawn does.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(
            ["engine.contamination.channels.ngram", "engine.contamination.pool.shard_scan"]
        )
        return context
    return multiprocessing.get_context("spawn")


def start_workers_early(source: Source, jobs: int | None) -> None:
    """Starts the fork server now, when the pool is big enough to need workers.

    Its imports then overlap with reading the eval set and building the index.
    """
    if jobs == 1:
        return
    if source.kind == "file" and os.path.getsize(source.name) < 4 * BATCH_SIZE * 1024:
        return  # a couple of batches: matched in this process
    if worker_context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def _in_workers(
    index: EvalIndex, readers: tuple[PoolReader, ...], batches: Iterable[Batch], jobs: int
) -> Matched:
    context = worker_context()
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=stream_worker_init,
        initargs=(index, readers),
    ) as executor:
        window: deque[tuple[Batch, Future[tuple[BatchResult, Hits]]]] = deque()
        try:
            for batch in batches:
                window.append((batch, executor.submit(stream_worker_match, batch.matchable)))
                if len(window) >= 2 * jobs + 1:
                    done, future = window.popleft()
                    yield done, future.result()
            while window:
                done, future = window.popleft()
                yield done, future.result()
        finally:
            for _, future in window:
                future.cancel()


class _IdCheck:
    """Finds duplicate pool ids with 8 bytes per row, then confirms exactly."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.parts: list[np.ndarray] = []

    def add(self, ids: list[Any]) -> None:
        # hash() of the str or int itself: salted, but the same within this
        # process, and 1 and "1" differ; verify() confirms with exact values
        self.parts.append(np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids)))

    def verify(self) -> None:
        if not self.parts:
            return
        hashes = np.concatenate(self.parts)
        order = np.argsort(hashes, kind="stable")
        same = np.flatnonzero(hashes[order][1:] == hashes[order][:-1])
        if not len(same):
            return
        suspects = {int(order[i]) for i in same} | {int(order[i + 1]) for i in same}
        found: dict[int, Any] = {}
        with closing(iter_batches(self.source, BATCH_SIZE)) as batches:
            for batch in batches:
                for offset, value in enumerate(batch.ids or []):
                    if batch.start + offset in suspects:
                        found[batch.start + offset] = value
        first: dict[bytes, int] = {}
        for row in sorted(found):
            key = canonical_json(found[row])
            if key in first:
                _, line = locate(self.source, first[key])
                raise row_error(
                    self.source,
                    row,
                    self.source.id_field or "id",
                    f"duplicate id {found[row]!r} (first at line {line})",
                )
            first[key] = row


def scan_pool(
    source: Source,
    index: EvalIndex,
    *,
    jobs: int | None = None,
    batch_size: int = BATCH_SIZE,
    consumer: BatchConsumer | None = None,
    stage: Any = None,
    readers: tuple[PoolReader, ...] = (),
) -> PoolScan:
    """Gives every exact n-gram pair of the pool and every pool channel's match, reading
    the pool once, in order.

    ``consumer(batch, ids, canonical_texts)`` sees each checked batch (the embedding channel
    uses it); ``stage`` is a progress stage advanced per document; ``readers`` are the
    registered pool channels, matched where the n-grams are.
    """
    jobs = max(1, jobs or os.cpu_count() or 1)
    started = time.perf_counter()
    with closing(iter_batches(source, batch_size)) as batches:
        head = [b for b in (next(batches, None), next(batches, None)) if b is not None]
        stream: Iterable[Batch] = chain(head, batches)
        if jobs == 1 or len(head) < 2:
            results: Matched = _in_process(index, readers, stream)
            jobs = 1
        else:
            results = _in_workers(index, readers, stream, jobs)
        with closing(results):
            return _collect(
                source, results, BatchAccumulator(readers), jobs, consumer, stage, started
            )


def _collect(
    source: Source,
    results: Matched,
    taken: BatchAccumulator,
    jobs: int,
    consumer: BatchConsumer | None,
    stage: Any,
    started: float,
) -> PoolScan:
    id_check = _IdCheck(source) if source.id_field else None
    peaks: dict[int, int] = {}
    for batch, (result, hits) in results:
        refuse_bad_row(source, batch, result)
        if id_check is not None:
            ids = checked_ids(batch, source)
            id_check.add(ids)
        else:
            ids = list(range(batch.start, batch.start + batch.count))
        taken.add(batch, result, ids, hits)
        peaks[result.pid] = max(peaks.get(result.pid, 0), result.peak_rss_kb)
        if consumer is not None:
            consumer(batch, ids, canonical_texts(result.canonical_stream, batch.matchable))
        if stage is not None:
            stage.advance(result.count)
    if id_check is not None:
        id_check.verify()
    if taken.hasher.n == 0:
        raise InputError("the pool has no rows", path=source.label)
    # one stream is one shard: the same merge as a sharded pool's gives the same hash
    outcome = taken.outcome(0, source.label, None, None)
    scan = merge([outcome], source.provenance(), seconds=time.perf_counter() - started, jobs=jobs)
    return replace(scan, worker_peak_rss_kb=peaks, jobs=jobs)
