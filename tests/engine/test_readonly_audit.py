"""An auditor checks a read-only copy of a workspace; database errors say what happened.

"Read-only" here is real, also for root (the tests run as root, and root
writes any file whatever its mode):

- a copy with every write bit cleared (``chmod -R a-w``), read by a process
  that ``setpriv`` started without CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and
  CAP_FOWNER, so that file modes bind it as they bind any user;
- the workspace under a read-only bind mount (EROFS, which binds root too),
  made inside a private mount namespace (``unshare --mount``) that ends with
  the command, so the test leaves no mount behind.

The full disk is a 1 MiB tmpfs filled to the last block, in such a namespace.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.signoff.summary import sign_off
from tests.conftest import REPO, SEALDESK, require_tool
from tests.support.backlog import make_items

# The ledger opens with its genesis and the two enrolments (records 1-3): four decisions,
# then the sign-off over records 1-7.
SIGNOFF = 8
VERIFIED = f"ok: {SIGNOFF} record(s) verified"
READ_COMMANDS = {
    "verify": (("verify",), VERIFIED),
    "items": (("items", "--json"), '"item_id": "item-5"'),
    "prove": (("prove", "2"), "ok: the path leads from the record's leaf to the signed root"),
    "checkpoint export": (("checkpoint", "export"), f"\n{SIGNOFF - 1}\n"),  # its tree size
    "keys list": (("keys", "list"), "lena"),
    "signoff --summary-only": (("signoff", "--summary-only"), f"Last sign-off: #{SIGNOFF} by lena"),
}
DECIDE = ("decide", "--queue", "flagged_pairs", "--item", "item-5", "--decision", "accept")


def snapshot(root: Path) -> dict[str, str]:
    """Gives every entry under root: a file's SHA-256 of its bytes, a directory's 'dir'."""
    out = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        out[name] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0, proc.stdout
    assert len(lines) == 1, proc.stderr
    return lines[0]


def without_override() -> list[str]:
    """Gives the prefix that runs a command bound by file modes (root included)."""
    if os.geteuid() != 0:
        return []
    return [require_tool("setpriv"), "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def run(
    prefix: list[str], *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def auditor(ws: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """Runs the CLI on ws as a user whom the workspace's modes forbid to write."""
    return run(without_override(), *SEALDESK, "--workspace", str(ws), *args, **kwargs)


@pytest.fixture
def audited(workspace, enrol):
    """Gives the root of a cleanly closed workspace: 6 items, 4 decisions, a sign-off."""
    lead = enrol("lena", "lead")
    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(6))
    for number in range(4):
        workspace.decide(
            rita, "flagged_pairs", f"item-{number}", "accept" if number % 2 == 0 else "reject"
        )
    sign_off(workspace, lead, with_exceptions=True)
    workspace.close()
    root = workspace.root
    assert sorted(p.name for p in root.iterdir()) == ["artifacts", "sealdesk.db", "trust"]
    return root


def _set_write_bits(root: Path, on: bool) -> None:
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        path.chmod(mode | stat.S_IWUSR if on else mode & ~0o222)


@pytest.fixture
def ro_copy(audited, tmp_path):
    """Gives a copy of the audited workspace with no write bit left anywhere."""
    copy = tmp_path / "audit-copy"
    shutil.copytree(audited, copy)
    _set_write_bits(copy, on=False)
    # What the auditor's commands will meet: creating a file there is refused.
    proc = run(without_override(), "sh", "-c", ': > "$1/probe"', "sh", str(copy))
    assert proc.returncode != 0 and "Permission denied" in proc.stderr
    assert not (copy / "probe").exists()
    yield copy
    _set_write_bits(copy, on=True)


