"""Every binding of the sealed artifact: a changed input, code or record is refused."""

from __future__ import annotations

import pytest

from engine.canonical import canonical_json
from engine.errors import InputError, IntegrityError
from engine.exam.artifact import core_of, seal
from engine.exam.score import verified_artifact
from tests.support.exam_builders import build, cand_id, claim, write_artifact_file, write_exam

TEXTS = {"c1": "The API is live. The cache is warm.", "c2": "Nothing to report."}
API = claim("The API is live.", "runtime", "API")
CACHE = claim("The cache is warm.", "runtime", "cache")


def _exam(directory, *, texts=TEXTS, lane_a=None, lane_b=None, votes=None, sweep=None):
    third = cand_id(TEXTS["c1"], "The cache is warm.", "runtime", "cache")
    return write_exam(
        directory,
        texts,
        lane_a or {"c1": [API, CACHE], "c2": []},
        lane_b or {"c1": [API], "c2": []},
        votes=votes
        if votes is not None
        else [{"candidate_id": third, "voter": "adjudicator", "vote": "accept"}],
        sweep=sweep if sweep is not None else {"c1": [], "c2": []},
    )


@pytest.fixture
def sealed(tmp_path):
    exam = _exam(tmp_path / "base")
    path = tmp_path / "run" / "exam-adjudication.json"
    digest = write_artifact_file(path, build(exam))
    return exam, path, digest


def test_the_untouched_artifact_verifies(sealed, workspace):
    exam, path, digest = sealed
    art, sha, _ = verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())
    assert sha == digest and art["status"] == "COMPLETE"


def _variant(tmp_path, name):
    if name == "corpus":  # a text no claim touches
        return _exam(tmp_path, texts={**TEXTS, "c2": "Nothing to report!"})
    if name == "lane-a":  # a confidence field: no meaning, but other bytes
        return _exam(tmp_path, lane_a={"c1": [{**API, "confidence": 0.5}, CACHE], "c2": []})
    if name == "lane-b":
        return _exam(tmp_path, lane_b={"c1": [API, CACHE], "c2": []})
    if name == "votes":
        third = cand_id(TEXTS["c1"], "The cache is warm.", "runtime", "cache")
        return _exam(
            tmp_path, votes=[{"candidate_id": third, "voter": "adjudicator", "vote": "reject"}]
        )
    if name == "sweep":
        return _exam(tmp_path, sweep={"c1": [API], "c2": []})
    exam = _exam(tmp_path)
    if name == "context":
        data = exam.paths["context"].read_bytes().replace(b"question for c2?", b"And c2?")
        exam.paths["context"].write_bytes(data)
        _rewrite_summary(exam)
    if name == "labeling_summary":
        data = exam.paths["summary"].read_bytes()
        exam.paths["summary"].write_bytes(
            data.replace(b'"deterministic-v1"', b'"provider-default-v1"', 1)
        )
    return exam


def _rewrite_summary(exam):
    from engine.canonical import sha256_hex, strict_loads

    summary = strict_loads(exam.paths["summary"].read_bytes())
    summary["context_sha256"] = sha256_hex(exam.paths["context"].read_bytes())
    exam.paths["summary"].write_bytes(canonical_json(summary))


@pytest.mark.parametrize(
    "name", ["corpus", "context", "lane-a", "lane-b", "labeling_summary", "votes", "sweep"]
)
def test_a_changed_input_is_refused_naming_it(sealed, tmp_path, workspace, name):
    _, path, digest = sealed
    other = _variant(tmp_path / "other", name)
    with pytest.raises(IntegrityError) as err:
        verified_artifact(workspace, path, digest, other.input_paths(), other.rater_files())
    assert f"binds {name} SHA-256" in str(err.value)


def test_an_artifact_that_binds_a_votes_file_needs_it(sealed, workspace):
    from engine.exam.runs import RaterFiles

    exam, path, digest = sealed
    files = exam.rater_files()
    with pytest.raises(InputError) as err:
        verified_artifact(
            workspace,
            path,
            digest,
            exam.input_paths(),
            RaterFiles(sweep=files.sweep, expected_sweep_sha256=files.expected_sweep_sha256),
        )
    assert err.value.field == "votes"


def _rewrite(path, art):
    return write_artifact_file(path, art)


