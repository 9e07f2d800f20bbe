"""The ``sealdesk`` program: the engine's command tree with the review app's commands.

The engine's tree (``engine.cli.commands``) names no app. The app adds its own
commands here, from the outside, and this composition is what the ``sealdesk``
script and ``python -m reviewer`` run. ``COMMANDS`` is also declared as the
``sealdesk.commands`` entry points in ``pyproject.toml`` (a test holds the two
equal), so ``python -m engine.cli`` of an installed sealdesk offers the same
commands; this module does not depend on that metadata, so a checkout whose
installed metadata is older runs the whole program too.

Each command is imported only when it runs or ``--help`` lists it.
"""

from __future__ import annotations

import click

# A command's path (its words joined by dots) -> ("module:attribute", its line in --help).
COMMANDS = {
    "review": ("reviewer.cli:review", "Open the review app on the workspace."),
    "bench.review": (
        "reviewer.bench:bench_review",
        "Review app: time to first screen and decision latency.",
    ),
}


def tree() -> click.Group:
    """Gives sealdesk's whole command tree: the engine's, the commands installed packages
    add, and the app's own."""
    from engine.cli.commands import cli, installed_commands, with_commands

    return with_commands(cli, {**installed_commands(), **COMMANDS}, module="reviewer")


def main(argv: list[str] | None = None) -> None:
    """Runs ``sealdesk``: the whole tree, its errors as one line and an exit code."""
    from engine.cli.main import main as run

    run(argv, root=tree())
