"""Progress of long work: JSON lines for the app's jobs panel, never a reason to fail."""

from __future__ import annotations

import json

from engine.progress import reporter


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_stage_reports_its_start_and_its_finish_as_json_lines(tmp_path, monkeypatch):
    path = tmp_path / "progress.jsonl"
    monkeypatch.setenv("SEALDESK_PROGRESS_FILE", str(path))
    with reporter(enabled=False) as rep:
        stage = rep.stage("embedding pool", total=3, unit="texts")
        for _ in range(3):
            stage.advance()
        stage.finish()
    first, last = lines(path)[0], lines(path)[-1]
    assert (first["stage"], first["done"], first["total"], first["unit"], first["finished"]) == (
        "embedding pool",
        0,
        3,
        "texts",
        False,
    )
    assert (last["done"], last["total"], last["finished"]) == (3, 3, True)


def test_updates_are_throttled_but_the_finish_is_exact(tmp_path, monkeypatch):
    path = tmp_path / "progress.jsonl"
    monkeypatch.setenv("SEALDESK_PROGRESS_FILE", str(path))
    with reporter(enabled=False) as rep:
        stage = rep.stage("hashing", total=None)
        for _ in range(5000):
            stage.advance()
        stage.finish()
    written = lines(path)
    assert len(written) < 50
    assert (written[-1]["done"], written[-1]["total"], written[-1]["finished"]) == (
        5000,
        5000,
        True,
    )


def test_an_unwritable_progress_file_never_fails_the_work(tmp_path, monkeypatch):
    monkeypatch.setenv("SEALDESK_PROGRESS_FILE", str(tmp_path / "missing-dir" / "p.jsonl"))
    with reporter(enabled=False) as rep:
        stage = rep.stage("work", total=2)
        stage.advance(2)
        stage.finish()
    assert stage.done == 2


# A stage that waits for a file to appear: it stands for work stuck in one long call.
_LONG_STAGE = """
import sys, time
from pathlib import Path
from engine.progress import reporter
go = Path(sys.argv[1])
with reporter() as rep:
    stage = rep.stage("distilling \\x1b]0;pwned\\x07 prefilter", total=4, unit="texts")
    stage.advance(1)
    while not go.exists():
        time.sleep(0.01)
    stage.advance(3)
    stage.finish()
    quick = rep.stage("a quick stage", total=1)
    quick.advance()
    quick.finish()
"""


def test_without_a_terminal_long_work_prints_plain_lines_with_counts_rate_and_time_left(
    tmp_path,
):
    import os
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    go, err = tmp_path / "go", tmp_path / "stderr.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "SEALDESK_PROGRESS_INTERVAL": "0.2",
    }
    env.pop("SEALDESK_NO_PROGRESS", None)
    env.pop("SEALDESK_PROGRESS_FILE", None)
    with open(err, "w") as stderr:  # a log file, as under nohup or in CI
        proc = subprocess.Popen(
            [sys.executable, "-c", _LONG_STAGE, str(go)], stderr=stderr, env=env
        )
        try:
            # The stage is stuck: it still says so, more than once, while it is.
            while err.read_text().count("progress: ") < 2:
                assert proc.poll() is None, err.read_text()
                time.sleep(0.05)
        finally:
            go.touch()
        assert proc.wait(timeout=120) == 0, err.read_text()
    lines = err.read_text().splitlines()
    running = [line for line in lines if "done:" not in line]
    assert running and all(
        line.startswith("progress: distilling ␛]0;pwned␇ prefilter 1/4 texts (25.0%), ")
        and " texts/s, " in line
        and line.endswith(" left")
        for line in running
    ), lines
    assert lines[-1].startswith("progress: distilling ␛]0;pwned␇ prefilter done: 4 texts in ")
    # A stage shorter than the interval prints nothing.
    assert not any("quick" in line for line in lines)
    assert "\x1b" not in err.read_text()


def test_no_progress_turns_the_plain_lines_off(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    go = tmp_path / "go"
    go.touch()
    env = {**os.environ, "PYTHONPATH": str(REPO), "SEALDESK_PROGRESS_INTERVAL": "0.01"}
    env["SEALDESK_NO_PROGRESS"] = "1"
    script = _LONG_STAGE.replace("stage.advance(3)", "time.sleep(0.2); stage.advance(3)")
    proc = subprocess.run(
        [sys.executable, "-c", script, str(go)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
