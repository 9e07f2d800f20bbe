"""The review app as each person runs it from their laptop: ``ssh -A -t … sealdesk review``
in a tmux session of its own, with that person's agent; and readings of its captured
screen (the detail pane, a row's status glyph) for the tests that drive it.

The harness under it is tests/support/ssh.py (sshd, agents) and tests/support/tmux.py.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from engine.workspace import Workspace

# The bar between the queue list and the detail pane, as the app draws it.
PANE_BAR = "▕"


def open_review(
    tmux, sshd, name: str, ws: Workspace, agent: Path, *, width: int = 100, height: int = 30
) -> None:
    """Starts `ssh -A -t … sealdesk --workspace WS review` in a tmux session named for name,
    whose shell says ``EXIT=<status>`` once ssh ends."""
    ssh = shlex.join(sshd.argv(f"sealdesk --workspace {ws.root} review", tty=True))
    tmux.new(
        name,
        f"{ssh}; echo EXIT=$?; sleep 600",
        width=width,
        height=height,
        env={"SSH_AUTH_SOCK": str(agent)},
    )


def detail_of(screen: str) -> str:
    """Gives the detail pane of a captured review screen: each line's text right of the
    bar, one line each."""
    return "\n".join(line.split(PANE_BAR, 1)[1] for line in screen.splitlines() if PANE_BAR in line)


def row_glyph(screen: str, title: str) -> str | None:
    """Gives the status glyph the queue list shows before the item titled title (``·``
    undecided, ``✓`` accepted, ``✗`` rejected), or None when its row is not on screen."""
    row = re.compile(rf"^.(\S)\s+[-\d.]+ {re.escape(title)}\s*{PANE_BAR}")
    for line in screen.splitlines():
        found = row.match(line)
        if found:
            return found.group(1)
    return None
