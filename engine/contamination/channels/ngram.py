"""Exact n-gram overlap: Jaccard and containment, with candidates that miss nothing.

Why no pair at or above a threshold can be missed: a pair with Jaccard
``>= t > 0`` or containment ``>= c > 0`` shares at least one shingle. Every
eval shingle's hash is in the index; every pool shingle is hashed the same
way (``shingles.window_hashes``), and equal shingles hash equally; so a pool
document sharing a shingle with an eval item always hits that item's posting
list and becomes a candidate. Candidates are then scored on the exact string
shingle sets, and only the exact values decide. Hash collisions only add
candidates that the exact check discards.

Documents of fewer than ``n`` words have one shingle (their whole canonical
text); they can only share it with an eval item of the very same canonical
text, which a dictionary lookup finds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from engine.contamination.channels.shingles import (
    BadText,
    Postings,
    encode_block,
    encode_for_hashing,
    shingle_set,
    window_hashes,
    word_hashes,
)
from engine.contamination.inputs.canonical_text import canonical
from engine.contamination.inputs.pool_hash import split_blocks
from engine.contamination.inputs.texts import BadRow, TextBlock, check_texts


@dataclass(frozen=True)
class NgramSettings:
    """Shingle length and the exact thresholds that flag a pair."""

    n: int = 13
    jaccard: float = 0.8
    containment: float = 0.5
    num_perm: int = 128
    lsh_threshold: float = 0.5

    def channels(self, jaccard: float, containment: float) -> list[str]:
        """Gives the n-gram channels an overlap meets: "ngram" and/or "containment"."""
        return [
            name
            for name, value, floor in (
                ("ngram", jaccard, self.jaccard),
                ("containment", containment, self.containment),
            )
            if value >= floor
        ]


@dataclass(frozen=True)
class PairScore:
    """Exact overlap of one eval item with one document."""

    eval_index: int
    doc: int  # the document's position in its batch
    shared: int  # shingles in common
    eval_shingles: int
    doc_shingles: int

    @property
    def jaccard(self) -> float:
        """Gives |A ∩ B| / |A ∪ B| on the exact shingle sets."""
        return self.shared / (self.eval_shingles + self.doc_shingles - self.shared)

    @property
    def containment(self) -> float:
        """Gives the fraction of the eval item's shingles found in the document."""
        return self.shared / self.eval_shingles


@dataclass(frozen=True)
class BatchResult:
    """What a worker gives back for one batch of documents."""

    count: int
    canonical_stream: bytes
    pairs: tuple[PairScore, ...] = ()
    texts: dict[int, str] = field(default_factory=dict)
    bad: BadRow | None = None
    candidates: int = 0
    peak_rss_kb: int = 0
    pid: int = 0
    block_ends: tuple[int, ...] = ()  # where pool-hash blocks end in canonical_stream
    inner_blocks: bytes = b""  # digests of the whole blocks between those ends


class EvalIndex:
    """The eval set's exact shingle sets and the hashes that find candidates."""

    def __init__(self, canonical_texts: list[str], settings: NgramSettings) -> None:
        if not 0 < settings.jaccard <= 1 or not 0 < settings.containment <= 1:
            raise ValueError("thresholds must lie in (0, 1]")
        self.settings = settings
        n = settings.n
        self.shingles = [shingle_set(c, n) for c in canonical_texts]
        self.short: dict[str, tuple[int, ...]] = {}
        for i, c in enumerate(canonical_texts):
            if c.count(" ") + 1 < n:
                self.short[c] = self.short.get(c, ()) + (i,)
        if canonical_texts:
            batch, _ = encode_for_hashing(canonical_texts)
            hashes, docs = window_hashes(word_hashes(batch), n)
        else:
            hashes, docs = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
        self.postings = Postings(hashes, docs)

    def __len__(self) -> int:
        return len(self.shingles)

    def sibling_candidates(self) -> set[tuple[int, int]]:
        """Gives every pair of distinct eval items that share a shingle (a < b)."""
        out: set[tuple[int, int]] = set()
        for position in self.postings.shared_by_several.tolist():
            holders = self.postings.holders(position).tolist()
            out.update((a, b) for i, a in enumerate(holders) for b in holders[i + 1 :])
        for same in self.short.values():
            out.update((a, b) for i, a in enumerate(same) for b in same[i + 1 :])
        return out


