"""What every ``sealdesk`` subcommand is given: which workspace, and how to open it.

The root group makes one ``Ctx`` per invocation; a subcommand takes it with
``pass_ctx`` (or click's ``pass_obj``). It lives apart from the command tree
(``engine.cli.commands``) so that the modules the tree loads by name import this
small module, and never the tree that loads them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

# Set by ``sealdesk ssh-gate``: its policy then governs this run and every job started
# from it. Named here, below the producers, so that a producer's command may ask
# whether it runs gated without importing the command line's package (engine.cli).
GATE_ENV_VAR = "SEALDESK_GATE"


class Ctx:
    """What every command gets: where the workspace is, and how a producer's runs are
    signed (``run_signing`` makes, from a key or None, what ``Workspace.run_signing``
    takes; the command tree hands it in)."""

    def __init__(
        self, workspace: str | None, run_signing: Callable[..., Any] | None = None
    ) -> None:
        self.workspace_flag = workspace
        self.run_signing = run_signing
        self.signs_runs = False  # set by run_key_option on the commands that produce runs
        self.run_key: str | None = None

    @property
    def path(self) -> Path:
        from engine.workspace import resolve_path

        return resolve_path(self.workspace_flag)

    def open(self, *, read_only: bool = False, unmigrated: bool = False):
        """Gives the open workspace; ``read_only`` for commands that only read (they then
        work on a read-only copy, and can write nothing); ``unmigrated`` for the one
        command that migrates a workspace from before enrolment records."""
        from engine.workspace import Workspace

        ws = Workspace.open(self.path, read_only=read_only, unmigrated=unmigrated)
        if self.signs_runs and self.run_signing is not None and not read_only:
            ws.run_signing = self.run_signing(self.run_key, _warn)
        return ws


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def run_key_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """Gives a producer command a ``--key`` its runs are signed with (default: the
    ssh-agent's enrolled key), so the numbers a lead signs off have an author."""

    def remember(context: click.Context, _param: click.Parameter, value: str | None) -> None:
        ctx = context.find_object(Ctx)
        if ctx is not None:
            ctx.signs_runs = True
            ctx.run_key = value

    return click.option(
        "--key",
        default=None,
        type=click.Path(dir_okay=False),
        expose_value=False,
        callback=remember,
        help="OpenSSH private key that signs this run's record (whoever runs it is "
        "its author). Default: your enrolled key in ssh-agent.",
    )(command)


pass_ctx = click.make_pass_decorator(Ctx)
