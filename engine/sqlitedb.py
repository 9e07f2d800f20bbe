"""How sealdesk opens SQLite, what its errors mean, and a quick import of sqlite-utils.

This module owns every connection to a workspace's database, and only SQLite
touches the database's files (``sealdesk.db`` and its ``-wal``, ``-shm`` and
``-journal``). POSIX file locks belong to a process, not to a descriptor:
closing *any* descriptor of a file drops every lock the process holds on it,
those of its live SQLite connections included. Another process then sees no
reader, checkpoints, and deletes the write-ahead log this one still writes
into, and acknowledged records vanish. SQLite shares one lock table per file
among all of a process's connections and closes a descriptor only when no
lock needs it, so a second connection (read-only or not) is always safe where
a plain ``open()`` never is. Copies go through SQLite's online backup
(``backup_to``), never a file copy.

sqlite-utils imports pandas and numpy at module load only to map their
column types, which sealdesk never inserts; that import costs over a second
per CLI call. ``database`` hides them for the duration of the
import when nothing has loaded them yet.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from urllib.parse import quote

from engine.errors import (
    AccessDenied,
    DatabaseLocked,
    DiskFull,
    InputError,
    ReadOnlyWorkspace,
    SealdeskError,
    WorkspaceError,
)

# How long a command waits for another process's lock before it gives up.
LOCK_TIMEOUT_ENV = "SEALDESK_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 60.0
READ_COMMANDS = (
    "verify, items, export, prove, checkpoint export, keys list, "
    "signoff --summary-only, review --read-only"
)


def _import_sqlite_utils():
    if "sqlite_utils" in sys.modules:
        return sys.modules["sqlite_utils"]
    hidden = [name for name in ("pandas", "numpy") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # ImportError on import
    try:
        import sqlite_utils
    finally:
        for name in hidden:
            if sys.modules.get(name) is None:
                del sys.modules[name]
    return sqlite_utils


def database(conn: sqlite3.Connection):
    """Gives a sqlite-utils Database over a connection (recursive_triggers on)."""
    return _import_sqlite_utils().Database(conn, execute_plugins=False)


def lock_timeout() -> float:
    """Gives the seconds to wait for another process's lock: $SEALDESK_LOCK_TIMEOUT, else 60."""
    raw = os.environ.get(LOCK_TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_LOCK_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86400:  # also refuses nan and inf
        raise InputError(
            f"${LOCK_TIMEOUT_ENV}={raw!r}: must be a number of seconds from 0 to 86400"
        )
    return value


def connect(
    db_path: Path,
    *,
    read_only: bool = False,
    before_writing: Callable[[sqlite3.Connection], None] | None = None,
) -> sqlite3.Connection:
    """Gives a connection configured the one way sealdesk uses SQLite.

    ``read_only`` opens without ever writing: no switch to WAL, no journal,
    and ``query_only`` refuses any statement that would write.
    ``before_writing`` runs on the new connection before anything could write
    to the file (the switch to WAL writes its header): it reads through SQLite
    whether the file is one to write at all, and raises to close it unwritten.
    That check is SQLite's own read: a plain ``open()`` of a database file in a
    process that holds a connection to it would drop the process's locks
    (``engine.sqlitedb``'s module docstring says why).
    """
    timeout = lock_timeout()
    if read_only:
        conn = open_read_only(
            db_path, timeout=timeout, check_same_thread=False, factory=LockingConnection
        )
    else:
        conn = sqlite3.connect(
            db_path,
            isolation_level=None,
            timeout=timeout,
            check_same_thread=False,
            factory=LockingConnection,
        )
    if before_writing is not None:
        try:
            before_writing(conn)
        except BaseException:
            conn.close()
            raise
    if read_only:
        conn.execute("PRAGMA query_only=ON")
    else:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA recursive_triggers=ON")
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    return conn


def _uri(db_path: Path, query: str) -> str:
    # A path holding '?', '#' or '%' would otherwise be read as part of the URI.
    return f"file:{quote(str(Path(db_path).absolute()))}?{query}"


def _wal_exists(db_path: Path) -> bool:
    try:
        os.stat(f"{db_path}-wal")
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: assume it is there
    return True


def open_read_only(db_path: Path, **kwargs) -> sqlite3.Connection:
    """Gives a connection that reads the database and can write nothing, not even -shm.

    ``mode=ro`` first: it reads the write-ahead log and sees other processes'
    commits. In a directory this user cannot write (a read-only copy, a
    read-only mount) SQLite cannot create the -shm file ``mode=ro`` needs, so
    then, and only when there is no -wal file (the state a clean close leaves;
    a -wal file means a writer may be at work, or records not yet in
    sealdesk.db), the file is opened ``immutable=1``: read as it stands on
    disk, without locks or side files.
    """
    kwargs.setdefault("timeout", lock_timeout())
    conn = sqlite3.connect(_uri(db_path, "mode=ro"), uri=True, isolation_level=None, **kwargs)
    try:
        # Opening is lazy: the first read is what finds the log and the -shm file.
        conn.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchall()
        return conn
    except sqlite3.Error as exc:
        conn.close()
        primary = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
        if primary not in (_READONLY, _CANTOPEN) or _wal_exists(db_path):
            raise
    conn = sqlite3.connect(_uri(db_path, "immutable=1"), uri=True, isolation_level=None, **kwargs)
    conn.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchall()
    return conn


# SQLite's primary result codes (an extended code's low byte).
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT = 3, 5, 6, 8, 10, 11
_FULL, _CANTOPEN, _NOTADB, _AUTH = 13, 14, 26, 23


def storage_error(exc: sqlite3.Error, db_path: Path, *, reading: bool = False) -> SealdeskError:
    """Gives the one-line sealdesk error saying what really stopped SQLite: another
    process's lock, a full disk, a read-only workspace, a denied permission (naming the
    file or directory), a file that is not a database, or else SQLite's own words.

    ``reading``: the error came from opening read-only, so reading itself failed.
    """
    db_path = Path(db_path)
    root = db_path.parent
    said = " ".join(str(exc).split())
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary in (_BUSY, _LOCKED):
        return DatabaseLocked(
            f"database {db_path} is locked by another process: waited "
            f"{_waited()} for it (${LOCK_TIMEOUT_ENV} sets how long); try "
            "again when that process is done"
        )
    if primary == _FULL or (primary == _IOERR and _no_space_left(root)):
        return DiskFull(
            f"disk full: no space left on the filesystem holding {root} "
            f"(SQLite: {said}); nothing of the failed write was kept; free some "
            "space and try again"
        )
    if primary in (_READONLY, _CANTOPEN, _PERM, _AUTH):
        why = _why_not_writable(db_path)
        unreadable = _unreadable(db_path)
        if unreadable is not None:
            return AccessDenied(f"permission denied: {unreadable} (SQLite: {said})")
        if why is not None:
            if reading or (_wal_exists(db_path) and not os.path.exists(f"{db_path}-shm")):
                # SQLite reads a -wal file through its -shm file, which it must then write.
                return ReadOnlyWorkspace(
                    f"workspace {root} is read-only ({why}) and SQLite cannot read its "
                    f"{db_path.name}-wal without writing ({said}); run any sealdesk command "
                    "on a writable copy once (closing folds the log into the database), then "
                    "copy it again"
                )
            return ReadOnlyWorkspace(
                f"workspace {root} is read-only: {why}; read commands still work ({READ_COMMANDS})"
            )
    if primary == _NOTADB:
        return WorkspaceError(f"{db_path}: not a sealdesk database ({said})")
    if primary == _CORRUPT:
        return WorkspaceError(
            f"{db_path}: the database is damaged ({said}); restore it from a copy"
        )
    return WorkspaceError(f"database {db_path}: {said}")


def _waited() -> str:
    try:
        return f"{lock_timeout():g} s"
    except InputError:
        return "its lock timeout"


def _no_space_left(directory: Path) -> bool:
    try:
        return os.statvfs(directory).f_bavail == 0
    except OSError:
        return False


def _may(path: str | Path, mode: int) -> bool:
    # The effective ids and capabilities decide, as they do for SQLite's own open().
    effective = os.access in os.supports_effective_ids
    return os.access(path, mode, effective_ids=effective)


def _why_not_writable(db_path: Path) -> str | None:
    """Gives why this process cannot write the database, or None if nothing stops it."""
    root = db_path.parent
    try:
        if os.statvfs(root).f_flag & os.ST_RDONLY:
            return f"{root} is on a read-only filesystem"
    except OSError:
        pass
    for side in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")):
        if side.exists() and not _may(side, os.W_OK):
            return f"no write permission on {side}"
    if not _may(root, os.W_OK | os.X_OK):
        return (
            f"no write permission on directory {root} (SQLite creates "
            f"{db_path.name}-wal and {db_path.name}-shm there)"
        )
    return None


def _unreadable(db_path: Path) -> str | None:
    """Gives the file or directory this process may not read, or None."""
    root = db_path.parent
    if not _may(root, os.R_OK | os.X_OK):
        return f"cannot read directory {root}"
    for side in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")):
        if side.exists() and not _may(side, os.R_OK):
            return f"cannot read {side}"
    return None


class LockingConnection(sqlite3.Connection):
    """A connection whose write transactions one thread at a time may hold.

    The app's worker threads share one Workspace: a second BEGIN on a
    connection already in a transaction fails, and its ROLLBACK would undo
    the first thread's half-written record. ``diverged`` says why this
    connection may write no more, once its writes were found not to reach
    the database on disk (``engine.ledger.store``).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.write_lock = threading.RLock()
        self.diverged: str | None = None
        # What ``detached_file`` last found in place: (real path, identities of the
        # database and its -wal at that path).
        self.files_seen: tuple[str, tuple] | None = None


_DELETED = " (deleted)"  # how Linux names the target of a descriptor whose file was unlinked


def main_file(conn: sqlite3.Connection) -> str | None:
    """Gives the real path of the connection's main database file (None in memory)."""
    for _, name, file in conn.execute("PRAGMA database_list"):
        if name == "main":
            return os.path.realpath(file) if file else None
    return None


def detached_file(conn: sqlite3.Connection) -> str | None:
    """Gives the database file (or its -wal, -shm, -journal) that this process still
    holds open although it is gone from its path, else None.

    A process whose locks were dropped (see the module docstring) goes on writing
    into a log that another process has checkpointed and deleted: its commits
    reach no file anyone else will read. Linux names such a descriptor's target
    "<path> (deleted)" in /proc/self/fd; elsewhere this check finds nothing.
    """
    seen = getattr(conn, "files_seen", None)
    path = seen[0] if seen is not None else main_file(conn)
    if path is None:
        return None
    # While this process holds a file open its inode cannot be reused, so the same
    # identities at the same paths as at the last full look mean nothing was deleted
    # since: two stat calls instead of reading every descriptor's link.
    now = (_identity(path), _identity(f"{path}-wal"))
    if seen is not None and seen[1] == now:
        return None
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return None
    gone = {f"{path}{suffix}{_DELETED}" for suffix in ("", "-wal", "-shm", "-journal")}
    for fd in descriptors:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since it was listed
            continue
        if target in gone:
            return target[: -len(_DELETED)]
    if hasattr(conn, "files_seen"):
        conn.files_seen = (path, now)
    return None


def _identity(path: str) -> tuple[int, int] | None:
    """Gives (device, inode) of the file at path (a stat, never an open), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Gives the connection inside ``BEGIN IMMEDIATE``: committed on success, rolled back
    on any error, and held by one thread at a time (other processes wait on SQLite's lock).

    The connection must be in autocommit mode (``isolation_level=None``); one
    made by ``connect`` is a LockingConnection, any other is single-threaded.
    """
    with getattr(conn, "write_lock", None) or nullcontext():
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def backup_to(conn: sqlite3.Connection, dest_path: Path) -> None:
    """Copies the database under ``conn`` into a new file at ``dest_path``, whole and
    consistent, through SQLite's online backup, and checks the copy's integrity.

    The copy is one snapshot of committed records however many writers are at
    work: SQLite reads it under a read transaction, as any reader does, so no
    lock of this process's connections is disturbed (a file copy of a live
    database is neither consistent nor safe: see the module docstring).
    """
    dest_path = Path(dest_path)
    if dest_path.exists():
        raise InputError("already exists; a backup never writes over a file", path=dest_path)
    dest = sqlite3.connect(dest_path, isolation_level=None)
    try:
        conn.backup(dest)
        # A rollback journal until sealdesk opens the copy to write (then WAL): checking
        # the copy read-only leaves no -wal or -shm beside it.
        dest.execute("PRAGMA journal_mode=DELETE")
        (verdict,) = dest.execute("PRAGMA integrity_check").fetchone()
        if verdict != "ok":
            raise WorkspaceError(
                f"{dest_path}: the copy fails SQLite's integrity check ({verdict})"
            )
    finally:
        dest.close()
