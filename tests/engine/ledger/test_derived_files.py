"""A record the ledger took while a file generated from it failed says so, and how to
write the file again.

The failure is real: a 1 MiB tmpfs, filled to its last block, is mounted over
``trust/`` (or over the receipts directory) in a private mount namespace for
one command, so the database beside it has room and the derived file has none.
The namespace ends with the command: what is left on disk is the file as it
was before, exactly what a user finds after a full disk.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import SEALDESK, require_tool

# Mounts a 1 MiB tmpfs on $1, puts back what $2 holds, fills the tmpfs to its last
# block and runs the rest of the arguments there; then copies what the command left
# on the full filesystem to $3.
ON_FULL_DIR = """
dir=$1 saved=$2 left=$3; shift 3
mount -t tmpfs -o size=1m sealdesk-full "$dir" || exit 99
cp -a "$saved"/. "$dir"/ || exit 99
dd if=/dev/zero of="$dir/.filler" bs=4096 2>/dev/null
"$@"
rc=$?
rm "$dir/.filler" && cp -a "$dir"/. "$left"/ || exit 99
exit $rc
"""


def on_full_dir(directory: Path, tmp_path: Path, *cmd, env=None) -> subprocess.CompletedProcess:
    """Runs ``cmd`` while ``directory`` is a full filesystem holding what it holds now;
    what the command left there is copied to ``tmp_path / "left"``."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    saved, left = tmp_path / "saved", tmp_path / "left"
    saved.mkdir()
    left.mkdir()
    subprocess.run(["cp", "-a", f"{directory}/.", str(saved)], check=True)
    proc = subprocess.run(
        [require_tool("unshare"), "--mount", "--propagation", "private",
         "sh", "-c", ON_FULL_DIR, "sh", str(directory), str(saved), str(left),
         *map(str, cmd)],
        capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})},
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode != 99, proc.stderr
    assert not (directory / ".filler").exists()  # the tmpfs went with its namespace
    return proc


def kinds(ws: Path) -> list[tuple[int, str, str | None]]:
    with sqlite3.connect(ws / "sealdesk.db") as conn:
        return conn.execute("SELECT seq, kind, principal FROM records ORDER BY seq").fetchall()


def ssh_keygen_accepts(ws: Path, key: Path, tmp_path: Path) -> bool:
    """Says whether ssh-keygen, reading trust/allowed_signers, takes a signature by
    ``key`` as rita's reviewer signature a minute from now."""
    keygen = require_tool("ssh-keygen")
    message = tmp_path / "message"
    message.write_bytes(b"a decision rita signs after her key was revoked\n")
    signature = Path(f"{message}.sig")
    signature.unlink(missing_ok=True)
    subprocess.run(
        [keygen, "-Y", "sign", "-f", str(key), "-n", "reviewer@sealdesk", str(message)],
        check=True, capture_output=True,
    )  # fmt: skip
    later = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y%m%d%H%M%SZ")
    with open(message, "rb") as stdin:
        proc = subprocess.run(
            [keygen, "-Y", "verify", "-f", str(ws / "trust" / "allowed_signers"), "-I", "rita",
             "-n", "reviewer@sealdesk", "-s", str(signature), f"-Overify-time={later}"],
            stdin=stdin, capture_output=True,
        )  # fmt: skip
    return proc.returncode == 0


def test_a_revocation_recorded_while_allowed_signers_cannot_be_written_says_so(
    cli_ws, sealdesk, tmp_path
):
    ws, keys = cli_ws
    signers = ws / "trust" / "allowed_signers"
    before = signers.read_bytes()
    assert ssh_keygen_accepts(ws, keys["rita"], tmp_path)

    proc = on_full_dir(
        ws / "trust", tmp_path,
        *SEALDESK, "--workspace", ws, "keys", "revoke", "--principal", "rita",
        "--lead-key", keys["founder"],
    )  # fmt: skip

    # The revocation is in the ledger, and the command says so rather than "cannot write".
    seq, kind, _ = kinds(ws)[-1]
    assert kind == "revoke"
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout.startswith(f"#{seq} revoked rita's key ")
    assert proc.stderr == (
        f"sealdesk: error: the revocation (#{seq}) is in the ledger, but {signers} was not "
        "rewritten (cannot write: No space left on device), so ssh-keygen -Y verify still "
        f"reads the old one; write it again with: sealdesk --workspace {ws} keys "
        "export-signers\n"
    )
    # Written whole or not at all: the full disk holds the old file, no temporary one.
    left = tmp_path / "left"
    assert sorted(p.name for p in left.iterdir()) == ["allowed_signers"]
    assert (left / "allowed_signers").read_bytes() == before
    assert ssh_keygen_accepts(ws, keys["rita"], tmp_path)  # what the message warns of

    again = sealdesk("keys", "export-signers", workspace=ws)
    assert again.returncode == 0, again.stderr
    assert again.stdout == (
        f"{signers} written from the ledger: 2 key line(s), through record #{seq}\n"
    )
    assert not ssh_keygen_accepts(ws, keys["rita"], tmp_path)
    assert sealdesk("verify", workspace=ws).returncode == 0


def test_export_signers_writes_what_keys_revoke_writes(cli_ws, sealdesk):
    ws, keys = cli_ws
    revoked = sealdesk(
        "keys", "revoke", "--principal", "rita", "--lead-key", keys["founder"], workspace=ws
    )
    assert revoked.returncode == 0, revoked.stderr
    written = (ws / "trust" / "allowed_signers").read_bytes()
    (ws / "trust" / "allowed_signers").write_text("# edited by hand\n")
    assert sealdesk("keys", "export-signers", workspace=ws).returncode == 0
    assert (ws / "trust" / "allowed_signers").read_bytes() == written


def test_a_decision_recorded_while_its_receipt_cannot_be_kept_says_so(cli_ws, sealdesk, tmp_path):
    ws, keys = cli_ws
    receipts = tmp_path / "receipts"
    receipts.mkdir()
    env = {"SEALDESK_RECEIPTS": str(receipts)}
    proc = on_full_dir(
        receipts, tmp_path,
        *SEALDESK, "--workspace", ws, "decide", "--queue", "flagged_pairs", "--item",
        "item-0", "--decision", "accept", "--key", keys["rita"],
        env=env,
    )  # fmt: skip

    seq, kind, principal = kinds(ws)[-1]
    assert (kind, principal) == ("decision", "rita")
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout.startswith(f"#{seq} accept flagged_pairs/item-0 by rita ")
    *lines, said = proc.stderr.splitlines()
    assert said == (
        f"sealdesk: error: #{seq} is in the ledger, but its receipt was not kept in "
        f"{receipts} (No space left on device); keep the receipt line(s) above with: "
        "sealdesk receipts keep FILE (FILE holding them, or '-' to paste)"
    )
    assert [json.loads(line)["seq"] for line in lines] == [seq]
    # No part of a line is left on the full disk to spoil the file for later receipts.
    assert [p.read_bytes() for p in (tmp_path / "left").iterdir()] in ([], [b""])

    kept = sealdesk("receipts", "keep", "-", input=proc.stderr, env=env)
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout == said + "\n"  # what is not a receipt is passed on
    verified = sealdesk("verify", workspace=ws, env=env)
    assert verified.returncode == 0, verified.stderr
    wsid = json.loads(lines[0])["workspace"]
    assert f"1 receipt compared (yours, {receipts / wsid}.jsonl)" in verified.stdout.splitlines()
