"""The deterministic union: exact intervals, containment vs overlap, normalization, failures."""

from __future__ import annotations

import hashlib
import json

from engine.exam.entities import normalize_entity
from engine.exam.inputs import Claim
from engine.exam.spans import InvalidResponse, locate
from tests.support.exam_builders import build, candidates, claim, votes_of, write_exam


def test_a_claim_resolves_to_its_exact_code_point_interval():
    # "Café: " is 6 code points (é is one), so the span starts at 6 and is 16 long.
    located = locate("Café: The API is live.", (Claim("The API is live.", "runtime", "API"),))
    assert [(c.start, c.end) for c in located] == [(6, 22)]


def test_source_order_places_a_repeated_span_after_the_previous_claim():
    text = "A ran. B ran. A ran."
    located = locate(text, (Claim("B ran.", "historical", "b"), Claim("A ran.", "historical", "a")))
    assert [(c.start, c.end) for c in located] == [(7, 13), (14, 20)]


def test_a_span_occurring_twice_after_the_previous_claim_is_ambiguous_not_guessed():
    result = locate(
        "The API is live. The API is live.", (Claim("The API is live.", "runtime", "API"),)
    )
    assert isinstance(result, InvalidResponse)
    assert result.claim_index == 0 and "2 times" in result.reason


def test_a_span_that_is_not_a_substring_is_an_invalid_response():
    result = locate("The API is live.", (Claim("the api is live.", "runtime", "API"),))
    assert result == InvalidResponse(0, "span_exact_text is not a substring of the completion")


def test_claims_out_of_source_order_are_an_invalid_response():
    result = locate(
        "A ran. B ran.", (Claim("B ran.", "historical", "b"), Claim("A ran.", "historical", "a"))
    )
    assert isinstance(result, InvalidResponse)
    assert result.claim_index == 1 and "source-ordered" in result.reason


def test_entity_normalization_is_nfkc_lowercase_trim_and_one_space():
    assert normalize_entity("  Worker\u00a0\t Queue ") == "worker queue"
    assert normalize_entity("\uff21\uff30\uff29") == "api"  # fullwidth A P I
    # Punctuation and word order are left alone.
    assert normalize_entity("the API") != normalize_entity("API")
    assert normalize_entity("API,") == "api,"


def test_contained_claims_with_equal_normalized_entity_merge_into_one_candidate(tmp_path):
    text = "The migration ran on Tuesday and finished in four minutes."
    exam = write_exam(
        tmp_path,
        {"c1": text},
        {"c1": [claim("The migration ran on Tuesday", "historical", "Migration")]},
        {"c1": [claim(text, "historical", " migration ")]},
    )
    [cand] = candidates(build(exam))
    assert (cand["start"], cand["end"]) == (0, len(text))  # the outer interval
    assert [m["rater"] for m in cand["members"]] == ["lane-a", "lane-b"]
    assert cand["entity_normalized"] == "migration"
    assert votes_of(cand) == ["accept", "accept", "absent"]
    assert cand["decision"] == "accept"


def test_overlapping_claims_that_do_not_contain_each_other_stay_two_candidates(tmp_path):
    text = "The build is deployed to staging and production is old."
    exam = write_exam(
        tmp_path,
        {"c1": text},
        {"c1": [claim("The build is deployed to staging", "runtime", "deploy")]},
        {"c1": [claim("deployed to staging and production is old.", "runtime", "deploy")]},
    )
    first, second = candidates(build(exam))
    assert (first["start"], first["end"]) == (0, 32)
    assert (second["start"], second["end"]) == (13, 55)
    assert votes_of(first) == ["accept", "reject", "absent"]
    assert votes_of(second) == ["reject", "accept", "absent"]
    assert first["decision"] == second["decision"] == "abstain"


def test_the_same_span_in_two_families_is_two_candidates(tmp_path):
    text = "The nightly job ran at 02:00."
    exam = write_exam(
        tmp_path,
        {"c1": text},
        {"c1": [claim(text, "historical", "nightly job")]},
        {"c1": [claim(text, "runtime", "nightly job")]},
    )
    hist, run = candidates(build(exam))
    assert (hist["family"], votes_of(hist)) == ("historical", ["accept", "reject", "absent"])
    assert (run["family"], votes_of(run)) == ("runtime", ["reject", "accept", "absent"])


def test_entities_that_differ_beyond_normalization_do_not_merge(tmp_path):
    text = "The API is live."
    exam = write_exam(
        tmp_path,
        {"c1": text},
        {"c1": [claim(text, "runtime", "the API")]},
        {"c1": [claim(text, "runtime", "API")]},
    )
    assert len(candidates(build(exam))) == 2


