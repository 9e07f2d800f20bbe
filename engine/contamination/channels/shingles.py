"""Word shingles of a canonical text, and their fast hashes.

The exact definition (used for every score sealdesk reports): the words of
the canonical text, every run of ``n`` consecutive words joined by one
space; a text of fewer than ``n`` words is one shingle, its whole canonical
string.

The fast path hashes the same shingles without making Python strings: a
batch of documents becomes one byte string; ASCII upper case is folded and
ASCII whitespace becomes a space in C (``bytes.lower``, ``bytes.translate``);
each word gets a 64-bit key from its length and its first and last eight
bytes, and each run of ``n`` words a 64-bit hash of its word keys. Equal
shingles always get equal hashes, so a lookup of these hashes in the eval
set's shingle hashes never misses a shared shingle;
unequal ones may collide, which only costs an exact check that then fails.

Non-ASCII text would need Python's full Unicode lower-casing and whitespace,
so such documents are canonicalized in Python first; their canonical bytes
then pass the same tables unchanged (already lower case, single spaces).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from engine.contamination.inputs.canonical_text import canonical
from engine.contamination.inputs.texts import TextBlock

# str.isspace() within ASCII is \t \n \v \f \r (9-13), the separators \x1c-\x1f
# (28-31) and space. bytes.lower() and bytes.translate() fold case and map
# them all to a space in one C pass each; numpy then needs one compare.
_TO_SPACE = bytes.maketrans(bytes([9, 10, 11, 12, 13, 28, 29, 30, 31]), b" " * 9)
# 0xFF never occurs in UTF-8, so it can end each document unambiguously.
_END = 0xFF
_END_TO_NUL = bytes.maketrans(b"\xff", b"\x00")

_WORD_BASE = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)


def shingle_set(canonical_text: str, n: int) -> frozenset[str]:
    """Gives the shingles of a canonical text: runs of n words (whole string if fewer)."""
    words = canonical_text.split(" ")
    if len(words) < n:
        return frozenset((canonical_text,))
    return frozenset(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))


@dataclass(frozen=True)
class EncodedBatch:
    """Documents as one byte array, each followed by a terminator position."""

    data: np.ndarray  # uint8, folded documents back to back, 0xFF after each
    ends: np.ndarray  # int64, index of each document's terminator


@dataclass(frozen=True)
class WordHashes:
    """Every word of a batch: its hash and the document it belongs to."""

    hashes: np.ndarray  # uint64
    docs: np.ndarray  # int64, document index of each word
    counts: np.ndarray  # int64, words per document
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
    folded = (b"\xff".join(parts) + b"\xff").lower().translate(_TO_SPACE)
    ends = np.cumsum(lengths + 1) - 1
    return EncodedBatch(np.frombuffer(folded, dtype=np.uint8), ends), made


class BadText(ValueError):
    """A text of a block that cannot be used: its index and why."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason


def encode_block(block: TextBlock) -> tuple[EncodedBatch, dict[int, str]]:
    """Gives the batch bytes of a text block, and the canonical form of each non-ASCII text.

    ASCII texts go in as their raw bytes; the others are decoded and
    canonicalized in Python (raises BadText on bad UTF-8).
    """
    offsets = block.offsets
    data = np.frombuffer(block.data, dtype=np.uint8)
    made: dict[int, str] = {}
    view = memoryview(block.data)
    parts: list = [view[a:b] for a, b in pairwise(offsets.tolist())]
    filled = np.flatnonzero(offsets[1:] > offsets[:-1])
    if len(filled):
        # the largest byte of each non-empty text: 0x80 or more means non-ASCII
        largest = np.maximum.reduceat(data, offsets[filled])
        for i in filled[largest >= 0x80].tolist():
            try:
                made[i] = canonical(block.text(i))
            except UnicodeDecodeError as exc:
                raise BadText(
                    i,
                    f"not UTF-8 (byte 0x{exc.object[exc.start]:02x} at byte "
                    f"{exc.start + 1} of the text)",
                ) from exc
            parts[i] = made[i].encode("utf-8")
    lengths = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    folded = (b"\xff".join(parts) + b"\xff").lower().translate(_TO_SPACE)
    ends = np.cumsum(lengths + 1) - 1
    return EncodedBatch(np.frombuffer(folded, dtype=np.uint8), ends), made