def in_mount_namespace() -> list[str]:
    """Gives the prefix that runs a command in a private mount namespace (needs root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only filesystem or a small tmpfs needs root")
    return [require_tool("unshare"), "--mount", "--propagation", "private"]


# Bind-mounts $1 read-only over itself, then runs the rest of the arguments.
READ_ONLY_MOUNT = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'


def on_read_only_mount(ws: Path, *args: str) -> subprocess.CompletedProcess:
    """Runs the CLI on ws with ws mounted read-only (for this command only)."""
    return run(
        in_mount_namespace(),
        "sh",
        "-c",
        READ_ONLY_MOUNT,
        "sh",
        str(ws),
        *SEALDESK,
        "--workspace",
        str(ws),
        *args,
    )


@pytest.mark.parametrize("name", sorted(READ_COMMANDS))
def test_a_read_command_works_on_a_read_only_copy_and_writes_nothing(ro_copy, name):
    args, expected = READ_COMMANDS[name]
    before = snapshot(ro_copy)
    proc = auditor(ro_copy, *args)
    assert proc.returncode == 0, proc.stderr
    assert expected in proc.stdout
    assert snapshot(ro_copy) == before


def test_items_on_a_read_only_copy_show_every_item_and_its_decision(ro_copy):
    proc = auditor(ro_copy, "items", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [(r["item_id"], r["status"]) for r in rows] == [
        ("item-0", "accept"),
        ("item-1", "reject"),
        ("item-2", "accept"),
        ("item-3", "reject"),
        ("item-4", "undecided"),
        ("item-5", "undecided"),
    ]


def test_export_from_a_read_only_copy_writes_only_its_out_file(ro_copy, tmp_path):
    before = snapshot(ro_copy)
    out = tmp_path / "records.jsonl"
    proc = auditor(ro_copy, "export", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["kind"] for r in records] == ["genesis", "enrol", "enrol"] + ["decision"] * 4 + [
        "signoff"
    ]
    assert snapshot(ro_copy) == before


def test_verify_with_several_processes_reads_a_read_only_copy(ro_copy):
    # The worker processes open the database themselves.
    proc = auditor(ro_copy, "verify", "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(VERIFIED)


def test_a_write_on_a_read_only_copy_says_the_workspace_is_read_only(ro_copy, tmp_path):
    before = snapshot(ro_copy)
    err = one_line(auditor(ro_copy, *DECIDE, "--key", str(tmp_path / "keys" / "rita")))
    assert err == (
        f"sealdesk: error: workspace {ro_copy} is read-only: no write permission "
        f"on {ro_copy / 'sealdesk.db'}; read commands still work (verify, items, "
        "export, prove, checkpoint export, keys list, signoff --summary-only, "
        "review --read-only)"
    )
    assert snapshot(ro_copy) == before


def test_a_copy_holding_a_log_without_its_shm_file_says_what_to_do(audited, tmp_path):
    # Copied while a writer was at work, by a tool that skips the -shm file: the
    # log holds a record that sealdesk.db lacks, and SQLite can read the log only
    # through a -shm file it cannot create here.
    from engine.ledger.signers import FileSigner
    from engine.workspace import Workspace

    copy = tmp_path / "live-copy"
    with Workspace.open(audited) as ws:
        ws.conn.execute("PRAGMA wal_autocheckpoint=0")  # keep the record in the log
        ws.decide(FileSigner(tmp_path / "keys" / "rita"), "flagged_pairs", "item-4", "skip")
        shutil.copytree(audited, copy, ignore=shutil.ignore_patterns("*-shm"))
    assert (copy / "sealdesk.db-wal").stat().st_size > 0
    _set_write_bits(copy, on=False)
    err = one_line(auditor(copy, "items"))
    assert err == (
        f"sealdesk: error: workspace {copy} is read-only (no write permission on "
        f"{copy / 'sealdesk.db'}) and SQLite cannot read its sealdesk.db-wal "
        "without writing (unable to open database file); run any sealdesk command "
        "on a writable copy once (closing folds the log into the database), then "
        "copy it again"
    )


@pytest.mark.parametrize("name", ["verify", "items", "prove"])
def test_a_read_command_works_on_a_read_only_filesystem(audited, name):
    args, expected = READ_COMMANDS[name]
    before = snapshot(audited)
    proc = on_read_only_mount(audited, *args)
    assert proc.returncode == 0, proc.stderr
    assert expected in proc.stdout
    assert snapshot(audited) == before


def test_a_write_on_a_read_only_filesystem_says_so(audited, tmp_path):
    before = snapshot(audited)
    err = one_line(on_read_only_mount(audited, *DECIDE, "--key", str(tmp_path / "keys" / "rita")))
    assert (
        f"workspace {audited} is read-only: {audited} is on a read-only filesystem; "
        "read commands still work"
    ) in err
    assert snapshot(audited) == before


# -- the review app -----------------------------------------------------------


@pytest.mark.needs_tmux
@pytest.mark.slow
def test_review_read_only_browses_a_read_only_copy_in_tmux(ro_copy, tmux, tmp_path):
    before = snapshot(ro_copy)
    done = tmp_path / "exit-code"
    prefix = " ".join(without_override())
    command = (
        f"cd {REPO} && {prefix} env TERM=screen NO_COLOR=1 LANG=C.UTF-8 "
        f"PYTHONPATH={REPO} {sys.executable} -m reviewer --workspace {ro_copy} "
        f"review --read-only; echo $? > {done}"
    )
    tmux.new("review", command, width=100, height=30)
    tmux.wait_for("review", "6 shown")
    # The status bar may be drawn a frame later.
    screen = tmux.wait_for("review", f"ledger #{SIGNOFF}")
    assert "READ-ONLY" in screen
    assert "item 5" in screen and "item 0" in screen
    tmux("send-keys", "-t", "review", "a")
    tmux.wait_for("review", "read-only session: started with")
    # A search runs on its own connection in a worker thread.
    tmux("send-keys", "-t", "review", "/")
    tmux.wait_for("review", "search text, Enter applies")
    tmux("send-keys", "-t", "review", "item 3", "Enter")
    tmux.wait_for("review", "1 shown")
    # The sign-off summary is read on another connection of its own.
    tmux("send-keys", "-t", "review", "S")
    tmux.wait_for("review", f"last     sign-off #{SIGNOFF} by lena")
    tmux("send-keys", "-t", "review", "Escape")
    tmux.wait_for("review", "1 shown")
    tmux("send-keys", "-t", "review", "q")
    deadline = time.monotonic() + 30
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"
    assert snapshot(ro_copy) == before


# -- errors that say what happened ---------------------------------------------

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "exclusive":
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


def hold_lock(db: Path, mode: str) -> subprocess.Popen:
    """Gives a process holding BEGIN EXCLUSIVE on db until its stdin closes."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def release(holder: subprocess.Popen) -> None:
    holder.stdin.close()
    assert holder.wait(timeout=60) == 0


