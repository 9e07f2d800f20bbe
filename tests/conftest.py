"""Shared fixtures: real workspaces, real ssh-keygen keys, the real CLI, and the
ssh/tmux harness (tests/support/ssh.py, tests/support/tmux.py).

The CLI runs as ``python -m reviewer`` (the whole sealdesk program, as the
console script runs it) in a subprocess (``sealdesk``), with this checkout
first on PYTHONPATH, so the code under test is the code in this tree;
``sealdesk_main`` runs the same ``main()`` inside the test's process.
Each area's own fixtures are in its conftest.py (tests/engine/...,
tests/reviewer); builders that are not fixtures are in tests/support.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import storage_guard

REPO = Path(__file__).resolve().parent.parent
GUARDED_SITE = REPO / "tests" / "support" / "guarded_site"
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO), str(GUARDED_SITE)]
    + [
        p
        for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if p and p not in (str(REPO), str(GUARDED_SITE))
    ]
)
# No sealdesk code opens a workspace's database files outside SQLite, in this process
# or in any Python process a test starts (tests/support/storage_guard.py).
storage_guard.install()
os.environ[storage_guard.LOG_ENV] = os.path.join(
    tempfile.mkdtemp(prefix="sealdesk-storage-guard-"), "offences.log"
)
# Tests never reach a hub; models load from installed packages or paths.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.pop("SSH_AUTH_SOCK", None)
# Under ``pytest -n N`` each worker (and every process it starts) gets its share of the
# cores for torch's and the BLAS's thread pools. Two workers each running a pool as wide
# as the machine make their threads spin-wait on one another: a distillation that takes
# 20 s when each has one core of two takes 80 s when both take two.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT") and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(
        max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    )
# Receipts go to the signer's own state directory: in tests, one of the run's own.
os.environ["SEALDESK_RECEIPTS"] = tempfile.mkdtemp(prefix="sealdesk-test-receipts-")
os.environ.pop("SEALDESK_WORKSPACE", None)

# The sealdesk program, the app's commands included (what the console script runs).
SEALDESK = [sys.executable, "-m", "reviewer"]


@pytest.fixture(autouse=True)
def _no_database_file_opened_outside_sqlite():
    """Fails the test in which sealdesk code (here or in a subprocess) opened a
    workspace's database file outside SQLite."""
    log = os.environ[storage_guard.LOG_ENV]
    before = len(storage_guard.offences)
    _, start = storage_guard.logged_offences(log, 0)
    yield
    here = storage_guard.offences[before:]
    del storage_guard.offences[before:]
    there, _ = storage_guard.logged_offences(log, start)
    if here or there:
        pytest.fail(
            "sealdesk code opened a database file outside SQLite (a closed descriptor drops "
            "the process's locks):\n" + "\n".join(here + there),
            pytrace=False,
        )


def require_tool(name: str) -> str:
    """Gives the path of a system tool; skips (saying why) only off-CI without root."""
    path = shutil.which(name) or (
        f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None
    )
    if path:
        return path
    if os.environ.get("CI") or os.geteuid() == 0:
        pytest.fail(f"{name} is missing; `make test` installs it (.ci/system-deps)")
    pytest.skip(f"{name} is not installed and this user is not root to apt-get it")