def test_fullwidth_and_case_variants_of_an_entity_merge(tmp_path):
    text = "The API is live."
    exam = write_exam(
        tmp_path,
        {"c1": text},
        {"c1": [claim(text, "runtime", "\uff21\uff30\uff29")]},
        {"c1": [claim(text, "runtime", "api")]},
    )
    [cand] = candidates(build(exam))
    assert cand["entity_normalized"] == "api"
    assert votes_of(cand)[:2] == ["accept", "accept"]


def test_one_claim_holding_two_of_the_other_lane_merges_with_neither(tmp_path):
    text = "The deploy finished and the health check passed."
    exam = write_exam(
        tmp_path,
        {"c1": text},
        {
            "c1": [
                claim("The deploy finished", "historical", "deploy"),
                claim("the health check passed", "historical", "deploy"),
            ]
        },
        {"c1": [claim(text, "historical", "deploy")]},
    )
    short1, long_, short2 = candidates(build(exam))
    assert (long_["start"], long_["end"]) == (0, 48)
    assert (short1["start"], short1["end"]) == (0, 19)
    assert (short2["start"], short2["end"]) == (24, 47)
    assert all(c["containment_ambiguous"] for c in (long_, short1, short2))
    assert votes_of(long_)[:2] == ["reject", "accept"]
    assert votes_of(short1)[:2] == ["accept", "reject"]


def test_a_failed_lane_votes_operational_failure(tmp_path):
    text = "The worker queue has 120 pending jobs."
    exam = write_exam(
        tmp_path, {"c1": text}, {"c1": [claim(text, "runtime", "worker queue")]}, {"c1": None}
    )
    art = build(exam)
    [cand] = candidates(art)
    assert votes_of(cand) == ["accept", "operational_failure", "absent"]
    assert cand["votes"][1]["basis"] == "lane_failed"
    assert cand["decision"] == "abstain"
    assert art["counts"]["lanes"]["lane-b"]["operational_failure"] == 1
    # The builder records a failed row as two failed requests.
    assert art["counts"]["failed_request_attempts"] == {
        "total": 2,
        "lane-a": 0,
        "lane-b": 2,
        "votes": 0,
        "sweep": 0,
    }
    assert art["counts"]["operational_failures"] == 1


def test_an_invalid_response_drops_all_of_that_lanes_claims_and_is_recorded(tmp_path):
    text = "The API is live. The cache is warm."
    exam = write_exam(
        tmp_path,
        {"c1": text},
        # First claim is fine, the second is not in the text.
        {
            "c1": [
                claim("The API is live.", "runtime", "API"),
                claim("The cache is hot.", "runtime", "cache"),
            ]
        },
        {"c1": [claim("The cache is warm.", "runtime", "cache")]},
    )
    art = build(exam)
    lane_a = art["completions"][0]["lanes"]["lane-a"]
    assert lane_a["status"] == "invalid_response"
    assert lane_a["invalid"]["claim_index"] == 1
    [cand] = candidates(art)  # nothing from lane A's usable-looking first claim
    assert cand["span_exact_text"] == "The cache is warm."
    assert votes_of(cand) == ["operational_failure", "accept", "absent"]
    assert cand["votes"][0]["basis"] == "invalid_response"
    assert art["counts"]["invalid_responses"] == 1


def test_candidate_ids_are_opaque_and_do_not_depend_on_which_lane_proposed(tmp_path):
    text = "The API is live. The cache is warm."
    a = [claim("The API is live.", "runtime", "API")]
    b = [claim("The cache is warm.", "runtime", "cache")]
    one = build(write_exam(tmp_path / "one", {"c1": text}, {"c1": a}, {"c1": b}))
    two = build(write_exam(tmp_path / "two", {"c1": text}, {"c1": b}, {"c1": a}))
    ids_one = [c["candidate_id"] for c in one["completions"][0]["candidates"]]
    ids_two = [c["candidate_id"] for c in two["completions"][0]["candidates"]]
    assert ids_one == ids_two
    assert all(i.startswith("cand-") and len(i) == 25 for i in ids_one)
    assert not any("lane" in i or "api" in i.lower()[5:] for i in ids_one)


def test_candidates_are_listed_in_the_order_the_frozen_seed_gives(tmp_path):
    text = "A ran. B ran. C ran. D ran. E ran."
    spans = [s + " ran." for s in "ABCDE"]
    exam = write_exam(
        tmp_path, {"c1": text}, {"c1": [claim(s, "historical", s) for s in spans]}, {"c1": []}
    )
    ids = [c["candidate_id"] for c in build(exam)["completions"][0]["candidates"]]

    def key(cid: str) -> str:  # sha256 of canonical ["<seed>", "order", id], derived here
        blob = json.dumps(
            ["sealdesk-exam-v2-union-seed-20250601", "order", cid], separators=(",", ":")
        ).encode()
        return hashlib.sha256(blob).hexdigest()

    assert ids == sorted(ids, key=key)
    assert len(set(ids)) == 5
