"""Strict input validation: every bad row is named by file, line and field."""

from __future__ import annotations

import json

import pytest

from engine.errors import InputError
from engine.exam.inputs import load_inputs
from tests.support.exam_builders import claim, write_exam

TEXTS = {"c1": "The API is live.", "c2": "Nothing to report."}


def _exam(tmp_path, **kw):
    lane = {"c1": [claim("The API is live.")], "c2": []}
    return write_exam(tmp_path, TEXTS, kw.pop("lane_a", lane), kw.pop("lane_b", lane), **kw)


def _edit(path, line: int, change) -> None:
    rows = path.read_text().splitlines()
    obj = json.loads(rows[line - 1])
    change(obj)
    rows[line - 1] = json.dumps(obj)
    path.write_text("\n".join(rows) + "\n")


def _refusal(exam) -> InputError:
    with pytest.raises(InputError) as err:
        load_inputs(exam.input_paths())
    return err.value


def _where(err: InputError) -> tuple:
    return (err.path.rsplit("/", 1)[-1] if err.path else None, err.line, err.field)


def test_the_built_exam_loads(tmp_path):
    inputs = load_inputs(_exam(tmp_path).input_paths())
    assert [c.completion_id for c in inputs.completions] == ["c1", "c2"]


def test_a_corpus_row_missing_its_text_is_named(tmp_path):
    exam = _exam(tmp_path)
    _edit(exam.paths["corpus"], 2, lambda o: o.pop("completion_text"))
    assert _where(_refusal(exam)) == ("corpus.jsonl", 2, "completion_text")


def test_a_repeated_completion_id_is_refused(tmp_path):
    exam = _exam(tmp_path)
    _edit(exam.paths["corpus"], 2, lambda o: o.update(completion_id="c1"))
    err = _refusal(exam)
    assert _where(err) == ("corpus.jsonl", 2, "completion_id") and "line 1" in err.reason


def test_an_unknown_field_is_refused(tmp_path):
    exam = _exam(tmp_path)
    _edit(exam.paths["corpus"], 1, lambda o: o.update(note="x"))
    assert _where(_refusal(exam)) == ("corpus.jsonl", 1, "note")


def test_a_line_that_is_not_json_is_named(tmp_path):
    exam = _exam(tmp_path)
    exam.paths["corpus"].write_text(exam.paths["corpus"].read_text() + "{oops\n")
    assert _where(_refusal(exam))[:2] == ("corpus.jsonl", 3)


@pytest.mark.parametrize("field", ["votes", "predictions", "verdict", "candidates"])
def test_forbidden_fields_in_the_blind_context_are_refused(tmp_path, field):
    exam = _exam(tmp_path)
    _edit(exam.paths["context"], 1, lambda o: o.update({field: []}))
    err = _refusal(exam)
    assert _where(err) == ("context.jsonl", 1, field) and "forbidden" in err.reason


def test_a_forbidden_field_inside_the_message_is_refused(tmp_path):
    exam = _exam(tmp_path)
    _edit(exam.paths["context"], 2, lambda o: o["messages"][0].update(detector={}))
    assert _where(_refusal(exam)) == ("context.jsonl", 2, "messages[0].detector")


def test_the_preceding_turn_must_be_the_immediately_preceding_one(tmp_path):
    exam = _exam(tmp_path)
    _edit(exam.paths["context"], 1, lambda o: o.update(preceding_turn_id="turn-5"))
    err = _refusal(exam)
    assert _where(err) == ("context.jsonl", 1, "preceding_turn_id") and "turn-0" in err.reason


def test_context_holds_exactly_one_message(tmp_path):
    exam = _exam(tmp_path)
    _edit(exam.paths["context"], 1, lambda o: o["messages"].append(o["messages"][0]))
    assert _where(_refusal(exam)) == ("context.jsonl", 1, "messages")


def test_context_may_not_repeat_the_target_completion(tmp_path):
    exam = _exam(tmp_path)
    _edit(
        exam.paths["context"],
        1,
        lambda o: o["messages"][0].update(content="You said: The API is live."),
    )
    assert _where(_refusal(exam)) == ("context.jsonl", 1, "messages[0].content")


def test_context_session_must_match_the_corpus(tmp_path):
    exam = _exam(tmp_path)
    _edit(exam.paths["context"], 2, lambda o: o.update(session_id="other"))
    assert _where(_refusal(exam)) == ("context.jsonl", 2, "session_id")


