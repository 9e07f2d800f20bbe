"""Engine runs in the background: start one, follow its progress, learn how it ended.

A job is a directory under ``workspace/jobs/<job_id>/``::

    job.json        what was asked: argv, workspace, start time (written first)
    pid             the supervisor's process id
    progress.jsonl  the run's progress lines (engine.progress writes them)
    stdout.log      the run's standard output
    stderr.log      the run's standard error (the one-line error is the last line)
    result.json     how it ended: exit code and end time (written last, atomically)

The run itself is ``python -P -m engine.cli --workspace WS ARGS...``, started by
a small supervisor (``python -P -m engine.jobs supervise DIR``) in its own session.

Neither imports anything from a working directory. Under the gate the app runs
in the ssh login directory, which whoever holds a shell on the host can fill:
``-P`` keeps that directory off ``sys.path`` (a ``secrets.py`` or ``engine.py``
there is never imported), the supervisor works from its job directory, and only
absolute PYTHONPATH entries are passed on. ``-I`` would do more, but it also
drops PYTHONPATH, and a checkout that is not installed (a developer's, the
tests') finds its own ``engine`` only through it. The run works from the
directory its command line was checked in (``cwd`` in job.json): relative input
paths were judged by the gate from there, and the run must read the files that
were judged.
The supervisor waits for the run and writes ``result.json``, so a job outlives
the app that started it and its outcome is known after the app restarts. A job
whose supervisor is gone without a result was killed: it is reported as lost.

Under ``sealdesk ssh-gate`` (``$SEALDESK_GATE`` set) a job runs only what the
gate's policy lets a job run, checked before anything is written, and the run
gets the policy in its job scope, so ``engine.cli`` checks it once more.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.artifacts import atomic_write
from engine.cli import gate_policy
from engine.errors import InputError

# First words of command lines a job may run: engine work that produces or
# checks backlogs. Interactive or signing commands (review, decide, undo,
# keys, signoff) need a person and a key, so they are not background work.
JOB_COMMANDS = (
    "scan",
    "exam",
    "coverage",
    "contamination",
    "ingest",
    "verify",
    "export",
    "items",
    "bench",
)
_TAIL_BYTES = 65536
# A run's summary is its standard output: what the command prints when it is
# done (counts, COMPLETE/PENDING, where it wrote). Progress goes to its own file,
# so stdout stays short; a chatty run is cut to its last lines.
SUMMARY_LINES = 12


@dataclass(frozen=True)
class StageProgress:
    """The latest progress line of one stage of a run."""

    stage: str
    done: int
    total: int | None
    unit: str
    eta_s: float | None
    finished: bool

    @property
    def fraction(self) -> float | None:
        """Gives done/total in [0, 1], or None when the total is unknown."""
        if not self.total:
            return None
        return max(0.0, min(1.0, self.done / self.total))


@dataclass(frozen=True)
class Job:
    """What is known of one background run."""

    job_id: str
    argv: tuple[str, ...]
    started: str
    state: str  # running, succeeded, failed or lost
    returncode: int | None
    error: str | None  # the run's error line when it failed
    stages: tuple[StageProgress, ...]
    path: Path
    output: str | None = None  # the run's last line of standard output
    summary: tuple[str, ...] = ()  # its last SUMMARY_LINES lines of standard output, in order
    summary_cut: int = 0  # how many earlier lines of standard output the summary leaves out

    @property
    def command(self) -> str:
        """Gives the command line as a person would type it."""
        return "sealdesk " + shlex.join(self.argv)

    @property
    def current(self) -> StageProgress | None:
        """Gives the stage most recently reported."""
        return self.stages[-1] if self.stages else None


def parse_command(line: str) -> list[str]:
    """Gives the argv of an engine command line, refusing what is not engine work."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise InputError(f"cannot parse command line: {exc}", field="command") from exc
    if argv and argv[0] in ("sealdesk", "sd"):
        argv = argv[1:]
    if not argv:
        raise InputError(
            "empty command (try: scan contamination --eval E --pool P)", field="command"
        )
    for arg in argv:
        if arg in ("--workspace", "-w") or arg.startswith("--workspace="):
            raise InputError("a job runs on this workspace; drop --workspace", field="command")
    if argv[0] not in JOB_COMMANDS:
        raise InputError(
            f"{argv[0]!r} is not background engine work (one of: {', '.join(JOB_COMMANDS)})",
            field="command",
        )
    return argv


