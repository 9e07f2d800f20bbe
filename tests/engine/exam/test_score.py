"""Scoring a sealed artifact: hand-computed metrics, statuses, and replay strictness."""

from __future__ import annotations

import pytest

from engine.canonical import sha256_hex
from engine.errors import InputError
from engine.exam.score import load_replay, score, verified_artifact
from tests.support.exam_builders import build, claim, write_artifact_file, write_exam, write_replay

TEXTS = {
    "c1": "The API is live. The cache is warm.",
    "c2": "Nothing to report.",
    "c3": "The queue is empty.",
}
LANE = {
    "c1": [
        claim("The API is live.", "runtime", "API"),
        claim("The cache is warm.", "runtime", "cache"),
    ],
    "c2": [],
    "c3": [claim("The queue is empty.", "runtime", "queue")],
}


def _score(tmp_path, workspace, replay_rows, *, sweep=True):
    exam = write_exam(
        tmp_path / "exam", TEXTS, LANE, LANE, sweep={cid: [] for cid in TEXTS} if sweep else None
    )
    art_path = tmp_path / "run" / "exam-adjudication.json"
    digest = write_artifact_file(art_path, build(exam))
    art, art_sha, inputs = verified_artifact(
        workspace, art_path, digest, exam.input_paths(), exam.rater_files()
    )
    replay = write_replay(tmp_path / "replay.jsonl", replay_rows, TEXTS)
    rows, replay_sha = load_replay(replay, sha256_hex(replay.read_bytes()), inputs)
    return score(art, art_sha, rows, replay_sha).score


def test_metrics_of_a_hand_counted_replay(tmp_path, workspace):
    result = _score(
        tmp_path,
        workspace,
        {
            "c1": [
                ("d1", "API is live", "runtime", "API"),  # matches, full tuple
                ("d2", "cache is warm", "historical", "Cache"),  # matches, family wrong
                ("d3", "The API is live. The", "runtime", "API"),
            ],  # inside no gold span
            "c2": [("d4", "Nothing", "runtime", "nothing")],  # gold-zero false positive
            "c3": None,  # detector failed
        },
    )
    assert {k: (m["numerator"], m["denominator"]) for k, m in result["metrics"].items()} == {
        "precision": (2, 4),
        "recall": (2, 3),
        "family_agreement": (1, 2),
        "entity_agreement": (2, 2),
        "full_tuple_match": (1, 2),
        "gold_zero_false_positive_rate": (1, 1),
        "operational_failure_rate": (1, 3),
    }
    assert [g["pass"] for g in result["gates"]] == [False, True, False]
    assert result["status"] == "FAIL"
    assert result["matcher"] == "exam-matcher-v0.1"


def test_a_complete_artifact_passing_every_gate_is_pass(tmp_path, workspace):
    result = _score(
        tmp_path,
        workspace,
        {
            "c1": [("d1", "API is live", "runtime", "API"), ("d2", "cache", "runtime", "cache")],
            "c2": [],
            "c3": [("d3", "queue is empty", "runtime", "queue")],
        },
    )
    assert result["metrics"]["precision"]["value"] == 1.0
    assert result["metrics"]["gold_zero_false_positive_rate"] == {
        "numerator": 0,
        "denominator": 1,
        "value": 0.0,
    }
    assert result["status"] == "PASS"


def test_a_pending_artifact_scores_pending_even_when_gates_pass(tmp_path, workspace):
    result = _score(
        tmp_path,
        workspace,
        {
            "c1": [("d1", "API is live", "runtime", "API"), ("d2", "cache", "runtime", "cache")],
            "c2": [],
            "c3": [("d3", "queue is empty", "runtime", "queue")],
        },
        sweep=False,
    )
    assert all(g["pass"] for g in result["gates"])
    assert result["status"] == "PENDING_ADJUDICATION"


