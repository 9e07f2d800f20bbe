"""What every ``sealdesk`` subcommand is given: which workspace, and how to open it.

The root group makes one ``Ctx`` per invocation; a subcommand takes it with
``pass_ctx`` (or click's ``pass_obj``). It lives apart from the command tree
(``engine.commands``) so that the modules the tree loads by name import this
small module, and never the tree that loads them.
"""

from __future__ import annotations

from pathlib import Path

import click

# Set by ``sealdesk ssh-gate``: its policy then governs this run and every job started
# from it. Named here, below the command tree, so that a command may ask whether it
# runs gated without importing the gate's policy (which imports the tree).
GATE_ENV_VAR = "SEALDESK_GATE"


class Ctx:
    """What every command gets: where the workspace is."""

    def __init__(self, workspace: str | None) -> None:
        self.workspace_flag = workspace

    @property
    def path(self) -> Path:
        from engine.workspace import resolve_path

        return resolve_path(self.workspace_flag)

    def open(self, *, read_only: bool = False, unmigrated: bool = False):
        """Gives the open workspace; ``read_only`` for commands that only read (they then
        work on a read-only copy, and can write nothing); ``unmigrated`` for the one
        command that migrates a workspace from before enrolment records."""
        from engine.workspace import Workspace

        return Workspace.open(self.path, read_only=read_only, unmigrated=unmigrated)


pass_ctx = click.make_pass_decorator(Ctx)
