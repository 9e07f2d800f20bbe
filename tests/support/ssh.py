"""The harness behind the ``sshd``, ``agents`` and ``review`` fixtures (tests/conftest.py):
a real OpenSSH server, one ssh-agent per person, and the workspaces they reach.

``sshd`` installs Debian's openssh-server when it is missing and the test
runs as root (as .ci/system-deps does on a fresh machine), starts ``sshd`` on
a free port of 127.0.0.1 with its own config, host key and authorized_keys,
and gives sessions ``HOME=<tmp>/review-home``. ``agents`` starts one
``ssh-agent`` per person holding only that person's key. Each is stopped by
its pid at teardown. Every wait polls (a file, a log); none sleeps blindly.
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from engine.ledger.enrol import enrol, found
from engine.ledger.signers import FileSigner, read_public_key
from engine.workspace import BacklogItem, Workspace
from tests.conftest import REPO, require_tool

PY = sys.executable
SEALDESK = f"{shlex.quote(PY)} -m reviewer"


def ensure_sshd() -> str:
    """Gives the sshd path, installing Debian's openssh-server first when root may.

    Test workers take turns under a lock, and "installed" means dpkg finished:
    the binary is unpacked before the package's script makes the sshd user, and
    a worker that saw only the binary once started sshd without that user.
    """
    if os.geteuid() == 0 and shutil.which("apt-get") and shutil.which("dpkg-query"):
        import fcntl

        with open("/tmp/sealdesk-test-apt.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            status = subprocess.run(
                ["dpkg-query", "-W", "-f=${Status}", "openssh-server"],
                capture_output=True,
                text=True,
            ).stdout
            if status != "install ok installed":
                subprocess.run(
                    "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get "
                    "install -y -qq --no-install-recommends openssh-server",
                    shell=True,
                    check=True,
                    capture_output=True,
                    timeout=900,
                )
    return require_tool("sshd")


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Polls predicate until it holds; fails naming what never happened."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def stop(pid: int) -> None:
    """Sends SIGTERM to one process we started (gone already is fine)."""
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
        options = f'command="{command}",restrict,pty,agent-forwarding ' if command else ""
        with open(self.authorized_keys, "a", encoding="utf-8") as handle:
            handle.write(options + pub.read_text(encoding="utf-8").strip() + "\n")

    def argv(self, remote: str, *, forward: bool = True, tty: bool = False) -> list[str]:
        """Gives the ssh client command line for one remote command."""
        return [
            "ssh",
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "LogLevel=ERROR",
            "-o",
            f"SetEnv=PYTHONPATH={REPO}",
            "-p",
            str(self.port),
            "-l",
            self.user,
            "-A" if forward else "-a",
            "-t" if tty else "-T",
            "127.0.0.1",
            remote,
        ]

    def run(
        self,
        remote: str,
        agent: Path,
        *,
        forward: bool = True,
        input: str | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess:
        env = {**os.environ, "SSH_AUTH_SOCK": str(agent)}
        return subprocess.run(
            self.argv(remote, forward=forward),
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_sshd(tmp_path: Path) -> Iterator[SshServer]:
    """Gives a real sshd on 127.0.0.1 whose sessions get HOME=<tmp>/review-home."""
    sshd_path = ensure_sshd()
    require_tool("ssh")
    base = tmp_path / "sshd"
    base.mkdir()
    home = tmp_path / "review-home"
    home.mkdir()
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / "host")], check=True
    )
    authorized = base / "authorized_keys"
    authorized.touch(mode=0o600)
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    for _attempt in range(3):
        port = _free_port()
        config = base / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {base / 'host'}",
                    f"PidFile {base / 'sshd.pid'}",
                    f"AuthorizedKeysFile {authorized}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    "UsePAM no",
                    "StrictModes no",
                    "AllowAgentForwarding yes",
                    "PrintMotd no",
                    "AcceptEnv PYTHONPATH",
                    f"SetEnv HOME={home}",
                    "LogLevel VERBOSE",
                    "",
                ]
            )
        )
        log = open(base / "sshd.log", "wb")
        proc = subprocess.Popen(
            [sshd_path, "-D", "-e", "-f", str(config)], stderr=log, stdout=subprocess.DEVNULL
        )
        listening = f"Server listening on 127.0.0.1 port {port}".encode()
        wait_for(
            lambda listening=listening, proc=proc: (
                listening in (base / "sshd.log").read_bytes() or proc.poll() is not None
            ),
            "sshd to listen",
        )
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


def serve_agents(tmp_path: Path) -> Iterator[Callable[[str, Path], Path]]:
    """Gives ``agent(name, key)`` -> socket of a new ssh-agent holding only that key."""
    require_tool("ssh-agent")
    started: list[subprocess.Popen] = []

    def start(name: str, key: Path) -> Path:
        sock = tmp_path / f"agent-{name}.sock"
        proc = subprocess.Popen(
            ["ssh-agent", "-D", "-a", str(sock)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(proc)
        # The socket file appears at bind(), before the agent listens: a client that
        # connects in between is refused. Wait until the agent answers (ssh-add -l says
        # 1, no identities, rather than 2, no agent).
        wait_for(lambda: _agent_answers(sock), f"ssh-agent for {name} to answer")
        subprocess.run(
            ["ssh-add", "-q", str(key)],
            env={**os.environ, "SSH_AUTH_SOCK": str(sock)},
            check=True,
            capture_output=True,
        )
        return sock

    yield start
    for proc in started:
        stop(proc.pid)
        proc.wait(timeout=10)


def _agent_answers(sock: Path) -> bool:
    listed = subprocess.run(
        ["ssh-add", "-l"],
        env={**os.environ, "SSH_AUTH_SOCK": str(sock)},
        capture_output=True,
    )
    return listed.returncode in (0, 1)


def secrets_of(key: Path) -> list[bytes]:
    """Gives byte strings that would reveal a private key if found in a file."""
    pem = key.read_bytes()
    private = serialization.load_ssh_private_key(pem, password=None)
    seed = private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return [
        pem,
        seed,
        seed.hex().encode(),
        base64.b64encode(seed),
        base64.urlsafe_b64encode(seed).rstrip(b"="),
    ]


def files_holding(root: Path, needles: list[bytes]) -> list[Path]:
    """Gives every regular file under root that holds any of the needles."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(n in data for n in needles):
                found.append(path)
    return found


