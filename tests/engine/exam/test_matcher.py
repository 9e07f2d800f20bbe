"""exam-matcher-v0.1: containment, one-to-one, maximum matching, attribute agreement."""

from __future__ import annotations

from engine.exam.entities import normalize_entity
from engine.exam.matcher import GoldClaim, match
from engine.exam.replay import Detection


def gold(gid: str, start: int, end: int, family: str = "runtime", entity: str = "api"):
    return GoldClaim(gid, "c1", start, end, family, normalize_entity(entity))


def det(did: str, start: int, end: int, family: str = "runtime", entity: str = "api"):
    return Detection(did, "c1", start, end, family, entity, normalize_entity(entity))


def _pairs(matches):
    return [(m.gold.candidate_id, m.detection.candidate_id) for m in matches]


def test_a_trigger_wholly_inside_the_gold_span_matches_and_equal_bounds_count():
    assert _pairs(match([gold("g", 10, 30)], [det("d", 10, 30)])) == [("g", "d")]
    assert _pairs(match([gold("g", 10, 30)], [det("d", 12, 20)])) == [("g", "d")]


def test_a_trigger_reaching_outside_the_gold_span_does_not_match():
    assert match([gold("g", 10, 30)], [det("d", 9, 20)]) == []
    assert match([gold("g", 10, 30)], [det("d", 25, 31)]) == []


def test_matching_is_one_to_one():
    matches = match([gold("g", 0, 40)], [det("d1", 0, 5), det("d2", 10, 15)])
    assert len(matches) == 1


def test_the_matching_is_maximum_not_greedy():
    # g1 prefers d1 (full tuple) but d1 is g2's only option: g1 must take d2.
    g1 = gold("g1", 0, 30)
    g2 = gold("g2", 10, 20, family="historical")
    d1 = det("d1", 12, 18)  # inside both, agrees fully with g1
    d2 = det("d2", 2, 8, family="structural")  # inside g1 only
    assert sorted(_pairs(match([g1, g2], [d1, d2]))) == [("g1", "d2"), ("g2", "d1")]


def test_a_gold_claim_prefers_the_candidate_that_agrees_on_family_and_entity():
    g = gold("g", 0, 40, family="runtime", entity="API")
    wrong = det("d1", 0, 5, family="historical", entity="API")
    right = det("d2", 10, 15, family="runtime", entity=" api ")
    [m] = match([g], [wrong, right])
    assert m.detection.candidate_id == "d2"
    assert (m.family_equal, m.entity_equal, m.full_tuple) == (True, True, True)


def test_family_and_entity_agreement_are_judged_after_matching():
    [m] = match([gold("g", 0, 40, "runtime", "API")], [det("d", 0, 5, "historical", "cache")])
    assert (m.family_equal, m.entity_equal, m.full_tuple) == (False, False, False)