_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _word_keys(data: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Gives a 64-bit key per word from its length and its first and last 8 bytes.

    Equal words always get equal keys; words over 16 bytes that differ only
    in the middle collide, which only adds candidates. Unaligned 8-byte
    loads per word, and no work per byte.
    """
    padded = np.concatenate([np.zeros(8, np.uint8), data, np.zeros(8, np.uint8)])
    # eight bytes starting at every position: at[i] is data[i-8:i] little-endian
    at = np.ndarray((len(data) + 9,), dtype="<u8", buffer=padded, strides=(1,))
    length = stops - starts
    key = at[starts + 8] & _LOW_BYTES[np.minimum(length, 8)]
    with np.errstate(over="ignore"):
        key *= _MIX
        key += length.astype(np.uint64)
        longer = np.flatnonzero(length > 8)
        if len(longer):
            key[longer] += at[stops[longer]] * _WORD_BASE
        key ^= key >> np.uint64(29)
    return key


def word_hashes(batch: EncodedBatch) -> WordHashes:
    """Gives the hash of every canonical word and each document's canonical bytes."""
    data = batch.data
    word = (data != 32) & (data != _END)
    edges = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    stops = np.flatnonzero(edges == -1)
    hashes = _word_keys(data, starts, stops)
    before_end = np.searchsorted(starts, batch.ends)
    counts = np.diff(before_end, prepend=0).astype(np.int64)
    docs = np.repeat(np.arange(len(batch.ends), dtype=np.int64), counts)

    # Canonical bytes: the words, the (single, already folded) space before
    # every word that is not the first of its document, and the ends.
    keep = word
    keep[batch.ends] = True
    not_first = np.ones(len(starts), dtype=bool)
    not_first[np.concatenate(([0], before_end[:-1]))[counts > 0]] = False
    keep[starts[not_first] - 1] = True
    stream = data[keep].tobytes().translate(_END_TO_NUL)
    return WordHashes(hashes, docs, counts, stream)


def window_hashes(words: WordHashes, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gives the hash of every run of n words within one document, and its document."""
    count = len(words.hashes) - n + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    h = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            h *= _WORD_BASE
            h += words.hashes[k : k + count]
        # spread the high bits down so that low bits index a bitmap well
        h ^= h >> np.uint64(31)
        h *= _MIX
        h ^= h >> np.uint64(29)
    same_doc = words.docs[:count] == words.docs[n - 1 :]
    return h[same_doc], words.docs[:count][same_doc]


class Postings:
    """Which eval items hold each window hash: sorted unique hashes, each with its items.

    A bitmap on the low 24 bits sits in front of the sorted array, so that a
    window no eval item holds is usually rejected by one memory load.
    """

    BITS = 1 << 24

    def __init__(self, hashes: np.ndarray, items: np.ndarray) -> None:
        pairs = np.unique(np.stack([hashes.astype(np.uint64), items.astype(np.uint64)]), axis=1)
        self.sorted, starts, counts = np.unique(pairs[0], return_index=True, return_counts=True)
        self.offsets = np.append(starts, pairs.shape[1]).astype(np.int64)
        self.items = pairs[1].astype(np.int64)
        self.bitmap = np.zeros(self.BITS // 8, dtype=np.uint8)
        low = (self.sorted & np.uint64(self.BITS - 1)).astype(np.int64)
        np.bitwise_or.at(self.bitmap, low >> 3, (1 << (low & 7)).astype(np.uint8))
        self.shared_by_several = np.flatnonzero(counts > 1)

    def find(self, hashes: np.ndarray) -> np.ndarray:
        """Gives, for each hash, its position in ``sorted``, or -1 when no item holds it."""
        found = np.full(len(hashes), -1, dtype=np.int64)
        if not len(self.sorted):
            return found
        low = (hashes & np.uint64(self.BITS - 1)).astype(np.int64)
        maybe = np.flatnonzero((self.bitmap[low >> 3] >> (low & 7).astype(np.uint8)) & 1)
        probe = hashes[maybe]
        pos = np.searchsorted(self.sorted, probe)
        pos[pos >= len(self.sorted)] = 0
        hit = self.sorted[pos] == probe
        found[maybe[hit]] = pos[hit]
        return found

    def holders(self, position: int) -> np.ndarray:
        """Gives the eval items that hold the hash at a position of ``sorted``."""
        return self.items[self.offsets[position] : self.offsets[position + 1]]
