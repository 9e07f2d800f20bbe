"""How sealdesk opens SQLite, and a quick import of sqlite-utils.

sqlite-utils imports pandas and numpy at module load only to map their
column types, which sealdesk never inserts; that import costs over a second
per CLI call. ``database`` hides them for the duration of the
import when nothing has loaded them yet.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator


def _import_sqlite_utils():
    if "sqlite_utils" in sys.modules:
        return sys.modules["sqlite_utils"]
    hidden = [name for name in ("pandas", "numpy") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # ImportError on import
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


def connect(db_path: Path) -> sqlite3.Connection:
    """Gives a connection configured the one way sealdesk uses SQLite."""
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=60.0,
                           check_same_thread=False, factory=LockingConnection)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA recursive_triggers=ON")
    conn.execute("PRAGMA busy_timeout=60000")
    return conn


class LockingConnection(sqlite3.Connection):
    """A connection whose write transactions one thread at a time may hold.

    The app's worker threads share one Workspace: a second BEGIN on a
    connection already in a transaction fails, and its ROLLBACK would undo
    the first thread's half-written record.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.write_lock = threading.RLock()


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