def peak_rss_kb() -> int:
    """Gives this process's peak resident memory in kB (0 where /proc is absent)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _prepare(values: list[object] | TextBlock):
    """Gives (encoded batch, text of doc i, canonical text of doc i), or a BadRow."""
    if isinstance(values, TextBlock):
        try:
            batch, made = encode_block(values)
        except BadText as exc:
            return BadRow(exc.index, exc.reason)
        text_of = values.text
    else:
        bad = check_texts(values)
        if bad is not None:
            return bad
        batch, listed = encode_for_hashing(values)  # type: ignore[arg-type]
        made = {i: c for i, c in enumerate(listed) if c is not None}
        text_of = values.__getitem__  # type: ignore[assignment]

    def canonical_of(i: int) -> str:
        found = made.get(i)
        return found if found is not None else canonical(text_of(i))

    return batch, text_of, canonical_of


def match_batch(index: EvalIndex, values: list[object] | TextBlock) -> BatchResult:
    """Gives every (eval item, document) pair of a batch that meets a threshold.

    ``values`` are the raw text values (checked here), or a TextBlock of
    UTF-8 texts. The first bad text is reported and nothing else computed.
    The canonical bytes of the batch come back for the content hash.
    """
    prepared = _prepare(values)
    if isinstance(prepared, BadRow):
        return BatchResult(len(values), b"", bad=prepared, pid=os.getpid())
    batch, text_of, canonical_of = prepared
    settings = index.settings
    words = word_hashes(batch)
    empty = np.flatnonzero(words.counts == 0)
    if len(empty):
        bad = BadRow(int(empty[0]), "empty text (nothing left after canonicalization)")
        return BatchResult(len(values), b"", bad=bad, pid=os.getpid())
    hashes, docs = window_hashes(words, settings.n)
    found = index.postings.find(hashes)
    hit = np.flatnonzero(found >= 0)
    candidates: dict[int, set[int]] = {}
    for d, position in zip(docs[hit].tolist(), found[hit].tolist(), strict=True):
        candidates.setdefault(d, set()).update(index.postings.holders(position).tolist())
    if index.short:
        for d in np.flatnonzero(words.counts < settings.n).tolist():
            same = index.short.get(canonical_of(d))
            if same:
                candidates.setdefault(d, set()).update(same)

    pairs: list[PairScore] = []
    kept: dict[int, str] = {}
    for d in sorted(candidates):
        doc_set = shingle_set(canonical_of(d), settings.n)
        for e in sorted(candidates[d]):
            eval_set = index.shingles[e]
            small, large = (
                (eval_set, doc_set) if len(eval_set) <= len(doc_set) else (doc_set, eval_set)
            )
            shared = sum(1 for s in small if s in large)
            if not shared:
                continue  # a hash collision, not an overlap
            pair = PairScore(e, d, shared, len(eval_set), len(doc_set))
            if settings.channels(pair.jaccard, pair.containment):
                pairs.append(pair)
                kept[d] = text_of(d)
    # the pool hash's block cuts are found here, on the worker, not by the reader
    ends, inner = split_blocks(words.canonical_stream, len(values))
    return BatchResult(
        len(values),
        words.canonical_stream,
        tuple(pairs),
        kept,
        None,
        len(candidates),
        peak_rss_kb(),
        os.getpid(),
        ends,
        inner,
    )


# -- workers -----------------------------------------------------------------
_WORKER_INDEX: EvalIndex | None = None


def _keep_freed_memory() -> None:
    """Asks glibc to reuse freed blocks instead of unmapping them.

    Each batch allocates the same few large arrays; unmapped and mapped
    again, their pages fault in afresh every time (measured: a fifth of the
    workers' time went to the kernel).
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass  # not glibc: only slower


def worker_init(index: EvalIndex) -> None:
    """Holds the eval index in a worker process (called once per worker)."""
    global _WORKER_INDEX
    _WORKER_INDEX = index
    _keep_freed_memory()


def worker_match(values: list[object] | TextBlock) -> BatchResult:
    """Gives ``match_batch`` against the index this worker holds."""
    assert _WORKER_INDEX is not None, "worker_init was not called"
    return match_batch(_WORKER_INDEX, values)