def test_a_completion_without_context_is_refused(tmp_path):
    exam = _exam(tmp_path)
    exam.paths["context"].write_text(exam.paths["context"].read_text().splitlines()[0] + "\n")
    err = _refusal(exam)
    assert _where(err) == ("context.jsonl", None, "completion_id") and "'c2'" in err.reason


def test_a_lane_claim_with_an_unknown_family_is_named(tmp_path):
    exam = _exam(tmp_path, lane_a={"c1": [claim("The API is live.", "weather", "API")], "c2": []})
    assert _where(_refusal(exam)) == ("lane-a.labels.jsonl", 1, "claims[0].family")


def test_a_failed_lane_row_must_carry_null_claims(tmp_path):
    exam = _exam(tmp_path, lane_b={"c1": None, "c2": []})
    _edit(exam.paths["lane-b"], 1, lambda o: o.update(claims=[]))
    assert _where(_refusal(exam)) == ("lane-b.labels.jsonl", 1, "claims")


def test_a_failed_lane_row_records_two_failed_attempts(tmp_path):
    exam = _exam(tmp_path, lane_b={"c1": None, "c2": []})
    _edit(exam.paths["lane-b"], 1, lambda o: o.update(failed_request_attempts=1))
    assert _where(_refusal(exam)) == ("lane-b.labels.jsonl", 1, "attempts")


def test_confidence_fields_are_accepted_and_checked(tmp_path):
    exam = _exam(
        tmp_path, lane_a={"c1": [{**claim("The API is live."), "confidence": 2}], "c2": []}
    )
    assert _where(_refusal(exam)) == ("lane-a.labels.jsonl", 1, "claims[0].confidence")


def test_a_lane_may_not_drop_a_completion(tmp_path):
    exam = _exam(tmp_path, lane_a={"c1": [claim("The API is live.")]})
    err = _refusal(exam)
    assert _where(err) == ("lane-a.labels.jsonl", None, "completion_id")
    assert "dropped" in err.reason


def test_a_row_of_the_other_lane_is_refused(tmp_path):
    exam = _exam(tmp_path)
    _edit(exam.paths["lane-a"], 1, lambda o: o.update(lane="lane-b"))
    assert _where(_refusal(exam)) == ("lane-a.labels.jsonl", 1, "lane")


def test_the_summary_must_bind_the_lane_files_given(tmp_path):
    exam = _exam(tmp_path)
    other = _exam(tmp_path / "other", lane_b={"c1": [], "c2": []})
    exam.paths["lane-b"] = other.paths["lane-b"]
    err = _refusal(exam)
    assert _where(err) == ("labeling-summary.json", None, "lanes.lane-b.labels_sha256")


def test_the_summary_must_be_made_under_the_frozen_rubric(tmp_path):
    exam = _exam(tmp_path)
    summary = json.loads(exam.paths["summary"].read_text())
    summary["rubric"]["sha256"] = "0" * 64
    exam.paths["summary"].write_text(json.dumps(summary))
    assert _where(_refusal(exam)) == ("labeling-summary.json", None, "rubric.sha256")


def test_a_response_model_other_than_the_frozen_identity_is_refused(tmp_path):
    exam = _exam(tmp_path)
    _edit(exam.paths["lane-a"], 2, lambda o: o.update(response_model="m-lane-a-preview"))
    err = _refusal(exam)
    assert _where(err) == ("lane-a.labels.jsonl", 2, "response_model")
    assert "frozen identity" in err.reason


def test_a_context_file_other_than_the_locked_one_is_refused(tmp_path):
    from dataclasses import replace

    exam = _exam(tmp_path)
    with pytest.raises(InputError) as err:
        load_inputs(replace(exam.input_paths(), expected_context_sha256="a" * 64))
    assert _where(err.value) == ("context.jsonl", None, "expected-context-sha256")


@pytest.mark.parametrize("as_type", [float, str], ids=["float", "string"])
def test_a_schema_version_that_only_compares_equal_is_refused(tmp_path, as_type):
    exam = _exam(tmp_path)
    held = json.loads(exam.paths["corpus"].read_text().splitlines()[0])["schema_version"]
    _edit(exam.paths["corpus"], 1, lambda o: o.update(schema_version=as_type(held)))
    err = _refusal(exam)
    assert _where(err) == ("corpus.jsonl", 1, "schema_version"), err