def test_a_write_while_another_process_holds_the_lock_says_locked(audited, sealdesk, tmp_path):
    holder = hold_lock(audited / "sealdesk.db", "normal")
    try:
        proc = sealdesk(
            *DECIDE,
            "--key",
            tmp_path / "keys" / "rita",
            workspace=audited,
            env={"SEALDESK_LOCK_TIMEOUT": "1"},
        )
    finally:
        release(holder)
    assert one_line(proc) == (
        f"sealdesk: error: database {audited / 'sealdesk.db'} is locked by another process: "
        "waited 1 s for it ($SEALDESK_LOCK_TIMEOUT sets how long); try again when that "
        "process is done"
    )
    verified = sealdesk("verify", workspace=audited)
    assert verified.stdout.startswith(VERIFIED), verified.stderr


def test_opening_a_workspace_another_process_holds_exclusively_says_locked(audited, sealdesk):
    holder = hold_lock(audited / "sealdesk.db", "exclusive")
    try:
        proc = sealdesk("items", workspace=audited, env={"SEALDESK_LOCK_TIMEOUT": "1"})
    finally:
        release(holder)
    err = one_line(proc)
    assert f"database {audited / 'sealdesk.db'} is locked by another process" in err
    assert "not a sealdesk database" not in err


def test_a_lock_timeout_that_is_not_a_number_of_seconds_is_refused(audited, sealdesk):
    err = one_line(sealdesk("items", workspace=audited, env={"SEALDESK_LOCK_TIMEOUT": "soon"}))
    assert err == (
        "sealdesk: error: $SEALDESK_LOCK_TIMEOUT='soon': must be a number of "
        "seconds from 0 to 86400"
    )