def items(queue: str, prefix: str, n: int) -> list[BacklogItem]:
    return [
        BacklogItem.make(
            queue,
            f"{prefix}-{i}",
            "run-1",
            {"summary": {"title": f"{prefix} {i}", "score": None, "tags": []}},
        )
        for i in range(n)
    ]


def found_and_enrol(
    ws: Workspace, lead: str, lead_key: Path, others: dict[str, tuple[str, Path]]
) -> None:
    """Founds ws's empty ledger with the lead's key (the genesis), then has the lead enrol
    each other person (name -> (role, private key path)) by their public key."""
    signer = FileSigner(lead_key)
    found(ws.db, ws.workspace_id, signer, lead)
    for name, (role, key) in others.items():
        enrol(ws.db, ws.workspace_id, signer, name, (role,), read_public_key(Path(f"{key}.pub")))
    ws.write_allowed_signers()


# The review ledger: lena's genesis, her enrolment of rita, then rita's three decisions.
REVIEW_RECORDS = 5


def review_host(tmp_path: Path, keygen) -> Iterator[tuple[Workspace, Path]]:
    """Gives (workspace, lena's private key path): the review host's workspace, founded with
    lena's key as lead (signed on her laptop: only her public key is on the host); lena
    enrolled rita (reviewer, key file), who decided 3 pairs."""
    ws = Workspace.init(tmp_path / "review" / "ws")
    rita, lena = keygen("rita"), keygen("lena")
    found_and_enrol(ws, "lena", lena, {"rita": ("reviewer", rita)})
    pairs = items("flagged_pairs", "fp", 3)
    ws.ingest(pairs, runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    for item in pairs:
        ws.decide(FileSigner(rita), "flagged_pairs", item.item_id, "accept")
    assert ws.watermark().head_seq == REVIEW_RECORDS
    yield ws, lena
    ws.close()


def people_with_agents(
    ws: Workspace, people: dict[str, str], *, keygen, agents, sshd, command: str | None = None
) -> dict[str, Path]:
    """Founds ws's empty ledger with the key of the one person whose role is lead, who
    enrols the others (name -> role) in the order given: len(people) authority records.
    Then lets each key into sshd and into an agent of its own and deletes the key file;
    gives each person's agent socket."""
    keys = {name: keygen(name) for name in people}
    (lead,) = [name for name, role in people.items() if role == "lead"]
    found_and_enrol(
        ws,
        lead,
        keys[lead],
        {name: (role, keys[name]) for name, role in people.items() if name != lead},
    )
    socks = {}
    for name, key in keys.items():
        sshd.authorize(Path(f"{key}.pub"), command=command)
        socks[name] = agents(name, key)
        key.unlink()
    return socks


def lead_agent_only(agents, lena: Path) -> tuple[Path, list[bytes]]:
    """Loads lena's key into an agent, then deletes the key file: only the agent holds it."""
    secrets = secrets_of(lena)
    sock = agents("lena", lena)
    lena.unlink()
    return sock, secrets


def gate_command(ws: Workspace) -> str:
    """Gives the authorized_keys forced command: this tree's sealdesk ssh-gate on ws."""
    return f"env PYTHONPATH={REPO} {PY} -m reviewer --workspace {ws.root} ssh-gate"


def verify_args(
    allowed_signers: object, principal: str, namespace: str, signature: object, *options: str
) -> list[str]:
    """Gives the arguments of ``ssh-keygen -Y verify`` of a signature by principal in a
    namespace against an allowed-signers file, with any ``-O`` option; the message is
    read from stdin."""
    who = ["-f", str(allowed_signers), "-I", principal, "-n", namespace]
    return ["ssh-keygen", "-Y", "verify", *who, *options, "-s", str(signature)]


def keygen_verify(
    allowed_signers: Path,
    principal: str,
    namespace: str,
    message: bytes,
    signature: str,
    where: Path,
) -> subprocess.CompletedProcess:
    """Gives ``ssh-keygen -Y verify``'s result for a message and its armored SSHSIG."""
    msg, sig = where / "keygen-msg", where / "keygen-msg.sig"
    msg.write_bytes(message)
    sig.write_text(signature)
    with open(msg, "rb") as stdin:
        return subprocess.run(
            verify_args(allowed_signers, principal, namespace, sig),
            stdin=stdin,
            capture_output=True,
            text=True,
        )
