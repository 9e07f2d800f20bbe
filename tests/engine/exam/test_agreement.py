"""The lanes' agreement, per union candidate and per completion, as `exam score` prints it."""

from __future__ import annotations

import json

from engine.canonical import sha256_hex
from tests.support.exam_builders import claim, write_exam, write_replay

TEXT = (
    "The API is live. The cache is warm. The queue is empty. The build passed. "
    "The disk is full. The branch exists. The job is queued."
)
TEXTS = {"c1": TEXT, "c2": "Nothing to report."}
SHARED = claim("The API is live.", "runtime", "API")
ONLY_A = [
    claim("The cache is warm.", "runtime", "cache"),
    claim("The queue is empty.", "runtime", "queue"),
    claim("The build passed.", "historical", "build"),
]
ONLY_B = [
    claim("The disk is full.", "runtime", "disk"),
    claim("The branch exists.", "repository", "branch"),
    claim("The job is queued.", "runtime", "job"),
]


def _in_order(claims):
    return sorted(claims, key=lambda c: TEXT.index(c["span_exact_text"]))


def test_lanes_agreeing_on_one_of_seven_candidates_read_as_one_of_seven(sealdesk, tmp_path):
    from engine.workspace import Workspace

    exam = write_exam(
        tmp_path / "in",
        TEXTS,
        {"c1": _in_order([SHARED, *ONLY_A]), "c2": []},
        {"c1": _in_order([SHARED, *ONLY_B]), "c2": []},
        sweep={"c1": [], "c2": []},
    )
    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    sealdesk("exam", "adjudicate", "--run-id", "ex", *exam.cli_inputs(), workspace=ws, check=True)
    art = ws / "artifacts" / "ex" / "exam-adjudication.json"
    replay = write_replay(tmp_path / "replay.jsonl", {"c1": [], "c2": []}, TEXTS)
    proc = sealdesk(
        "exam",
        "score",
        "--run-id",
        "ex",
        "--expected-adjudication-sha256",
        sha256_hex(art.read_bytes()),
        *exam.cli_inputs(),
        "--replay",
        replay,
        "--expected-replay-sha256",
        sha256_hex(replay.read_bytes()),
        workspace=ws,
        check=True,
    )
    diag = json.loads((ws / "artifacts" / "ex" / "exam-score.json").read_bytes())[
        "inter_rater_diagnostic"
    ]
    per_candidate, per_completion = diag["per_candidate"], diag["per_completion"]
    assert (
        per_candidate["candidates"],
        per_candidate["both_lanes_proposed"],
        per_candidate["only_lane_a"],
        per_candidate["only_lane_b"],
    ) == (7, 1, 3, 3)
    assert per_candidate["agreement"] == {"numerator": 1, "denominator": 7, "value": 1 / 7}
    # The per-completion kappa still reads 1.0 (both lanes claimed something in c1 and
    # nothing in c2); it is kept, but labelled for what it measures.
    assert per_completion["claim_existence_kappa"]["value"] == 1.0
    assert per_completion["exact_completion_agreement"]["value"] == 0.5
    assert diag["gating"] is per_candidate["gating"] is per_completion["gating"] is False
    assert "no 'neither' cell" in per_candidate["description"]
    assert "not per candidate" in per_completion["description"]
    assert (
        "inter-rater per union candidate (not gating): both lanes proposed 1 of 7 "
        "candidates (0.1429); only lane-a 3, only lane-b 3"
    ) in proc.stdout
    assert (
        "inter-rater per completion (not gating; whether each lane claimed anything, "
        "not which claims): claim-existence kappa 1.0000, identical claim sets 0.5000 "
        "of 2 completions"
    ) in proc.stdout
