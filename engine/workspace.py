"""Where a review lives on disk, and the ingest of backlog items.

A workspace is a directory::

    sealdesk.db            one SQLite database (WAL, synchronous=FULL, STRICT)
    artifacts/<run_id>/    each engine run's artifacts with .sha256 sidecars
    trust/allowed_signers  who may sign in which role, generated from the ledger's
                           enrolment records for ssh-keygen (never read as truth)

Items are immutable once ingested: ingesting the same bytes again is a no-op,
and an id that exists with different bytes is refused. An item whose payload
names a subject is linked at ingest to the items held about the same subject,
so that a decision on one bears on the others (``engine.subjects``).
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import claims, item_query, reasons, subjects
from engine.agreement import plan as review_plan
from engine.backlog import (
    RUN_ID as RUN_ID,
)
from engine.backlog import (
    RUN_ID_RULE as RUN_ID_RULE,
)
from engine.backlog import (
    BacklogItem as BacklogItem,
)
from engine.backlog import (
    ItemsFile as ItemsFile,
)
from engine.backlog import (
    read_items_files as read_items_files,
)
from engine.backlog import (
    summary_columns,
)
from engine.backlog import (
    validate_item as validate_item,
)
from engine.canonical import canonical_json, sha256_hex
from engine.claims import Claim
from engine.errors import (
    ConflictError,
    InputError,
    IntegrityError,
    OverruleRequired,
    PermissionRefused,
    SealdeskError,
    StorageError,
    WorkspaceError,
)
from engine.ledger import sshsig, store
from engine.ledger.allowed_signers import AllowedSigners
from engine.ledger.authority import Authority, authority_mark, load_authority
from engine.ledger.records import DECISIONS, STATUSES, Record, utc_now
from engine.ledger.signers import Signer
from engine.reasons import Guidelines, Reason
from engine.roles import QUEUE_ROLES, QUEUES, SIGNOFF_ROLE, namespace_for, outranks
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


@dataclass(frozen=True)
class IngestResult:
    """How many items were new and how many were already held unchanged; ``related``
    counts the new ones about a subject the workspace already held items on."""

    added: int
    unchanged: int
    related: int = 0


def resolve_path(explicit: str | Path | None) -> Path:
    """Gives the workspace directory: flag, else $SEALDESK_WORKSPACE, else ./workspace."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("SEALDESK_WORKSPACE")
    return Path(env) if env else Path("workspace")


@dataclass(frozen=True)
class DecisionOutcome:
    """What deciding one item did: the record appended (None when the signer's own
    standing decision already said the same) and the decision that stood before."""

    queue: str
    item_id: str
    decision: str
    record: Record | None
    standing: dict[str, Any] | None  # subjects.standing_decision's, just before deciding

    @property
    def overruled(self) -> dict[str, Any] | None:
        """Gives the standing decision this record overrules, or None."""
        if self.record is None or "overrules" not in (self.record.body["data"] or {}):
            return None  # none, or an independent rating under a review plan
        return self.standing

    @property
    def reason(self) -> str | None:
        """Gives the reason code the record appended carries, or None."""
        if self.record is None:
            return None
        return (self.record.body["data"] or {}).get("reason")


def _replacing(
    standing: dict[str, Any] | None,
    queue: str,
    item_id: str,
    decision: str,
    principal: str,
    role: str,
    overrule: bool | str,
) -> dict[str, Any] | None:
    """Gives the extra fields of a decision replacing ``standing`` ({} for none, the
    ``overrules`` data for an overrule), None when it would say what already stands,
    or raises when it may not replace it."""
    if standing is None:
        if isinstance(overrule, str):
            raise ConflictError(
                f"{queue}/{item_id}: the decision you chose to overrule "
                f"({overrule[:12]}…) no longer stands; nothing was signed"
            )
        return {}
    who, made_as = standing["principal"], standing["role"]
    what = f"{queue}/{item_id} stands at {subjects.said(standing)}"
    if outranks(made_as, role):
        # As with undo: only the role that made a decision (or one above it) replaces it.
        mine = f" (decide as {made_as} to change it)" if who == principal else ""
        raise PermissionRefused(
            f"{what}; a decision as {role} may not replace one made as "
            f"{made_as}, which ranks above it{mine}; nothing was signed"
        )
    if who == principal:
        # One's own decision carried from another item is signed on this one all the
        # same: the item then has a decision of its own, whatever the subject does next.
        carried = standing.get("carried_from") is not None
        if standing["decision"] == decision and made_as == role and not carried:
            return None
        return {}
    if not overrule:
        raise OverruleRequired(
            f"{what}; deciding {decision} would overrule {who}. Nothing was "
            "signed: to overrule explicitly (recorded in the signed "
            "record), run sealdesk decide again with --overrule, or "
            "confirm the overrule in the review app",
            standing=standing,
        )
    if isinstance(overrule, str) and overrule != standing["record_hash"]:
        raise ConflictError(
            f"{what}, not the decision you chose to overrule ({overrule[:12]}…); nothing was signed"
        )
    return {"data": {"overrules": standing["record_hash"]}}


def _with_reasons(
    conn: sqlite3.Connection, decided: dict[tuple[str, str], dict[str, Any]], queue: str | None
) -> dict[tuple[str, str], dict[str, Any]]:
    """Gives the standing decisions with the ``reason`` and ``rationale`` their signed
    records give (None where they give none)."""
    said = reasons.given(conn, queue) if decided else {}
    return {
        key: {
            **eff,
            "reason": said.get(eff["record_hash"], (None, None))[0],
            "rationale": said.get(eff["record_hash"], (None, None))[1],
        }
        for key, eff in decided.items()
    }


def _says(conn: sqlite3.Connection, standing: dict[str, Any] | None, said: dict[str, str]) -> bool:
    """Says whether the standing decision's record gives the very reason and rationale
    ``said`` gives (then signing the same decision again would say nothing new)."""
    if standing is None:
        return False
    row = conn.execute(
        "SELECT message FROM records WHERE record_hash = ?", (standing["record_hash"],)
    ).fetchone()
    if row is None:
        return False
    from engine.canonical import strict_loads

    data = strict_loads(row[0]).get("data") or {}
    return all(data.get(name) == said.get(name) for name in ("reason", "rationale"))


