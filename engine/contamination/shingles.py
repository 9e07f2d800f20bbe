"""Word shingles, exactly as the seed defines them, and their fast hashes.

The exact definition (used for every score sealdesk reports): the words of
the canonical text, every run of ``n`` consecutive words joined by one
space; a text of fewer than ``n`` words is one shingle, its whole canonical
string.

The fast path hashes the same shingles without making Python strings: a
batch of documents becomes one byte array; ASCII upper case is folded and
ASCII whitespace splits words by table lookup; each word gets a 64-bit
polynomial hash from a prefix sum, and each run of ``n`` words a 64-bit hash
of its word hashes. Equal shingles always get equal hashes, so a lookup of
these hashes in the eval set's shingle hashes never misses a shared shingle;
unequal ones may collide, which only costs an exact check that then fails.

Non-ASCII text would need Python's full Unicode lower-casing and whitespace,
so such documents are canonicalized in Python first; their canonical bytes
then pass the same tables unchanged (already lower case, single spaces).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.contamination.canonical_text import canonical

# str.isspace() within ASCII: \t \n \v \f \r (9-13), the separators \x1c-\x1f
# (28-31) and space (32). Comparisons, not table lookups: numpy's fancy
# indexing with a uint8 index is ten times slower than a few compares.


def _ascii_space(b: np.ndarray) -> np.ndarray:
    return (b == 32) | ((b >= 9) & (b <= 13)) | ((b >= 28) & (b <= 31))


def _ascii_lower(b: np.ndarray) -> np.ndarray:
    upper = (b >= 65) & (b <= 90)
    return b + (upper.view(np.uint8) << np.uint8(5))

_BYTE_BASE = np.uint32(0x01000193)  # odd, so it has an inverse mod 2**32
_WORD_BASE = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)


def shingle_set(canonical_text: str, n: int) -> frozenset[str]:
    """Gives the seed's shingles of a canonical text (whole string if under n words)."""
    words = canonical_text.split(" ")
    if len(words) < n:
        return frozenset((canonical_text,))
    return frozenset(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))


def shingle_positions(canonical_text: str, n: int) -> dict[str, list[int]]:
    """Gives each shingle with the word indexes where it starts."""
    words = canonical_text.split(" ")
    if len(words) < n:
        return {canonical_text: [0]}
    out: dict[str, list[int]] = {}
    for i in range(len(words) - n + 1):
        out.setdefault(" ".join(words[i:i + n]), []).append(i)
    return out


class _Powers:
    """Powers of the byte base and of its inverse mod 2**32, grown on demand."""

    def __init__(self) -> None:
        self.up = np.ones(1, dtype=np.uint32)
        self.down = np.ones(1, dtype=np.uint32)

    def get(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.up) < size:
            size = max(size, 2 * len(self.up), 1 << 16)
            inverse = np.uint32(pow(int(_BYTE_BASE), -1, 1 << 32))
            up = np.empty(size, dtype=np.uint32)
            down = np.empty(size, dtype=np.uint32)
            up[0] = down[0] = 1
            up[1:] = _BYTE_BASE
            down[1:] = inverse
            with np.errstate(over="ignore"):
                self.up = np.cumprod(up, dtype=np.uint32)
                self.down = np.cumprod(down, dtype=np.uint32)
        return self.up, self.down


_POWERS = _Powers()


@dataclass(frozen=True)
class EncodedBatch:
    """Documents as one byte array, each followed by a terminator position."""

    data: np.ndarray        # uint8, documents back to back, a 0 byte after each
    ends: np.ndarray        # int64, index of each document's terminator


@dataclass(frozen=True)
class WordHashes:
    """Every word of a batch: its hash and the document it belongs to."""

    hashes: np.ndarray      # uint64
    docs: np.ndarray        # int64, document index of each word
    counts: np.ndarray      # int64, words per document
    canonical_stream: bytes  # each document's canonical text followed by NUL


