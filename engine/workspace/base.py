"""A workspace's opening, paths and connection: where a review lives on disk, the
database's schema, the trust list made from the ledger, and what tells a reader that
something changed (the watermark, the ledger's head).
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from engine import claims, item_query, subjects
from engine.backlog import (
    RUN_ID,
    RUN_ID_RULE,
)
from engine.errors import (
    InputError,
    StorageError,
    WorkspaceError,
)
from engine.ledger import store
from engine.ledger.allowed_signers import AllowedSigners
from engine.ledger.authority import Authority, authority_mark, load_authority
from engine.ledger.records import Record
from engine.sqlitedb import connect, database, storage_error, write_transaction

if TYPE_CHECKING:  # imported where a receipt is made: not needed to open a workspace
    from engine.ledger.receipts import TreeCache


SCHEMA_VERSION = "1"


DB_NAME = "sealdesk.db"


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    manifest TEXT NOT NULL,
    manifest_sha256 TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS items (
    queue TEXT NOT NULL,
    item_id TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    item_sha256 TEXT NOT NULL,
    payload TEXT NOT NULL,
    title TEXT NOT NULL,
    score REAL,
    tags TEXT NOT NULL,
    ingested_at TEXT NOT NULL,
    subject TEXT,
    PRIMARY KEY (queue, item_id)
) STRICT;
CREATE INDEX IF NOT EXISTS items_sha ON items(item_sha256);
CREATE INDEX IF NOT EXISTS items_queue_score ON items(queue, score);
CREATE INDEX IF NOT EXISTS items_browse ON items(queue, score, item_id, title, tags);
CREATE TRIGGER IF NOT EXISTS items_no_update BEFORE UPDATE ON items
BEGIN SELECT RAISE(ABORT, 'backlog items are immutable: UPDATE refused'); END;
CREATE TRIGGER IF NOT EXISTS items_no_delete BEFORE DELETE ON items
BEGIN SELECT RAISE(ABORT, 'backlog items are immutable: DELETE refused'); END;
CREATE TRIGGER IF NOT EXISTS runs_no_update BEFORE UPDATE ON runs
BEGIN SELECT RAISE(ABORT, 'runs are immutable: UPDATE refused'); END;
CREATE TRIGGER IF NOT EXISTS runs_no_delete BEFORE DELETE ON runs
BEGIN SELECT RAISE(ABORT, 'runs are immutable: DELETE refused'); END;
"""


