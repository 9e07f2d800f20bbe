"""The `sealdesk exam` commands, run as the real CLI on the shipped sample exam."""

from __future__ import annotations

import json
import re
import shutil
import stat
from pathlib import Path

import pytest

from engine.canonical import sha256_hex
from tests.conftest import REPO
from tests.support.cli_workspace import decide_args

SAMPLE = REPO / "sample_data" / "exam"


def _sha(path: Path) -> str:
    return sha256_hex(path.read_bytes())


def _inputs(d: Path) -> list[str]:
    args = [
        "--corpus",
        d / "corpus.jsonl",
        "--context",
        d / "context.jsonl",
        "--expected-context-sha256",
        _sha(d / "context.jsonl"),
        "--lane-a",
        d / "lane-a.labels.jsonl",
        "--lane-b",
        d / "lane-b.labels.jsonl",
        "--labeling-summary",
        d / "labeling-summary.json",
        "--expected-labeling-summary-sha256",
        _sha(d / "labeling-summary.json"),
        "--votes",
        d / "votes.jsonl",
        "--expected-votes-sha256",
        _sha(d / "votes.jsonl"),
        "--sweep",
        d / "sweep.jsonl",
        "--expected-sweep-sha256",
        _sha(d / "sweep.jsonl"),
    ]
    return [str(a) for a in args]


def _init(path: Path) -> Path:
    from engine.workspace import Workspace

    Workspace.init(path).close()
    return path


def _items(path: Path) -> list[dict]:
    from engine.workspace import Workspace

    with Workspace.open(path) as ws:
        return ws.items()


@pytest.fixture
def sample(tmp_path) -> Path:
    copy = tmp_path / "sample"
    shutil.copytree(SAMPLE, copy)
    return copy


def test_adjudicate_seals_the_sample_and_queues_its_abstentions(sealdesk, tmp_path, sample):
    ws = _init(tmp_path / "ws")
    out = sealdesk(
        "exam", "adjudicate", "--run-id", "ex", *_inputs(sample), workspace=ws, check=True
    )
    assert out.stdout.startswith(
        "PENDING_ADJUDICATION: 17 candidate(s) in 11 completion(s): "
        "10 accepted, 3 rejected, 4 abstained"
    )
    run = ws / "artifacts" / "ex"
    for name in ("exam-adjudication.json", "adjudication-queue.jsonl"):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o600
        assert (run / f"{name}.sha256").read_text().split()[0] == _sha(run / name)
    items = _items(ws)
    assert len(items) == 4 and {i["queue"] for i in items} == {"adjudication"}
    queued = [
        json.loads(line) for line in (run / "adjudication-queue.jsonl").read_text().splitlines()
    ]
    assert sorted(i["item_id"] for i in queued) == sorted(i["item_id"] for i in items)
    payload = queued[0]["payload"]
    assert {"completion", "context", "candidate", "votes", "reason", "summary"} <= set(payload)
    assert all({"voter", "vote", "source"} <= set(v) for v in payload["votes"])


@pytest.mark.slow  # two processes: set and hash order must not leak into the bytes
def test_the_same_inputs_give_a_byte_identical_artifact_in_another_workspace(
    sealdesk, tmp_path, sample
):
    arts = []
    for name, seed in (("one", "1"), ("two", "2")):
        ws = _init(tmp_path / name)
        sealdesk(
            "exam",
            "adjudicate",
            "--run-id",
            "ex",
            *_inputs(sample),
            workspace=ws,
            env={"PYTHONHASHSEED": seed},
            check=True,
        )
        arts.append((ws / "artifacts" / "ex" / "exam-adjudication.json").read_bytes())
    assert arts[0] == arts[1]
    assert not re.search(rb"\d{4}-\d\d-\d\dT\d\d:", arts[0])  # no timestamps


