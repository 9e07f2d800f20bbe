"""Duplicates inside the eval set, and the clusters they form.

Near-duplicate eval items break the independence that every confidence
interval assumes. Pairs are found exactly as pool pairs are (the eval set
is streamed through its own index), plus eval-to-eval cosine when the
embedding channel runs; clusters are the connected components.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.contamination.channels.ngram import EvalIndex


@dataclass(frozen=True)
class InternalPair:
    """Two eval items (a < b) and what they share."""

    a: int
    b: int
    shared: int
    a_shingles: int
    b_shingles: int
    cosine: float | None = None

    @property
    def jaccard(self) -> float:
        """Gives the exact Jaccard of the two items' shingle sets."""
        union = self.a_shingles + self.b_shingles - self.shared
        return self.shared / union if union else 0.0

    @property
    def containment_ab(self) -> float:
        """Gives the fraction of a's shingles found in b."""
        return self.shared / self.a_shingles if self.a_shingles else 0.0

    @property
    def containment_ba(self) -> float:
        """Gives the fraction of b's shingles found in a."""
        return self.shared / self.b_shingles if self.b_shingles else 0.0

    @property
    def containment(self) -> float:
        """Gives the larger containment: either item mostly inside the other."""
        return max(self.containment_ab, self.containment_ba)


def ngram_pairs(index: EvalIndex) -> dict[tuple[int, int], InternalPair]:
    """Gives every pair of distinct eval items that meets a Jaccard or containment threshold.

    Candidates are the pairs that share a shingle hash (no pair at a
    threshold shares none); the exact shingle sets then decide.
    """
    settings = index.settings
    found: dict[tuple[int, int], InternalPair] = {}
    for a, b in sorted(index.sibling_candidates()):
        sa, sb = index.shingles[a], index.shingles[b]
        pair = InternalPair(a, b, len(sa & sb), len(sa), len(sb))
        if pair.shared and settings.channels(pair.jaccard, pair.containment):
            found[(a, b)] = pair
    return found


def embedding_pairs(vectors: np.ndarray, threshold: float) -> dict[tuple[int, int], float]:
    """Gives every pair of distinct eval items whose cosine meets the threshold."""
    if len(vectors) < 2:
        return {}
    sims = vectors @ vectors.T
    a, b = np.nonzero(np.triu(sims >= threshold, k=1))
    return {
        (int(i), int(j)): float(sims[i, j]) for i, j in zip(a.tolist(), b.tolist(), strict=True)
    }


def with_cosines(
    pairs: dict[tuple[int, int], InternalPair],
    vectors: np.ndarray,
    threshold: float,
    shingles: list[frozenset[str]],
) -> dict[tuple[int, int], InternalPair]:
    """Gives the pairs with their cosine, plus the pairs only the cosine flags."""
    out: dict[tuple[int, int], InternalPair] = {}
    for (a, b), pair in pairs.items():
        out[(a, b)] = InternalPair(
            a,
            b,
            pair.shared,
            pair.a_shingles,
            pair.b_shingles,
            float(np.dot(vectors[a], vectors[b])),
        )
    for (a, b), cosine in embedding_pairs(vectors, threshold).items():
        if (a, b) not in out:
            out[(a, b)] = InternalPair(
                a, b, len(shingles[a] & shingles[b]), len(shingles[a]), len(shingles[b]), cosine
            )
    return out


def clusters(pairs: list[tuple[int, int]]) -> list[list[int]]:
    """Gives the connected components of the pairs (each sorted, largest first)."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for x in parent:
        groups.setdefault(root(x), []).append(x)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))
