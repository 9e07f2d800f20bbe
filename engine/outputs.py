"""Paths a user names on the command line: where a command may write (``--out``),
and which files it may read.

Every user-named output is written atomically: a new file is renamed over
the path. That rename would as happily replace the workspace's own database,
its trust list or a device such as ``/dev/null`` as an old export, so a path
is checked before any work starts:

- it must not be one of the workspace's own files (``sealdesk.db`` and its
  journals, anything under ``trust/`` or ``artifacts/``): the ledger and the
  trust list are changed only through sealdesk's own append paths;
- if it exists it must be a regular file (not a directory, device, pipe or
  socket); an old regular file is replaced, as an export is meant to. A link
  is followed, as a shell redirect follows it: its target is replaced and the
  link stays.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import click

from engine.errors import InputError

_DB_SUFFIXES = ("", "-wal", "-shm", "-journal")  # the database and SQLite's files beside it
_OWNED_DIRS = ("trust", "artifacts")


def workspace_owner(path: str | Path, workspace_root: str | Path) -> str | None:
    """Gives which workspace file path would overwrite (e.g. 'sealdesk.db'), else None."""
    from engine.workspace import DB_NAME  # only when an --out is given: not at start-up

    root = Path(os.path.realpath(workspace_root))
    target = Path(os.path.realpath(path))
    try:
        relative = target.relative_to(root)
    except ValueError:
        return None
    parts = relative.parts
    if not parts:
        return "the workspace directory"
    if len(parts) == 1 and parts[0] in {DB_NAME + suffix for suffix in _DB_SUFFIXES}:
        return parts[0]
    if parts[0] in _OWNED_DIRS:
        return f"{parts[0]}/"
    return None


def check_output_path(
    path: str | Path, workspace_root: str | Path | None, *, field: str | None = None
) -> Path:
    """Gives path if a command may write its output there; else an InputError."""
    # Deferred: the atomic writer's module (hashlib, tempfile) is not needed to start.
    from engine.artifacts import refuse_unsafe_target

    if workspace_root is not None:
        owner = workspace_owner(path, workspace_root)
        if owner is not None:
            raise InputError(
                f"is the workspace's own {owner} ({workspace_root}); write the "
                "output outside the workspace's database, trust/ and artifacts/",
                path=path,
                field=field,
            )
    refuse_unsafe_target(path, field=field)
    return Path(path)


class OutputFile(click.ParamType):
    """A click type for ``--out FILE``: checked before the command does any work.

    With ``allow_stdout``, ``-`` means standard output and is passed through.
    """

    name = "file"

    def __init__(self, *, allow_stdout: bool = False) -> None:
        self.allow_stdout = allow_stdout

    def convert(self, value, param, ctx):  # noqa: ANN001 - click's signature
        if value is None or (self.allow_stdout and value == "-"):
            return value
        text = os.fspath(value)
        root = _workspace_root(ctx)
        field = param.opts[0] if param is not None and param.opts else None
        try:
            check_output_path(text, root, field=field)
        except InputError as exc:
            self.fail(f"{text}: {exc.reason}", param, ctx)
        return text


def _workspace_root(ctx: click.Context | None) -> Path | None:
    """Gives the workspace the command runs against (flag, env, default)."""
    from engine.workspace import resolve_path

    flag = None
    while ctx is not None:
        if ctx.obj is not None and hasattr(ctx.obj, "workspace_flag"):
            flag = ctx.obj.workspace_flag
            break
        ctx = ctx.parent
    return resolve_path(flag)


class InputFile(click.Path):
    """A click type for an input file: as click.Path(dir_okay=False), and a device is
    refused up front (/dev/zero would be read until memory ran out). A pipe passes, so
    process substitution (<(...)) still works."""

    def __init__(self, **kwargs) -> None:  # noqa: ANN003 - click.Path's own options
        super().__init__(dir_okay=False, **kwargs)

    def convert(self, value, param, ctx):  # noqa: ANN001 - click's signature
        converted = super().convert(value, param, ctx)
        try:
            mode = os.stat(converted).st_mode
        except OSError:
            return converted  # missing or unreadable: the reader says so, naming the file
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            self.fail(f"{os.fspath(value)}: is a device, not a file", param, ctx)
        return converted
