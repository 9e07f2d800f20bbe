"""One shard, scanned wherever a worker runs: its matches and nothing else come back.

``scan_shard`` is the whole of a worker's job for one shard, whatever runs
it (a local worker process or a Ray actor): fetch and hash the shard, skip
it if the workspace already holds its record, else stream its rows through
the eval index, the registered pool channels' matchers (``PoolReader``) and
the embedding model, when the paraphrase channel is on, and give back a
``ShardOutcome``: the pairs that meet a threshold, each pool channel's
matches, the text of the documents in them, the shard's piece of the pool
hash, its id hashes and its top-k. Row numbers are the shard's own; the
driver shifts them once it knows how many rows the shards before hold.

Bad input in a shard is a ``ShardRefused`` naming the shard, its line and
field (it would fail again, so it is never retried); anything else raised
here is a failure the driver retries.
"""

from __future__ import annotations

import math
import os
import pickle
import time
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.canonical import canonical_json
from engine.contamination.channels.ngram import (
    BatchResult,
    EvalIndex,
    PairScore,
    match_batch,
    peak_rss_kb,
    worker_init,
)
from engine.contamination.channels.registry import PoolHit
from engine.contamination.inputs.canonical_text import ContentHasher, canonical
from engine.contamination.inputs.pool_hash import PieceBuilder, TreePiece, id_hashes, piece_of
from engine.contamination.inputs.shards import Shard, fetched, shard_source
from engine.contamination.inputs.sources import Batch, check_id, iter_batches, row_error
from engine.contamination.inputs.texts import TextBlock
from engine.errors import InputError

Report = Callable[[int], None]
# each pool channel's matches in a batch or a shard, by its key
Hits = dict[str, list[PoolHit]]


@dataclass(frozen=True)
class PoolReader:
    """A registered pool channel as a worker holds it: its key, its ``match`` (imported
    by name), the matcher the scan made once from the eval set, the settings its
    matches depend on (they key the resume records) and the eval set's size."""

    key: str
    match: Callable[[Any, list[str]], Iterable[PoolHit]]
    matcher: Any
    settings: dict[str, Any] = field(default_factory=dict)
    eval_count: int = 0

    def read(self, texts: list[str]) -> list[PoolHit]:
        """Gives the channel's matches in a batch of canonical texts, as (eval index,
        position in the batch, score), each pair once with its highest score; refuses an
        eval index outside the eval set, a position outside the batch and a score that
        is not a finite number (a fault of the channel's code, named)."""
        best: dict[tuple[int, int], float] = {}
        for eval_index, position, score in self.match(self.matcher, texts):
            if (
                not 0 <= eval_index < self.eval_count
                or not 0 <= position < len(texts)
                or not math.isfinite(score)
            ):
                raise ValueError(
                    f"pool channel {self.key!r} matched eval index {eval_index} of "
                    f"{self.eval_count}, position {position} in a batch of {len(texts)}, "
                    f"with score {score}"
                )
            pair = (int(eval_index), int(position))
            best[pair] = max(float(score), best.get(pair, -math.inf))
        return [(e, position, score) for (e, position), score in sorted(best.items())]


def pool_readers(channels: Any, options: Any, eval_texts: list[str]) -> tuple[PoolReader, ...]:
    """Gives the enabled pool channels as workers hold them, each matcher made once from
    the eval items' canonical texts; refuses, naming the channel, one whose settings are
    not canonical JSON (they key the records) and one that does not pickle (no worker,
    local or Ray, could be given it)."""
    readers = []
    for channel in channels:
        if channel.pool is None:
            continue
        reader = PoolReader(
            channel.key,
            channel.pool.match,
            channel.pool.matcher(options, eval_texts),
            channel.pool.settings(options),
            len(eval_texts),
        )
        try:
            canonical_json(reader.settings)
        except Exception as exc:
            raise TypeError(
                f"pool channel {channel.name!r}: its settings are not canonical JSON, so "
                f"they cannot key the shard records ({one_line(exc)})"
            ) from None
        try:
            pickle.dumps(reader)
        except Exception as exc:
            raise TypeError(
                f"pool channel {channel.name!r}: its matcher or match does not pickle, so no "
                f"worker can be given it ({one_line(exc)}); make match a module-level function"
            ) from None
        readers.append(reader)
    return tuple(readers)