def test_an_unreadable_shared_memory_file_is_named(audited, tmp_path):
    # A reader elsewhere left sealdesk.db-wal and -shm (a mode=ro reader does);
    # here the -shm belongs to someone else and this user may not read it.
    conn = sqlite3.connect(f"file:{audited / 'sealdesk.db'}?mode=ro", uri=True)
    conn.execute("SELECT COUNT(*) FROM records").fetchone()
    conn.close()
    shm = audited / "sealdesk.db-shm"
    assert shm.exists()
    shm.chmod(0)
    for args in (("items",), DECIDE + ("--key", str(tmp_path / "keys" / "rita"))):
        err = one_line(auditor(audited, *args))
        assert err == (
            f"sealdesk: error: permission denied: cannot read {shm} (SQLite: "
            "unable to open database file)"
        ), args


# Mounts a 1 MiB tmpfs on $1, then runs the rest of the arguments.
SMALL_TMPFS = 'mount -t tmpfs -o size=1m sealdesk-full "$1" && shift && exec "$@"'
# Runs inside the namespace: copies the workspace onto the tmpfs, fills the tmpfs to
# the last block, runs each command and prints what it gave, frees the space and
# verifies. With "shm", a plain SQLite reader first leaves -wal and -shm beside the
# database (as any reader may), so that opening needs no space and the write fails.
ON_FULL_DISK = """
import json, os, shutil, sqlite3, subprocess, sys
full, ws, key, shm = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "shm"
copy = os.path.join(full, "ws")
shutil.copytree(ws, copy)
if shm:
    reader = sqlite3.connect(f"file:{copy}/sealdesk.db?mode=ro", uri=True)
    reader.execute("SELECT COUNT(*) FROM records").fetchone()
    reader.close()
filler = os.open(os.path.join(full, "filler"), os.O_WRONLY | os.O_CREAT)
try:
    while True:
        os.write(filler, bytes(4096))
except OSError:
    os.close(filler)
cli = [sys.executable, "-m", "engine.cli", "--workspace", copy]
out = {"free": os.statvfs(full).f_bavail}
for name, args in (("items", ["items"]),
                   ("decide", ["decide", "--queue", "flagged_pairs", "--item", "item-5",
                               "--decision", "accept", "--key", key])):
    proc = subprocess.run(cli + args, capture_output=True, text=True)
    out[name] = [proc.returncode, proc.stderr]
os.remove(os.path.join(full, "filler"))
out["verify"] = subprocess.run(cli + ["verify"], capture_output=True, text=True).stdout
print(json.dumps(out))
"""


def on_full_disk(audited: Path, tmp_path: Path, shm: bool) -> dict:
    """Gives what items, decide and (after freeing space) verify said on a full disk."""
    full = tmp_path / "full"
    full.mkdir()
    proc = run(
        in_mount_namespace(),
        "sh",
        "-c",
        SMALL_TMPFS,
        "sh",
        str(full),
        sys.executable,
        "-c",
        ON_FULL_DISK,
        str(full),
        str(audited),
        str(tmp_path / "keys" / "rita"),
        "shm" if shm else "no-shm",
    )
    assert proc.returncode == 0, proc.stderr
    assert not list(full.iterdir())  # the tmpfs went with its namespace
    return json.loads(proc.stdout)


def disk_full_line(where: Path, sqlite_said: str) -> str:
    return (
        f"sealdesk: error: disk full: no space left on the filesystem holding {where} "
        f"(SQLite: {sqlite_said}); nothing of the failed write was kept; free some "
        "space and try again\n"
    )


def test_opening_a_workspace_on_a_full_disk_says_the_disk_is_full(audited, tmp_path):
    # SQLite cannot make the -shm file it needs to open a WAL database.
    said = on_full_disk(audited, tmp_path, shm=False)
    assert said["free"] == 0
    where = tmp_path / "full" / "ws"
    assert said["items"] == [2, disk_full_line(where, "disk I/O error")]
    assert said["decide"] == [2, disk_full_line(where, "disk I/O error")]
    assert said["verify"].startswith(VERIFIED)


def test_a_write_on_a_full_disk_says_the_disk_is_full(audited, tmp_path):
    said = on_full_disk(audited, tmp_path, shm=True)
    assert said["free"] == 0
    assert said["items"][0] == 0, said["items"]  # a read needs no space
    where = tmp_path / "full" / "ws"
    assert said["decide"] == [2, disk_full_line(where, "database or disk is full")]
    assert said["verify"].startswith(VERIFIED)  # nothing was appended
