"""The suite's guard: sealdesk code never opens a workspace's database files outside SQLite.

POSIX drops every lock a process holds on a file when it closes *any* descriptor
of that file, so one plain ``open()`` of ``sealdesk.db`` (or its ``-wal``,
``-shm``, ``-journal``) in a process that holds a connection lets another
writer delete the log that process still writes into. The guard is a Python
audit hook on the ``open`` event (raised by ``open``, ``io.open``,
``os.open`` and everything built on them: pathlib, shutil, hashlib's file
helpers). When such a file is opened and any frame on the stack belongs to
``engine`` or ``reviewer``, the open is refused with ``GuardTripped`` and the
offence is recorded; the suite fails the test it happened in
(tests/conftest.py), even if the code under test swallowed the exception.
SQLite's own opens happen in C and never pass the hook.

In the test process the conftest installs it; every Python subprocess a test
starts installs it too, through the ``sitecustomize`` in ``guarded_site/``
(put first on PYTHONPATH), and appends offences to the file named by
$SEALDESK_STORAGE_GUARD_LOG, which the conftest reads after each test.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LOG_ENV = "SEALDESK_STORAGE_GUARD_LOG"
DATABASE_FILE = re.compile(r"(?:^|[/\\])sealdesk\.db(?:-wal|-shm|-journal)?$")
GUARDED = ("engine", "reviewer")

offences: list[str] = []
_installed = False
_log_offences = False  # to $SEALDESK_STORAGE_GUARD_LOG: in subprocesses of the suite


class GuardTripped(RuntimeError):
    """sealdesk code opened a workspace database file outside SQLite."""


def _culprit(frame) -> str | None:
    """Gives 'file:line' of the innermost sealdesk frame on the stack, else None."""
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module.partition(".")[0] in GUARDED:
            return f"{frame.f_code.co_filename}:{frame.f_lineno} ({module})"
        frame = frame.f_back
    return None


def _hook(event: str, args: tuple) -> None:
    if event != "open":
        return
    path = args[0]
    if isinstance(path, int) or path is None:
        return  # a descriptor already open: its open was checked
    try:
        text = os.fsdecode(path)
    except TypeError:
        return
    if not DATABASE_FILE.search(text):
        return
    where = _culprit(sys._getframe(1))
    if where is None:
        return  # a test's own code (copying a fixture), not sealdesk's
    offence = f"{where} opened {text} outside SQLite (pid {os.getpid()})"
    offences.append(offence)
    log = os.environ.get(LOG_ENV) if _log_offences else None
    if log:
        # Written with os.write on a descriptor of the log, not a database file.
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (offence + "\n").encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
    raise GuardTripped(offence)


def install(*, log_offences: bool = False) -> None:
    """Installs the audit hook in this process (once; audit hooks cannot be removed);
    ``log_offences`` also appends each offence to $SEALDESK_STORAGE_GUARD_LOG."""
    global _installed, _log_offences
    _log_offences = log_offences
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


# Workspace.open's header check as it stood when receipted decisions vanished: run while
# the process held a connection, its close dropped that connection's locks.
OLD_HEADER_CHECK = """
with open(db_path, "rb") as handle:
    magic = handle.read(16)
"""


def run_old_header_check(db_path: str | os.PathLike[str]) -> None:
    """Runs the old header check as the engine ran it (as code of the module that opens a
    workspace, engine.workspace.base)."""
    import engine.workspace.base

    code = compile(OLD_HEADER_CHECK, engine.workspace.base.__file__, "exec")
    exec(code, {"__name__": "engine.workspace.base", "db_path": db_path})


def logged_offences(log: str, start: int) -> tuple[list[str], int]:
    """Gives the offences subprocesses logged past byte ``start``, and the new end."""
    try:
        with open(log, "rb") as handle:
            handle.seek(start)
            data = handle.read()
    except FileNotFoundError:
        return [], start
    return data.decode("utf-8", "replace").splitlines(), start + len(data)


@contextmanager
def expecting_offences() -> Iterator[list[str]]:
    """Gives the list of offences made inside the block, and forgives them (for the
    guard's own tests)."""
    before = len(offences)
    caught: list[str] = []
    try:
        yield caught
    finally:
        caught.extend(offences[before:])
        del offences[before:]