def test_a_bad_lane_row_is_one_line_naming_file_line_field_and_nothing_is_written(
    sealdesk, tmp_path, sample
):
    lane = sample / "lane-a.labels.jsonl"
    rows = lane.read_text().splitlines()
    rows[2] = (
        rows[2]
        .replace('"family":"structural"', '"family":"weather"')
        .replace('"family":"historical"', '"family":"weather"')
    )
    lane.write_text("\n".join(rows) + "\n")
    ws = _init(tmp_path / "ws")
    out = sealdesk("exam", "adjudicate", "--run-id", "ex", *_inputs(sample), workspace=ws)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert out.stderr.startswith(
        f"sealdesk: error: {lane}:3: field 'claims[0].family': "
        "must be one of historical, structural, repository, runtime"
    )
    assert list((ws / "artifacts").iterdir()) == []
    assert _items(ws) == []


@pytest.mark.slow
def test_the_sample_exam_end_to_end_with_real_keys(sealdesk, tmp_path, sample, keygen, init_cli):
    ws = tmp_path / "ws"
    lead = init_cli(ws)
    adam, rita = keygen("adam"), keygen("rita")
    sealdesk(
        "keys",
        "add",
        "--principal",
        "adam",
        "--role",
        "adjudicator",
        "--key",
        f"{adam}.pub",
        *lead,
        workspace=ws,
        check=True,
    )
    sealdesk(
        "keys",
        "add",
        "--principal",
        "rita",
        "--role",
        "reviewer",
        "--key",
        f"{rita}.pub",
        *lead,
        workspace=ws,
        check=True,
    )
    sealdesk("exam", "adjudicate", "--run-id", "ex", *_inputs(sample), workspace=ws, check=True)
    queue = sealdesk("exam", "queue", "--run-id", "ex", workspace=ws, check=True).stdout
    ids = {line.split("\t")[3]: line.split("\t")[0] for line in queue.splitlines()}
    accept = [i for t, i in ids.items() if "worker queue" in t or "cache service" in t]
    reject = [i for i in ids.values() if i not in accept]
    # A reviewer may not adjudicate.
    refused = sealdesk(*decide_args(rita, accept[0], queue="adjudication"), workspace=ws)
    assert refused.returncode == 3
    for decision, chosen in (("accept", accept), ("reject", reject)):
        items = [arg for item in chosen for arg in ("--item", item)]
        sealdesk(
            "decide",
            "--queue",
            "adjudication",
            *items,
            "--decision",
            decision,
            "--key",
            adam,
            workspace=ws,
            check=True,
        )
    out = sealdesk(
        "exam", "resolve", "--run-id", "ex", "--out-run-id", "ex-final", workspace=ws, check=True
    )
    assert out.stdout.startswith("COMPLETE: applied 4 adjudicator decision(s)")
    final = ws / "artifacts" / "ex-final" / "exam-adjudication.json"
    score = [
        "exam",
        "score",
        "--run-id",
        "ex-final",
        "--expected-adjudication-sha256",
        _sha(final),
        *_inputs(sample),
        "--replay",
        str(sample / "replay.jsonl"),
        "--expected-replay-sha256",
        _sha(sample / "replay.jsonl"),
    ]
    out = sealdesk(*score, "--strict", workspace=ws, check=True)
    assert out.stdout.startswith("PASS")
    run = ws / "artifacts" / "ex-final"
    result = json.loads((run / "exam-score.json").read_bytes())
    assert result["metrics"]["precision"] == {"numerator": 9, "denominator": 11, "value": 9 / 11}
    assert result["metrics"]["recall"]["numerator"] == 9
    assert result["metrics"]["recall"]["denominator"] == 12
    assert len((run / "gold.jsonl").read_text().splitlines()) == 12
    assert (run / "adjudication-queue.jsonl").read_bytes() == b""
    for name in ("exam-score.json", "gold.jsonl", "adjudication-queue.jsonl"):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o600
        assert (run / f"{name}.sha256").read_text().split()[0] == _sha(run / name)
    # A changed input is refused, and the earlier outputs stay as they were.
    before = (run / "exam-score.json").read_bytes()
    votes = sample / "votes.jsonl"
    votes.write_text(votes.read_text().replace('"vote":"reject"', '"vote":"accept"', 1))
    refused = sealdesk(
        *[
            a if a != score[score.index("--expected-votes-sha256") + 1] else _sha(votes)
            for a in score
        ],
        workspace=ws,
    )
    assert refused.returncode == 1
    assert "binds votes SHA-256" in refused.stderr
    assert (run / "exam-score.json").read_bytes() == before
    votes.write_bytes((SAMPLE / "votes.jsonl").read_bytes())
    # Scoring the same replay again rewrites the same bytes; another replay's score
    # never replaces it (a sign-off may have bound it), but goes into a run of its own.
    sealdesk(*score, workspace=ws, check=True)
    other = sample / "replay-other.jsonl"
    rows = (sample / "replay.jsonl").read_text().splitlines()
    other.write_text(
        "\n".join(
            [
                rows[0].replace(
                    '{"candidate_id":"det-01-1","entity":"API","family":"runtime","trigger_end":41,'
                    '"trigger_start":30}',
                    "",
                )
            ]
            + rows[1:]
        )
        + "\n"
    )
    assert other.read_text() != (sample / "replay.jsonl").read_text()
    rescore = [a if a != str(sample / "replay.jsonl") else str(other) for a in score]
    rescore[rescore.index("--expected-replay-sha256") + 1] = _sha(other)
    refused = sealdesk(*rescore, workspace=ws)
    assert refused.returncode == 4 and refused.stderr.count("\n") == 1, refused.stderr
    assert "exam-score.json already holds a different artifact" in refused.stderr
    assert "--out-run-id" in refused.stderr
    assert (run / "exam-score.json").read_bytes() == before
    out = sealdesk(*rescore, "--out-run-id", "ex-final-v2", workspace=ws, check=True)
    assert out.stdout.startswith("FAIL") or out.stdout.startswith("PASS")
    second = json.loads((ws / "artifacts" / "ex-final-v2" / "exam-score.json").read_bytes())
    assert second["metrics"]["recall"]["numerator"] < 9  # one true detection fewer
    assert (run / "exam-score.json").read_bytes() == before


