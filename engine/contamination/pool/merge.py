"""Shard outcomes into one pool: indexes shifted, hash folded, ids checked, top-k merged.

The driver's only work per shard: shift the shard's row numbers by the rows
of the shards before it (the pool index is the row in the concatenated
pool), fold its piece into the pool hash, and merge its top-k. Whatever
order the shards finished in, they are merged in shard order, so the
result is the same for any backend, worker count or sharding.
"""

from __future__ import annotations

from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.canonical import canonical_json
from engine.contamination.channels.ngram import PairScore
from engine.contamination.channels.registry import PoolHit
from engine.contamination.inputs.pool_hash import FLAT_METHOD, METHOD, PoolHasher, id_hashes
from engine.contamination.inputs.shards import Shard, fetched, shard_source
from engine.contamination.inputs.sources import iter_batches, locate, row_error
from engine.contamination.pool.shard_scan import ShardOutcome
from engine.errors import InputError


@dataclass(frozen=True)
class PoolDoc:
    """A pool document that some channel flagged: index, id, original text."""

    index: int
    id: str | int
    text: str


@dataclass(frozen=True)
class PoolScan:
    """What scanning the pool found: exact pairs, the flagged docs, provenance."""

    provenance: dict[str, Any]
    pairs: list[PairScore]  # doc = the pool index
    docs: dict[int, PoolDoc]
    n: int
    candidates: int
    seconds: float
    worker_peak_rss_kb: dict[int, int] = field(default_factory=dict)
    jobs: int = 1
    shards: list[dict[str, Any]] = field(default_factory=list)
    topk: Any = None  # the merged embedding.TopK, for sharded scans
    run: dict[str, Any] = field(default_factory=dict)
    # each registered pool channel's matches, by its key: (eval index, pool index, score)
    hits: dict[str, list[PoolHit]] = field(default_factory=dict)


def merge(
    outcomes: list[ShardOutcome],
    provenance: dict[str, Any],
    *,
    seconds: float,
    jobs: int,
    topk: Any = None,
    run: dict[str, Any] | None = None,
    pool_sha256: str | None = None,
) -> PoolScan:
    """Gives the pool scan of shard outcomes taken in shard order.

    ``provenance`` is the pool's description without its size and hash;
    ``topk`` (an empty embedding.TopK) receives the shards' top-k;
    ``pool_sha256`` is the pool hash when the pieces were folded already
    (``base.run_shards`` folds them as shards come in).
    """
    hasher = PoolHasher()
    pairs: list[PairScore] = []
    hits: dict[str, list[PoolHit]] = {}
    docs: dict[int, PoolDoc] = {}
    shards: list[dict[str, Any]] = []
    peaks: dict[int, int] = {}
    candidates = offset = 0
    for outcome in outcomes:
        if pool_sha256 is None:
            hasher.add(outcome.piece)
        candidates += outcome.candidates
        for pair in outcome.pairs:
            pairs.append(
                PairScore(
                    pair.eval_index,
                    pair.doc + offset,
                    pair.shared,
                    pair.eval_shingles,
                    pair.doc_shingles,
                )
            )
        for key, found in outcome.hits.items():
            hits.setdefault(key, []).extend((e, row + offset, score) for e, row, score in found)
        for row, (ident, text) in outcome.docs.items():
            docs[row + offset] = PoolDoc(
                row + offset, row + offset if ident is None else ident, text
            )
        if topk is not None and outcome.topk is not None:
            topk.absorb(
                outcome.topk.scores,
                outcome.topk.rows,
                {
                    row: (row + offset if ident is None else ident, text)
                    for row, (ident, text) in outcome.topk.docs.items()
                },
                offset,
            )
            topk.over_bound += outcome.topk.over_bound
        if outcome.pid:
            peaks[outcome.pid] = max(peaks.get(outcome.pid, 0), outcome.peak_rss_kb)
        shards.append(
            {
                "url": outcome.url,
                "file_sha256": outcome.file_sha256,
                "n": outcome.n,
                "first_index": offset,
                "content_sha256": outcome.content_sha256,
                "from_record": outcome.from_record,
            }
        )
        offset += outcome.n
    if offset == 0:
        raise InputError("the pool has no rows", path=provenance.get("name"))
    pairs.sort(key=lambda p: (p.doc, p.eval_index))
    for channel_hits in hits.values():
        channel_hits.sort(key=lambda h: (h[1], h[0]))
    blocks = pool_sha256 or hasher.hexdigest()
    # One stream: the flat content hash (SHA-256 over each canonical item and
    # a NUL; the glossary's "content hash"), which
    # is what content_sha256 names. Several shards: that
    # flat hash would need every byte in order on one machine, so the pool is
    # named by the block hash of the same stream, which equals the one-file
    # pool's content_sha256_blocks whatever the sharding.
    if len(outcomes) == 1:
        content, method = outcomes[0].content_sha256, FLAT_METHOD
    else:
        content, method = blocks, METHOD
    full = {
        **provenance,
        "n": offset,
        "content_sha256": content,
        "content_hash": method,
        "content_sha256_blocks": blocks,
        "shards": len(outcomes),
    }
    return PoolScan(
        full, pairs, docs, offset, candidates, seconds, peaks, jobs, shards, topk, run or {}, hits
    )


# -- ids that repeat across shards --------------------------------------------
def check_ids(
    outcomes: list[ShardOutcome], shards: list[Shard], text_field: str, id_field: str
) -> None:
    """Refuses the first id that repeats anywhere in the pool, naming both places.

    Each shard gave its ids' 64-bit hashes, sorted; the driver looks for a
    hash held twice, then reads the shards that hold it to compare the ids
    themselves (a hash collision is not a duplicate).
    """
    parts = [o.id_hashes for o in outcomes if o.id_hashes is not None]
    if not parts:
        return
    every = np.sort(np.concatenate(parts))
    suspects = np.unique(every[1:][every[1:] == every[:-1]])
    if not len(suspects):
        return
    with ExitStack() as stack:  # fetched shards stay until the message has read its lines
        found: list[tuple[int, int, Any, Any]] = []  # (position, row, id, source)
        for outcome, shard in zip(outcomes, shards, strict=True):
            held = outcome.id_hashes
            if held is None:
                continue
            where = np.minimum(np.searchsorted(held, suspects), len(held) - 1)
            wanted = suspects[held[where] == suspects]
            if len(wanted):
                local = stack.enter_context(fetched(shard))
                source = shard_source(shard, local, text_field, id_field)
                found.extend(_rows_with(source, shard.position, wanted))
        first: dict[bytes, tuple[int, int, Any]] = {}
        for position, row, value, source in sorted(found, key=lambda f: (f[0], f[1])):
            key = canonical_json(value)
            if key in first:
                first_position, first_row, first_source = first[key]
                label, line = locate(first_source, first_row)
                at = f"line {line}" if first_position == position else f"{label}:{line}"
                raise row_error(source, row, id_field, f"duplicate id {value!r} (first at {at})")
            first[key] = (position, row, source)


def _rows_with(source: Any, position: int, wanted: np.ndarray) -> list[tuple[int, int, Any, Any]]:
    """Gives (position, row, id, source) of each row whose id hash is wanted."""
    out = []
    with closing(iter_batches(source, 8192)) as batches:
        for batch in batches:
            values = batch.ids or []
            for offset in np.flatnonzero(np.isin(id_hashes(values), wanted)).tolist():
                out.append((position, batch.start + offset, values[offset], source))
    return out
