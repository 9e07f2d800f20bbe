"""A process that holds a workspace open the way the review app does, driven line by line.

    python -m tests.support.held_workspace WORKSPACE KEY

It opens the workspace once and keeps that connection for its whole life, as
the app does, then reads commands on stdin, one a line, and answers each with
one JSON line on stdout:

    reopen            open the workspace again while the first stays live, as the
                      app's screens do (search, calibration, sign-off), and close it
    another           the same through ``Workspace.another``
    decide ITEM DEC   sign a decision on flagged_pairs/ITEM with KEY; answers the
                      acknowledgement {"seq", "record_hash", "receipt"}, the receipt
                      kept in $SEALDESK_RECEIPTS as the app keeps it, or {"error"}
    quit              close and exit

Every acknowledgement it prints is one a person would have been shown. ``Held``
starts it and asks it one command at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class Held:
    """A held-workspace process, asked one command at a time."""

    def __init__(self, ws: Path, key: Path, receipts: Path) -> None:
        env = {**os.environ, "SEALDESK_RECEIPTS": str(receipts)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.held_workspace", str(ws), str(key)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )

    def ask(self, line: str) -> dict:
        """Gives the process's answer to one command line."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def quit(self) -> None:
        assert self.ask("quit") == {"ok": "closed"}
        self.proc.wait(timeout=60)


def main(root: str, key: str) -> None:
    from engine.errors import SealdeskError
    from engine.ledger.receipts import keep
    from engine.ledger.signers import FileSigner
    from engine.workspace import Workspace

    ws = Workspace.open(Path(root))
    signer = FileSigner(Path(key))

    def answer(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        try:
            if words[0] == "reopen":
                Workspace.open(Path(root)).close()
                answer({"ok": "reopen"})
            elif words[0] == "another":
                ws.another().close()
                answer({"ok": "another"})
            elif words[0] == "decide":
                record = ws.decide(signer, "flagged_pairs", words[1], words[2])
                receipt = ws.receipt(record)
                keep([receipt])
                answer({"seq": record.seq, "record_hash": record.record_hash, "receipt": receipt})
            else:
                answer({"error": f"unknown command {words[0]}"})
        except SealdeskError as exc:
            answer({"error": exc.one_line()})
    ws.close()
    answer({"ok": "closed"})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