def encode_for_hashing(texts: list[str]) -> tuple[EncodedBatch, list[str | None]]:
    """Gives the batch bytes, plus each text's canonical form where Python made it.

    ASCII texts go in raw (the tables canonicalize them); others go in as
    their canonical UTF-8. Raises UnicodeEncodeError on a lone surrogate.
    """
    parts: list[bytes] = []
    made: list[str | None] = []
    for text in texts:
        if text.isascii():
            parts.append(text.encode("ascii"))
            made.append(None)
        else:
            canon = canonical(text)
            parts.append(canon.encode("utf-8"))
            made.append(canon)
    lengths = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    data = np.frombuffer(b"\x00".join(parts) + b"\x00", dtype=np.uint8)
    ends = np.cumsum(lengths + 1) - 1
    return EncodedBatch(data, ends), made


def word_hashes(batch: EncodedBatch) -> WordHashes:
    """Gives the hash of every canonical word and each document's canonical bytes."""
    raw = batch.data
    size = len(raw)
    lowered = _ascii_lower(raw)
    terminator = np.zeros(size, dtype=bool)
    terminator[batch.ends] = True
    space = _ascii_space(lowered)
    word = ~space & ~terminator

    prev_word = np.zeros(size, dtype=bool)
    prev_word[1:] = word[:-1]
    next_word = np.zeros(size, dtype=bool)
    next_word[:-1] = word[1:]
    starts = np.flatnonzero(word & ~prev_word)
    stops = np.flatnonzero(word & ~next_word) + 1

    # 32-bit word hashes halve the memory traffic; a collision between two
    # words only adds a candidate that the exact check then drops.
    up, down = _POWERS.get(size + 1)
    prefix = np.zeros(size + 1, dtype=np.uint32)
    with np.errstate(over="ignore"):
        # byte + 1 so that trailing NUL bytes still change a word's hash
        np.cumsum((lowered.astype(np.uint32) + np.uint32(1)) * up[:size], out=prefix[1:])
        hashes = ((prefix[stops] - prefix[starts]) * down[starts]).astype(np.uint64)
    before_end = np.searchsorted(starts, batch.ends)
    counts = np.diff(before_end, prepend=0).astype(np.int64)
    docs = np.repeat(np.arange(len(batch.ends), dtype=np.int64), counts)

    # Canonical bytes: the words, one space before every word that is not
    # the first of its document (the byte there is whitespace), terminators.
    keep = word | terminator
    not_first = np.ones(len(starts), dtype=bool)
    not_first[np.concatenate(([0], before_end[:-1]))[counts > 0]] = False
    keep[starts[not_first] - 1] = True
    out = np.where(space, np.uint8(32), lowered)[keep]
    return WordHashes(hashes, docs, counts, out.tobytes())


def window_hashes(words: WordHashes, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gives the hash of every run of n words within one document, and its document."""
    count = len(words.hashes) - n + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    h = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            h *= _WORD_BASE
            h += words.hashes[k:k + count]
        # spread the high bits down so that low bits index a bitmap well
        h ^= h >> np.uint64(31)
        h *= _MIX
        h ^= h >> np.uint64(29)
    same_doc = words.docs[:count] == words.docs[n - 1:]
    return h[same_doc], words.docs[:count][same_doc]


class HashSet:
    """A sorted array of 64-bit hashes with a bitmap in front for fast misses."""

    BITS = 1 << 24

    def __init__(self, hashes: np.ndarray) -> None:
        self.sorted = np.unique(hashes.astype(np.uint64))
        self.bitmap = np.zeros(self.BITS // 8, dtype=np.uint8)
        low = (self.sorted & np.uint64(self.BITS - 1)).astype(np.int64)
        np.bitwise_or.at(self.bitmap, low >> 3, (1 << (low & 7)).astype(np.uint8))

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        """Gives a boolean mask: which of the hashes are in the set."""
        low = (hashes & np.uint64(self.BITS - 1)).astype(np.int64)
        maybe = ((self.bitmap[low >> 3] >> (low & 7).astype(np.uint8)) & 1).astype(bool)
        found = np.zeros(len(hashes), dtype=bool)
        if not len(self.sorted):
            return found
        probe = hashes[maybe]
        pos = np.searchsorted(self.sorted, probe)
        pos[pos >= len(self.sorted)] = 0
        found[np.flatnonzero(maybe)] = self.sorted[pos] == probe
        return found
