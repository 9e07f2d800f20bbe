"""Text canonicalization, the flat content hash, and word positions.

``canonical`` is exactly ``re.sub(r"\\s+", " ", text.strip().lower())``;
the content hash is SHA-256 over every canonical item followed by one NUL
byte. Word ``k`` of the canonical text is word ``k`` of the original text
(lower-casing never makes or removes whitespace), which is how shared spans
found on canonical words are reported as character offsets in the originals.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

_WHITESPACE = re.compile(r"\s+")
_WORD = re.compile(r"\S+")
# A number as people write it in a word problem: 1,200 and 3.5 and 48.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def canonical(text: str) -> str:
    """Gives the canonical form: lower-cased, whitespace collapsed, stripped."""
    return _WHITESPACE.sub(" ", text.strip().lower())


def canonical_words(text: str) -> list[str]:
    """Gives the canonical text's words (the units of a shingle)."""
    return text.lower().split()


def word_offsets(text: str) -> list[tuple[int, int]]:
    """Gives the (start, end) character offsets of each word of the original text."""
    return [m.span() for m in _WORD.finditer(text)]


class ContentHasher:
    """SHA-256 over canonical items, each followed by a NUL byte (the flat content hash)."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.n = 0

    def add(self, canonical_text: str) -> None:
        """Adds one item that is already canonical."""
        self._sha.update(canonical_text.encode("utf-8"))
        self._sha.update(b"\x00")
        self.n += 1

    def add_stream(self, data: bytes, count: int) -> None:
        """Adds ``count`` items given as their canonical bytes each followed by NUL."""
        self._sha.update(data)
        self.n += count

    def hexdigest(self) -> str:
        """Gives the hash of everything added so far."""
        return self._sha.hexdigest()


def content_sha256(texts: Iterable[str]) -> str:
    """Gives the flat content hash of raw texts (canonicalized here)."""
    hasher = ContentHasher()
    for text in texts:
        hasher.add(canonical(text))
    return hasher.hexdigest()


def numbers_only_differ(a: str, b: str) -> bool:
    """Gives True when two texts differ, but only in the numbers they contain.

    Same template, new numbers: a reviewer should see it, since it may be a
    generated sibling rather than a leak.
    """
    ca, cb = canonical(a), canonical(b)
    if ca == cb:
        return False
    return _NUMBER.sub("0", ca) == _NUMBER.sub("0", cb)
