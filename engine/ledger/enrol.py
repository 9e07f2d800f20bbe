"""Enrolling a signer: add or widen one line of trust/allowed_signers."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

from engine.artifacts import atomic_write
from engine.errors import ConflictError
from engine.ledger.allowed_signers import AllowedSigners, enrol_line
from engine.ledger.signers import PublicKey, read_public_key


@contextmanager
def _locked(path: Path):
    """Holds an exclusive lock beside path for one read-modify-write.

    The file itself is replaced atomically (a new inode), so the lock lives on
    a sibling that is never replaced; two `keys add` at once then both land.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def enrol(path: Path, principal: str, roles: list[str], key_file: Path) -> str:
    """Gives the line now enrolling principal with key for roles (merged with any old one)."""
    key = read_public_key(key_file)
    with _locked(Path(path)):
        return _enrol_locked(Path(path), principal, roles, key)


def _enrol_locked(path: Path, principal: str, roles: list[str], key: PublicKey) -> str:
    allowed = AllowedSigners.load(path)
    for entry in allowed.entries:
        if entry.key.blob == key.blob and principal not in entry.principals:
            raise ConflictError(f"key {key.fingerprint} is already enrolled as "
                                f"{','.join(entry.principals)} ({path}:{entry.line}); one key "
                                "signs for one person")
    kept, merged = [], set(roles)
    # Numbered exactly as AllowedSigners.load numbers them: split at LF only.
    text = path.read_bytes().decode("utf-8") if path.exists() else ""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        match = next((e for e in allowed.entries if e.line == number), None)
        if match and match.key.blob == key.blob and match.principals == (principal,):
            merged.update(match.roles)
            continue
        kept.append(raw + "\n")
    line = enrol_line(principal, sorted(merged), key)
    atomic_write(path, "".join(kept + [line]).encode("utf-8"), mode=0o644)
    return line