def test_a_recorded_vote_changed_and_resealed_does_not_re_derive(sealed, workspace):
    exam, path, _ = sealed
    art = core_of(__import__("json").loads(path.read_bytes()))
    for comp in art["completions"]:
        for cand in comp["candidates"]:
            if cand["votes"][2]["vote"] == "accept":
                cand["votes"][2]["vote"] = "reject"
    digest = _rewrite(path, seal(art, {}, None))  # internally consistent, dishonest
    with pytest.raises(IntegrityError) as err:
        verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())
    assert "does not re-derive" in str(err.value)


def test_an_edited_decision_that_does_not_follow_from_the_votes_is_refused(sealed, workspace):
    exam, path, _ = sealed
    art = __import__("json").loads(path.read_bytes())
    art["completions"][0]["candidates"][0]["final"] = "reject"
    digest = _rewrite(path, art)
    with pytest.raises(IntegrityError) as err:
        verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())
    assert "derived parts" in str(err.value)


def test_bytes_that_do_not_match_the_sidecar_are_refused(sealed, workspace):
    exam, path, digest = sealed
    path.write_bytes(path.read_bytes() + b" ")
    with pytest.raises(IntegrityError):
        verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())


def test_an_artifact_other_than_the_locked_one_is_refused(sealed, workspace):
    exam, path, digest = sealed
    with pytest.raises(InputError) as err:
        verified_artifact(workspace, path, "0" * 64, exam.input_paths(), exam.rater_files())
    assert err.value.field == "expected-adjudication-sha256"


def _with(path, change):
    art = __import__("json").loads(path.read_bytes())
    change(art)
    return _rewrite(path, seal(core_of(art), {}, None))


def test_another_protocol_hash_is_refused(sealed, workspace):
    exam, path, _ = sealed
    digest = _with(path, lambda a: a["protocol"].update(sha256="0" * 64))
    with pytest.raises(IntegrityError) as err:
        verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())
    assert "protocol.sha256" in str(err.value)


def test_another_seed_is_refused(sealed, workspace):
    exam, path, _ = sealed
    digest = _with(path, lambda a: a.update(seed="another-seed"))
    with pytest.raises(IntegrityError) as err:
        verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())
    assert "seed" in str(err.value)


def test_other_adjudication_code_is_refused(sealed, workspace):
    exam, path, _ = sealed
    digest = _with(path, lambda a: a["code"]["files"].update({"engine/exam/union.py": "0" * 64}))
    with pytest.raises(IntegrityError) as err:
        verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())
    assert "engine/exam/union.py" in str(err.value)


def test_other_scoring_code_does_not_invalidate_an_artifact(sealed, workspace):
    exam, path, _ = sealed
    digest = _with(path, lambda a: a["code"]["files"].update({"engine/exam/metrics.py": "0" * 64}))
    art, _, _ = verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())
    assert art["code"]["files"]["engine/exam/metrics.py"] == "0" * 64


def test_the_same_inputs_seal_to_the_same_bytes(tmp_path):
    one = canonical_json(build(_exam(tmp_path / "one")))
    two = canonical_json(build(_exam(tmp_path / "two")))
    assert one == two


def test_a_whole_completion_v1_adjudication_is_refused(tmp_path, workspace):
    exam = _exam(tmp_path / "exam")
    path = tmp_path / "v1" / "exam-adjudication.json"
    digest = write_artifact_file(
        path,
        {
            "artifact": "exam-adjudication",
            "schema_version": 1,
            "adjudications": [{"completion_id": "c1", "verdict": "accept"}],
        },
    )
    with pytest.raises(InputError) as err:
        verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())
    assert err.value.field == "schema_version" and "whole-completion" in err.value.reason


def test_an_adjudication_whose_schema_version_is_the_float_2_is_refused(tmp_path, workspace):
    exam = _exam(tmp_path / "exam")
    art = build(exam)
    art["schema_version"] = 2.0  # 2.0 == 2 in Python; the contract says the integer 2
    path = tmp_path / "float" / "exam-adjudication.json"
    digest = write_artifact_file(path, art)
    with pytest.raises(InputError) as err:
        verified_artifact(workspace, path, digest, exam.input_paths(), exam.rater_files())
    assert err.value.field == "schema_version"