def resolve_path(explicit: str | Path | None) -> Path:
    """Gives the workspace directory: flag, else $SEALDESK_WORKSPACE, else ./workspace."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("SEALDESK_WORKSPACE")
    return Path(env) if env else Path("workspace")


def _refuse_foreign(conn: sqlite3.Connection, db_path: Path) -> None:
    """Raises unless the file under ``conn`` is an SQLite database holding sealdesk's tables.

    Runs before the connection may write (the switch to WAL writes a header into an
    empty file or another program's), and reads through SQLite itself: the header
    is never read with a plain descriptor, whose close would drop the locks of this
    process's other connections to the same file.
    """
    try:
        tables = {
            name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")
        }
    except sqlite3.DatabaseError as exc:
        code = getattr(exc, "sqlite_errorcode", 0) or 0
        if code & 0xFF != sqlite3.SQLITE_NOTADB:
            raise  # locked, unreadable...: storage_error says which
        raise WorkspaceError(
            f"{db_path}: is not an SQLite database, so not a sealdesk database "
            "(nothing was written to it)"
        ) from exc
    if not tables:
        raise WorkspaceError(
            f"{db_path}: is empty, so not a sealdesk database (nothing was written to it)"
        )
    if "meta" not in tables:
        raise WorkspaceError(
            f"{db_path}: an SQLite database of another program (it has no meta table), "
            "so not a sealdesk database (nothing was written to it)"
        )


class WorkspaceBase:
    """An open workspace: its root, its database connection, who reads, and its trust."""

    def __init__(self, root: Path, conn: sqlite3.Connection, *, read_only: bool = False) -> None:
        self.root = Path(root)
        self.conn = conn
        self.read_only = read_only  # opened without write access: every write fails
        row = conn.execute("SELECT value FROM meta WHERE key='workspace_id'").fetchone()
        self.workspace_id: str = row[0]
        self._authority: tuple[tuple[int, int], Authority] | None = None
        # receipts' tree head, extended as this process appends
        self._tree: TreeCache | None = None
        # Set by the command line (engine.run_records.RunSigning): given the runs an
        # ingest registers, gives what signs them afterwards, or None. A layer above
        # this one signs them, so it is handed in rather than imported.
        # (typed Any: it is given the whole Workspace, put together above this layer)
        self.run_signing: Callable[[Any, dict], Callable[[], None] | None] | None = None
        # Who reads: under a review plan, an item no decision settles yet shows them their
        # own rating or none, and others' decisions on it only once they rated it (None:
        # nobody known, who sees none).
        self.viewer: str | None = None
        self._view_mark: tuple[Any, ...] | None = None
        self._view: dict[tuple[str, str], int | None] = {}
        self._progress_mark: item_query.Watermark | None = None
        self._plan_progress: dict[str, dict[str, Any]] = {}

    @cached_property
    def db(self):
        """The sqlite-utils view records are appended through (imported on first append:
        read-only commands and the app's first screen do not pay for the import)."""
        return database(self.conn)

    # -- where things are -------------------------------------------------
    @property
    def db_path(self) -> Path:
        return self.root / DB_NAME

    @property
    def artifacts_dir(self) -> Path:
        return self.root / "artifacts"

    @property
    def allowed_signers_path(self) -> Path:
        return self.root / "trust" / "allowed_signers"

    def run_dir(self, run_id: str) -> Path:
        """Gives (and creates) ``artifacts/<run_id>/``."""
        if not RUN_ID.match(run_id):
            raise InputError(f"run id {run_id!r} {RUN_ID_RULE}", field="run_id")
        path = self.artifacts_dir / run_id
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path

    # -- opening ----------------------------------------------------------
    @classmethod
    def init(cls, root: str | Path) -> Self:
        """Gives a new (or the existing) workspace at root, creating what is missing."""
        root = Path(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
            (root / "artifacts").mkdir(exist_ok=True, mode=0o700)
            (root / "trust").mkdir(exist_ok=True)
            conn = connect(root / DB_NAME)
        except (OSError, sqlite3.Error) as exc:
            raise WorkspaceError(f"cannot create workspace at {root}: {exc}") from exc
        try:
            conn.executescript(SCHEMA)
            store.create_schema(conn)
            subjects.ensure_schema(conn)
            claims.ensure_schema(conn)
            with write_transaction(conn):
                conn.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('workspace_id', ?)", (str(uuid.uuid4()),)
                )
                conn.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
                )
        except sqlite3.Error as exc:
            raise WorkspaceError(f"cannot create workspace at {root}: {exc}") from exc
        return cls(root, conn)

    @classmethod
    def open(cls, root: str | Path, *, read_only: bool = False, unmigrated: bool = False) -> Self:
        """Gives the existing workspace at root, or a clear error saying what to do.

        ``read_only`` opens it without writing a byte (see ``sqlitedb.open_read_only``),
        so that an auditor can check a read-only copy; any write then fails. A
        workspace whose ledger predates its own enrolment records is opened only
        to read or to migrate it (``unmigrated``): every other command is refused
        with the one command that migrates it.
        """
        root = Path(root)
        db_path = root / DB_NAME
        if not root.is_dir():
            raise WorkspaceError(f"no workspace at {root} (create one with: sealdesk init)")
        if not os.access(root, os.R_OK | os.X_OK):
            raise WorkspaceError(f"workspace {root} is not readable by this user")
        if not db_path.is_file():
            raise WorkspaceError(
                f"{root} is not a sealdesk workspace: {DB_NAME} is missing "
                "(create one with: sealdesk init)"
            )
        if not os.access(db_path, os.R_OK):
            raise WorkspaceError(f"{db_path} is not readable by this user")
        conn = None
        try:
            conn = connect(
                db_path, read_only=read_only, before_writing=lambda c: _refuse_foreign(c, db_path)
            )
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            why = storage_error(exc, db_path, reading=read_only)
            if not isinstance(why, StorageError):  # locked, full, read-only, denied say so
                why = WorkspaceError(f"{db_path}: not a sealdesk database ({exc})")
            raise why from exc
        if row is None or row[0] != SCHEMA_VERSION:
            raise WorkspaceError(
                f"{db_path}: schema version {row and row[0]!r} is not {SCHEMA_VERSION!r}"
            )
        if conn.execute("SELECT 1 FROM meta WHERE key='workspace_id'").fetchone() is None:
            conn.close()
            raise WorkspaceError(
                f"{db_path}: meta holds no workspace_id; every record names "
                "it, so this workspace was damaged (restore it from a copy)"
            )
        tables = {
            name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")
        }
        missing = sorted({"meta", "runs", "items", "records"} - tables)
        if missing:
            conn.close()
            raise WorkspaceError(
                f"{db_path}: table {', '.join(missing)} is missing; this "
                "workspace was damaged (restore it from a copy)"
            )
        ws = cls(root, conn, read_only=read_only)
        if read_only:
            return ws
        if ws.needs_migration():
            if unmigrated:
                return ws  # the migration adds what is missing once it has signed
            conn.close()
            raise WorkspaceError(
                f"workspace {root} predates enrolment in the ledger: who may sign is still the "
                "unsigned trust/allowed_signers, so nothing is written to it until a lead signs "
                f"that file into the ledger once, with: sealdesk --workspace {root} keys migrate "
                "[--lead-key FILE]  (read commands such as verify and items still work)"
            )
        try:
            store.add_missing_indexes(conn)
            subjects.ensure_schema(conn)
            claims.ensure_schema(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise storage_error(exc, db_path) from exc
        return ws

    def another(self) -> Self:
        """Gives this workspace again on a new SQLite connection of its own, for a worker
        thread: read-only when this one is, and checked as ``open`` checks the file.

        A process holding this workspace opens its database again only this way (or
        through ``open``), never with a plain descriptor (``engine.sqlitedb`` says why).
        """
        conn = connect(
            self.db_path,
            read_only=self.read_only,
            before_writing=lambda c: _refuse_foreign(c, self.db_path),
        )
        again = type(self)(self.root, conn, read_only=self.read_only)
        again.viewer = self.viewer
        return again

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- trust ------------------------------------------------------------
    def legacy_signers(self) -> AllowedSigners:
        """Gives the parsed trust/allowed_signers as a workspace from before enrolment
        records kept it by hand (read only to migrate it)."""
        return AllowedSigners.load(self.allowed_signers_path)

    def authority(self) -> Authority:
        """Gives who may sign what, replayed from the ledger (cached until it changes)."""
        mark = authority_mark(self.conn)
        if self._authority is None or self._authority[0] != mark:
            self._authority = (mark, load_authority(self.conn))
        return self._authority[1]

    def signers(self) -> Authority | AllowedSigners:
        """Gives who may sign, for reading: the ledger's authority, or for a ledger with no
        authority records yet, its legacy allowed_signers file."""
        auth = self.authority()
        return auth if auth.verdicts else self.legacy_signers()

    def receipt(self, record: Record) -> dict[str, Any]:
        """Gives the receipt of a record this process appended (seq, hash, tree head)."""
        from engine.ledger.receipts import TreeCache, receipt

        if self._tree is None:
            self._tree = TreeCache()
        return receipt(self.conn, record, self._tree)

    def needs_migration(self) -> bool:
        """Says whether the ledger has no authority records yet but records or enrolled
        signers from before them (a workspace ``sealdesk keys migrate`` must sign in)."""
        if authority_mark(self.conn)[0]:
            return False
        if self.conn.execute("SELECT 1 FROM records LIMIT 1").fetchone():
            return True
        try:
            return bool(self.legacy_signers().entries)
        except InputError:
            return True  # a file no one can read still held someone: migrate says why

    def write_allowed_signers(self) -> None:
        """Regenerates trust/allowed_signers from the ledger, for ssh-keygen."""
        from engine.ledger.enrol import write_allowed_signers

        self.allowed_signers_path.parent.mkdir(exist_ok=True)
        write_allowed_signers(self.conn, self.allowed_signers_path, self.workspace_id)

    # -- what changed: the watermark and the ledger's head -----------------

    def watermark(self) -> item_query.Watermark:
        """Gives a cheap fingerprint that changes whenever items or records are added."""
        return item_query.watermark(self.conn)

    def head(self) -> tuple[int, str]:
        """Gives the ledger head: (last seq, its record hash)."""
        return store.head(self.conn)