def test_the_committed_sample_is_what_its_generator_writes(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "regenerated"
    subprocess.run(
        [sys.executable, str(SAMPLE / "make_sample.py"), str(out)], check=True, capture_output=True
    )
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(p.name for p in SAMPLE.iterdir() if p.suffix in (".jsonl", ".json"))
    for name in written:
        assert (out / name).read_bytes() == (SAMPLE / name).read_bytes(), name


@pytest.mark.parametrize("name", ["votes", "sweep"])
def test_a_locked_hash_without_its_file_is_refused_not_ignored(sealdesk, tmp_path, sample, name):
    ws = _init(tmp_path / "ws")
    args = _inputs(sample)
    at = args.index(f"--{name}")
    del args[at : at + 2]  # the file goes; its --expected-...-sha256 stays
    out = sealdesk("exam", "adjudicate", "--run-id", "ex", *args, workspace=ws)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert (
        f"field 'expected-{name}-sha256': --expected-{name}-sha256 is given without "
        f"--{name}" in out.stderr
    )
    assert list((ws / "artifacts").iterdir()) == [] and _items(ws) == []


def test_adjudicating_other_inputs_into_a_held_run_changes_nothing(sealdesk, tmp_path, sample):
    ws = _init(tmp_path / "ws")
    sealdesk("exam", "adjudicate", "--run-id", "ex", *_inputs(sample), workspace=ws, check=True)
    run = ws / "artifacts" / "ex"
    held = {p.name: p.read_bytes() for p in run.iterdir()}
    items = _items(ws)
    sealdesk(
        "exam", "adjudicate", "--run-id", "ex", *_inputs(sample), workspace=ws, check=True
    )  # the same inputs: the same bytes, nothing to refuse
    votes = sample / "votes.jsonl"
    votes.write_text(votes.read_text().replace('"vote":"reject"', '"vote":"accept"', 1))
    again = sealdesk("exam", "adjudicate", "--run-id", "ex", *_inputs(sample), workspace=ws)
    assert again.returncode == 4 and again.stderr.count("\n") == 1, again.stderr
    assert "exam-adjudication.json already holds a different artifact" in again.stderr
    assert "choose another --run-id" in again.stderr
    assert {p.name: p.read_bytes() for p in run.iterdir()} == held and _items(ws) == items
