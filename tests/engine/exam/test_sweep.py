"""The completeness sweep: covered proposals, blind lane validation, pending sweeps."""

from __future__ import annotations

from tests.support.exam_builders import build, cand_id, candidates, claim, votes_of, write_exam

TEXT = "The API is live. The parser imports the tokenizer."
API = claim("The API is live.", "runtime", "API")
PARSER = claim("The parser imports the tokenizer.", "structural", "parser")


def _exam(tmp_path, sweep, votes=None):
    return write_exam(
        tmp_path, {"c1": TEXT}, {"c1": [API]}, {"c1": [API]}, sweep=sweep, votes=votes
    )


def _validations(a: str | None, b: str | None) -> list[dict]:
    pid = cand_id(TEXT, PARSER["span_exact_text"], "structural", "parser")
    return [
        {"candidate_id": pid, "voter": lane, "vote": v}
        for lane, v in (("lane-a", a), ("lane-b", b))
        if v
    ]


def test_a_proposal_already_in_the_union_makes_no_new_candidate(tmp_path):
    art = build(_exam(tmp_path, {"c1": [claim("API is live", "runtime", "api")]}))
    [cand] = candidates(art)
    [proposal] = art["completions"][0]["sweep"]["proposals"]
    assert proposal["covered_by"] == [cand["candidate_id"]]
    assert proposal["candidate_id"] is None
    assert art["completions"][0]["sweep_status"] == "complete"
    assert art["status"] == "COMPLETE"


def test_a_sweep_only_claim_accepted_by_both_lanes_is_gold(tmp_path):
    art = build(_exam(tmp_path, {"c1": [PARSER]}, _validations("accept", "accept")))
    api, parser = candidates(art)
    assert parser["origin"] == "sweep"
    assert votes_of(parser) == ["accept", "accept", "accept"]
    assert [v["basis"] for v in parser["votes"]] == ["validation", "validation", "sweep_proposal"]
    assert parser["decision"] == "accept"
    assert [g["span_exact_text"] for g in art["completions"][0]["gold"]] == [
        API["span_exact_text"],
        PARSER["span_exact_text"],
    ]
    assert art["status"] == "COMPLETE"


def test_a_sweep_only_claim_both_lanes_reject_is_rejected(tmp_path):
    art = build(_exam(tmp_path, {"c1": [PARSER]}, _validations("reject", "reject")))
    assert candidates(art)[1]["decision"] == "reject"
    assert art["status"] == "COMPLETE"


def test_one_lane_accepting_joins_the_proposer_for_two_of_three(tmp_path):
    art = build(_exam(tmp_path, {"c1": [PARSER]}, _validations("accept", "reject")))
    assert candidates(art)[1]["decision"] == "accept"


def test_an_undecidable_sweep_candidate_keeps_the_artifact_pending(tmp_path):
    art = build(_exam(tmp_path, {"c1": [PARSER]}, _validations("reject", "operational_failure")))
    parser = candidates(art)[1]
    assert parser["decision"] == "abstain"
    assert art["completions"][0]["sweep_status"] == "undecided"
    assert art["status"] == "PENDING_ADJUDICATION"
    assert [p["candidate_id"] for p in art["pending"]] == [parser["candidate_id"]]


def test_sweep_candidates_without_validation_votes_abstain(tmp_path):
    art = build(_exam(tmp_path, {"c1": [PARSER]}, []))
    assert votes_of(candidates(art)[1]) == ["absent", "absent", "accept"]
    assert art["status"] == "PENDING_ADJUDICATION"


def test_a_failed_sweep_keeps_the_artifact_pending(tmp_path):
    art = build(_exam(tmp_path, {"c1": None}))
    assert art["completions"][0]["sweep_status"] == "operational_failure"
    assert art["status"] == "PENDING_ADJUDICATION"
    assert art["pending"] == [
        {
            "completion_id": "c1",
            "candidate_id": None,
            "reason": "completeness sweep operational_failure",
        }
    ]


def test_an_invalid_sweep_proposal_keeps_the_artifact_pending_and_adds_nothing(tmp_path):
    art = build(_exam(tmp_path, {"c1": [claim("The parser is fast.", "structural", "p")]}))
    sweep = art["completions"][0]["sweep"]
    assert sweep["status"] == "invalid_response"
    assert sweep["invalid"]["reason"] == "span_exact_text is not a substring of the completion"
    assert len(candidates(art)) == 1
    assert art["status"] == "PENDING_ADJUDICATION"


def test_a_sweep_row_that_says_not_run_keeps_the_artifact_pending(tmp_path):
    exam = write_exam(
        tmp_path,
        {"c1": TEXT, "c2": "Nothing here."},
        {"c1": [API], "c2": []},
        {"c1": [API], "c2": []},
        sweep={"c1": [], "c2": "not_run"},
    )
    art = build(exam)
    assert [c["sweep_status"] for c in art["completions"]] == ["complete", "not_run"]
    assert art["status"] == "PENDING_ADJUDICATION"


def test_without_any_sweep_no_completion_is_certified_complete(tmp_path):
    art = build(write_exam(tmp_path, {"c1": TEXT}, {"c1": [API]}, {"c1": [API]}))
    assert art["counts"]["sweep"]["not_run"] == 1
    assert art["status"] == "PENDING_ADJUDICATION"


def test_a_proposal_merely_overlapping_a_candidate_is_new(tmp_path):
    overlap = claim("API is live. The parser", "runtime", "API")  # 4..27 vs 0..16
    art = build(_exam(tmp_path, {"c1": [overlap]}))
    cands = candidates(art)
    assert [c["origin"] for c in cands] == ["union", "sweep"]
    assert art["completions"][0]["sweep"]["proposals"][0]["covered_by"] == []
