"""The SSH wire encoding (RFC 4251 section 5): uint32 and length-prefixed strings."""

from __future__ import annotations

import struct


class WireError(ValueError):
    """The bytes are not a well-formed SSH wire structure."""


def pack_u32(value: int) -> bytes:
    """Gives a big-endian uint32."""
    return struct.pack(">I", value)


def pack_string(data: bytes | str) -> bytes:
    """Gives an SSH ``string``: a uint32 length then the bytes."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return struct.pack(">I", len(data)) + data


class Reader:
    """Reads SSH wire fields from a buffer, refusing anything truncated."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def take(self, n: int) -> bytes:
        """Gives the next n raw bytes."""
        end = self._pos + n
        if n < 0 or end > len(self._data):
            raise WireError("truncated SSH structure")
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def u32(self) -> int:
        """Gives the next uint32."""
        return struct.unpack(">I", self.take(4))[0]

    def byte(self) -> int:
        """Gives the next single byte."""
        return self.take(1)[0]

    def string(self) -> bytes:
        """Gives the next length-prefixed string."""
        return self.take(self.u32())

    def at_end(self) -> bool:
        """Says whether every byte has been read."""
        return self._pos == len(self._data)

    def rest(self) -> bytes:
        """Gives the unread bytes."""
        chunk = self._data[self._pos :]
        self._pos = len(self._data)
        return chunk