def check_command(workspace_root: Path, line: str | list[str]) -> list[str]:
    """Gives the argv of a command line that may run as a job on this workspace; raises
    InputError for what is not engine work and PermissionRefused for what the ssh gate
    this process runs under would not let a job run."""
    argv = parse_command(line if isinstance(line, str) else shlex.join(line))
    gated = gate_policy.active()
    if gated is not None:
        # judged against the tree the run will have: `python -m engine.cli`'s
        from engine.cli.commands import installed_tree

        policy, _scope = gated
        where = str(Path(workspace_root).resolve())
        policy.enforce(["--workspace", where, *argv], "job", root=installed_tree())
    return argv


def jobs_dir(workspace_root: Path) -> Path:
    """Gives the workspace's jobs directory."""
    return Path(workspace_root) / "jobs"


def start_job(workspace_root: Path, argv: list[str], *, env: dict[str, str] | None = None) -> Job:
    """Gives the new job after starting its run in the background."""
    argv = check_command(workspace_root, argv)
    root = Path(workspace_root).resolve()
    now = datetime.now(UTC)
    job_id = now.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    path = jobs_dir(root) / job_id
    path.mkdir(parents=True, mode=0o700)
    spec = {
        "argv": argv,
        "workspace": str(root),
        "started": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "cwd": os.getcwd(),  # where check_command judged the relative paths
    }
    atomic_write(path / "job.json", json.dumps(spec, indent=1).encode("utf-8"), mode=0o600)
    child_env = {**os.environ, **(env or {})}
    gated = gate_policy.active()
    if gated is not None:
        # The run, and whatever sealdesk it starts, is held to the job scope of the
        # same policy; no caller's env can lift it.
        child_env[gate_policy.ENV_VAR] = gated[0].to_env("job")
    child_env["PYTHONPATH"] = import_path(child_env.get("PYTHONPATH", ""))
    with open(path / "supervisor.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "engine.jobs", "supervise", str(path)],
            cwd=path,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=child_env,
            start_new_session=True,
            close_fds=True,
        )
    _CHILDREN[job_id] = proc
    (path / "pid").write_text(str(proc.pid), encoding="utf-8")
    return read_job(path)


def import_path(pythonpath: str) -> str:
    """Gives the PYTHONPATH a job's processes get: this checkout's root first, then the
    caller's absolute entries (a relative or empty one names the working directory)."""
    entries = [p for p in pythonpath.split(os.pathsep) if os.path.isabs(p)]
    return os.pathsep.join([str(Path(__file__).resolve().parent.parent), *entries])


# Supervisors this process started, so that they are reaped (no zombies) and
# their end is seen at once.
_CHILDREN: dict[str, subprocess.Popen] = {}


def list_jobs(workspace_root: Path, limit: int | None = None) -> list[Job]:
    """Gives the workspace's jobs, newest first (at most limit of them)."""
    base = jobs_dir(workspace_root)
    if not base.is_dir():
        return []
    jobs: list[Job] = []
    # Job ids start with their UTC start time, so names sort by age.
    for path in sorted(base.iterdir(), reverse=True):
        if limit is not None and len(jobs) >= limit:
            break
        if (path / "job.json").is_file():
            jobs.append(read_job(path))
    return jobs


def read_job(path: Path) -> Job:
    """Gives the state of the job in a directory."""
    path = Path(path)
    spec = json.loads((path / "job.json").read_text(encoding="utf-8"))
    proc = _CHILDREN.get(path.name)
    if proc is not None and proc.poll() is not None:
        _CHILDREN.pop(path.name, None)
    result = _read_json(path / "result.json")
    stages = read_progress(path / "progress.jsonl")
    if result is not None:
        code = int(result.get("returncode", -1))
        state = "succeeded" if code == 0 else "failed"
        error = (
            None if code == 0 else (error_line(path / "stderr.log") or f"exited with code {code}")
        )
        lines = _tail_lines(path / "stdout.log")
        shown = tuple(lines[-SUMMARY_LINES:])
        return Job(
            path.name,
            tuple(spec["argv"]),
            spec["started"],
            state,
            code,
            error,
            stages,
            path,
            lines[-1] if lines else None,
            shown,
            len(lines) - len(shown),
        )
    if _supervisor_alive(path):
        return Job(
            path.name, tuple(spec["argv"]), spec["started"], "running", None, None, stages, path
        )
    return Job(
        path.name,
        tuple(spec["argv"]),
        spec["started"],
        "lost",
        None,
        error_line(path / "stderr.log")
        or "the run stopped without reporting how it ended (killed?)",
        stages,
        path,
    )


