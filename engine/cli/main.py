"""Runs a ``sealdesk`` command tree: checks the arguments, applies the ssh gate, runs it.

``main`` runs the tree it is given: ``python -m engine.cli`` gives it the engine's
tree with the commands installed packages declare (``engine.cli.commands``); the
``sealdesk`` script is the review app's composition of the same tree with the
app's own commands added (``reviewer.main``). Under ``sealdesk ssh-gate`` every
invocation first passes the gate's policy (``engine.cli.gate_policy``), which
judges the argv against that same tree. Every sealdesk error becomes one line
and its exit code here, in one place.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import click

from engine.cli.commands import SESSION, installed_tree
from engine.errors import SealdeskError
from engine.terminal_text import visible

__all__ = ["main"]


def main(argv: list[str] | None = None, *, root: click.Group | None = None) -> None:
    """Runs the command tree ``root`` (default: the engine's, with the commands installed
    packages add), turning sealdesk errors into one line and an exit code."""
    if root is None:
        root = installed_tree()
    args = sys.argv[1:] if argv is None else list(argv)
    for number, arg in enumerate(args, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # bytes a UTF-8 locale could not decode (surrogateescape)
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            click.echo(
                f"sealdesk: error: argument {number} ({visible(shown)}) is not valid UTF-8; "
                "sealdesk signs and stores text, so every argument must be UTF-8",
                err=True,
            )
            sys.exit(2)
    try:
        if os.environ.get("SEALDESK_GATE") is not None:
            # Under ssh-gate: this run, whoever started it (the gate, a job of an app
            # the gate opened), passes the gate's policy first.
            from engine.cli.gate_policy import enforce_from_environment

            enforce_from_environment(args, root)
        root.main(args=args, prog_name="sealdesk", standalone_mode=False)
    except SealdeskError as exc:
        # Errors quote what they were given (ids, field names, paths): shown, not obeyed.
        click.echo(f"sealdesk: error: {visible(exc.one_line())}", err=True)
        sys.exit(exc.exit_code)
    except sqlite3.Error as exc:  # locked, full, read-only, damaged: one line that says which
        from engine.sqlitedb import storage_error
        from engine.workspace import DB_NAME

        where = SESSION[0].path / DB_NAME if SESSION else Path(DB_NAME)
        error = storage_error(exc, where)
        click.echo(f"sealdesk: error: {visible(error.one_line())}", err=True)
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        click.echo("sealdesk: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        # One line like every other error; a usage error says where help is.
        message = " ".join(exc.format_message().split())
        ctx = getattr(exc, "ctx", None)
        hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        click.echo(f"sealdesk: error: {visible(message)}{hint}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
