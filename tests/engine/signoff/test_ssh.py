"""Sign-off and concurrent review over a real OpenSSH server on 127.0.0.1.

The test installs Debian's openssh-server when it is missing and the test
runs as root (as .ci/system-deps does on a fresh machine), starts ``sshd``
on a free port with its own config, host key and authorized_keys, and keeps
each person's key only in an ``ssh-agent`` it starts: the lead's private key
file is deleted right after ``ssh-add``, so signing can only happen through
the agent that ``ssh -A`` forwards. sshd, the agents and tmux are stopped by
their pids at teardown.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from engine.signoff.verify import verify_workspace
from engine.workspace import Workspace
from tests.support.ssh import (
    REVIEW_RECORDS,
    SEALDESK,
    files_holding,
    gate_command,
    items,
    lead_agent_only,
    people_with_agents,
)

pytestmark = [pytest.mark.needs_sshd, pytest.mark.slow]


def test_lead_signs_off_over_ssh_with_only_the_forwarded_agent(
    sshd, agents, review, sealdesk, tmp_path
):
    ws, lena = review
    sock, secrets = lead_agent_only(agents, lena)
    sshd.authorize(Path(f"{lena}.pub"), command=gate_command(ws))

    proc = sshd.run(f"sealdesk --workspace {ws.root} signoff --yes", sock)
    assert proc.returncode == 0, proc.stderr
    signed = REVIEW_RECORDS + 1
    assert f"signed off: record #{signed}" in proc.stdout
    assert f"by lena over {REVIEW_RECORDS} record(s)" in proc.stdout

    assert verify_workspace(ws).ok
    check = sealdesk("verify", workspace=ws.root)
    # lena signed the genesis, rita's enrolment and the sign-off
    assert check.returncode == 0 and "lena 3" in check.stdout, check.stderr
    # ssh-keygen accepts the sign-off record itself (not lena's genesis, also lead-signed)...
    sealdesk("export", "--out", tmp_path / "records.jsonl", workspace=ws.root, check=True)
    at = f".[{signed - 1}]"
    script = (
        f"jq -se '{at}.kind == \"signoff\"' records.jsonl > /dev/null && "
        f"jq -sj '{at}.message' records.jsonl > msg && jq -sj '{at}.signature' records.jsonl "
        f"> msg.sig && ssh-keygen -Y verify -f {ws.allowed_signers_path} -I lena "
        "-n lead@sealdesk -s msg.sig < msg"
    )
    keygen_check = subprocess.run(
        ["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True
    )
    assert keygen_check.returncode == 0, keygen_check.stderr
    # ...and the checkpoint's note, fetched through the gate.
    exported = sshd.run(f"sealdesk --workspace {ws.root} checkpoint export", sock)
    assert exported.returncode == 0, exported.stderr
    (tmp_path / "checkpoint.txt").write_text(exported.stdout)
    script = (
        "awk '/^$/{exit} {print}' checkpoint.txt > note && "
        "sed -n '/^-----BEGIN SSH/,/^-----END SSH/p' checkpoint.txt > note.sig && "
        f"ssh-keygen -Y verify -f {ws.allowed_signers_path} -I lena -n lead@sealdesk "
        "-s note.sig < note"
    )
    note_check = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert note_check.returncode == 0, note_check.stderr
    # The lead checks the host against the checkpoint she keeps, sent over stdin.
    against = sshd.run("sealdesk verify --checkpoint -", sock, input=exported.stdout)
    assert against.returncode == 0 and against.stdout.startswith(f"ok: {signed} record(s)"), (
        against.stderr
    )

    # The lead's private key is in no file: not the workspace, not the review HOME, nowhere here.
    assert files_holding(tmp_path, secrets) == []
    assert files_holding(ws.root, [b"PRIVATE KEY"]) == []
    assert files_holding(tmp_path / "review-home", [b"PRIVATE KEY"]) == []


def test_without_agent_forwarding_the_lead_cannot_sign(sshd, agents, review):
    ws, lena = review
    sock, _ = lead_agent_only(agents, lena)
    sshd.authorize(Path(f"{lena}.pub"), command=gate_command(ws))
    proc = sshd.run(f"sealdesk --workspace {ws.root} signoff --yes", sock, forward=False)
    assert proc.returncode == 2
    assert "SSH_AUTH_SOCK is not set" in proc.stderr
    assert ws.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == REVIEW_RECORDS


def test_the_gate_behind_sshd_runs_review_work_and_refuses_the_rest(sshd, agents, review, tmp_path):
    ws, lena = review
    sock, _ = lead_agent_only(agents, lena)
    sshd.authorize(Path(f"{lena}.pub"), command=gate_command(ws))
    for remote in (
        "id",
        "sealdesk keys add --principal eve --role lead --key /tmp/eve.pub",
        f"sealdesk --workspace {tmp_path} verify",
        f"sealdesk checkpoint export --out {tmp_path / 'planted'}",
    ):
        proc = sshd.run(remote, sock)
        assert proc.returncode == 3, (remote, proc.stdout, proc.stderr)
        assert "sealdesk: error: ssh-gate:" in proc.stderr
    assert not (tmp_path / "planted").exists()
    ok = sshd.run("sealdesk verify", sock)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith(f"ok: {REVIEW_RECORDS} record(s) verified"), ok.stdout


def test_two_reviewers_and_the_lead_at_once_never_lose_or_fork_a_record(
    sshd, agents, tmp_path, keygen
):
    ws = Workspace.init(tmp_path / "review" / "ws")
    people = {"rita": "reviewer", "ravi": "reviewer", "lena": "lead"}
    socks = people_with_agents(ws, people, keygen=keygen, agents=agents, sshd=sshd)
    pairs, weak = items("flagged_pairs", "fp", 16), items("weak_categories", "wk", 6)
    ws.ingest(pairs + weak, runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    work = {
        "rita": ("flagged_pairs", pairs[:8]),
        "ravi": ("flagged_pairs", pairs[8:]),
        "lena": ("weak_categories", weak),
    }
    sessions = {}
    for name, (queue, _) in work.items():
        remote = (
            f"{SEALDESK} --workspace {ws.root} decide --queue {queue} --item - --decision accept"
        )
        if name == "lena":  # the lead signs off while the reviewers are still deciding
            remote += f" && {SEALDESK} --workspace {ws.root} signoff --yes --with-exceptions"
        sessions[name] = subprocess.Popen(
            sshd.argv(remote),
            env={**os.environ, "SSH_AUTH_SOCK": str(socks[name])},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    outputs = {
        name: proc.communicate("\n".join(i.item_id for i in work[name][1]) + "\n", timeout=300)
        for name, proc in sessions.items()
    }
    for name, proc in sessions.items():
        assert proc.returncode == 0, (name, outputs[name])

    rows = ws.conn.execute(
        "SELECT seq, kind, principal, item_id FROM records ORDER BY seq"
    ).fetchall()
    authority = len(people)  # lena's genesis, then her enrolments of rita and ravi
    assert [r[1] for r in rows[:authority]] == ["genesis", "enrol", "enrol"]
    assert [r[0] for r in rows] == list(range(1, authority + 8 + 8 + 6 + 2))
    decided = {(r[2], r[3]) for r in rows if r[1] == "decision"}
    assert decided == {(name, i.item_id) for name, (_q, todo) in work.items() for i in todo}
    assert [r[2] for r in rows if r[1] == "signoff"] == ["lena"]
    report = verify_workspace(ws)  # chain, signatures and the sign-off's tree head
    assert report.ok, report.faults
    ws.close()


@pytest.mark.needs_tmux
def test_lead_confirms_the_signoff_in_a_terminal_over_ssh(sshd, agents, review, tmux):
    ws, lena = review
    sock, _ = lead_agent_only(agents, lena)
    sshd.authorize(Path(f"{lena}.pub"), command=gate_command(ws))
    ssh = shlex.join(sshd.argv(f"sealdesk --workspace {ws.root} signoff", tty=True))
    tmux.new(
        "lead",
        f"{ssh}; echo EXIT=$?; sleep 600",
        width=120,
        height=50,
        env={"SSH_AUTH_SOCK": str(sock), "TERM": "xterm-256color"},
    )
    tmux.wait_for("lead", f"Sign off {REVIEW_RECORDS} record(s) as lena (lead)? [y/N]:")
    assert "Undecided" not in tmux.screen("lead")
    tmux.keys("lead", "y", "Enter")
    shown = tmux.wait_for("lead", "EXIT=")
    assert f"signed off: record #{REVIEW_RECORDS + 1}" in shown and "EXIT=0" in shown, shown
    assert verify_workspace(ws).ok
    assert ws.conn.execute(
        "SELECT kind, principal FROM records WHERE seq=?", (REVIEW_RECORDS + 1,)
    ).fetchone() == ("signoff", "lena")
