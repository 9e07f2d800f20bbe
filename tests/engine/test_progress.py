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