@pytest.fixture
def sealdesk(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """Gives a runner of the real CLI: ``sealdesk("verify", workspace=ws)``."""

    def run(
        *args: str,
        workspace: Path | None = None,
        input: str | None = None,
        env: dict[str, str] | None = None,
        check: bool = False,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess:
        cmd = list(SEALDESK)
        if workspace is not None:
            cmd += ["--workspace", str(workspace)]
        cmd += [str(a) for a in args]
        full_env = {**os.environ, **(env or {})}
        proc = subprocess.run(
            cmd,
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            cwd=cwd or tmp_path,
            timeout=600,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{' '.join(cmd)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    return run


@pytest.fixture
def sealdesk_main(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """Gives a runner of the CLI inside this process, called as ``sealdesk`` is and giving
    the same result: ``reviewer.main.main`` under click's ``CliRunner`` isolation.

    It goes through ``main()`` as the installed command does (its mapping of errors to
    one line and an exit code), and fits tests of argument parsing, one-line errors and
    output text. What needs a process of its own (signals, a stdin pipe, the gate's
    environment, bytes no locale decodes, a fresh interpreter's recursion limit) runs
    through ``sealdesk``.
    """
    from click.testing import CliRunner

    from reviewer.main import main

    def run(
        *args: str,
        workspace: Path | None = None,
        input: str | None = None,
        env: dict[str, str] | None = None,
        check: bool = False,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess:
        argv = [] if workspace is None else ["--workspace", str(workspace)]
        argv += [str(a) for a in args]
        environ, here = dict(os.environ), os.getcwd()
        code: int | str | None = 0
        with CliRunner().isolation(input=input, env=env) as (out, err, _):
            os.chdir(cwd or tmp_path)
            try:
                main(argv)
            except SystemExit as exc:
                code = exc.code
            finally:
                os.chdir(here)
                # A command may set variables for its children; none may outlive the run.
                for name in set(os.environ) - set(environ):
                    del os.environ[name]
                os.environ.update({k: v for k, v in environ.items() if os.environ.get(k) != v})
            if isinstance(code, str):  # as the interpreter does with sys.exit("message")
                err.write(f"{code}\n".encode())
                code = 1
        proc = subprocess.CompletedProcess(
            ["sealdesk", *argv], code or 0, out.getvalue().decode(), err.getvalue().decode()
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"sealdesk {' '.join(argv)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    return run


@pytest.fixture
def keygen(tmp_path: Path) -> Callable[[str], Path]:
    """Gives a maker of real ssh-keygen Ed25519 keys: ``keygen("rita")`` -> private key path."""
    require_tool("ssh-keygen")
    keydir = tmp_path / "keys"
    keydir.mkdir(mode=0o700, exist_ok=True)

    def make(name: str, key_type: str = "ed25519", passphrase: str = "") -> Path:
        path = keydir / name
        args = [
            "ssh-keygen",
            "-q",
            "-t",
            key_type,
            "-N",
            passphrase,
            "-C",
            f"{name}@test",
            "-f",
            str(path),
        ]
        if key_type == "rsa":
            args[4:4] = ["-b", "2048"]
        subprocess.run(args, check=True, capture_output=True)
        return path

    return make


FOUNDER = "founder"  # the principal whose key signs a test workspace's genesis


def found_workspace(root: Path, key: Path):
    """Gives a new workspace whose genesis names the key at ``key`` as founding lead."""
    from engine.ledger.enrol import found
    from engine.ledger.signers import FileSigner
    from engine.workspace import Workspace

    ws = Workspace.init(root)
    found(ws.db, ws.workspace_id, FileSigner(key), FOUNDER)
    ws.write_allowed_signers()
    return ws


@pytest.fixture
def founder_key(keygen) -> Path:
    """Gives the private key file of the founding lead of the ``workspace`` fixture."""
    return keygen(FOUNDER)


@pytest.fixture
def workspace(tmp_path: Path, founder_key: Path):
    """Gives a real workspace whose ledger starts with a genesis (closed at teardown).

    Its founding lead is the principal ``founder`` (``founder_key``), who
    signs the enrolments ``enrol`` makes.
    """
    ws = found_workspace(tmp_path / "ws", founder_key)
    yield ws
    ws.close()


@pytest.fixture
def init_cli(sealdesk, founder_key):
    """Gives ``init(ws)``: founds a workspace through the real CLI (``sealdesk init --lead
    founder``) and gives the options that sign a later ``keys add`` as that lead."""

    def run(ws: Path) -> list[str]:
        sealdesk("init", "--lead", FOUNDER, "--key", founder_key, workspace=ws, check=True)
        return ["--lead-key", str(founder_key)]

    return run


def enrol_key(ws, founder_key: Path, name: str, roles, key: Path):
    """Enrols the public key beside ``key`` for name in roles, signed by the founder."""
    from engine.ledger.enrol import enrol
    from engine.ledger.signers import FileSigner, read_public_key

    enrol(
        ws.db,
        ws.workspace_id,
        FileSigner(founder_key),
        name,
        tuple(roles),
        read_public_key(Path(f"{key}.pub")),
    )
    ws.write_allowed_signers()


@pytest.fixture
def enrol(workspace, keygen, founder_key):
    """Gives ``enrol("rita", "reviewer", ...)`` -> FileSigner for a new key the founding lead
    enrols (an enrol record in the ledger)."""
    from engine.ledger.signers import FileSigner

    def make(name: str, *roles: str):
        key = keygen(name)
        enrol_key(workspace, founder_key, name, roles, key)
        return FileSigner(key)

    return make


@pytest.fixture
def anyio_backend() -> str:
    """Runs the ``anyio``-marked tests (the review app under Textual's pilot) on asyncio."""
    return "asyncio"


# -- a real OpenSSH server, ssh-agents and tmux (the harness is tests/support/ssh.py, tmux.py)


@pytest.fixture
def sshd(tmp_path: Path):
    """Gives a real sshd on 127.0.0.1 whose sessions get HOME=<tmp>/review-home."""
    from tests.support.ssh import serve_sshd

    yield from serve_sshd(tmp_path)


@pytest.fixture
def agents(tmp_path: Path):
    """Gives ``agent(name, key)`` -> socket of a new ssh-agent holding only that key."""
    from tests.support.ssh import serve_agents

    yield from serve_agents(tmp_path)


@pytest.fixture
def tmux(tmp_path: Path):
    """Gives a Tmux on a private socket; its server is stopped by pid at teardown."""
    from tests.support.ssh import stop
    from tests.support.tmux import Tmux

    server = Tmux(require_tool("tmux"), tmp_path / "tmux.sock")
    yield server
    if server.pid is not None:
        stop(server.pid)


@pytest.fixture
def review(tmp_path: Path, keygen):
    """Gives (workspace, lena's key path) of the review host: lena founded it, enrolled rita
    (reviewer, key file), and rita decided 3 pairs (``REVIEW_RECORDS`` records in all)."""
    from tests.support.ssh import review_host

    yield from review_host(tmp_path, keygen)