def canonical_texts(stream: bytes, values: list[Any] | TextBlock) -> list[str]:
    """Gives each text of a batch in canonical form, read from the matcher's canonical
    bytes (each text then a NUL): canonicalising again cost more than the static
    model's encoding. A text holding a NUL itself is canonicalised again."""
    parts = stream.decode("utf-8").split("\0")
    if len(parts) == len(values) + 1:
        return parts[:-1]
    if isinstance(values, TextBlock):
        return [canonical(values.text(i)) for i in range(len(values))]
    return [canonical(text) for text in values]


def match_and_read(
    index: EvalIndex, readers: tuple[PoolReader, ...], values: list[Any] | TextBlock
) -> tuple[BatchResult, Hits]:
    """Gives a batch's n-gram matches and each pool channel's (none when a text is bad:
    the batch is refused)."""
    result = match_batch(index, values)
    if result.bad is not None or not readers:
        return result, {}
    texts = canonical_texts(result.canonical_stream, values)
    return result, {reader.key: reader.read(texts) for reader in readers}


_READERS: tuple[PoolReader, ...] = ()
_INDEX: EvalIndex | None = None


def stream_worker_init(index: EvalIndex, readers: tuple[PoolReader, ...]) -> None:
    """Holds the eval index and the pool channels in a stream's worker process."""
    global _INDEX, _READERS
    worker_init(index)
    _INDEX, _READERS = index, readers


def stream_worker_match(values: list[Any] | TextBlock) -> tuple[BatchResult, Hits]:
    """Gives ``match_and_read`` against what this worker holds."""
    assert _INDEX is not None, "stream_worker_init was not called"
    return match_and_read(_INDEX, _READERS, values)


@dataclass(frozen=True)
class EmbedPlan:
    """What a worker needs to embed pool shards: the model, the cache, the eval vectors.

    With a ``prefilter`` (the two-stage channel) a worker embeds with that
    static model only and keeps each eval item's ``candidates`` nearest
    documents under it; the driver scores those with the full model. Without
    one (``--embed-exhaustive``) it embeds every document with the full model
    and keeps the top-k at the threshold.
    """

    model: Any  # embedding.ModelInfo
    dim: int  # its vectors' length
    cache_path: str  # SQLite file every worker can open (the workspace's, or named)
    eval_vectors: np.ndarray
    top_k: int
    threshold: float
    prefilter: Any = None  # prefilter.StaticEncoder
    prefilter_eval: np.ndarray | None = None  # the eval set under the static model
    candidates: int = 0  # documents kept per eval item by the prefilter
    kept: Any = None  # kept_numbers.KeptNumbers of the eval set
    numbers_lane: int = 0  # and those kept per eval item for keeping its numbers


@dataclass(frozen=True)
class ShardJob:
    """What every worker holds for the whole run; shipped to each worker once."""

    index: EvalIndex
    text_field: str
    id_field: str | None
    scan_key: str
    batch_size: int = 2048
    embed: EmbedPlan | None = None
    done: frozenset[str] = frozenset()  # record names the workspace already holds
    readers: tuple[PoolReader, ...] = ()  # the registered pool channels enabled


@dataclass(frozen=True)
class ShardTopK:
    """A shard's k most similar documents per eval item (rows the shard's own)."""

    scores: np.ndarray  # float32, eval items x k
    rows: np.ndarray  # int64, -1 where fewer than k documents
    docs: dict[int, tuple[Any, str]]  # row -> (id, text), for rows at the threshold
    embedded: int = 0
    cached: int = 0
    over_bound: int = 0  # matches at the threshold the per-item bound turned away


