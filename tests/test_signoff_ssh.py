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

import base64
import getpass
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from cryptography.hazmat.primitives import serialization

from engine.ledger.audit import verify_workspace
from engine.ledger.enrol import enrol as enrol_key
from engine.ledger.signers import FileSigner
from engine.workspace import BacklogItem, Workspace

from tests.conftest import REPO, require_tool

pytestmark = [pytest.mark.needs_sshd, pytest.mark.slow]

PY = sys.executable
SEALDESK = f"{shlex.quote(PY)} -m engine.cli"


def ensure_sshd() -> str:
    """Gives the sshd path, installing Debian's openssh-server first when root may."""
    if not (shutil.which("sshd") or Path("/usr/sbin/sshd").exists()) and os.geteuid() == 0 \
            and shutil.which("apt-get"):
        subprocess.run("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install "
                       "-y -qq --no-install-recommends openssh-server", shell=True,
                       check=True, capture_output=True, timeout=900)
    return require_tool("sshd")


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


@dataclass
class SshServer:
    """A running sshd and how to reach it."""

    port: int
    user: str
    known_hosts: Path
    authorized_keys: Path
    pid: int

    def authorize(self, pub: Path, command: str | None = None) -> None:
        """Adds a key to authorized_keys, locked to a forced command when given."""
        options = (f'command="{command}",restrict,pty,agent-forwarding '
                   if command else "")
        with open(self.authorized_keys, "a", encoding="utf-8") as handle:
            handle.write(options + pub.read_text(encoding="utf-8").strip() + "\n")

    def argv(self, remote: str, *, forward: bool = True, tty: bool = False) -> list[str]:
        """Gives the ssh client command line for one remote command."""
        return ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes",
                "-o", f"UserKnownHostsFile={self.known_hosts}",
                "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes",
                "-o", "LogLevel=ERROR", "-o", f"SetEnv=PYTHONPATH={REPO}",
                "-p", str(self.port), "-l", self.user,
                "-A" if forward else "-a", "-t" if tty else "-T", "127.0.0.1", remote]

    def run(self, remote: str, agent: Path, *, forward: bool = True, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        env = {**os.environ, "SSH_AUTH_SOCK": str(agent)}
        return subprocess.run(self.argv(remote, forward=forward), env=env, input=input,
                              capture_output=True, text=True, timeout=timeout)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def sshd(tmp_path: Path):
    """Gives a real sshd on 127.0.0.1 whose sessions get HOME=<tmp>/review-home."""
    sshd_path = ensure_sshd()
    require_tool("ssh")
    base = tmp_path / "sshd"
    base.mkdir()
    home = tmp_path / "review-home"
    home.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / "host")],
                   check=True)
    authorized = base / "authorized_keys"
    authorized.touch(mode=0o600)
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    for _attempt in range(3):
        port = _free_port()
        config = base / "sshd_config"
        config.write_text("\n".join([
            f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {base / 'host'}",
            f"PidFile {base / 'sshd.pid'}", f"AuthorizedKeysFile {authorized}",
            "PubkeyAuthentication yes", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
            "UsePAM no", "StrictModes no", "AllowAgentForwarding yes", "PrintMotd no",
            "AcceptEnv PYTHONPATH", f"SetEnv HOME={home}", "LogLevel VERBOSE", ""]))
        log = open(base / "sshd.log", "wb")
        proc = subprocess.Popen([sshd_path, "-D", "-e", "-f", str(config)], stderr=log,
                                stdout=subprocess.DEVNULL)
        listening = f"Server listening on 127.0.0.1 port {port}".encode()
        wait_for(lambda: listening in (base / "sshd.log").read_bytes() or proc.poll() is not None,
                 "sshd to listen")
        if proc.poll() is None:
            break
        log.close()
    else:
        raise AssertionError((base / "sshd.log").read_text())
    known = base / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} " + (base / "host.pub").read_text())
    try:
        yield SshServer(port, getpass.getuser(), known, authorized, proc.pid)
    finally:
        stop(proc.pid)
        proc.wait(timeout=10)
        log.close()


@pytest.fixture
def agents(tmp_path: Path):
    """Gives ``agent(name, key)`` -> socket of a new ssh-agent holding only that key."""
    require_tool("ssh-agent")
    started: list[subprocess.Popen] = []

    def start(name: str, key: Path) -> Path:
        sock = tmp_path / f"agent-{name}.sock"
        proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(proc)
        wait_for(sock.exists, f"ssh-agent for {name}")
        subprocess.run(["ssh-add", "-q", str(key)], env={**os.environ, "SSH_AUTH_SOCK": str(sock)},
                       check=True, capture_output=True)
        return sock

    yield start
    for proc in started:
        stop(proc.pid)
        proc.wait(timeout=10)


