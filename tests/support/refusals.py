"""What a refusal must look like from outside: one line on stderr, and nothing written."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path


def snapshot(ws: Path) -> dict[str, bytes]:
    """Gives every file's bytes under a workspace (its database as a dump), to prove
    nothing was written."""
    conn = sqlite3.connect(ws / "sealdesk.db")
    dump = "\n".join(conn.iterdump()).encode()
    conn.close()
    files = {
        str(p.relative_to(ws)): p.read_bytes()
        for p in ws.rglob("*")
        if p.is_file() and not p.name.startswith("sealdesk.db")
    }
    return {"db": dump, **files}


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    """Gives the one line a failed command wrote to stderr; fails unless it failed with
    exactly one line."""
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]