@dataclass(frozen=True)
class ShardOutcome:
    """What one shard holds that the scan needs: matches, hash piece, ids, top-k."""

    position: int
    url: str
    file_sha256: str | None  # None for a stream that is not a file
    n: int
    content_sha256: str  # the flat content hash of this shard's canonical items alone
    piece: TreePiece
    pairs: tuple[PairScore, ...]  # doc = row within the shard
    docs: dict[int, tuple[Any, str]]  # row -> (id or None, text) of matched documents
    candidates: int
    id_hashes: np.ndarray | None  # sorted uint64, when the pool has an id field
    topk: ShardTopK | None = None
    seconds: float = 0.0
    pid: int = 0
    peak_rss_kb: int = 0
    from_record: bool = False
    hits: dict[str, tuple[PoolHit, ...]] = field(default_factory=dict)  # doc = row in shard


@dataclass(frozen=True)
class ShardSkipped:
    """A shard whose record the workspace already holds (found by its content hash)."""

    position: int
    file_sha256: str
    record: str


@dataclass(frozen=True)
class ShardRefused:
    """A shard with bad input: the one-line error, as data (it must cross processes)."""

    position: int
    message: str
    path: str | None
    line: int | None
    field: str | None

    def error(self) -> InputError:
        """Gives the InputError to raise in the driver."""
        return InputError(self.message, path=self.path, line=self.line, field=self.field)


ShardReply = ShardOutcome | ShardSkipped | ShardRefused


class ShardAttemptFailed(Exception):
    """A shard's read or scan failed in a worker: why, in one line (retried by the driver).

    Whatever was raised becomes this plain exception, so that it crosses
    back to the driver intact (an HTTP client's error may not pickle).
    """


def one_line(exc: BaseException) -> str:
    """Gives an exception as 'Type: message' on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__


def record_name(shard: Shard, file_sha256: str) -> str:
    """Gives the name of a shard's record: its bytes' hash and how they are read."""
    return f"{file_sha256}-{shard.format}-{shard.compression or 'plain'}"


def _refused(position: int, error: InputError) -> ShardRefused:
    return ShardRefused(position, error.reason, error.path, error.line, error.field)


def scan_shard(
    job: ShardJob, shard: Shard, report: Report | None = None, embedder: Any = None
) -> ShardReply:
    """Gives what one shard holds (or that it is already recorded, or why it is refused).

    ``report(k)`` is told of every k documents done; ``embedder`` is this
    worker's loaded model (required when ``job.embed`` is set). Any other
    failure is raised as ShardAttemptFailed.
    """
    started = time.perf_counter()
    try:
        with fetched(shard) as local:
            name = record_name(shard, local.file_sha256)
            if name in job.done:
                return ShardSkipped(shard.position, local.file_sha256, name)
            source = shard_source(shard, local, job.text_field, job.id_field)
            return _scan_local(job, shard, source, local.file_sha256, report, embedder, started)
    except InputError as exc:
        return _refused(shard.position, exc)
    except Exception as exc:
        raise ShardAttemptFailed(one_line(exc)) from None


def refuse_bad_row(source: Any, batch: Batch, result: BatchResult) -> None:
    """Raises the one-line error of the first bad text a worker found in a batch."""
    if result.bad is not None:
        raise row_error(source, batch.start + result.bad.row, source.text_field, result.bad.message)


def checked_ids(batch: Batch, source: Any) -> list[Any]:
    """Gives a batch's ids, each checked unless the reader knows them all good."""
    if batch.ids_checked and batch.ids is not None:
        return batch.ids
    return [
        check_id(value, source, batch.start + k)
        for k, value in enumerate(batch.ids or [None] * batch.count)
    ]


