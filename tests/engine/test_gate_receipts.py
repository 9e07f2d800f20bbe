"""Behind the ssh gate the signer keeps their receipts on their own machine.

A gated ``decide`` used to keep its receipt only in the review host's state
directory and show the client a 16-hex root: the insider a receipt is meant
to catch could delete it. Now the client gets each whole receipt as one JSON
line, keeps it with ``sealdesk receipts keep``, and later checks the host
against it through the gate (``verify --receipts -``). A real sshd, a real
ssh-agent holding the only copy of the key.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SEALDESK
from tests.support.ssh import REVIEW_RECORDS, gate_command, wait_for

pytestmark = [pytest.mark.needs_sshd, pytest.mark.slow]


def sqlite_copy(src: Path, dest: Path) -> None:
    """Copies one database onto another with SQLite's online backup API."""
    source, target = sqlite3.connect(src), sqlite3.connect(dest)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def test_a_gated_decide_gives_the_client_the_whole_receipt_to_keep_and_check(
    sshd, agents, review, tmp_path
):
    ws, lena = review
    rita = lena.parent / "rita"  # the reviewer, her key only in her agent
    sock = agents("rita", rita)
    rita.unlink()
    sshd.authorize(Path(f"{rita}.pub"), command=gate_command(ws))
    before = tmp_path / "before.db"
    sqlite_copy(ws.root / "sealdesk.db", before)

    proc = sshd.run("sealdesk decide --queue flagged_pairs --item fp-0 --decision reject", sock)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("{")]
    (receipt,) = [json.loads(line) for line in lines]
    seq = REVIEW_RECORDS + 1
    held = ws.conn.execute("SELECT record_hash FROM records WHERE seq=?", (seq,)).fetchone()[0]
    assert receipt["seq"] == receipt["tree_size"] == seq
    assert receipt["record_hash"] == held and receipt["workspace"] == ws.workspace_id
    assert receipt["principal"] == "rita" and len(receipt["root"]) == 64
    # The host keeps the same receipt in its own state directory (the gate account's).
    host_dir = tmp_path / "review-home" / ".local" / "state" / "sealdesk" / "receipts"
    host_file = host_dir / f"{ws.workspace_id}.jsonl"
    assert [json.loads(line) for line in host_file.read_text().splitlines()] == [receipt]
    assert "keep the JSON line(s) above on your machine" in proc.stderr

    # On the laptop: the host's output piped through `sealdesk receipts keep`.
    laptop = tmp_path / "laptop-state"
    env = {**os.environ, "SEALDESK_RECEIPTS": str(laptop)}
    kept = subprocess.run(
        [*SEALDESK, "receipts", "keep"],
        input=proc.stderr,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    mine = laptop / f"{ws.workspace_id}.jsonl"
    assert f"receipts: 1 kept in {mine}" in kept.stderr
    assert [json.loads(line) for line in mine.read_text().splitlines()] == [receipt]

    # The insider restores the database from before and empties the host's receipts:
    # the host's own plain verify has nothing left to compare and passes...
    sqlite_copy(before, ws.root / "sealdesk.db")
    shutil.rmtree(host_dir)
    plain = sshd.run("sealdesk verify", sock)
    assert plain.returncode == 0 and "0 receipts compared (yours" in plain.stdout, plain.stderr
    # ...the receipt the client kept, sent back through the gate, names the lost record.
    checked = sshd.run("sealdesk verify --receipts -", sock, input=mine.read_text())
    assert checked.returncode == 1, checked.stdout
    assert f"record {seq}: receipt <stdin>:1: record {seq}" in checked.stderr
    assert "rolled back" in checked.stderr and "1 receipt compared (<stdin>)" in checked.stdout


@pytest.mark.needs_tmux
def test_the_review_app_behind_the_gate_prints_each_receipt_when_it_closes(
    sshd, agents, review, tmux, tmp_path
):
    ws, lena = review
    rita = lena.parent / "rita"
    sock = agents("rita", rita)
    rita.unlink()
    sshd.authorize(Path(f"{rita}.pub"), command=gate_command(ws))
    ssh = shlex.join(sshd.argv("", tty=True))  # a bare login opens the review app
    session = tmp_path / "session.txt"  # the session logged as the docs say: ssh … | tee
    tmux.new(
        "rita",
        f"{ssh} 2>&1 | tee {shlex.quote(str(session))}; echo EXIT=$?; sleep 600",
        width=120,
        height=40,
        env={"SSH_AUTH_SOCK": str(sock), "TERM": "xterm-256color"},
    )
    tmux.wait_for("rita", "fp 0")
    tmux.keys("rita", "x")  # reject the highlighted pair (her own accept before)
    seq = REVIEW_RECORDS + 1
    wait_for(
        lambda: ws.conn.execute("SELECT MAX(seq) FROM records").fetchone()[0] == seq,
        "the app's decision in the ledger",
    )
    tmux.keys("rita", "q")
    tmux.wait_for("rita", "EXIT=")
    # The pane's lines joined where the terminal wrapped them: the client's own output.
    shown = tmux("capture-pane", "-p", "-J", "-t", "rita", "-S", "-200")
    assert "EXIT=0" in shown and "1 record(s) signed by rita this session" in shown, shown
    lines = [line.strip() for line in shown.splitlines() if line.strip().startswith('{"')]
    (receipt,) = [json.loads(line) for line in lines]
    held = ws.conn.execute("SELECT record_hash FROM records WHERE seq=?", (seq,)).fetchone()[0]
    assert (receipt["seq"], receipt["record_hash"], receipt["principal"]) == (seq, held, "rita")
    assert receipt["workspace"] == ws.workspace_id and len(receipt["root"]) == 64
    # The logged session, terminal bytes and all, kept on the laptop.
    laptop = tmp_path / "laptop-state"
    subprocess.run(
        [*SEALDESK, "receipts", "keep", str(session)],
        capture_output=True,
        env={**os.environ, "SEALDESK_RECEIPTS": str(laptop)},
        check=True,
    )
    kept = (laptop / f"{ws.workspace_id}.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in kept] == [receipt]