def secrets_of(key: Path) -> list[bytes]:
    """Gives byte strings that would reveal a private key if found in a file."""
    pem = key.read_bytes()
    private = serialization.load_ssh_private_key(pem, password=None)
    seed = private.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                 serialization.NoEncryption())
    return [pem, seed, seed.hex().encode(), base64.b64encode(seed),
            base64.urlsafe_b64encode(seed).rstrip(b"=")]


def files_holding(root: Path, needles: list[bytes]) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(n in data for n in needles):
                found.append(path)
    return found


def items(queue: str, prefix: str, n: int) -> list[BacklogItem]:
    return [BacklogItem.make(queue, f"{prefix}-{i}", "run-1",
                             {"summary": {"title": f"{prefix} {i}", "score": None, "tags": []}})
            for i in range(n)]


@pytest.fixture
def review(tmp_path: Path, keygen):
    """The review host's workspace: rita (reviewer, key file) decided 3 pairs; lena enrolled
    as lead by her public key only."""
    ws = Workspace.init(tmp_path / "review" / "ws")
    rita, lena = keygen("rita"), keygen("lena")
    enrol_key(ws.allowed_signers_path, "rita", ["reviewer"], Path(f"{rita}.pub"))
    enrol_key(ws.allowed_signers_path, "lena", ["lead"], Path(f"{lena}.pub"))
    pairs = items("flagged_pairs", "fp", 3)
    ws.ingest(pairs, runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    for item in pairs:
        ws.decide(FileSigner(rita), "flagged_pairs", item.item_id, "accept")
    yield ws, lena
    ws.close()


def lead_agent_only(agents, lena: Path) -> tuple[Path, list[bytes]]:
    """Loads lena's key into an agent, then deletes the key file: only the agent holds it."""
    secrets = secrets_of(lena)
    sock = agents("lena", lena)
    lena.unlink()
    return sock, secrets


def gate_command(ws: Workspace) -> str:
    return f"env PYTHONPATH={REPO} {PY} -m engine.cli --workspace {ws.root} ssh-gate"


def test_lead_signs_off_over_ssh_with_only_the_forwarded_agent(sshd, agents, review, sealdesk,
                                                               tmp_path):
    ws, lena = review
    sock, secrets = lead_agent_only(agents, lena)
    sshd.authorize(Path(f"{lena}.pub"), command=gate_command(ws))

    proc = sshd.run(f"sealdesk --workspace {ws.root} signoff --yes", sock)
    assert proc.returncode == 0, proc.stderr
    assert "signed off: record #4" in proc.stdout and "by lena over 3 record(s)" in proc.stdout

    assert verify_workspace(ws).ok
    check = sealdesk("verify", workspace=ws.root)
    assert check.returncode == 0 and "lena 1" in check.stdout, check.stderr
    # ssh-keygen accepts the sign-off record itself...
    sealdesk("export", "--out", tmp_path / "records.jsonl", workspace=ws.root, check=True)
    script = (
        "jq -sj '.[3].message' records.jsonl > msg && jq -sj '.[3].signature' records.jsonl "
        f"> msg.sig && ssh-keygen -Y verify -f {ws.allowed_signers_path} -I lena "
        "-n lead@sealdesk -s msg.sig < msg")
    keygen_check = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True,
                                  text=True)
    assert keygen_check.returncode == 0, keygen_check.stderr
    # ...and the checkpoint's note, fetched through the gate.
    exported = sshd.run(f"sealdesk --workspace {ws.root} checkpoint export", sock)
    assert exported.returncode == 0, exported.stderr
    (tmp_path / "checkpoint.txt").write_text(exported.stdout)
    script = (
        "awk '/^$/{exit} {print}' checkpoint.txt > note && "
        "sed -n '/^-----BEGIN SSH/,/^-----END SSH/p' checkpoint.txt > note.sig && "
        f"ssh-keygen -Y verify -f {ws.allowed_signers_path} -I lena -n lead@sealdesk "
        "-s note.sig < note")
    note_check = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert note_check.returncode == 0, note_check.stderr
    # The lead checks the host against the checkpoint she keeps, sent over stdin.
    against = sshd.run("sealdesk verify --checkpoint -", sock, input=exported.stdout)
    assert against.returncode == 0 and against.stdout.startswith("ok: 4 record(s)"), against.stderr

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
    assert ws.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 3