class BatchAccumulator:
    """What one pass over a stream of matched batches keeps, whether the stream is a
    whole one-file pool or one shard of a sharded pool: the flat content hash, the
    pieces of the block hash, every n-gram pair and every pool channel's match with its
    document's id and text, and how many candidates the workers checked."""

    def __init__(self, readers: tuple[PoolReader, ...] = ()) -> None:
        self.hasher = ContentHasher()
        self.pieces = PieceBuilder()
        self.pairs: list[PairScore] = []
        self.hits: dict[str, list[PoolHit]] = {reader.key: [] for reader in readers}
        self.docs: dict[int, tuple[Any, str]] = {}
        self.candidates = 0

    def add(self, batch: Batch, result: BatchResult, ids: list[Any] | None, hits: Hits) -> None:
        """Takes one matched batch (``ids`` None: the pool has no id field) and the pool
        channels' matches in it."""
        self.hasher.add_stream(result.canonical_stream, result.count)
        # the worker already split the stream into hash blocks: reuse them
        self.pieces.add(
            piece_of(result.canonical_stream, result.count, result.block_ends, result.inner_blocks)
        )
        self.candidates += result.candidates
        for pair in result.pairs:
            row = batch.start + pair.doc
            self.pairs.append(
                PairScore(pair.eval_index, row, pair.shared, pair.eval_shingles, pair.doc_shingles)
            )
            self.docs[row] = (ids[pair.doc] if ids is not None else None, result.texts[pair.doc])
        for key, found in hits.items():
            for eval_index, position, score in found:
                row = batch.start + position
                self.hits[key].append((eval_index, row, score))
                if row not in self.docs:
                    ident = ids[position] if ids is not None else None
                    self.docs[row] = (ident, batch.text(position))

    def outcome(
        self,
        position: int,
        url: str,
        file_sha256: str | None,
        ids: Any,
        topk: ShardTopK | None = None,
        seconds: float = 0.0,
        pid: int = 0,
        peak_rss: int = 0,
    ) -> ShardOutcome:
        """Gives what the pass found as a shard's outcome (the keywords: what a worker
        has besides)."""
        return ShardOutcome(
            position,
            url,
            file_sha256,
            self.pieces.n,
            self.hasher.hexdigest(),
            self.pieces.piece(),
            tuple(self.pairs),
            self.docs,
            self.candidates,
            ids,
            topk,
            seconds,
            pid,
            peak_rss,
            hits={key: tuple(found) for key, found in self.hits.items()},
        )


def _scan_local(
    job: ShardJob,
    shard: Shard,
    source: Any,
    file_sha256: str,
    report: Report | None,
    embedder: Any,
    started: float,
) -> ShardReply:
    taken = BatchAccumulator(job.readers)
    hashes: list[np.ndarray] = []
    topk: _ShardEmbedding | _ShardPrefilter | None = None
    if job.embed is not None:
        plan = job.embed
        topk = (
            _ShardPrefilter(plan) if plan.prefilter is not None else _ShardEmbedding(plan, embedder)
        )
    with closing(iter_batches(source, job.batch_size)) as batches:
        for batch in batches:
            result, hits = match_and_read(job.index, job.readers, batch.matchable)
            refuse_bad_row(source, batch, result)
            ids: list[Any] | None = None
            if job.id_field:
                ids = checked_ids(batch, source)
                hashes.append(id_hashes(ids))
            taken.add(batch, result, ids, hits)
            if topk is not None:
                topk.add(batch, ids)
            if report is not None:
                report(result.count)
    if taken.pieces.n == 0:
        raise InputError("the shard has no rows", path=shard.url, field="pool")
    all_ids = np.sort(np.concatenate(hashes)) if hashes else None
    return taken.outcome(
        shard.position,
        shard.url,
        file_sha256,
        all_ids,
        topk.result() if topk is not None else None,
        time.perf_counter() - started,
        os.getpid(),
        peak_rss_kb(),
    )


