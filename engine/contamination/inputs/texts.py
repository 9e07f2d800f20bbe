"""Text columns as they travel, and the check every text passes before a channel reads it.

A batch of texts goes to a worker as a ``TextBlock`` (two buffers, no Python
strings) when it is a null-free Arrow string column, else as a list of
values; either way ``check_texts`` (or the block's own decoding) refuses the
first text that is missing, not a string, empty or not UTF-8, naming its row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TextBlock:
    """Texts as their UTF-8 bytes back to back, with offsets (Arrow's string layout).

    This is how a batch travels to a worker: two buffers, no Python strings.
    """

    offsets: np.ndarray  # int64, n + 1 offsets into data, starting at 0
    data: bytes

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def text(self, i: int) -> str:
        """Gives text i as a str (raises UnicodeDecodeError on bad UTF-8)."""
        return self.data[self.offsets[i] : self.offsets[i + 1]].decode("utf-8")

    @classmethod
    def from_arrow(cls, array) -> TextBlock:
        """Gives the block of a null-free Arrow string array, copying only its own bytes."""
        width = np.int64 if str(array.type) == "large_string" else np.int32
        raw = np.frombuffer(array.buffers()[1], dtype=width)
        offsets = raw[array.offset : array.offset + len(array) + 1].astype(np.int64)
        first, last = int(offsets[0]), int(offsets[-1])
        data = memoryview(array.buffers()[2])[first:last].tobytes() if last > first else b""
        return cls(offsets - first, data)


@dataclass(frozen=True)
class BadRow:
    """The first unusable text of a batch (row within the batch)."""

    row: int
    message: str


def check_texts(values: list[object]) -> BadRow | None:
    """Gives the first text that is missing, not a string, empty or not UTF-8."""
    for row, value in enumerate(values):
        if value is None:
            return BadRow(row, "missing (absent or null)")
        if not isinstance(value, str):
            return BadRow(row, f"must be a string, got {type(value).__name__}")
        if not value or value.isspace():
            return BadRow(row, "empty text (nothing left after canonicalization)")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                return BadRow(row, f"not valid UTF-8 text ({exc.reason} at character {exc.start})")
    return None
