"""The benchmark lineage store: reserve before signing, finalize after readback.

One SQLite file, provisioned once by an administrator and afterwards only
opened (a missing or different store is refused, never recreated). A
measurement's exact canonical bytes are reserved, durably, before any
signature is requested; the signature is attached only after the signed
bytes were read back and verified. Genesis is one-use per (policy_id,
holdout_id), even across restarts and fresh genesis scopes; a normal
measurement needs the scope's baseline already completed and signed in the
same lineage. Triggers refuse any update or delete except attaching a
signature once; a reservation is never released so that a different
report could be measured instead.

The file, its WAL and shared memory must sit on a local filesystem with all
writers on one host (SQLite WAL does not work over NFS/SMB).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from engine.coverage.scope import Scope, deadline_seconds
from engine.coverage.trust import TrustRoot
from engine.errors import ConflictError, InputError, IntegrityError, PermissionRefused

STORE_SCHEMA = "sealdesk.coverage-lineage-store.v1"

_DDL = """
CREATE TABLE metadata (store_id TEXT NOT NULL, schema_version TEXT NOT NULL);
CREATE TABLE lineages (policy_id TEXT NOT NULL, holdout_id TEXT NOT NULL,
    genesis_scope_sha256 TEXT NOT NULL UNIQUE, PRIMARY KEY (policy_id, holdout_id));
CREATE TABLE evidence (payload_sha256 TEXT PRIMARY KEY, policy_id TEXT NOT NULL,
    holdout_id TEXT NOT NULL, scope_sha256 TEXT NOT NULL, payload BLOB NOT NULL,
    signature BLOB);
CREATE TRIGGER metadata_no_update BEFORE UPDATE ON metadata
BEGIN SELECT RAISE(ABORT, 'immutable store identity'); END;
CREATE TRIGGER metadata_no_delete BEFORE DELETE ON metadata
BEGIN SELECT RAISE(ABORT, 'immutable store identity'); END;
CREATE TRIGGER lineages_no_update BEFORE UPDATE ON lineages
BEGIN SELECT RAISE(ABORT, 'immutable lineage'); END;
CREATE TRIGGER lineages_no_delete BEFORE DELETE ON lineages
BEGIN SELECT RAISE(ABORT, 'immutable lineage'); END;
CREATE TRIGGER evidence_no_delete BEFORE DELETE ON evidence
BEGIN SELECT RAISE(ABORT, 'retained evidence'); END;
CREATE TRIGGER evidence_finalize_only BEFORE UPDATE ON evidence
WHEN OLD.signature IS NOT NULL OR NEW.signature IS NULL
  OR OLD.payload_sha256 IS NOT NEW.payload_sha256 OR OLD.policy_id IS NOT NEW.policy_id
  OR OLD.holdout_id IS NOT NEW.holdout_id OR OLD.scope_sha256 IS NOT NEW.scope_sha256
  OR OLD.payload IS NOT NEW.payload
