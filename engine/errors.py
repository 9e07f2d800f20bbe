"""The one exception hierarchy of sealdesk; the CLI maps it to exit codes.

Every error renders as one line. Input errors name the file, the line and the
field, so that a user can go straight to the byte that is wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict


class SealdeskError(Exception):
    """Base of every error sealdesk raises on purpose."""

    exit_code = 2

    def one_line(self) -> str:
        """Gives the message flattened to a single line."""
        return " ".join(str(self).split())


class Location(TypedDict, total=False):
    """Where bad input lies: InputError's keywords, gathered once for several checks."""

    path: str | Path | None
    line: int | None
    field: str | None


class InputError(SealdeskError):
    """Bad input: a file, a line within it and a field are named when known."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.reason = message
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
        parts = [p for p in (where, f"field '{field}'" if field else "") if p]
        prefix = ": ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class WorkspaceError(SealdeskError):
    """The workspace is missing, unreadable or not a sealdesk workspace."""

    exit_code = 2


class ConflictError(SealdeskError):
    """An item id already exists with different bytes, or a run is reused."""

    exit_code = 4


class OverruleRequired(ConflictError):
    """A decision would replace another principal's standing decision without saying so.

    ``standing`` is that decision (seq, decision, principal, role, time,
    record_hash), so that a caller can ask the person and then overrule it.
    """

    def __init__(self, message: str, *, standing: dict) -> None:
        self.standing = standing
        super().__init__(message)


class SigningKeyError(SealdeskError):
    """A key is malformed, of the wrong type, or cannot be used to sign."""

    exit_code = 2


class PermissionRefused(SealdeskError):
    """The signer may not act in this role, or on this queue."""

    exit_code = 3


class IntegrityError(SealdeskError):
    """Verification found a fault: a hash, link, signature or role is wrong."""

    exit_code = 1

    def __init__(self, message: str, *, seq: int | None = None) -> None:
        self.seq = seq
        self.reason = message
        super().__init__(f"record {seq}: {message}" if seq is not None else message)


class LedgerDiverged(IntegrityError):
    """What this process wrote is not what the database on disk holds: it signs no more."""


class NotReadyError(SealdeskError):
    """The state does not allow this yet (e.g. a sign-off while items are undecided)."""

    exit_code = 5


class AgentError(SealdeskError):
    """The ssh-agent is absent, refused, or does not hold the key."""

    exit_code = 2


class StorageError(WorkspaceError):
    """The workspace's database cannot be used as asked; the subclass says why."""

    exit_code = 2


class DatabaseLocked(StorageError):
    """Another process holds the database's lock past the lock timeout."""


class DiskFull(StorageError):
    """The filesystem holding the workspace has no space left for a write."""


class ReadOnlyWorkspace(StorageError):
    """This process may not write the workspace: a read-only copy, mode or filesystem."""


class AccessDenied(StorageError):
    """This process may not read a file or directory of the workspace."""


class DerivedFileNotWritten(SealdeskError):
    """The ledger took the record, but a file generated from it (trust/allowed_signers, a
    receipt) was not written: the message names the file and the command that writes it
    again. Unlike every other error, something *was* recorded."""

    exit_code = 7
