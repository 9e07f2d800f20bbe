"""The pool's content hash, defined on its canonical items alone and computed in pieces.

The flat content hash of a dataset is SHA-256 over every canonical item
followed by a NUL byte. That hash walks the items in order, so many workers cannot share
it, and an interrupted run cannot carry it over to the next one. The pool
hash (``sha256-blocks-v1``) is defined on the very same byte stream, cut
into blocks:

- the stream: the canonical items in pool order (shards in sorted order),
  each followed by one NUL byte, exactly the bytes the flat hash hashes;
- a block ends after every item whose CRC-32 (``zlib.crc32`` of its
  canonical UTF-8 bytes, NUL excluded) has its low ten bits zero, and at
  the end of the pool;
- the pool hash is SHA-256 over the concatenated SHA-256 digests of the
  blocks, in order.

Where a shard begins or ends plays no part in it, so a sharded pool hashes
the same as the one file its shards make when concatenated. Blocks hold
about a thousand items; a worker finishes the blocks wholly inside its
shard and gives back only its first and last partial blocks as bytes.

Item ids get a stable 64-bit hash here too, so that duplicate ids can be
found across shards read by different processes (Python's ``hash`` is
salted per process).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

METHOD = "sha256-blocks-v1"
# The flat content hash: SHA-256 over each canonical item followed by a NUL byte.
FLAT_METHOD = "sha256-items-nul"
_CUT_MASK = 0x3FF


@dataclass(frozen=True)
class TreePiece:
    """A run of consecutive items: the bytes up to its first cut, whole blocks, the rest."""

    n: int
    cut: bool  # whether any item of the run ends a block
    head: bytes  # items up to and including the first cut item (all, if no cut)
    blocks: bytes  # SHA-256 digests of the whole blocks after the first cut
    tail: bytes  # items after the last cut item


def split_blocks(stream: bytes, count: int) -> tuple[tuple[int, ...], bytes]:
    """Gives where blocks end in a canonical stream, and the digests of the whole blocks.

    The ends are byte offsets just past each cut item's NUL; the whole blocks
    are those between the first and the last end.
    """
    items = stream.split(b"\0")
    if len(items) != count + 1 or items[-1]:
        raise ValueError(f"a canonical stream of {count} items must end each with NUL")
    crcs = np.fromiter(map(zlib.crc32, items[:count]), dtype=np.uint32, count=count)
    cuts = np.flatnonzero((crcs & _CUT_MASK) == 0)
    if not len(cuts):
        return (), b""
    lengths = np.fromiter(map(len, items[:count]), dtype=np.int64, count=count) + 1
    ends = tuple(np.cumsum(lengths)[cuts].tolist())
    inner = b"".join(hashlib.sha256(stream[a:b]).digest() for a, b in pairwise(ends))
    return ends, inner


def piece_of(stream: bytes, count: int, ends: tuple[int, ...], inner: bytes) -> TreePiece:
    """Gives the piece of one canonical stream from its block ends (``split_blocks``)."""
    if not ends:
        return TreePiece(count, False, stream, b"", b"")
    return TreePiece(count, True, stream[: ends[0]], inner, stream[ends[-1] :])


class PieceBuilder:
    """Joins consecutive pieces (the batches of one shard, in order) into one piece."""

    def __init__(self) -> None:
        self.n = 0
        self._cut = False
        self._head = bytearray()
        self._blocks = bytearray()
        self._tail = bytearray()

    def add_stream(self, stream: bytes, count: int) -> None:
        """Adds ``count`` items given as canonical bytes, each followed by NUL."""
        self.add(piece_of(stream, count, *split_blocks(stream, count)))

    def add(self, piece: TreePiece) -> None:
        """Adds the next piece."""
        self.n += piece.n
        if not piece.cut:
            (self._tail if self._cut else self._head).extend(piece.head)
            return
        if not self._cut:
            self._head += piece.head
            self._cut = True
        else:
            self._blocks += hashlib.sha256(bytes(self._tail) + piece.head).digest()
        self._blocks += piece.blocks
        self._tail = bytearray(piece.tail)

    def piece(self) -> TreePiece:
        """Gives the piece built so far."""
        return TreePiece(
            self.n, self._cut, bytes(self._head), bytes(self._blocks), bytes(self._tail)
        )


class PoolHasher:
    """Folds pieces, in pool order, into the pool hash; holds one open block at a time."""

    def __init__(self) -> None:
        self.n = 0
        self._blocks = hashlib.sha256()
        self._open = hashlib.sha256()
        self._open_empty = True

    def add(self, piece: TreePiece) -> None:
        """Adds the next piece of the pool."""
        self.n += piece.n
        if piece.head:
            self._open.update(piece.head)
            self._open_empty = False
        if piece.cut:
            self._blocks.update(self._open.digest())
            self._blocks.update(piece.blocks)
            self._open = hashlib.sha256(piece.tail)
            self._open_empty = not piece.tail

    def hexdigest(self) -> str:
        """Gives the pool hash of everything added (the open block closes the pool)."""
        final = self._blocks.copy()
        if not self._open_empty:
            final.update(self._open.digest())
        return final.hexdigest()


def pool_sha256(canonical_texts: Iterable[str]) -> str:
    """Gives the pool hash of canonical texts, straight from the definition above."""
    builder = PieceBuilder()
    for text in canonical_texts:
        builder.add_stream(text.encode("utf-8") + b"\0", 1)
    hasher = PoolHasher()
    hasher.add(builder.piece())
    return hasher.hexdigest()


_INT_TAG = np.uint64(0x6A09E667F3BCC908)
_MIX = np.uint64(0xBF58476D1CE4E5B9)


def id_hashes(values: list[Any]) -> np.ndarray:
    """Gives a stable 64-bit hash of each id (str or int); 1 and "1" hash apart.

    Strings: pandas' SipHash of the UTF-8 bytes under its fixed key (C, stable
    across processes and machines); integers: a multiply-xorshift of the
    value, tagged. The method is part of the scan key of resume records.
    """
    kinds = set(map(type, values))
    if kinds <= {str}:
        return _text_hashes(values)
    if kinds == {int}:
        return _int_hashes(values)
    out = np.empty(len(values), dtype=np.uint64)
    texts = [i for i, v in enumerate(values) if isinstance(v, str)]
    if texts:
        out[texts] = _text_hashes([values[i] for i in texts])
    numbers = [i for i, v in enumerate(values) if not isinstance(v, str)]
    if numbers:
        out[numbers] = _int_hashes([values[i] for i in numbers])
    return out


def _text_hashes(values: list[str]) -> np.ndarray:
    from pandas.util import hash_array

    return hash_array(np.array(values, dtype=object), categorize=False).astype(np.uint64)


def _int_hashes(values: list[int]) -> np.ndarray:
    # two's complement bits of the integer (ids beyond 64 bits keep their low 64 bits
    # plus a fold of the rest, so that they still hash apart)
    try:
        signed = np.array(values, dtype=np.int64)
        low = signed.view(np.uint64)
        high = np.where(signed < 0, np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64(0))
    except OverflowError:
        low = np.array([v & 0xFFFFFFFFFFFFFFFF for v in values], dtype=np.uint64)
        high = np.array([(v >> 64) & 0xFFFFFFFFFFFFFFFF for v in values], dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = (low ^ _INT_TAG) * _MIX
        h ^= h >> np.uint64(31)
        h += high * _MIX
        h *= _MIX
        h ^= h >> np.uint64(29)
    return h


ID_HASH_METHOD = "pandas-siphash/int-mix-v1"