def test_the_gate_behind_sshd_runs_review_work_and_refuses_the_rest(sshd, agents, review,
                                                                    tmp_path):
    ws, lena = review
    sock, _ = lead_agent_only(agents, lena)
    sshd.authorize(Path(f"{lena}.pub"), command=gate_command(ws))
    for remote in ("id", "sealdesk keys add --principal eve --role lead --key /tmp/eve.pub",
                   f"sealdesk --workspace {tmp_path} verify",
                   f"sealdesk checkpoint export --out {tmp_path / 'planted'}"):
        proc = sshd.run(remote, sock)
        assert proc.returncode == 3, (remote, proc.stdout, proc.stderr)
        assert "sealdesk: error: ssh-gate:" in proc.stderr
    assert not (tmp_path / "planted").exists()
    ok = sshd.run("sealdesk verify", sock)
    assert ok.returncode == 0 and ok.stdout.startswith("ok: 3 record(s) verified"), ok.stderr


def test_two_reviewers_and_the_lead_at_once_never_lose_or_fork_a_record(sshd, agents, tmp_path,
                                                                         keygen):
    ws = Workspace.init(tmp_path / "review" / "ws")
    people = {"rita": "reviewer", "ravi": "reviewer", "lena": "lead"}
    socks = {}
    for name, role in people.items():
        key = keygen(name)
        enrol_key(ws.allowed_signers_path, name, [role], Path(f"{key}.pub"))
        sshd.authorize(Path(f"{key}.pub"))
        socks[name] = agents(name, key)
        key.unlink()
    pairs, weak = items("flagged_pairs", "fp", 16), items("weak_categories", "wk", 6)
    ws.ingest(pairs + weak, runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    work = {"rita": ("flagged_pairs", pairs[:8]), "ravi": ("flagged_pairs", pairs[8:]),
            "lena": ("weak_categories", weak)}
    sessions = {}
    for name, (queue, todo) in work.items():
        remote = f"{SEALDESK} --workspace {ws.root} decide --queue {queue} --item - " \
                 "--decision accept"
        if name == "lena":  # the lead signs off while the reviewers are still deciding
            remote += f" && {SEALDESK} --workspace {ws.root} signoff --yes --with-exceptions"
        sessions[name] = subprocess.Popen(
            sshd.argv(remote), env={**os.environ, "SSH_AUTH_SOCK": str(socks[name])},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outputs = {name: proc.communicate("\n".join(i.item_id for i in work[name][1]) + "\n",
                                      timeout=300)
               for name, proc in sessions.items()}
    for name, proc in sessions.items():
        assert proc.returncode == 0, (name, outputs[name])

    rows = ws.conn.execute("SELECT seq, kind, principal, item_id FROM records "
                           "ORDER BY seq").fetchall()
    assert [r[0] for r in rows] == list(range(1, 8 + 8 + 6 + 2))
    decided = {(r[2], r[3]) for r in rows if r[1] == "decision"}
    assert decided == {(name, i.item_id) for name, (_q, todo) in work.items() for i in todo}
    assert [r[2] for r in rows if r[1] == "signoff"] == ["lena"]
    report = verify_workspace(ws)  # chain, signatures and the sign-off's tree head
    assert report.ok, report.faults
    ws.close()


@pytest.mark.needs_tmux
def test_lead_confirms_the_signoff_in_a_terminal_over_ssh(sshd, agents, review, tmp_path):
    tmux = require_tool("tmux")
    ws, lena = review
    sock, _ = lead_agent_only(agents, lena)
    sshd.authorize(Path(f"{lena}.pub"), command=gate_command(ws))
    tmux_sock = tmp_path / "tmux.sock"
    ssh = shlex.join(sshd.argv(f"sealdesk --workspace {ws.root} signoff", tty=True))
    env = {**os.environ, "SSH_AUTH_SOCK": str(sock), "TERM": "xterm-256color"}
    base = [tmux, "-S", str(tmux_sock)]
    subprocess.run(base + ["new-session", "-d", "-x", "120", "-y", "50", "-s", "lead",
                           f"{ssh}; echo EXIT=$?; sleep 60"], env=env, check=True)
    pid = int(subprocess.run(base + ["display-message", "-p", "#{pid}"], capture_output=True,
                             text=True, check=True).stdout)
    try:
        def screen() -> str:
            return subprocess.run(base + ["capture-pane", "-p", "-t", "lead", "-S", "-200"],
                                  capture_output=True, text=True).stdout

        wait_for(lambda: "Sign off 3 record(s) as lena (lead)? [y/N]:" in screen(),
                 "the confirmation prompt", timeout=60)
        assert "Undecided" not in screen()
        subprocess.run(base + ["send-keys", "-t", "lead", "y", "Enter"], check=True)
        wait_for(lambda: "EXIT=" in screen(), "ssh to finish", timeout=60)
        assert "signed off: record #4" in screen() and "EXIT=0" in screen(), screen()
    finally:
        stop(pid)
    assert verify_workspace(ws).ok
    assert ws.conn.execute("SELECT principal FROM records WHERE seq=4").fetchone() == ("lena",)
