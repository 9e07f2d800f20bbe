"""Identifier and hash patterns match the whole value: Python's ``$`` also matches
before a final newline, so ``"run-1\\n"`` once passed as a run id and a sha256
with a trailing newline as a hash."""

from __future__ import annotations

import json

import pytest

from engine.canonical import SHA256_HEX
from engine.contamination.inputs.sources import _COMMIT
from engine.exam.inputs import _TURN
from engine.ledger.checkpoint import _FINGERPRINT, _SIZE
from engine.ledger.records import parse_time
from engine.rows import ID_PATTERN
from engine.workspace import RUN_ID
from tests.support.refusals import one_line_error, snapshot


@pytest.mark.parametrize(
    "pattern,good",
    [
        (RUN_ID, "run-1"),
        (ID_PATTERN, "claim:7"),
        (SHA256_HEX, "ab" * 32),
        (_COMMIT, "c" * 40),
        (_TURN, "turn-3"),
        (_SIZE, "12"),
        (_FINGERPRINT, "SHA256:" + "A" * 43),
    ],
)
def test_a_pattern_refuses_its_good_value_with_a_trailing_newline(pattern, good):
    assert pattern.match(good)
    assert not pattern.match(good + "\n")


def test_a_record_time_with_a_trailing_newline_is_not_a_record_time():
    assert parse_time("2026-12-01T03:00:00.000000Z").year == 2026
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_time("2026-12-01T03:00:00.000000Z\n")


def test_ingest_refuses_a_run_id_ending_in_a_newline(cli_ws, sealdesk_main, tmp_path):
    from engine.workspace import BacklogItem
    from tests.support.backlog import write_items_file

    ws, _ = cli_ws
    path = tmp_path / "nl.jsonl"
    write_items_file(path, [BacklogItem.make("flagged_pairs", "nl-1", "run-1\n", {"text": "x"})])
    before = snapshot(ws)
    err = one_line_error(sealdesk_main("ingest", path, workspace=ws))
    assert f"{path}:1" in err and "run_id" in err, err
    assert snapshot(ws) == before
    assert json.loads(path.read_text())["run_id"] == "run-1\n"  # the newline reached ingest


def test_a_run_id_too_long_is_told_the_length_limit(cli_ws, sealdesk_main, tmp_path):
    from engine.workspace import BacklogItem
    from tests.support.backlog import write_items_file

    ws, _ = cli_ws
    path = tmp_path / "long.jsonl"
    write_items_file(path, [BacklogItem.make("flagged_pairs", "l-1", "r" * 129, {"t": 1})])
    err = one_line_error(sealdesk_main("ingest", path, workspace=ws))
    assert "field 'run_id'" in err and "at most 128 characters" in err, err
    err = one_line_error(
        sealdesk_main("exam", "resolve", "--run-id", "x", "--out-run-id", "r" * 129, workspace=ws)
    )
    assert "field 'out-run-id'" in err and "at most 128 characters" in err, err
