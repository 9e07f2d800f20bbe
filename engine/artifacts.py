"""Artifacts on disk: written atomically, mode 0600, with a ``.sha256`` sidecar.

A reader that trusts an artifact checks it against its sidecar first; a
crash leaves either the old file or the new one, never half of either.

This is the engine's core file I/O: it imports neither click nor the
workspace, so the ledger and the producers can write through it without
pulling in the command line. What a command-line path may name (the
workspace's own files, ``--out``) is judged in ``engine.outputs``, above it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.canonical import SHA256_HEX, canonical_json, canonical_jsonl, sha256_hex
from engine.errors import ConflictError, InputError, IntegrityError


def write_target(path: str | Path) -> Path:
    """Gives where an atomic write of path lands: through any links, as a shell
    redirect writes, so a linked file stays linked and its target is replaced."""
    return Path(os.path.realpath(path))


def file_kind(mode: int) -> str:
    """Gives what a file of this ``st_mode`` is, in words ("a directory", "a pipe", …)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def refuse_unsafe_target(path: str | Path, *, field: str | None = None) -> None:
    """Raises InputError if what path names (through links) exists and is not a
    regular file: a directory, device, pipe or socket cannot be replaced by a rename."""
    try:
        mode = os.lstat(write_target(path)).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there; the write says more
        return
    except OSError as exc:
        raise InputError(
            f"cannot check the output path: {exc.strerror or exc}", path=path, field=field
        ) from exc
    if stat.S_ISREG(mode):
        return
    kind = file_kind(mode)
    raise InputError(
        f"is {kind}, not a regular file; sealdesk writes a new file and renames "
        "it over the path, which would replace it rather than write into it",
        path=path,
        field=field,
    )


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Writes bytes to path so that readers see all of them or none."""
    path = Path(path)
    refuse_unsafe_target(path)
    try:
        _atomic_write(write_target(path), data, mode)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from exc


def _atomic_write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


def read_capped(path: str | Path, limit: int) -> bytes:
    """Gives a small file's bytes, reading at most ``limit`` + 1 of them: a key or a
    checkpoint named by mistake as /dev/zero or a multi-GB file must not fill memory.
    Too large is an OSError (EFBIG) whose strerror says so, for the callers' handlers."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes, so not this kind of file")
    return data


@dataclass(frozen=True)
class HeldFile:
    """One regular file read once: its bytes (when kept), their SHA-256 and its mtime."""

    data: bytes
    sha256: str
    mtime_ns: int


_NO_FOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


def read_regular(root: str | Path, relative: str, *, keep: bool = True) -> HeldFile:
    """Gives the bytes of ``root/relative`` and the SHA-256 of exactly those bytes, read
    once through one descriptor; ``keep=False`` hashes without keeping the bytes.

    Every component under ``root`` is opened without following a symbolic link
    (``O_NOFOLLOW``), and the file must be a regular one (``fstat``), so what is
    hashed, parsed and shown cannot be another file's bytes: a link swapped in,
    or a rename between a hash and a parse. A link, a pipe or anything else is
    an OSError whose strerror says what it is, for the callers' handlers.
    """
    parts = [p for p in str(relative).split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        raise OSError(errno.EINVAL, f"{relative!r} is not a path under the directory")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for part in parts[:-1]:
        fd = _open_below(fd, part, os.O_DIRECTORY)  # closes the one it was given
    # O_NONBLOCK: opening a pipe put in a file's place must not wait for a writer.
    fd = _open_below(fd, parts[-1], os.O_NONBLOCK)
    try:
        held = os.fstat(fd)
        if not stat.S_ISREG(held.st_mode):
            raise OSError(errno.EINVAL, f"is {file_kind(held.st_mode)}, not a regular file")
        digest = hashlib.sha256()
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
            if keep:
                chunks.append(chunk)
        return HeldFile(b"".join(chunks), digest.hexdigest(), held.st_mtime_ns)
    finally:
        os.close(fd)


def _open_below(dir_fd: int, name: str, flags: int) -> int:
    """Gives a descriptor of ``name`` in the directory ``dir_fd`` (closed here), opened
    without following a link; a link is an OSError that says so."""
    try:
        return os.open(name, _NO_FOLLOW | flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(dir_fd, name):
            raise OSError(
                errno.ELOOP, "is a symbolic link, not a regular file (links are not followed)"
            ) from None
        raise
    finally:
        os.close(dir_fd)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def file_sha256(path: Path) -> str:
    """Gives a file's SHA-256 hex, read in chunks (artifacts can be large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sidecar_path(path: Path) -> Path:
    """Gives the path of an artifact's ``.sha256`` sidecar."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def write_artifact(path: Path, data: bytes) -> str:
    """Writes an artifact and its sidecar (``<hex>  <name>``); gives the hex digest."""
    path = Path(path)
    digest = sha256_hex(data)
    atomic_write(path, data)
    atomic_write(sidecar_path(path), f"{digest}  {path.name}\n".encode())
    return digest


def write_sealed(outputs: dict[Path, bytes], hint: str) -> dict[Path, str]:
    """Writes artifacts that are sealed once written: if any path already holds other
    bytes (a sign-off may have bound them), nothing is written and a ConflictError
    says so, with ``hint`` saying where to write instead. The same bytes again are a
    no-op rewrite. Gives each path's digest."""
    for path, data in outputs.items():
        try:
            held = Path(path).read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(
                f"cannot read the artifact already there: {exc.strerror}", path=path
            ) from exc
        if held != data:
            raise ConflictError(
                f"{path} already holds a different artifact (sealed "
                f"artifacts are never rewritten; nothing was written); {hint}"
            )
    return {Path(path): write_artifact(path, data) for path, data in outputs.items()}


def write_json_artifact(path: Path, value: Any) -> str:
    """Writes a value as canonical JSON with its sidecar; gives the digest."""
    return write_artifact(path, canonical_json(value))


def write_jsonl_artifact(path: Path, rows: Iterable[Any]) -> str:
    """Writes one canonical JSON value per line with its sidecar; gives the digest."""
    return write_artifact(path, canonical_jsonl(rows))


def read_verified(path: Path) -> bytes:
    """Gives an artifact's bytes after checking them against the sidecar."""
    path = Path(path)
    side_path = sidecar_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read artifact: {exc.strerror}", path=path) from exc
    try:
        side = side_path.read_bytes().decode("ascii").split()
    except FileNotFoundError as exc:
        raise IntegrityError(
            f"{side_path}: the artifact's .sha256 sidecar is missing, so "
            f"{path.name} cannot be checked"
        ) from exc
    except OSError as exc:
        raise InputError(
            f"cannot read the artifact's sidecar: {exc.strerror}", path=side_path
        ) from exc
    except UnicodeDecodeError:
        side = []
    if len(side) != 2 or not SHA256_HEX.match(side[0]):
        raise IntegrityError(f"{side_path}: sidecar is not '<sha256>  <name>'")
    if side[1].removeprefix("*") != path.name:  # sha256sum -b marks binary mode with '*'
        raise IntegrityError(f"{side_path}: sidecar names {side[1]!r}, not {path.name!r}")
    if sha256_hex(data) != side[0]:
        raise IntegrityError(f"{path}: bytes do not match their .sha256 sidecar")
    return data