def test_a_replay_with_no_detections_at_all_fails_closed_on_null_precision(tmp_path, workspace):
    result = _score(tmp_path, workspace, {"c1": [], "c2": [], "c3": []})
    assert result["metrics"]["precision"]["value"] is None
    assert result["gates"][0]["pass"] is False
    assert result["status"] == "FAIL"


def test_inter_rater_diagnostics_are_reported_and_never_gate(tmp_path, workspace):
    result = _score(tmp_path, workspace, {"c1": [], "c2": [], "c3": []})
    diag = result["inter_rater_diagnostic"]
    assert diag["gating"] is False
    # Identical lanes: every completion agrees; existence table both=2, neither=1.
    per_completion = diag["per_completion"]
    assert per_completion["exact_completion_agreement"]["value"] == 1.0
    assert per_completion["claim_existence_kappa"]["table"] == {
        "both": 2,
        "only_lane_a": 0,
        "only_lane_b": 0,
        "neither": 1,
    }
    assert per_completion["claim_existence_kappa"]["value"] == 1.0
    assert diag["per_candidate"]["agreement"]["value"] == 1.0
    assert "inter_rater" not in {g["metric"] for g in result["gates"]}


@pytest.mark.parametrize(
    "rows,field,words",
    [
        (
            {
                "c1": [("d1", "API", "runtime", "API"), ("d1", "cache", "runtime", "c")],
                "c2": [],
                "c3": [],
            },
            "candidates[1].candidate_id",
            "duplicate",
        ),
        ({"c1": [], "c2": []}, "completion_id", "must cover every completion"),
        ({"c1": [], "c2": [], "c3": [], "c9": []}, "completion_id", "no corpus completion"),
    ],
)
def test_replay_hard_failures_are_refused(tmp_path, rows, field, words):
    from engine.exam.inputs import parse_corpus
    from engine.exam.replay import parse_replay
    from tests.support.exam_builders import jsonl

    texts = {**TEXTS, "c9": "x"}
    path = write_replay(tmp_path / "r.jsonl", rows, texts)
    corpus = parse_corpus(
        jsonl(
            [
                {
                    "schema_version": 1,
                    "completion_id": c,
                    "session_id": "s",
                    "target_turn_id": "turn-1",
                    "completion_text": t,
                }
                for c, t in TEXTS.items()
            ]
        ),
        tmp_path / "corpus.jsonl",
    )
    with pytest.raises(InputError) as err:
        parse_replay(path.read_bytes(), path, corpus)
    assert err.value.field == field and words in err.value.reason


def test_a_trigger_past_the_end_of_its_completion_is_refused(tmp_path):
    from engine.exam.inputs import parse_corpus
    from engine.exam.replay import parse_replay
    from tests.support.exam_builders import jsonl

    corpus = parse_corpus(
        jsonl(
            [
                {
                    "schema_version": 1,
                    "completion_id": "c1",
                    "session_id": "s",
                    "target_turn_id": "turn-1",
                    "completion_text": "short",
                }
            ]
        ),
        tmp_path / "c.jsonl",
    )
    data = jsonl(
        [
            {
                "schema_version": 1,
                "completion_id": "c1",
                "status": "ok",
                "candidates": [
                    {
                        "candidate_id": "d1",
                        "trigger_start": 2,
                        "trigger_end": 6,
                        "family": "runtime",
                        "entity": "x",
                    }
                ],
            }
        ]
    )
    with pytest.raises(InputError) as err:
        parse_replay(data, tmp_path / "r.jsonl", corpus)
    assert (err.value.line, err.value.field) == (1, "candidates[0].trigger_end")


def test_a_replay_other_than_the_locked_one_is_refused(tmp_path, workspace):
    from engine.exam.inputs import load_inputs

    exam = write_exam(tmp_path / "exam", TEXTS, LANE, LANE)
    replay = write_replay(tmp_path / "replay.jsonl", {c: [] for c in TEXTS}, TEXTS)
    with pytest.raises(InputError) as err:
        load_replay(replay, "f" * 64, load_inputs(exam.input_paths()))
    assert err.value.field == "expected-replay-sha256"
