"""``sealdesk backup``: a copy of a live workspace that cannot be torn, checked before it is kept.

A workspace's database may be written by the review app and by other
commands at any moment. A file copy (``cp -r``, ``rsync``, a snapshot tool
that reads the file while it changes) can catch the database between a
write and its log, and a copy made from inside a process that holds the
database open drops that process's locks. So the database is copied only
through SQLite's online backup (``engine.sqlitedb.backup_to``): one
consistent snapshot of what was committed, whatever else is writing. The
other files (``trust/``, ``artifacts/``, ``jobs/``, ``inputs/``) are plain
files and are copied as they are; ``cache/`` (the embedding cache, rebuilt on
demand) is left out.

The copy is made under a hidden name beside ``DEST``, opened and verified
there (every record's hash, link, signature and signer; the artifacts the
ledger vouches for), and only then renamed to ``DEST``: a backup that
exists is one that verified.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engine.errors import InputError, IntegrityError
from engine.sqlitedb import backup_to
from engine.workspace import DB_NAME, Workspace

# Left out of a backup: rebuilt on demand, and possibly large.
SKIPPED_DIRS = ("cache",)
_DB_FILES = {DB_NAME + suffix for suffix in ("", "-wal", "-shm", "-journal")}


@dataclass(frozen=True)
class Backup:
    """What a backup holds: where, how many records (and the head's hash), how many files."""

    dest: Path
    records: int
    head_hash: str
    files: int


def _check_dest(ws: Workspace, dest: Path) -> None:
    """Raises unless ``dest`` is a new directory outside the workspace."""
    if os.path.lexists(dest):
        raise InputError(
            "already exists; a backup never writes over anything: name a new directory",
            path=dest,
            field="DEST",
        )
    parent = dest.absolute().parent
    if not parent.is_dir():
        raise InputError(f"its folder {parent} does not exist", path=dest, field="DEST")
    root = Path(os.path.realpath(ws.root))
    if Path(os.path.realpath(parent)).is_relative_to(root):
        raise InputError(
            f"is inside the workspace {ws.root}; put the backup somewhere else",
            path=dest,
            field="DEST",
        )


def _copy_files(src: Path, dest: Path) -> int:
    """Copies every file of the workspace but its database and the skipped folders;
    gives how many. Symbolic links are copied as links, never followed."""
    copied = 0
    for top, dirs, files in os.walk(src):
        here = Path(top)
        relative = here.relative_to(src)
        if relative == Path("."):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            files = [f for f in files if f not in _DB_FILES]
        for name in dirs:
            mode = stat.S_IMODE(os.lstat(here / name).st_mode)
            (dest / relative / name).mkdir(mode=mode)
        for name in files:
            shutil.copy2(here / name, dest / relative / name, follow_symlinks=False)
            copied += 1
    return copied


def backup_workspace(ws: Workspace, dest: str | Path) -> Backup:
    """Gives the backup made of ``ws`` at ``dest``, after verifying the copy.

    Nothing is left at ``dest`` unless the copy verified; a failed backup
    removes its partial copy.
    """
    from engine.signoff.verify import verify_workspace  # above the workspace's layer

    dest = Path(dest)
    _check_dest(ws, dest)
    partial = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.absolute().parent))
    try:
        os.chmod(partial, stat.S_IMODE(os.stat(ws.root).st_mode))
        backup_to(ws.conn, partial / DB_NAME)
        files = _copy_files(ws.root, partial)
        with Workspace.open(partial, read_only=True) as copy:
            report = verify_workspace(copy)
            head_seq, head_hash = copy.head()
        if report.first is not None:
            raise IntegrityError(
                f"the copy does not verify ({report.first.where}); no backup was kept "
                "(run sealdesk verify on the workspace itself)"
            )
        os.rename(partial, dest)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return Backup(dest, head_seq, head_hash, files)