class _ShardEmbedding:
    """Embeds a shard's batches through the shared cache and keeps its top-k."""

    def __init__(self, plan: EmbedPlan, embedder: Any) -> None:
        from engine.contamination.channels.embedding import EmbedCounts, EmbeddingCache, TopK

        if embedder is None:
            raise ValueError("the embedding channel is on but this worker has no model")
        self.embedder = embedder
        self.cache = EmbeddingCache(Path(plan.cache_path))
        self.counts = EmbedCounts()
        self.topk = TopK(plan.eval_vectors, plan.top_k, plan.threshold, plan.kept)

    def add(self, batch: Any, ids: list[Any] | None) -> None:
        from engine.contamination.channels.embedding import embed_texts

        texts = batch.texts
        vectors = embed_texts(self.embedder, self.cache, [canonical(t) for t in texts], self.counts)
        self.topk.add(vectors, batch.start, ids if ids is not None else [None] * len(texts), texts)

    def result(self) -> ShardTopK:
        self.cache.close()
        return ShardTopK(
            self.topk.scores,
            self.topk.index,
            dict(self.topk.docs),
            self.counts.embedded,
            self.counts.cached,
            self.topk.over_bound,
        )


class _ShardPrefilter:
    """Embeds a shard's batches with the static model and keeps its candidates per eval item."""

    def __init__(self, plan: EmbedPlan) -> None:
        from engine.contamination.channels.prefilter import CandidateHeap

        assert plan.prefilter_eval is not None  # set with the prefilter, by the driver
        self.encoder = plan.prefilter
        self.heap = CandidateHeap(
            plan.prefilter_eval, plan.candidates, plan.kept, plan.numbers_lane
        )

    def add(self, batch: Any, ids: list[Any] | None) -> None:
        texts = batch.texts
        vectors = self.encoder.encode([canonical(t) for t in texts])
        self.heap.add(vectors, batch.start, ids if ids is not None else [None] * len(texts), texts)

    def result(self) -> ShardTopK:
        scores, rows = self.heap.candidates()
        return ShardTopK(scores, rows, dict(self.heap.docs), 0, 0)


# -- the model a worker loads once -------------------------------------------
_MODELS: dict[str, Any] = {}


def prepare_worker(job: ShardJob, threads: int | None = None) -> Any:
    """Gives this worker's model (or None), after the imports every shard needs.

    Called once when a worker starts, so that its first shard does not pay
    for importing the reader (a second or two) or loading the model.
    """
    from engine.contamination.inputs.sources import quiet_datasets

    worker_init(job.index)
    quiet_datasets()
    if threads:
        # the static model's tokenizer threads, like torch's, share the cores
        os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
    return worker_embedder(job.embed, threads)


def worker_embedder(plan: EmbedPlan | None, threads: int | None = None) -> Any:
    """Gives this process's model for the plan: loaded on its first cache miss, once.

    The driver has already loaded and checked the model; a worker whose
    texts are all in the cache never loads it (a second scan loads nothing).
    ``threads`` caps torch's threads (several workers share the cores).
    """
    if plan is None:
        return None
    found = _MODELS.get(plan.model.identity)
    if found is None:
        found = _MODELS[plan.model.identity] = _LazyModel(plan, threads)
    return found


class _LazyModel:
    """An Embedder that loads its model when it is first asked to encode."""

    def __init__(self, plan: EmbedPlan, threads: int | None) -> None:
        self.info, self.dim, self.threads = plan.model, plan.dim, threads
        self.loaded: Any = None

    def encode(self, texts: list[str]) -> np.ndarray:
        if self.loaded is None and texts:
            from engine.contamination.channels.embedding import Embedder

            if self.threads:
                import torch

                torch.set_num_threads(self.threads)
            self.loaded = Embedder(self.info)
        if self.loaded is None:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.loaded.encode(texts)


@dataclass
class RunCounts:
    """How a sharded run went: shards scanned, taken from records, retried, failed."""

    shards: int = 0
    scanned: int = 0
    from_records: int = 0
    retries: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    pool_sha256: str = ""  # the pool hash, folded as the shards came in
    startup_seconds: float = 0.0  # until every worker held the job
    scan_seconds: float = 0.0  # from then until the last shard was in
