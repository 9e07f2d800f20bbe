"""The harness behind the ``tmux`` fixture (tests/conftest.py): one tmux server on a
private socket, driven the way a person at a terminal would (keys in, screens out).

Every wait polls the captured screen; none sleeps blindly.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class Tmux:
    """One tmux server on a private socket: sessions by name, their screens, keys."""

    def __init__(self, tmux: str, sock: Path) -> None:
        # -u: panes are UTF-8 whatever this process's locale says (the app draws ✓ ✗ ▶).
        self.base = [tmux, "-u", "-S", str(sock)]
        self.pid: int | None = None

    def __call__(self, *args: str) -> str:
        return subprocess.run(
            [*self.base, *args], capture_output=True, text=True, check=True
        ).stdout

    def new(
        self,
        name: str,
        command: str,
        width: int = 100,
        height: int = 30,
        env: dict[str, str] | None = None,
    ) -> None:
        """Starts a detached session running a shell command (the first starts the server).

        ``env`` is exported inside the session's shell: a tmux server started
        earlier would not pass a new client's environment on.
        """
        exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in (env or {}).items())
        # The pane's terminal is told its size from inside before anything reads it: in
        # the full suite a program started in a new pane sometimes found no size on its
        # terminal (0x0) and took 80x24, while tmux drew the pane at the size asked for.
        exports = f"stty cols {width} rows {height} 2>/dev/null; " + exports
        subprocess.run(
            [
                *self.base,
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                str(width),
                "-y",
                str(height),
                exports + command,
            ],
            env={**os.environ, "LANG": "C.UTF-8"},
            check=True,
        )
        # A window no client is attached to takes the server's default size (80x24)
        # whenever tmux recalculates sizes, which other sessions and commands can
        # trigger; pin this one at the size asked for.
        self("set-option", "-t", name, "default-size", f"{width}x{height}")
        self("set-option", "-w", "-t", name, "window-size", "manual")
        self("resize-window", "-t", name, "-x", str(width), "-y", str(height))
        if self.pid is None:
            self.pid = int(self("display-message", "-p", "#{pid}"))

    def size(self, name: str) -> str:
        """Gives a session's pane size as WIDTHxHEIGHT (for messages when a wait fails)."""
        return self("display-message", "-p", "-t", name, "#{pane_width}x#{pane_height}").strip()

    def screen(self, name: str) -> str:
        """Gives what a session's pane shows now (plus its scrollback)."""
        return self("capture-pane", "-p", "-t", name, "-S", "-200")

    def keys(self, name: str, *keys: str) -> None:
        self("send-keys", "-t", name, *keys)

    def wait_for(
        self, name: str, text: str, timeout: float = 60.0, unless: str | None = None
    ) -> str:
        """Gives the screen once text appears on it; fails showing the screen if it never does.

        ``unless`` names a text after which ``text`` can no longer come (say the
        shell's ``EXIT=`` once the program ended): seen first, the wait fails at
        once, so a generous ``timeout`` for a slow, loaded machine costs nothing
        when the program has failed.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen(name)
            if text in shown:
                return shown
            if unless is not None and unless in shown:
                raise AssertionError(f"{unless!r} came before {text!r} in {name}:\n{shown}")
            time.sleep(0.1)
        raise AssertionError(
            f"{text!r} never appeared in {name} (pane {self.size(name)}); screen was:\n"
            f"{self.screen(name)}"
        )

    def wait_until(
        self, name: str, holds: Callable[[str], bool], what: str, timeout: float = 60.0
    ) -> str:
        """Gives the screen once holds(screen) is true of one capture of it; fails showing
        the screen if it never is. For a state made of several parts drawn apart (two
        queues' counts, rows of a list): waiting for one part and then reading the others
        reads them before they are drawn."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen(name)
            if holds(shown):
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{name} never showed {what}; screen was:\n{self.screen(name)}")
