"""A sharded pool: which files a pattern names, in what order, and how each is read.

``--pool 'PATTERN'`` names many files, local (``data/pool-*.jsonl.zst``) or
through any fsspec URL (``file:///data/pool-*.parquet``, ``s3://...``). The
shards are taken in sorted order of their full names (plain code-point
order: number shards with zero padding, ``pool-00002`` before ``pool-00010``),
and the pool is their rows in that order, so a pool index means the same as
in the file the shards make when concatenated.

A shard is read where it is scanned: its raw bytes are hashed as they
arrive (the shard's content hash, which names its resume record), then,
when it is compressed or remote, written uncompressed to a local temporary
file that the ordinary reader and its line-naming diagnosis read.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import io
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from engine.artifacts import file_sha256
from engine.contamination.inputs.sources import FORMATS, Source
from engine.errors import InputError

_COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
_GLOB = re.compile(r"[*?\[]")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_CHUNK = 1 << 22


@dataclass(frozen=True)
class Shard:
    """One file of a sharded pool: its place in the order, name, format and size."""

    position: int
    url: str  # a local path, or an fsspec URL, as listed
    format: str  # "json", "csv" or "parquet"
    compression: str | None  # "gzip", "zstd" or None
    size: int | None

    @property
    def is_local(self) -> bool:
        """Says whether the shard is a local path (``file://`` URLs included)."""
        return not _URL.match(self.url) or self.url.startswith("file://")

    def local_path(self) -> str:
        """Gives the path of a local shard (a ``file://`` URL without its scheme)."""
        return self.url[len("file://") :] if self.url.startswith("file://") else self.url


@dataclass(frozen=True)
class LocalShard:
    """A shard ready to read here: a local uncompressed file and the hash of the raw bytes."""

    path: str
    file_sha256: str


def is_sharded(spec: str) -> bool:
    """Says whether a --pool value is a pattern, a URL or a compressed file (the shard path)."""
    if Path(spec).suffix.lower() in _COMPRESSIONS:
        return True
    if os.path.isfile(spec):  # a file that exists is itself, even named 'pool[1].jsonl'
        return False
    return bool(_GLOB.search(spec) or _URL.match(spec))


def kind_of(name: str) -> tuple[str, str | None]:
    """Gives (format, compression) from a file name; refuses an unknown suffix."""
    lower = name.lower()
    compression = None
    for suffix, codec in _COMPRESSIONS.items():
        if lower.endswith(suffix):
            compression, lower = codec, lower[: -len(suffix)]
            break
    for suffix, fmt in FORMATS.items():
        if lower.endswith(suffix):
            if compression and fmt == "parquet":
                break  # Parquet compresses inside the file
            return fmt, compression
    raise InputError(
        "unknown shard type; expected .jsonl, .jsonl.gz, .jsonl.zst, .csv(.gz, .zst) or .parquet",
        path=name,
        field="pool",
    )


def list_shards(spec: str) -> list[Shard]:
    """Gives the shards a pattern names, in sorted order; refuses a pattern naming none."""
    if _URL.match(spec) and not spec.startswith("file://"):
        names, sizes = _list_remote(spec)
    else:
        path = spec[len("file://") :] if spec.startswith("file://") else spec
        found = (
            [path]
            if os.path.isfile(path)  # a literal name wins over its pattern reading
            else sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
        )
        if spec.startswith("file://"):
            names = ["file://" + p for p in found]
        else:
            names = found
        sizes = {name: os.path.getsize(p) for name, p in zip(names, found, strict=True)}
    if not names:
        raise InputError("the pattern names no files", path=spec, field="pool")
    shards = []
    for position, name in enumerate(sorted(names)):
        fmt, compression = kind_of(name)
        shards.append(Shard(position, name, fmt, compression, sizes.get(name)))
    return shards


def _list_remote(spec: str) -> tuple[list[str], dict[str, int | None]]:
    import fsspec

    try:
        urlsplit(spec)  # an unclosed IPv6 bracket: ValueError here, not a TypeError in aiohttp
        fs, path = fsspec.core.url_to_fs(spec)
        if _GLOB.search(path):
            details = fs.glob(path, detail=True)
        else:
            details = {path: fs.info(path)}
    except (OSError, ValueError, ImportError) as exc:
        raise InputError(
            f"cannot list: {' '.join(str(exc).split())}", path=spec, field="pool"
        ) from exc
    names, sizes = [], {}
    for found, info in details.items():
        if info.get("type", "file") != "file":
            continue
        name = found if _URL.match(found) else fs.unstrip_protocol(found)
        names.append(name)
        sizes[name] = info.get("size")
    return names, sizes


def shard_source(shard: Shard, local: LocalShard, text_field: str, id_field: str | None) -> Source:
    """Gives the Source that reads a fetched shard, named by the shard in messages."""
    return Source(
        "pool",
        local.path,
        "file",
        shard.format,
        None,
        None,
        None,
        text_field,
        id_field,
        origin=shard.url,
    )


class _HashingReader(io.RawIOBase):
    """A binary reader that hashes every byte read through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__()
        self.raw = raw
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        self.sha.update(data)
        return len(data)

    def drain(self) -> None:
        """Reads (and hashes) whatever the decompressor left unread."""
        while self.read(_CHUNK):
            pass


def open_raw(shard: Shard) -> IO[bytes]:
    """Gives the shard's raw bytes as a binary file (local, or through fsspec)."""
    if shard.is_local:
        return open(shard.local_path(), "rb")
    import fsspec

    return fsspec.open(shard.url, "rb").open()


def _decompressed(shard: Shard, reader: _HashingReader) -> io.BufferedIOBase:
    if shard.compression == "gzip":
        return gzip.GzipFile(fileobj=reader, mode="rb")
    import pyarrow as pa

    return pa.CompressedInputStream(pa.PythonFile(reader, mode="r"), "zstd")


_BAD_COMPRESSION = (EOFError, zlib.error, gzip.BadGzipFile)


def head_bytes(shard: Shard, limit: int) -> bytes:
    """Gives up to ``limit`` bytes from the start of a shard, decompressed (for a look at
    its first row); a shard that cannot be read or decompressed gives what was read."""
    with open_raw(shard) as raw:
        if shard.compression is None:
            return raw.read(limit)
        reader = _HashingReader(raw)
        try:
            with _decompressed(shard, reader) as stream:
                return stream.read(limit)
        except (*_BAD_COMPRESSION, ValueError):  # pyarrow's ArrowInvalid is a ValueError
            return b""


def count_rows_up_to(pool: ShardedPool, limit: int) -> int | None:
    """Gives the pool's row count when it is under ``limit``, ``limit`` when it holds at
    least that many, or None when that is not cheap to know (a remote shard).

    Parquet shards give their row count from the footer; line-based shards are
    counted line by line (decompressed as they stream), stopping once ``limit``
    is reached, so a large pool costs at most ``limit`` lines read. A shard
    that cannot be read counts as unknown: the scan itself will name it.
    """
    rows = 0
    for shard in pool.shards:
        if not shard.is_local:
            return None
        try:
            if shard.format == "parquet":
                import pyarrow.parquet as pq

                rows += pq.ParquetFile(shard.local_path()).metadata.num_rows
            else:
                rows += _count_lines(shard, limit - rows)
        except (OSError, ValueError, *_BAD_COMPRESSION):
            return None
        if rows >= limit:
            return limit
    return rows


def _count_lines(shard: Shard, limit: int) -> int:
    """Gives a line-based shard's rows (lines, less a CSV header), stopping at ``limit``."""
    count = 0
    with open_raw(shard) as raw:
        stream: Any = raw
        if shard.compression is not None:
            stream = _decompressed(shard, _HashingReader(raw))
        tail = b"\n"
        for block in iter(lambda: stream.read(_CHUNK), b""):
            count += block.count(b"\n")
            tail = block[-1:]
            if count >= limit + 1:
                break
    if tail != b"\n":
        count += 1  # a last line without its newline
    if shard.format == "csv":
        count -= 1
    return min(max(count, 0), limit)


@contextmanager
def fetched(shard: Shard) -> Iterator[LocalShard]:
    """Gives the shard as a local uncompressed file and its raw bytes' SHA-256.

    A local uncompressed shard is read in place (hashed first). Any other is
    copied here, decompressed on the way, into a temporary file removed on
    exit. A corrupt compressed shard is bad input (an InputError); a failed
    read is left to raise as it is, for the caller to retry.
    """
    if shard.is_local and shard.compression is None:
        try:
            digest = file_sha256(Path(shard.local_path()))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{shard.url}: the shard vanished after listing") from exc
        yield LocalShard(shard.local_path(), digest)
        return
    suffix = {"json": ".jsonl", "csv": ".csv", "parquet": ".parquet"}[shard.format]
    fd, spooled = tempfile.mkstemp(prefix="sealdesk-shard-", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as out, open_raw(shard) as raw:
            reader = _HashingReader(raw)
            if shard.compression is None:
                shutil.copyfileobj(reader, out, _CHUNK)
            else:
                _decompress_into(shard, reader, out)
            reader.drain()
        yield LocalShard(spooled, reader.sha.hexdigest())
    finally:
        try:
            os.unlink(spooled)
        except OSError:
            pass


def _decompress_into(shard: Shard, reader: _HashingReader, out: IO[bytes]) -> None:
    try:
        import pyarrow as pa

        bad: tuple[type[BaseException], ...] = _BAD_COMPRESSION + (pa.ArrowInvalid,)
    except ImportError:  # pragma: no cover - pyarrow is a base dependency
        bad = _BAD_COMPRESSION
    try:
        with _decompressed(shard, reader) as stream:
            for block in iter(lambda: stream.read(_CHUNK), b""):
                out.write(block)
    except bad as exc:
        raise InputError(
            f"cannot be decompressed as {shard.compression}: "
            f"{' '.join(str(exc).split()) or type(exc).__name__}",
            path=shard.url,
            field="pool",
        ) from exc


@dataclass(frozen=True)
class ShardedPool:
    """A pool given as many files: the pattern, its shards in order, and the fields read."""

    spec: str
    shards: tuple[Shard, ...]
    text_field: str
    id_field: str | None

    @property
    def label(self) -> str:
        """Gives how messages name the pool."""
        return self.spec

    def provenance(self) -> dict[str, Any]:
        """Gives the pool's description (its size and hash are added by the merge)."""
        formats = sorted({s.format for s in self.shards})
        return {
            "name": self.spec,
            "split": None,
            "revision": None,
            "config": None,
            "kind": "shards",
            "format": "+".join(formats),
            "text_field": self.text_field,
            "id_field": self.id_field,
        }


def sharded_pool(spec: str, *, text_field: str, id_field: str | None) -> ShardedPool:
    """Gives the sharded pool a pattern names (a single file is a pool of one shard)."""
    return ShardedPool(spec, tuple(list_shards(spec)), text_field, id_field)