def _status_fields(own: dict[str, Any] | None, carry: subjects.Carry | None) -> dict[str, Any]:
    """Gives an item's ``status``, ``carried_from`` and ``reopened`` from its own standing
    decision and, when it has none, its subject's (``engine.subjects``)."""
    if own is not None:
        return {"status": own["decision"], "carried_from": None, "reopened": None}
    if carry is None:
        return {"status": "undecided", "carried_from": None, "reopened": None}
    return {"status": carry.status, **carry.to_json()}


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


class Workspace:
    """An open workspace: its database, artifacts and trust list."""

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
        self.run_signing: Callable[[Workspace, dict], Callable[[], None] | None] | None = None
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
    def init(cls, root: str | Path) -> Workspace:
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
    def open(
        cls, root: str | Path, *, read_only: bool = False, unmigrated: bool = False
    ) -> Workspace:
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

    def another(self) -> Workspace:
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

    def __enter__(self) -> Workspace:
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

    # -- runs and items ---------------------------------------------------
    def run_manifest_sha256(self, run_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT manifest_sha256 FROM runs WHERE run_id=?", (run_id,)
        ).fetchone()
        return None if row is None else row[0]

    def ingest(
        self,
        items: Iterable[BacklogItem],
        *,
        runs: dict[str, dict[str, Any]] | None = None,
        source: str = "api",
        origins: dict[tuple[str, str], str] | None = None,
        run_defaults: dict[str, dict[str, Any]] | None = None,
    ) -> IngestResult:
        """Gives counts after adding items in one transaction; all or nothing.

        ``runs`` maps run_id to its manifest (kind, artifact hashes, inputs); a
        held run given another manifest is a conflict. ``run_defaults`` gives
        manifests used only for runs not held yet; a run named by neither is
        registered with a manifest naming ``source``. ``origins`` may name, per
        (queue, item_id), where an item was read, for error messages.
        """
        items = list(items)
        origins = origins or {}
        run_defaults = run_defaults or {}
        for item in items:
            validate_item(item.to_json(), path=source)
        runs = dict(runs or {})
        # Who signs the runs is settled before anything is written: a key that cannot
        # sign refuses the whole ingest.
        sign_runs = self.run_signing(self, runs) if self.run_signing and runs else None
        now = utc_now()
        added = unchanged = related = 0
        with write_transaction(self.conn):
            for run_id in sorted({i.run_id for i in items} | set(runs) | set(run_defaults)):
                self._register_run(run_id, runs.get(run_id), run_defaults.get(run_id), source, now)
            for item in items:
                row = self.conn.execute(
                    "SELECT item_sha256 FROM items WHERE queue=? AND item_id=?",
                    (item.queue, item.item_id),
                ).fetchone()
                if row is not None:
                    if row[0] != item.item_sha256:
                        where = origins.get((item.queue, item.item_id), source)
                        raise ConflictError(
                            f"{where}: item {item.queue}/{item.item_id} already exists with "
                            f"different bytes (held {row[0][:12]}…, new "
                            f"{item.item_sha256[:12]}…); items are immutable, give the new "
                            "content a new item_id"
                        )
                    unchanged += 1
                    continue
                title, score, tags = summary_columns(item.payload)
                subject = item.subject
                self.conn.execute(
                    "INSERT INTO items (queue, item_id, run_id, item_sha256, payload, title, "
                    "score, tags, ingested_at, subject) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        item.queue,
                        item.item_id,
                        item.run_id,
                        item.item_sha256,
                        canonical_json(item.payload).decode("utf-8"),
                        title or item.item_id,
                        score,
                        tags,
                        now,
                        subject,
                    ),
                )
                if subject is not None and subjects.link(
                    self.conn, item.queue, item.item_id, subject, item.payload
                ):
                    related += 1
                added += 1
        if sign_runs is not None:
            sign_runs()
        return IngestResult(added, unchanged, related)

    def _register_run(
        self,
        run_id: str,
        manifest: dict[str, Any] | None,
        default: dict[str, Any] | None,
        source: str,
        now: str,
    ) -> None:
        """Registers a run once; a held run given again with another manifest is refused.

        Every decision binds its run's manifest hash: a run id silently kept
        with its old manifest would bind artifacts that are no longer on disk.
        """
        if not RUN_ID.match(run_id):
            raise InputError(f"run id {run_id!r} {RUN_ID_RULE}", field="run_id")
        row = self.conn.execute(
            "SELECT manifest_sha256 FROM runs WHERE run_id=?", (run_id,)
        ).fetchone()
        if row is not None and manifest is None:
            return  # items of a held run need not repeat its manifest
        if manifest is None:
            manifest = default if default is not None else {"kind": "ingest", "source": source}
        blob = canonical_json(manifest)
        digest = sha256_hex(blob)
        if row is not None:
            if row[0] != digest:
                raise ConflictError(
                    f"{source}: run {run_id} is already held with another manifest (held "
                    f"{row[0][:12]}…, new {digest[:12]}…); runs are immutable, give the new "
                    "run another run id"
                )
            return
        self.conn.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?)",
            (run_id, str(manifest.get("kind", "run")), blob.decode("utf-8"), digest, now),
        )

    def item(self, queue: str, item_id: str) -> dict[str, Any] | None:
        """Gives one item with its payload, run, subject and effective decision, or None.

        ``decision`` is the item's own standing decision; ``status`` is the
        effective one, which for an item with none of its own may be carried
        from another item of its subject (``carried_from`` names the record) or
        say that new evidence re-opened it (``reopened``).
        """
        row = self.conn.execute(
            "SELECT items.queue, item_id, run_id, item_sha256, payload, title, score, tags, "
            "runs.manifest_sha256 FROM items JOIN runs USING (run_id) "
            "WHERE items.queue=? AND item_id=?",
            (queue, item_id),
        ).fetchone()
        if row is None:
            return None
        from engine.canonical import strict_loads

        effective = self._shown(queue, item_id, store.effective_decisions_for)
        if effective is not None:
            effective = _with_reasons(self.conn, {(queue, item_id): effective}, queue)[
                (queue, item_id)
            ]
        payload = strict_loads(row[4])
        carry = (
            None if effective else subjects.carries(self.conn, queue, item_id).get((queue, item_id))
        )
        return {
            "queue": row[0],
            "item_id": row[1],
            "run_id": row[2],
            "item_sha256": row[3],
            "subject": subjects.subject_of(queue, payload),
            "payload": payload,
            "title": row[5],
            "score": row[6],
            "tags": row[7].split(",") if row[7] else [],
            "run_sha256": row[8],
            "decision": effective,
            **_status_fields(effective, carry),
        }

    def items(
        self,
        queue: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        newest_only: bool = False,
    ) -> list[dict[str, Any]]:
        """Gives items (without payload) with their effective status, in id order.

        ``decision`` is an item's own standing decision; ``status`` counts a
        decision carried from another item of its subject (``carried_from``),
        and ``reopened`` says when new evidence sent the item back to review.
        ``earlier`` counts the items of its subject ingested before it (earlier
        runs' items); ``newest`` says no later one is held. With ``newest_only``,
        one row per subject: its newest item.
        """
        if status not in (None, *STATUSES):
            raise InputError(
                f"unknown status {status!r} (expected {', '.join(STATUSES)})",
                field="status",
            )
        decided = store.effective_decisions(self.conn, queue)
        planned = self._planned_states(queue)
        for key, seq in self._plan_view().items():
            decided.pop(key, None)
            if seq is not None:
                decided[key] = self._decision_at(seq)
        decided = _with_reasons(self.conn, decided, queue)
        carried = subjects.carries(self.conn, queue)
        holding = self.claims(queue)
        with_subjects = subjects.enabled(self.conn)
        subject = "subject" if with_subjects else "NULL"
        earlier, later = (
            (
                "(SELECT COUNT(*) FROM items n WHERE n.queue = i.queue AND n.subject = i.subject "
                f"AND n.rowid {op} i.rowid)"
                for op in ("<", ">")
            )
            if with_subjects
            else ("0", "0")
        )
        sql = (
            f"SELECT queue, item_id, run_id, item_sha256, title, score, tags, {subject}, "
            f"{earlier}, {later} FROM items i"
        )
        args: list[Any] = []
        if queue:
            sql += " WHERE queue=?"
            args.append(queue)
        sql += " ORDER BY queue, item_id"
        out = []
        for q, iid, run_id, sha, title, score, tags, subj, before, after in self.conn.execute(
            sql, args
        ):
            if newest_only and after:
                continue
            eff = decided.get((q, iid))
            fields = _status_fields(eff, None if eff else carried.get((q, iid)))
            if status and fields["status"] != status:
                continue
            out.append(
                {
                    "queue": q,
                    "item_id": iid,
                    "run_id": run_id,
                    "item_sha256": sha,
                    "subject": subj,
                    "title": title,
                    "score": score,
                    "tags": tags.split(",") if tags else [],
                    "decision": eff,
                    **fields,
                    "earlier": before,
                    "newest": not after,
                    **(
                        {"review": review_plan.seen_by(planned[(q, iid)], self.viewer)}
                        if (q, iid) in planned
                        else {}
                    ),
                    # who is on it now, while it waits for a decision (engine.claims)
                    "claim": (
                        holding[(q, iid)].as_dict()
                        if (q, iid) in holding and fields["status"] == "undecided"
                        else None
                    ),
                }
            )
        return out[offset : None if limit is None else offset + limit]

    # -- browsing (the review app reads through these) ----------------------
    def page(
        self,
        queue: str,
        filters: item_query.ItemFilter | None = None,
        sort: str = "score_desc",
        offset: int = 0,
        limit: int = 100,
    ) -> list[item_query.ItemRow]:
        """Gives one page of a queue's rows, filtered and sorted, with their status."""
        self._plan_view()
        return item_query.page(
            self.conn, queue, filters or item_query.ItemFilter(), sort, offset, limit
        )

    def count(self, queue: str, filters: item_query.ItemFilter | None = None) -> int:
        """Gives how many items of a queue pass the filters."""
        self._plan_view()
        return item_query.count(self.conn, queue, filters or item_query.ItemFilter())

    def position(
        self,
        queue: str,
        item_id: str,
        filters: item_query.ItemFilter | None = None,
        sort: str = "score_desc",
    ) -> int | None:
        """Gives an item's index in the filtered, sorted listing, or None if absent."""
        self._plan_view()
        return item_query.position(
            self.conn, queue, filters or item_query.ItemFilter(), sort, item_id
        )

    def progress(self) -> dict[str, item_query.QueueProgress]:
        """Gives per queue: total items and effective decisions by kind."""
        self._plan_view()
        return item_query.progress(self.conn)

    # -- the review plan ---------------------------------------------------------
    def plan(self) -> review_plan.Plan | None:
        """Gives the newest signed review plan, or None."""
        return review_plan.current(self.conn)

    def _plan_view(self) -> dict[tuple[str, str], int | None]:
        """Gives (and hands the connection's listings) what the plan leaves unsettled, as
        ``self.viewer`` sees it; recomputed only when the ledger or the viewer changed."""
        mark = (self.watermark(), self.viewer)
        if mark != self._view_mark:
            rows = review_plan.hidden(self.conn, self.viewer)
            item_query.set_view(self.conn, rows)
            self._view_mark = mark
            self._view = {(queue, item_id): seq for queue, item_id, seq in rows}
        return self._view

    def set_plan(
        self,
        signer: Signer,
        queues: dict[str, dict[str, Any]],
        *,
        note: str | None = None,
        principal: str | None = None,
    ) -> Record:
        """Gives the lead's signed plan record: per queue, k independent decisions on a
        seeded share of the items, by the principals named (``engine.ledger.plan``)."""
        from engine.ledger.plan import PLAN_KIND, plan_fault

        fault = plan_fault({"queues": queues}, QUEUES)
        if fault is not None:
            raise InputError(fault, field="plan")
        principal, role = self.identify(signer, principal, SIGNOFF_ROLE)
        return self._append(
            signer, PLAN_KIND, principal, role, None, note=note, data={"queues": queues}
        )

    def carries_to_others(self, queue: str, item_id: str) -> bool:
        """Says whether a decision on this item may carry to, or re-open, other items of
        its subject (so that a listing showing them must be read again)."""
        if not subjects.enabled(self.conn):
            return False
        return (
            self.conn.execute(
                "SELECT 1 FROM subject_links WHERE queue = ? AND other_id = ? LIMIT 1",
                (queue, item_id),
            ).fetchone()
            is not None
        )

    def watermark(self) -> item_query.Watermark:
        """Gives a cheap fingerprint that changes whenever items or records are added."""
        return item_query.watermark(self.conn)

    def head(self) -> tuple[int, str]:
        """Gives the ledger head: (last seq, its record hash)."""
        return store.head(self.conn)

    # -- reasons and guidelines (engine.reasons) ----------------------------
    def reasons(self, queue: str) -> tuple[Reason, ...]:
        """Gives the reason codes a decision on the queue may give, in order."""
        return reasons.reasons_for(self.root, queue)

    def guidelines(self, queue: str) -> Guidelines | None:
        """Gives the queue's guidelines as the lead set them, or None."""
        return reasons.guidelines_for(self.root, queue)

    def set_reasons(
        self, signer: Signer, queue: str, source: Path | None, *, principal: str | None = None
    ) -> tuple[Reason, ...]:
        """Gives the queue's reasons after the lead set them from ``source`` (None: back to
        the defaults); refused unless the signer's key is enrolled as lead."""
        self.identify(signer, principal, "lead")
        if source is None:
            return reasons.reset_reasons(self.root, queue)
        return reasons.set_reasons(self.root, queue, source)

    def set_guidelines(
        self, signer: Signer, queue: str, source: Path | None, *, principal: str | None = None
    ) -> Guidelines | None:
        """Gives the queue's guidelines after the lead set them from ``source`` (None:
        removed); refused unless the signer's key is enrolled as lead."""
        self.identify(signer, principal, "lead")
        if source is None:
            reasons.clear_guidelines(self.root, queue)
            return None
        return reasons.set_guidelines(self.root, queue, source)

    # -- decisions ----------------------------------------------------------
    def identify(
        self,
        signer: Signer,
        principal: str | None = None,
        role: str | None = None,
        queue: str | None = None,
    ) -> tuple[str, str]:
        """Gives (principal, role) for a signer, refusing anyone not enrolled for it."""
        if queue is not None and queue not in QUEUES:
            raise InputError(
                f"unknown queue {queue!r} (expected {', '.join(QUEUES)})", field="queue"
            )
        allowed = self.authority()
        blob = signer.public_key.blob
        names = allowed.principals_for(blob)
        if principal is None:
            if not names:
                raise PermissionRefused(
                    f"key {signer.public_key.fingerprint} is not enrolled in this workspace's "
                    "ledger (a lead enrols it with: sealdesk keys add --principal P --role R "
                    "--key KEY.pub)"
                )
            if len(names) > 1:
                raise PermissionRefused(
                    f"key {signer.public_key.fingerprint} is enrolled as "
                    f"{', '.join(names)}; choose one with --principal"
                )
            principal = names[0]
        # Valid now, as verify will check at the record's signed time: a key outside
        # its valid-after/valid-before window would leave a record that never verifies.
        held = allowed.roles_for(principal, blob, datetime.now(UTC))
        if not held:
            raise PermissionRefused(
                f"{principal} with key {signer.public_key.fingerprint} may "
                "not sign in any role now (see: sealdesk keys list)"
            )
        wanted = QUEUE_ROLES[queue] if queue else None
        if role is None:
            choices = [r for r in (wanted or held) if r in held]
            if not choices:
                raise PermissionRefused(
                    f"{principal} holds role(s) {', '.join(held)}; items "
                    f"of {queue} need {' or '.join(wanted or ())}"
                )
            role = choices[0]
        if role not in held:
            raise PermissionRefused(f"{principal} may not sign as {role} (holds {', '.join(held)})")
        if wanted and role not in wanted:
            raise PermissionRefused(
                f"role {role} may not decide items of {queue} (needs {' or '.join(wanted)})"
            )
        return principal, role

    def decide(
        self,
        signer: Signer,
        queue: str,
        item_id: str,
        decision: str,
        *,
        note: str | None = None,
        principal: str | None = None,
        role: str | None = None,
        overrule: bool | str = False,
        reason: str | None = None,
        rationale: str | None = None,
    ) -> Record:
        """Gives the record that now states the decision on an item: the one just
        durably appended, or the signer's own standing one when it already said so.

        ``overrule``, ``reason`` and ``rationale`` are ``decide_many``'s: without
        ``overrule``, replacing another principal's standing decision is refused.
        """
        (outcome,) = self.decide_many(
            signer,
            queue,
            [item_id],
            decision,
            note=note,
            principal=principal,
            role=role,
            overrule=overrule,
            reason=reason,
            rationale=rationale,
        )
        if outcome.record is not None:
            return outcome.record
        # No record appended: the signer's own standing decision already said the same.
        assert outcome.standing is not None
        standing = store.get_record(self.conn, outcome.standing["seq"])
        assert standing is not None  # it stood inside the transaction just closed
        return standing

    def decide_many(
        self,
        signer: Signer,
        queue: str,
        item_ids: Iterable[str],
        decision: str,
        *,
        note: str | None = None,
        principal: str | None = None,
        role: str | None = None,
        overrule: bool | str | Mapping[str, str] = False,
        reason: str | None = None,
        rationale: str | None = None,
    ) -> list[DecisionOutcome]:
        """Gives what deciding each item did, after signing and durably appending every
        needed record in one write transaction: all or nothing.

        Who may replace a standing decision is checked inside that transaction,
        against the ledger being extended:

        - the standing decision is the item's own, else the one its subject carries
          to it (``subjects.standing_decision``), as made by its original principal
          in its original role;
        - the signer's own standing decision on the item, in the same role and with
          the same decision, already says it: nothing is signed for that item;
        - the signer may change their own decision freely;
        - another principal's decision is replaced only with ``overrule`` (True,
          or the record hash of the very decision the person agreed to overrule),
          and the record then carries ``data: {"overrules": <its record hash>}``;
        - a decision made in a role that outranks the signer's is never replaced
          (PermissionRefused), as it is never retracted from another role.

        ``overrule`` as a mapping names, per item, the record hash of the decision
        the person agreed to overrule on it (a bulk decision shows every one and
        takes one confirmation); an item it does not name is not overruled.

        ``reason`` (one of the queue's reason codes, ``engine.reasons``) and
        ``rationale`` (free text) go into each record's signed ``data``, and so
        does the SHA-256 of the queue's guidelines while the lead has set them.
        An unknown code or a blank rationale is refused before anything is
        signed. The signer's own standing decision that says the same but gives
        another reason or rationale is signed again, with the new ones.
        """
        if decision not in DECISIONS:
            raise InputError(
                f"unknown decision {decision!r} (expected {', '.join(DECISIONS)})", field="decision"
            )
        if queue not in QUEUES:
            raise InputError(f"unknown queue {queue!r}", field="queue")
        ids = list(item_ids)
        if isinstance(overrule, str) and len(ids) != 1:
            raise InputError(
                "an overrule naming the decision it replaces is about one item", field="overrule"
            )
        per_item = overrule if isinstance(overrule, Mapping) else None
        if per_item is not None and not set(per_item) <= set(ids):
            stray = sorted(set(per_item) - set(ids))[0]
            raise InputError(
                f"an overrule names item {stray!r}, which is not being decided", field="overrule"
            )
        said: dict[str, str] = {}
        if reason is not None:
            said["reason"] = reasons.reason_code(self.root, queue, reason)
        if rationale is not None:
            said["rationale"] = reasons.rationale_text(rationale)
        guidelines = reasons.guidelines_for(self.root, queue)
        bound = {**said}
        if guidelines is not None:
            bound["guidelines_sha256"] = guidelines.sha256
        principal, role = self.identify(signer, principal, role, queue)
        standing: list[dict[str, Any] | None] = [None] * len(ids)
        # The decisions this batch has overruled so far. Deciding one item of a subject
        # can change what the subject carries to another item of the batch: the decision
        # agreed to be overruled there then no longer reaches it (it was overruled here,
        # and the item now carries this signer's decision or is re-opened).
        overruled_here: set[str] = set()

        def check_for(index: int) -> Callable[[sqlite3.Connection], dict[str, Any] | None]:
            def check(conn: sqlite3.Connection) -> dict[str, Any] | None:
                binding = self._item_binding(conn, queue, ids[index])
                standing[index] = subjects.standing_decision(conn, queue, ids[index])
                allowed = (
                    overrule.get(ids[index], False) if isinstance(overrule, Mapping) else overrule
                )
                if standing[index] is None and allowed in overruled_here:
                    allowed = False
                extra = review_plan.decision_extra(
                    conn,
                    queue,
                    ids[index],
                    decision,
                    principal,
                    role,
                    standing[index],
                    again=bool(said),
                )
                if extra is False:
                    extra = _replacing(
                        standing[index], queue, ids[index], decision, principal, role, allowed
                    )
                if extra is None:
                    if not said or _says(conn, standing[index], said):
                        return None
                    extra = {}
                assert isinstance(extra, dict)
                overrules = extra.get("data", {}).get("overrules")
                if overrules is not None:
                    overruled_here.add(overrules)
                data = {**bound, **extra.get("data", {})}
                return {**binding, **extra, "data": data or None}

            return check

        records = store.append_many(
            self.db,
            signer,
            workspace_id=self.workspace_id,
            principal=principal,
            role=role,
            entries=[
                store.Entry(
                    "decision",
                    {"queue": queue, "item_id": item_id, "decision": decision, "note": note},
                    check_for(index),
                )
                for index, item_id in enumerate(ids)
            ],
        )
        return [
            DecisionOutcome(queue, item_id, decision, record, before)
            for item_id, record, before in zip(ids, records, standing, strict=True)
        ]

    def note(
        self,
        signer: Signer,
        queue: str,
        item_id: str,
        note: str,
        *,
        principal: str | None = None,
        role: str | None = None,
    ) -> Record:
        """Gives the signed record after appending a note on an item (no decision)."""
        if not note.strip():
            raise InputError("a note must not be empty", field="note")
        principal, role = self.identify(signer, principal, role, queue)
        return self._append(
            signer,
            "note",
            principal,
            role,
            lambda c: self._item_binding(c, queue, item_id),
            queue=queue,
            item_id=item_id,
            note=note,
        )

    def retract(
        self,
        signer: Signer,
        queue: str,
        item_id: str,
        *,
        record_hash: str | None = None,
        note: str | None = None,
        principal: str | None = None,
        role: str | None = None,
    ) -> Record:
        """Gives the retract record that undoes the item's effective decision (or one named)."""
        principal, role = self.identify(signer, principal, role, queue)

        def check(conn: sqlite3.Connection) -> dict[str, Any]:
            binding = self._item_binding(conn, queue, item_id)
            target = record_hash
            if target is None:
                eff = store.effective_decisions_for(conn, queue, item_id)
                if eff is None:
                    raise InputError(
                        f"nothing to undo: {queue}/{item_id} has no standing decision", field="item"
                    )
                target = eff["record_hash"]
            row = conn.execute(
                "SELECT kind, queue, item_id, role, principal FROM records WHERE record_hash=?",
                (target,),
            ).fetchone()
            if row is None or row[0] != "decision" or (row[1], row[2]) != (queue, item_id):
                raise InputError(
                    f"record {target[:12]}… is not a decision on {queue}/{item_id}",
                    field="retracts",
                )
            if row[4] != principal:
                # Undoing another's decision would overrule it without saying so.
                raise PermissionRefused(
                    f"the standing decision on {queue}/{item_id} is "
                    f"{row[4]}'s; undo takes back only your own (to replace "
                    "theirs, decide with --overrule, or confirm the "
                    "overrule in the review app)"
                )
            if row[3] != role:
                raise PermissionRefused(
                    f"the decision was made as {row[3]}; only that role may retract it"
                )
            if conn.execute(
                "SELECT 1 FROM records WHERE kind='retract' AND retracts=?", (target,)
            ).fetchone():
                raise InputError(f"record {target[:12]}… is already retracted", field="retracts")
            return {**binding, "retracts": target}

        return self._append(
            signer, "retract", principal, role, check, queue=queue, item_id=item_id, note=note
        )

    def _append(
        self,
        signer: Signer,
        kind: str,
        principal: str,
        role: str,
        check: Callable[[sqlite3.Connection], dict[str, Any]] | None,
        **fields: Any,
    ) -> Record:
        """Gives the one record of ``kind`` signed and appended after ``check`` passed inside
        the append's write transaction (a note, a retract, a sign-off; decisions go in
        batches through ``decide_many``)."""
        return store.append(
            self.db,
            signer,
            workspace_id=self.workspace_id,
            principal=principal,
            role=role,
            kind=kind,
            check=check,
            **fields,
        )

    def _item_binding(self, conn: sqlite3.Connection, queue: str, item_id: str) -> dict[str, Any]:
        row = conn.execute(
            "SELECT item_sha256, payload, runs.manifest_sha256, runs.manifest FROM items "
            "JOIN runs USING (run_id) WHERE items.queue=? AND item_id=?",
            (queue, item_id),
        ).fetchone()
        if row is None:
            raise InputError(f"no item {item_id!r} in queue {queue}", field="item")
        # A record binds the hashes; refuse to sign if the bytes behind them were edited.
        if sha256_hex(row[1].encode("utf-8")) != row[0]:
            raise IntegrityError(
                f"item {queue}/{item_id}: stored payload no longer hashes to "
                "its item_sha256 (edited after ingest); nothing was signed"
            )
        if sha256_hex(row[3].encode("utf-8")) != row[2]:
            raise IntegrityError(
                f"item {queue}/{item_id}: its run manifest no longer hashes "
                "to manifest_sha256 (edited after ingest); nothing was signed"
            )
        return {"item_sha256": row[0], "run_sha256": row[2]}

    def signoff(
        self,
        signer: Signer,
        data: dict[str, Any] | None,
        *,
        note: str | None = None,
        principal: str | None = None,
        check: Callable[[sqlite3.Connection], dict[str, Any]] | None = None,
    ) -> Record:
        """Gives the lead's sign-off record binding ``data`` (tree head, artifacts).

        ``check`` runs inside the append's write transaction and may refuse, or
        return ``{"data": ...}`` computed from exactly the ledger being extended
        (``engine.signoff.summary.sign_off`` binds its tree head this way).
        """
        principal, role = self.identify(signer, principal, SIGNOFF_ROLE)
        return self._append(signer, "signoff", principal, role, check, note=note, data=data)

    # -- gold items --------------------------------------------------------------
    def commit_gold(
        self, signer: Signer, queue: str, answers: dict[str, str], *, principal: str | None = None
    ) -> tuple[Record, str]:
        """Gives the lead's signed gold commit and the salt it was made with (kept by the
        lead with the answers until the reveal): refused for an item the queue does not
        hold or that someone has decided already."""
        import secrets

        from engine.ledger.gold import GOLD_KIND, answers_fault, commitment

        fault = answers_fault(answers)
        if fault is not None:
            raise InputError(f"gold answers: {fault}", field="answers")
        if queue not in QUEUES:
            raise InputError(f"unknown queue {queue!r}", field="queue")
        salt = secrets.token_hex(16)

        def check(conn: sqlite3.Connection) -> dict[str, Any]:
            for item_id in sorted(answers):
                self._item_binding(conn, queue, item_id)
                if store.effective_decisions_for(conn, queue, item_id) is not None:
                    raise ConflictError(
                        f"{queue}/{item_id} is decided already: gold is committed before "
                        "anyone decides it; nothing was signed"
                    )
            return {}

        principal, role = self.identify(signer, principal, SIGNOFF_ROLE)
        data = {
            "type": "commit",
            "queue": queue,
            "count": len(answers),
            "sha256": commitment(queue, answers, salt),
        }
        return self._append(signer, GOLD_KIND, principal, role, check, data=data), salt

    def reveal_gold(
        self,
        signer: Signer,
        commit_hash: str,
        answers: dict[str, str],
        salt: str,
        *,
        principal: str | None = None,
    ) -> Record:
        """Gives the lead's signed gold reveal of a commit's answers: refused unless they
        and the salt hash to what the commit bound, and the commit is not revealed yet."""
        from engine.agreement.gold import commit_state
        from engine.ledger.gold import GOLD_KIND, reveal_fault

        data = {"type": "reveal", "commit": commit_hash, "answers": answers, "salt": salt}

        def check(conn: sqlite3.Connection) -> dict[str, Any]:
            commit, shown = commit_state(conn, commit_hash)
            if commit is None:
                raise InputError(
                    f"no gold commit {commit_hash[:12]}… in this ledger", field="commit"
                )
            if shown:
                raise ConflictError("that gold commit is revealed already; nothing was signed")
            fault = reveal_fault(commit, data)
            if fault is not None:
                raise InputError(f"gold reveal: {fault}; nothing was signed", field="answers")
            return {}

        principal, role = self.identify(signer, principal, SIGNOFF_ROLE)
        return self._append(signer, GOLD_KIND, principal, role, check, data=data)

    def _planned_states(self, queue: str | None = None) -> dict[tuple[str, str], Any]:
        """Gives the plan's state of each planned item (of one queue, or all)."""
        current = self.plan()
        if current is None:
            return {}
        return {
            (q, i): state
            for q in current.queues
            if queue in (None, q)
            for i, state in review_plan.states(self.conn, current, q).items()
        }

    def review_outcomes(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Gives each planned item's outcome (k, ratings in, unanimous / adjudicated /
        unresolved / pending), as the records say it, to nobody kept blind: what an
        export carries beside each decision on a planned item."""
        return {key: state.to_json() for key, state in self._planned_states().items()}

    def _decision_at(self, seq: int) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT seq, decision, principal, role, time, record_hash FROM records WHERE seq=?",
            (seq,),
        ).fetchone()
        keys = ("seq", "decision", "principal", "role", "time", "record_hash")
        return dict(zip(keys, row, strict=True))

    def _shown(self, queue: str, item_id: str, latest: Callable[..., Any]) -> Any:
        """Gives the decision shown on an item: under the plan view, the viewer's own rating
        or None; elsewhere ``latest(conn, queue, item_id)``."""
        view = self._plan_view()
        if (queue, item_id) in view:
            seq = view[(queue, item_id)]
            return None if seq is None else self._decision_at(seq)
        return latest(self.conn, queue, item_id)

    def plan_note(self, queue: str, item_id: str) -> str | None:
        """Gives one line on where a planned item stands for the viewer (how many of its
        decisions are in, whether they are kept from the viewer, the viewer's share of
        the plan), or None for an item no plan asks several decisions on."""
        current = self.plan()
        if current is None or not current.planned(queue, item_id):
            return None
        state = review_plan.states(self.conn, current, queue, [item_id])[item_id]
        said = f"double review (plan #{current.seq}): {len(state.ratings)} of {state.k} in"
        if state.outcome != review_plan.PENDING:
            said += f", {state.outcome}"
        if review_plan.blind_to(state, self.viewer):
            said += "; blind: others' decisions show once you decide"
        mine = self.plan_progress().get(queue, {}).get("principals_progress", {})
        if self.viewer in mine:
            n = mine[self.viewer]
            said += f" · you: {n['rated']}/{n['assigned']} assigned rated"
        return said

    # -- claims: who is on which undecided item right now (engine.claims) -----------
    def claims(
        self, queue: str | None = None, now: float | None = None
    ) -> dict[tuple[str, str], Claim]:
        """Gives the live claims (of one queue, or all) by (queue, item id)."""
        return claims.held(self.conn, queue, time.time() if now is None else now)

    def held_by_others(self, queue: str, now: float | None = None) -> tuple[str, ...]:
        """Gives the ids of a queue's items someone other than the viewer holds now."""
        return claims.held_by_others(
            self.conn, queue, self.viewer, time.time() if now is None else now
        )

    def claim(
        self,
        queue: str,
        item_ids: Iterable[str],
        *,
        seconds: float,
        replacing: tuple[str, str] | None = None,
        now: float | None = None,
    ) -> list[Claim]:
        """Gives the claims the viewer now holds over item_ids: all of them, or, when
        someone else holds one, none (ConflictError naming who, until when). The
        viewer's claim ``replacing`` (queue, item id) ends in the same step.

        Refuses an unknown item, and an item the review plan samples: the plan says
        who decides it, and each of them must."""
        if queue not in QUEUES:
            raise InputError(f"unknown queue {queue!r}", field="queue")
        item_ids = list(item_ids)
        known = {
            i
            for (i,) in self.conn.execute(
                "SELECT item_id FROM items WHERE queue = ? AND item_id IN "
                "(SELECT value FROM json_each(?))",
                (queue, canonical_json(item_ids)),
            )
        }
        current = self.plan()
        for item_id in item_ids:
            if item_id not in known:
                raise InputError(f"no item {item_id!r} in queue {queue}", field="item")
            if current is not None and current.planned(queue, item_id):
                raise InputError(
                    f"{queue}/{item_id} is in the review plan (plan #{current.seq}): the plan "
                    "says who decides it, so it is not claimed",
                    field="item",
                )
        mine, _, _ = claims.take(
            self.conn,
            queue,
            item_ids,
            self._claimer(),
            now=time.time() if now is None else now,
            seconds=seconds,
            replacing=replacing,
            whole=True,
        )
        return mine

    def claim_next(
        self, queue: str, count: int, *, seconds: float, sort: str = "score_desc"
    ) -> tuple[list[Claim], bool]:
        """Gives up to count claims on the queue's next undecided items in listing order
        that nobody else holds and no review plan samples (one the viewer already holds
        is renewed and counts), and whether an item was passed over because the viewer
        holds the most claims one person may."""
        if count < 1:
            raise InputError("claim at least 1 item", field="next")
        principal = self._claimer()
        current = self.plan()
        if current is not None:
            current.read_keys(queue)
        taken: list[Claim] = []
        seen: set[str] = set()
        full = False
        while len(taken) < count:
            now = time.time()
            f = item_query.ItemFilter(
                status="undecided", newest_only=True, skip=self.held_by_others(queue, now)
            )
            window = count - len(taken) + len(seen)
            rows = self.page(queue, f, sort, 0, window + 50)
            fresh = [
                r.item_id
                for r in rows
                if r.item_id not in seen
                and not (current is not None and current.planned(queue, r.item_id))
            ]
            if not fresh:
                break
            seen.update(fresh)
            # Another process may take some first: take() skips what it holds, and the
            # loop reads the next candidates.
            mine, _, over = claims.take(
                self.conn, queue, fresh, principal, now=now, seconds=seconds,
                only=count - len(taken),
            )  # fmt: skip
            taken += mine
            if over:
                full = True
                break  # the most one person may hold: what comes next is new to them too
        return taken, full

    def release_claims(
        self, queue: str | None = None, item_ids: Iterable[str] | None = None
    ) -> int:
        """Ends the viewer's claims (of one queue, some items, or all); gives how many."""
        return claims.release(self.conn, self._claimer(), queue, item_ids)

    def end_claims_of(
        self,
        signer: Signer,
        holder: str,
        queue: str | None = None,
        item_ids: Iterable[str] | None = None,
    ) -> tuple[str, int]:
        """Ends someone's claims (of one queue, some items, or all) as a lead: gives the
        lead's name and how many ended. The signer must be enrolled as lead and prove
        it holds the key by signing a fresh challenge; anyone else is refused."""
        lead, role = self.identify(signer, role=SIGNOFF_ROLE)
        challenge = b"sealdesk: end the claims of " + holder.encode() + os.urandom(32)
        namespace = namespace_for(role)
        try:
            proof = sshsig.verify(signer.sign(challenge, namespace), challenge, namespace)
        except (sshsig.SignatureError, SealdeskError, OSError) as exc:
            raise PermissionRefused(f"{lead}'s key did not sign the challenge: {exc}") from None
        if proof.public_key != signer.public_key.blob:
            raise PermissionRefused(f"the challenge was signed with a key other than {lead}'s")
        return lead, claims.release(self.conn, holder, queue, item_ids)

    def _claimer(self) -> str:
        if self.viewer is None:
            raise InputError(
                "a claim needs to know who is claiming: give --key, or forward an agent "
                "holding your enrolled key",
                field="key",
            )
        return self.viewer

    def own_work(self, queue: str) -> tuple[str, ...]:
        """Gives the items of a queue that are the viewer's work first under the newest
        review plan: those it assigns to them, or, to someone outside the plan (an
        adjudicator), the unresolved ones. None without a plan for the queue or a viewer."""
        current = self.plan()
        planned = current.for_queue(queue) if current is not None else None
        if current is None or planned is None or self.viewer is None:
            return ()
        if self.viewer not in planned["principals"]:
            held = review_plan.states(self.conn, current, queue)
            return tuple(i for i, s in held.items() if s.outcome == review_plan.UNRESOLVED)
        current.read_keys(queue)
        ids = self.conn.execute("SELECT item_id FROM items WHERE queue = ?", (queue,))
        return tuple(i for (i,) in ids if self.viewer in current.assigned(queue, i))

    def disputed(self, queue: str | None = None) -> list[dict[str, Any]]:
        """Gives the planned items (of one queue, or all) whose decisions disagree, most
        disputed first (``engine.agreement.plan.disputed``), each with its title and who
        said what; an item the plan still keeps the viewer blind to is left out."""
        current = self.plan()
        if current is None:
            return []
        found = [
            s
            for s in review_plan.disputed(self.conn, current)
            if queue in (None, s.queue) and not review_plan.blind_to(s, self.viewer)
        ]
        titles = {
            (q, i): title
            for q, i, title in self.conn.execute(
                "SELECT queue, item_id, title FROM items WHERE item_id IN "
                "(SELECT value FROM json_each(?))",
                (canonical_json([s.item_id for s in found]),),
            )
        }
        return [
            {
                "queue": s.queue,
                "item_id": s.item_id,
                "title": titles.get((s.queue, s.item_id), ""),
                "k": s.k,
                "ratings": {p: r.decision for p, r in sorted(s.ratings.items())},
            }
            for s in found
        ]

    def plan_progress(self) -> dict[str, dict[str, Any]]:
        """Gives the plan's progress per queue (``engine.agreement.plan.progress``), read
        again only when the ledger or the items changed."""
        mark = self.watermark()
        if self._progress_mark != mark:
            current = self.plan()
            self._plan_progress = (
                review_plan.progress(self.conn, current) if current is not None else {}
            )
            self._progress_mark = mark
        return self._plan_progress

    def blind(self, queue: str, item_id: str) -> bool:
        """Says whether the viewer may not yet see others' decisions on the item (a plan
        asks them for an independent one and they have not given it)."""
        current = self.plan()
        if current is None or not current.planned(queue, item_id):
            return False
        state = review_plan.states(self.conn, current, queue, [item_id])[item_id]
        return review_plan.blind_to(state, self.viewer)

    def history(self, queue: str, item_id: str) -> list[dict[str, Any]]:
        """Gives every record about an item, oldest first, marking retracted ones; to a
        viewer the plan keeps blind, only their own records on it."""
        rows = self.conn.execute(
            "SELECT seq, kind, decision, principal, role, time, record_hash, retracts, message "
            "FROM records WHERE queue=? AND item_id=? ORDER BY seq",
            (queue, item_id),
        ).fetchall()
        if self.blind(queue, item_id):
            rows = [r for r in rows if r[3] == self.viewer]
        retracted = {r[7] for r in rows if r[1] == "retract"}
        from engine.canonical import strict_loads

        out = []
        for r in rows:
            body = strict_loads(r[8])
            # a decision's reason and rationale; another kind's "data" is not shown here
            data = (body.get("data") or {}) if r[1] == "decision" else {}
            out.append(
                {
                    "seq": r[0],
                    "kind": r[1],
                    "decision": r[2],
                    "principal": r[3],
                    "role": r[4],
                    "time": r[5],
                    "record_hash": r[6],
                    "retracts": r[7],
                    "note": body.get("note"),
                    "reason": data.get("reason"),
                    "rationale": data.get("rationale"),
                    "guidelines_sha256": data.get("guidelines_sha256"),
                    "retracted": r[6] in retracted,
                }
            )
        return out

    def subject_history(self, queue: str, item_id: str) -> list[dict[str, Any]]:
        """Gives every record about the other items of an item's subject (its earlier and
        later runs' items), oldest first, each as ``history`` gives it plus ``item_id``,
        ``run_id`` and ``earlier`` (made on an item ingested before this one): the
        chain a carried or re-opened decision comes from. Empty without a subject."""
        if not subjects.enabled(self.conn):
            return []
        row = self.conn.execute(
            "SELECT rowid, subject FROM items WHERE queue = ? AND item_id = ?", (queue, item_id)
        ).fetchone()
        if row is None or row[1] is None:
            return []
        out = []
        for other, run_id, rowid in self.conn.execute(
            "SELECT item_id, run_id, rowid FROM items WHERE queue = ? AND subject = ? "
            "AND item_id <> ?",
            (queue, row[1], item_id),
        ).fetchall():
            for rec in self.history(queue, other):
                out.append({**rec, "item_id": other, "run_id": run_id, "earlier": rowid < row[0]})
        return sorted(out, key=lambda rec: rec["seq"])