BEGIN SELECT RAISE(ABORT, 'evidence replacement denied'); END;
"""


def lock_timeout(value: object) -> float:
    """Gives the lock deadline in seconds (0 to scope.MAX_DEADLINE_SECONDS)."""
    return deadline_seconds(value, field="timeout")


def provision_store(path: str | Path, store_id: str, timeout_seconds: float) -> None:
    """Creates a new, empty lineage store; refuses if any file is already there.

    Administrative provisioning for a new deployment only: an existing
    lineage is restored from its retained records, never replaced by an
    empty store.
    """
    timeout = lock_timeout(timeout_seconds)
    if not isinstance(store_id, str) or not store_id:
        raise InputError("the store id must be a non-empty string", field="store_id")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        raise ConflictError(
            f"{path}: a lineage store (or another file) is already there; "
            "provisioning never replaces one"
        ) from None
    os.close(fd)
    with closing(sqlite3.connect(path, timeout=timeout, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("BEGIN IMMEDIATE")
        for statement in _DDL.split(";\n"):
            if statement.strip():
                db.execute(statement)
        db.execute("INSERT INTO metadata VALUES (?, ?)", (store_id, STORE_SCHEMA))
        db.execute("COMMIT")


@dataclass(frozen=True)
class Reservation:
    """A reserved measurement in the store."""

    payload_sha256: str
    policy_id: str
    holdout_id: str
    scope_sha256: str
    payload: bytes
    signature: bytes | None


class LineageStore:
    """An open, existing lineage store with the pinned identity."""

    def __init__(
        self, path: str | Path, expected_store_id: str, timeout_seconds: float, trust: TrustRoot
    ) -> None:
        self.timeout_seconds = lock_timeout(timeout_seconds)
        self.trust = trust
        if not isinstance(expected_store_id, str) or not expected_store_id:
            raise InputError("the store id must be a non-empty string", field="store_id")
        path = Path(path)
        if path.is_symlink() or not path.is_file():
            raise InputError(
                "no lineage store here: it is provisioned once with "
                "`sealdesk coverage store-init`, never created on demand",
                path=path,
            )
        # mode=rw: opening never creates a database file.
        uri = path.resolve(strict=True).as_uri() + "?mode=rw"
        self.path = path
        self.db = sqlite3.connect(uri, uri=True, timeout=self.timeout_seconds, isolation_level=None)
        try:
            self.db.execute("PRAGMA synchronous=FULL")
            identity = self.db.execute("SELECT store_id, schema_version FROM metadata").fetchall()
            self.db.execute("SELECT genesis_scope_sha256 FROM lineages LIMIT 0")
            self.db.execute("SELECT signature FROM evidence LIMIT 0")
        except sqlite3.Error as exc:
            self.db.close()
            raise PermissionRefused(f"{path}: not a coverage lineage store ({exc})") from exc
        if identity != [(expected_store_id, STORE_SCHEMA)]:
            self.db.close()
            raise PermissionRefused(
                f"{path}: lineage store identity differs from the pinned "
                f"store id {expected_store_id!r}"
            )

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> LineageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _begin(self) -> None:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise ConflictError(
                f"{self.path}: another writer held the lineage store past the "
                f"{self.timeout_seconds:g} s deadline ({exc})"
            ) from exc

    def reserve(self, scope: Scope, holdout_id: str, raw: bytes) -> str:
        """Gives the payload digest after durably reserving the exact bytes.

        Commits before any signature is asked for: a failed or uncertain
        signing does not release the reservation, even after a restart.
        """
        if scope["decision_store_timeout_seconds"] != self.timeout_seconds:
            raise PermissionRefused(
                "the store's lock deadline differs from the signed scope's "
                "decision_store_timeout_seconds"
            )
        payload_sha256 = hashlib.sha256(raw).hexdigest()
        identity = (scope["policy_id"], holdout_id)
        self._begin()
        try:
            lineage = self.db.execute(
                "SELECT genesis_scope_sha256 FROM lineages WHERE policy_id=? AND holdout_id=?",
                identity,
            ).fetchone()
            if scope.genesis:
                if lineage is not None:
                    raise PermissionRefused(
                        f"genesis for policy {identity[0]!r} and holdout {identity[1]!r} is "
                        "already reserved or retained; genesis is one-use per lineage"
                    )
                self.db.execute("INSERT INTO lineages VALUES (?, ?, ?)", (*identity, scope.sha256))
            else:
                if lineage is None:
                    raise PermissionRefused(
                        f"no established lineage for policy {identity[0]!r} and holdout "
                        f"{identity[1]!r}; a normal measurement never falls back to genesis"
                    )
                prior = self.db.execute(
                    "SELECT payload, signature FROM evidence WHERE payload_sha256=? "
                    "AND policy_id=? AND holdout_id=?",
                    (scope["baseline_report_sha256"], *identity),
                ).fetchone()
                if prior is None or prior[1] is None:
                    raise PermissionRefused(
                        "the scope's baseline is not completed, signed "
                        "evidence retained in this lineage"
                    )
                self.trust.verify("benchmark", prior[0], prior[1], what="retained baseline")
                if hashlib.sha256(prior[0]).hexdigest() != scope["baseline_report_sha256"]:
                    raise IntegrityError("retained baseline bytes differ from their digest")
            self.db.execute(
                "INSERT INTO evidence VALUES (?, ?, ?, ?, ?, NULL)",
                (payload_sha256, *identity, scope.sha256, raw),
            )
            self.db.execute("COMMIT")
        except sqlite3.IntegrityError as exc:
            self.db.execute("ROLLBACK")
            raise ConflictError(
                f"this measurement ({payload_sha256[:16]}…) or this genesis "
                "scope is already reserved"
            ) from exc
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        return payload_sha256

    def finalize(self, payload_sha256: str, raw: bytes, signature: bytes) -> None:
        """Attaches the verified signature to the reservation of exactly these bytes."""
        self.trust.verify("benchmark", raw, signature, what="benchmark readback")
        if hashlib.sha256(raw).hexdigest() != payload_sha256:
            raise IntegrityError("finalized bytes differ from the reserved digest")
        self._begin()
        try:
            changed = self.db.execute(
                "UPDATE evidence SET signature=? WHERE payload_sha256=? AND payload=? "
                "AND signature IS NULL",
                (signature, payload_sha256, raw),
            ).rowcount
            if changed != 1:
                raise ConflictError(
                    f"no open reservation of exactly these bytes "
                    f"({payload_sha256[:16]}…): missing or already finalized"
                )
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def get(self, payload_sha256: str) -> Reservation | None:
        """Gives a reserved (or finalized) measurement by its digest."""
        row = self.db.execute(
            "SELECT payload_sha256, policy_id, holdout_id, scope_sha256, payload, signature "
            "FROM evidence WHERE payload_sha256=?",
            (payload_sha256,),
        ).fetchone()
        return (
            None
            if row is None
            else Reservation(
                row[0],
                row[1],
                row[2],
                row[3],
                bytes(row[4]),
                None if row[5] is None else bytes(row[5]),
            )
        )

    def unresolved(self) -> list[Reservation]:
        """Gives every reservation still waiting for its signature."""
        rows = self.db.execute(
            "SELECT payload_sha256 FROM evidence WHERE signature IS NULL ORDER BY rowid"
        ).fetchall()
        return [r for r in (self.get(row[0]) for row in rows) if r is not None]
