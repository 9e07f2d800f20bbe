"""MinHash signatures exactly as the reference pass makes them (datasketch), for reporting.

Exact Jaccard decides every flag; the MinHash estimate, which decides in the
reference pass, is reported beside it, so a reader can see how far the
estimate was off.
"""

from __future__ import annotations

from typing import Any


class Signatures:
    """datasketch MinHash signatures of shingle sets, made once per text."""

    def __init__(self, num_perm: int) -> None:
        from datasketch import MinHash

        self._make = MinHash
        self.num_perm = num_perm
        self._known: dict[str, Any] = {}

    def of(self, key: str, shingles: frozenset[str]) -> Any:
        """Gives the signature of a shingle set (cached under key)."""
        found = self._known.get(key)
        if found is None:
            found = self._make(num_perm=self.num_perm)
            # the same values as one update() per shingle, in one call
            found.update_batch([s.encode("utf-8") for s in sorted(shingles)])
            self._known[key] = found
        return found

    def jaccard(self, key_a: str, a: frozenset[str], key_b: str, b: frozenset[str]) -> float:
        """Gives the MinHash estimate of the Jaccard of two shingle sets."""
        return float(self.of(key_a, a).jaccard(self.of(key_b, b)))