def cancel_job(job: Job) -> bool:
    """Gives True after asking a running job's process group to stop."""
    try:
        pid = int((job.path / "pid").read_text(encoding="utf-8"))
        os.killpg(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return False
    return True


def read_progress(path: Path) -> tuple[StageProgress, ...]:
    """Gives the latest line of each stage in a progress file, in first-seen order."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - _TAIL_BYTES))
            data = handle.read()
    except OSError:
        return ()
    latest: dict[str, StageProgress] = {}
    lines = data.split(b"\n")
    if size > _TAIL_BYTES:
        lines = lines[1:]  # the first line of a tail is usually cut
    for raw in lines:
        try:
            obj = json.loads(raw)
            stage = StageProgress(
                str(obj["stage"]),
                int(obj.get("done", 0)),
                None if obj.get("total") is None else int(obj["total"]),
                str(obj.get("unit", "")),
                None if obj.get("eta_s") is None else float(obj["eta_s"]),
                bool(obj.get("finished", False)),
            )
        except (ValueError, KeyError, TypeError):
            continue  # a line still being written, or not progress at all
        latest.pop(stage.stage, None)
        latest[stage.stage] = stage
    return tuple(latest.values())


def last_line(path: Path) -> str | None:
    """Gives the last non-empty line of a log file, or None."""
    lines = _tail_lines(path)
    return lines[-1] if lines else None


def _tail_lines(path: Path) -> list[str]:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - _TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    lines = text.splitlines()
    if size > _TAIL_BYTES:
        lines = lines[1:]  # the first line of a tail is usually cut
    return [ln.strip() for ln in lines if ln.strip()]


def error_line(path: Path) -> str | None:
    """Gives the one line that says why a run failed: its sealdesk error, else its last line."""
    lines = _tail_lines(path)
    for line in reversed(lines):
        if line.startswith("sealdesk: error:"):
            return line
    return lines[-1] if lines else None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _supervisor_alive(path: Path) -> bool:
    proc = _CHILDREN.get(path.name)
    if proc is not None:
        return proc.poll() is None
    try:
        pid = int((path / "pid").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        # Started a moment ago and the pid is not written yet.
        return time.time() - (path / "job.json").stat().st_mtime < 5
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _is_supervisor(pid, path)


def _is_supervisor(pid: int, path: Path) -> bool:
    """Says whether a live pid is still this job's supervisor (pids are reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the pid
    return str(path).encode() in cmdline


def supervise(path: Path) -> int:
    """Gives the run's exit code after running it and recording how it ended."""
    path = Path(path)
    spec = json.loads((path / "job.json").read_text(encoding="utf-8"))
    env = {
        **os.environ,
        "SEALDESK_PROGRESS_FILE": str(path / "progress.jsonl"),
        "SEALDESK_NO_PROGRESS": "1",
    }
    cmd = [
        sys.executable,
        "-P",
        "-m",
        "engine.cli",
        "--workspace",
        spec["workspace"],
        *spec["argv"],
    ]
    with open(path / "stdout.log", "wb") as out, open(path / "stderr.log", "wb") as err:
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                cwd=spec.get("cwd", spec["workspace"]),
            )
        except OSError as exc:
            err.write(f"sealdesk: error: cannot start the run: {exc}\n".encode())
            code = 127
        else:
            # Forward a cancel to the run, then still record how it ended.
            signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
            code = proc.wait()
    result = {
        "returncode": code,
        "ended": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }
    atomic_write(path / "result.json", json.dumps(result).encode("utf-8"), mode=0o600)
    return code


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "supervise":
        sys.exit(supervise(Path(sys.argv[2])))
    sys.exit("usage: python -m engine.jobs supervise JOB_DIR")
