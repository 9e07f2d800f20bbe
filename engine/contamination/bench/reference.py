"""The reference n-gram pass, against which sealdesk's n-gram channels are measured.

It is datasketch ``MinHash`` updated shingle by
shingle, a ``MinHashLSH`` holding the whole pool, one query per eval item,
and the MinHash estimate (not the exact Jaccard) deciding the flag; the same
for duplicates inside the eval set. Kept for the benchmark and for the test
that sealdesk finds every pair this finds, plus the ones it misses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.contamination.channels.shingles import shingle_set


@dataclass(frozen=True)
class ReferenceResult:
    """What the reference flags: (eval, pool, estimate) and (a, b, estimate)."""

    pool_hits: tuple[tuple[int, int, float], ...]
    internal_hits: tuple[tuple[int, int, float], ...]
    pool_docs: int


def reference_minhash(canonical_text: str, n: int, num_perm: int):
    """Gives the reference MinHash of a canonical text (one ``update`` per shingle)."""
    from datasketch import MinHash

    m = MinHash(num_perm=num_perm)
    for s in shingle_set(canonical_text, n):
        m.update(s.encode("utf-8"))
    return m


def _index(texts: Iterable[str], n: int, num_perm: int, lsh_threshold: float):
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=lsh_threshold, num_perm=num_perm)
    signatures = {}
    for i, text in enumerate(texts):
        m = reference_minhash(text, n, num_perm)
        signatures[i] = m
        lsh.insert(f"pool-{i}", m)
    return lsh, signatures


def reference_scan(
    eval_texts: list[str],
    pool_texts: Iterable[str],
    *,
    n: int = 13,
    num_perm: int = 128,
    lsh_threshold: float = 0.5,
    jaccard_flag: float = 0.8,
) -> ReferenceResult:
    """Gives the reference flags for canonical eval and pool texts."""
    lsh, signatures = _index(pool_texts, n, num_perm, lsh_threshold)
    pool_hits = []
    for j, text in enumerate(eval_texts):
        m = reference_minhash(text, n, num_perm)
        for key in lsh.query(m):
            i = int(key.split("-")[1])
            estimate = m.jaccard(signatures[i])
            if estimate >= jaccard_flag:
                pool_hits.append((j, i, float(estimate)))
    eval_lsh, eval_signatures = _index(eval_texts, n, num_perm, lsh_threshold)
    seen: set[tuple[int, int]] = set()
    internal_hits = []
    for j in range(len(eval_texts)):
        m = eval_signatures[j]
        for key in eval_lsh.query(m):
            k = int(key.split("-")[1])
            pair = (min(j, k), max(j, k))
            if k == j or pair in seen:
                continue
            estimate = m.jaccard(eval_signatures[k])
            if estimate >= jaccard_flag:
                seen.add(pair)
                internal_hits.append((*pair, float(estimate)))
    return ReferenceResult(tuple(sorted(pool_hits)), tuple(sorted(internal_hits)), len(signatures))
