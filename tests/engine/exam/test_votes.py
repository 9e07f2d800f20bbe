"""The 2-of-3 rule, where third votes come from, and the votes file's strictness."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.exam.votes import Vote, decide
from tests.support.exam_builders import build, cand_id, candidates, claim, votes_of, write_exam


def _votes(a: str, b: str, third: str) -> list[Vote]:
    return [
        Vote("lane-a", a, "x", "s"),
        Vote("lane-b", b, "x", "s"),
        Vote("adjudicator", third, "x", "s"),
    ]


@pytest.mark.parametrize(
    "a,b,third,expected",
    [
        ("accept", "accept", "absent", "accept"),
        ("accept", "accept", "reject", "accept"),
        ("accept", "reject", "accept", "accept"),
        ("reject", "accept", "accept", "accept"),
        ("reject", "reject", "accept", "reject"),
        ("accept", "reject", "reject", "reject"),
        ("reject", "operational_failure", "reject", "reject"),
        ("accept", "operational_failure", "accept", "accept"),
        ("accept", "reject", "absent", "abstain"),
        ("accept", "reject", "operational_failure", "abstain"),
        ("accept", "operational_failure", "reject", "abstain"),
        ("operational_failure", "operational_failure", "accept", "abstain"),
        ("absent", "absent", "absent", "abstain"),
    ],
)
def test_two_matching_votes_decide_and_anything_less_abstains(a, b, third, expected):
    assert decide(_votes(a, b, third))[0] == expected


def test_an_abstention_says_which_votes_failed_to_agree():
    decision, reason = decide(_votes("accept", "reject", "absent"))
    assert decision == "abstain"
    assert reason == "no two votes agree (lane-a accept, lane-b reject, adjudicator absent)"


TEXT = "The API is live. The cache is warm."


def _split_exam(tmp_path, votes):
    return write_exam(
        tmp_path,
        {"c1": TEXT},
        {"c1": [claim("The API is live.", "runtime", "API")]},
        {"c1": [claim("The cache is warm.", "runtime", "cache")]},
        votes=votes,
    )


def test_a_recorded_third_vote_settles_a_lane_split(tmp_path):
    api = cand_id(TEXT, "The API is live.", "runtime", "API")
    cache = cand_id(TEXT, "The cache is warm.", "runtime", "cache")
    art = build(
        _split_exam(
            tmp_path,
            [
                {"candidate_id": api, "voter": "adjudicator", "vote": "accept"},
                {"candidate_id": cache, "voter": "adjudicator", "vote": "reject"},
            ],
        )
    )
    api_c, cache_c = candidates(art)
    assert (votes_of(api_c), api_c["decision"]) == (["accept", "reject", "accept"], "accept")
    assert (votes_of(cache_c), cache_c["decision"]) == (["reject", "accept", "reject"], "reject")
    assert api_c["votes"][2]["source"] == "votes-file"
    assert api_c["votes"][2]["basis"] == "third_vote"


def test_a_candidate_missing_from_the_votes_file_has_an_absent_third_vote(tmp_path):
    api = cand_id(TEXT, "The API is live.", "runtime", "API")
    art = build(
        _split_exam(tmp_path, [{"candidate_id": api, "voter": "adjudicator", "vote": "accept"}])
    )
    _, cache_c = candidates(art)
    assert cache_c["votes"][2]["vote"] == "absent"
    assert cache_c["votes"][2]["basis"] == "not_in_votes_file"
    assert cache_c["decision"] == "abstain"
    assert art["status"] == "PENDING_ADJUDICATION"


def test_a_vote_for_an_unknown_candidate_is_refused_by_line(tmp_path):
    exam = _split_exam(
        tmp_path,
        [
            {
                "candidate_id": cand_id(TEXT, "The API is live.", "runtime", "API"),
                "voter": "adjudicator",
                "vote": "accept",
            },
            {"candidate_id": "cand-00000000000000000000", "voter": "adjudicator", "vote": "accept"},
        ],
    )
    with pytest.raises(InputError) as err:
        build(exam)
    assert (err.value.line, err.value.field) == (2, "candidate_id")
    assert "no candidate" in err.value.reason


def test_a_lane_vote_on_a_union_candidate_is_refused(tmp_path):
    exam = _split_exam(
        tmp_path,
        [
            {
                "candidate_id": cand_id(TEXT, "The API is live.", "runtime", "API"),
                "voter": "lane-b",
                "vote": "accept",
            }
        ],
    )
    with pytest.raises(InputError) as err:
        build(exam)
    assert err.value.line == 1 and "label file" in err.value.reason


def test_a_second_vote_by_the_same_voter_is_refused(tmp_path):
    api = cand_id(TEXT, "The API is live.", "runtime", "API")
    exam = _split_exam(
        tmp_path,
        [
            {"candidate_id": api, "voter": "adjudicator", "vote": "accept"},
            {"candidate_id": api, "voter": "adjudicator", "vote": "reject"},
        ],
    )
    with pytest.raises(InputError) as err:
        build(exam)
    assert (err.value.line, err.value.field) == (2, "candidate_id")


def test_a_votes_file_needs_its_locked_sha256(tmp_path):
    from engine.exam.inputs import load_inputs
    from engine.exam.runs import RaterFiles, open_raters

    exam = _split_exam(tmp_path, [])
    inputs = load_inputs(exam.input_paths())
    with pytest.raises(InputError) as err:
        open_raters(RaterFiles(votes=exam.paths["votes"]), inputs.completions)
    assert err.value.field == "expected-votes-sha256"
