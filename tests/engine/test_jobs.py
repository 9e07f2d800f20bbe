"""Background engine runs: started as separate processes, followed through files."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine import jobs
from engine.canonical import canonical_json
from engine.errors import InputError
from engine.workspace import BacklogItem


def wait_for(predicate, timeout: float = 60.0):
    """Polls until predicate gives something truthy; gives it, or fails at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met before the deadline")


def write_items(path: Path, n: int) -> Path:
    lines = []
    for i in range(n):
        item = BacklogItem.make(
            "flagged_pairs",
            f"fp-job-{i}",
            "job-run",
            {"summary": {"title": f"job item {i}", "score": i / n, "tags": []}},
        )
        lines.append(canonical_json(item.to_json()).decode() + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def finished(workspace_root: Path, job_id: str):
    job = jobs.read_job(jobs.jobs_dir(workspace_root) / job_id)
    return job if job.state != "running" else None


def test_a_job_runs_the_engine_and_reports_progress_and_success(workspace, tmp_path):
    src = write_items(tmp_path / "items.jsonl", 30)
    job = jobs.start_job(workspace.root, ["ingest", str(src)])
    done = wait_for(lambda: finished(workspace.root, job.job_id))
    assert (done.state, done.returncode, done.error) == ("succeeded", 0, None)
    stage = done.current
    assert (stage.stage, stage.done, stage.total, stage.finished) == (
        "ingest items.jsonl",
        30,
        30,
        True,
    )
    assert workspace.count("flagged_pairs") == 30
    assert done.output == f"{src}: 30 added, 0 already held"


def test_a_finished_job_keeps_every_summary_line_the_run_printed(workspace, enrol, tmp_path):
    from tests.support.exam_builders import split_exam_run

    items = split_exam_run(tmp_path / "exam", workspace)
    adam = enrol("adam", "adjudicator")
    for item_id in items.values():
        workspace.decide(adam, "adjudication", item_id, "accept")
    job = jobs.start_job(workspace.root, ["exam", "resolve", "--run-id", "ex1"])
    done = wait_for(lambda: finished(workspace.root, job.job_id))
    assert done.state == "succeeded", done.error
    first, second = done.summary
    assert first.startswith("COMPLETE: applied 2 adjudicator decision(s); 0 undecided")
    assert second.startswith("wrote ") and "exam-adjudication.json" in second
    assert done.output == second and done.summary_cut == 0


def test_a_long_output_is_cut_to_its_last_lines_and_says_how_many_are_left_out(tmp_path):
    path = tmp_path / "20260101T000000-chatty"
    path.mkdir()
    (path / "job.json").write_text(
        json.dumps({"argv": ["verify"], "workspace": "ws", "started": "2026-01-01T00:00:00Z"}),
        encoding="utf-8",
    )
    (path / "stdout.log").write_text("".join(f"line {i}\n\n" for i in range(30)))
    (path / "result.json").write_text('{"returncode": 0}', encoding="utf-8")
    job = jobs.read_job(path)
    assert job.summary == tuple(f"line {i}" for i in range(30 - jobs.SUMMARY_LINES, 30))
    assert job.summary_cut == 30 - jobs.SUMMARY_LINES


def test_a_failed_job_shows_the_runs_own_error_line(workspace, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"queue":"nope"}\n', encoding="utf-8")
    job = jobs.start_job(workspace.root, ["ingest", str(bad)])
    done = wait_for(lambda: finished(workspace.root, job.job_id))
    assert done.state == "failed" and done.returncode == 2
    assert done.error.startswith(f"sealdesk: error: {bad}:1: field ")


def test_jobs_are_known_after_the_starting_process_is_gone(workspace, tmp_path):
    src = write_items(tmp_path / "items.jsonl", 3)
    # Another process starts the job and exits at once, as an app would on quit.
    code = (
        "import sys; from pathlib import Path; from engine import jobs; "
        "print(jobs.start_job(Path(sys.argv[1]), ['ingest', sys.argv[2]]).job_id)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(workspace.root), str(src)],
        capture_output=True,
        text=True,
        check=True,
    )
    job_id = out.stdout.strip()
    done = wait_for(lambda: finished(workspace.root, job_id))
    assert done.state == "succeeded"
    assert [j.job_id for j in jobs.list_jobs(workspace.root)] == [job_id]


def test_a_job_whose_supervisor_vanished_is_lost(workspace):
    path = jobs.jobs_dir(workspace.root) / "20260101T000000-dead00"
    path.mkdir(parents=True)
    (path / "job.json").write_text(
        json.dumps(
            {
                "argv": ["scan", "contamination"],
                "workspace": str(workspace.root),
                "started": "2026-01-01T00:00:00.000000Z",
            }
        ),
        encoding="utf-8",
    )
    gone = subprocess.Popen(["true"])
    gone.wait()
    (path / "pid").write_text(str(gone.pid), encoding="utf-8")
    job = jobs.read_job(path)
    assert job.state == "lost" and "without reporting" in job.error


def test_progress_keeps_the_latest_line_per_stage_and_skips_a_torn_line(tmp_path):
    p = tmp_path / "progress.jsonl"
    p.write_text(
        '{"stage": "hash", "done": 1, "total": 10, "unit": "files"}\n'
        '{"stage": "embed", "done": 5, "total": 50, "unit": "texts", "eta_s": 3.5}\n'
        '{"stage": "hash", "done": 10, "total": 10, "unit": "files", "finished": true}\n'
        '{"stage": "emb',
        encoding="utf-8",
    )
    stages = jobs.read_progress(p)
    assert [(s.stage, s.done, s.total, s.finished) for s in stages] == [
        ("embed", 5, 50, False),
        ("hash", 10, 10, True),
    ]
    assert stages[0].fraction == 0.1 and stages[0].eta_s == 3.5


@pytest.mark.parametrize(
    "line, reason",
    [
        ("review", "not background engine work"),
        ("decide --queue flagged_pairs --item x --decision accept", "not background engine work"),
        ("scan contamination --workspace /elsewhere", "drop --workspace"),
        ("", "empty command"),
        ("scan 'unclosed", "cannot parse"),
    ],
)
def test_only_engine_work_may_run_as_a_job(line, reason):
    with pytest.raises(InputError) as err:
        jobs.parse_command(line)
    assert reason in str(err.value) and err.value.field == "command"


def test_a_typed_sealdesk_prefix_is_accepted():
    assert jobs.parse_command("sealdesk scan contamination --eval 'my eval.jsonl'") == [
        "scan",
        "contamination",
        "--eval",
        "my eval.jsonl",
    ]
