"""The review app's reads: pages, counts, positions and progress over a real workspace."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.item_query import ItemFilter
from engine.workspace import BacklogItem


def _pair(title: str, score, tags, text: str = "plain text") -> dict:
    return {
        "eval": {"id": title, "index": 0, "text": text},
        "matches": [],
        "summary": {"title": title, "score": score, "tags": tags},
    }


@pytest.fixture
def four(workspace, enrol):
    """Four flagged pairs, decided: rita accepts a, lena rejects b, rita skips d then retracts."""
    rita = enrol("rita", "reviewer")
    lena = enrol("lena", "reviewer", "lead")
    workspace.ingest(
        [
            BacklogItem.make("flagged_pairs", "fp-a", "r1", _pair("alpha", 0.9, ["ngram"])),
            BacklogItem.make(
                "flagged_pairs",
                "fp-b",
                "r1",
                _pair("bravo", 0.5, ["embedding", "ngram"], "Natalia sold clips"),
            ),
            BacklogItem.make("flagged_pairs", "fp-c", "r1", _pair("charlie", None, ["probe"])),
            BacklogItem.make("flagged_pairs", "fp-d", "r1", _pair("delta", 0.5, ["ngram"])),
            BacklogItem.make("adjudication", "cand-1", "r1", {"summary": {"title": "c"}}),
        ]
    )
    workspace.decide(rita, "flagged_pairs", "fp-a", "accept")
    workspace.decide(lena, "flagged_pairs", "fp-b", "reject")
    workspace.decide(rita, "flagged_pairs", "fp-d", "skip")
    workspace.retract(rita, "flagged_pairs", "fp-d")
    return workspace


def ids(rows):
    return [r.item_id for r in rows]


def test_score_order_descends_with_ties_by_id_descending_and_unscored_last(four):
    assert ids(four.page("flagged_pairs", sort="score_desc")) == ["fp-a", "fp-d", "fp-b", "fp-c"]


def test_score_ascending_puts_unscored_first(four):
    assert ids(four.page("flagged_pairs", sort="score_asc")) == ["fp-c", "fp-b", "fp-d", "fp-a"]


def test_pages_are_windows_of_the_same_order(four):
    assert ids(four.page("flagged_pairs", sort="id_asc", offset=1, limit=2)) == ["fp-b", "fp-c"]


def test_rows_carry_the_effective_decision_and_who_made_it(four):
    rows = {r.item_id: r for r in four.page("flagged_pairs", sort="id_asc")}
    assert (rows["fp-a"].status, rows["fp-a"].principal) == ("accept", "rita")
    assert (rows["fp-b"].status, rows["fp-b"].principal) == ("reject", "lena")
    assert (rows["fp-d"].status, rows["fp-d"].principal) == ("undecided", None)
    assert rows["fp-b"].tags == ("embedding", "ngram")


@pytest.mark.parametrize(
    "status, expected",
    [
        ("undecided", ["fp-c", "fp-d"]),
        ("accept", ["fp-a"]),
        ("reject", ["fp-b"]),
        ("skip", []),
    ],
)
def test_status_filter_follows_retractions(four, status, expected):
    f = ItemFilter(status=status)
    assert ids(four.page("flagged_pairs", f, sort="id_asc")) == expected
    assert four.count("flagged_pairs", f) == len(expected)


@pytest.mark.parametrize("who, expected", [("me", ["fp-a"]), ("others", ["fp-b"])])
def test_decided_by_me_or_others(four, who, expected):
    f = ItemFilter(decided_by=who, principal="rita")
    assert ids(four.page("flagged_pairs", f, sort="id_asc")) == expected
    assert four.count("flagged_pairs", f) == len(expected)


def test_tag_filter_matches_whole_tags_only(four):
    assert ids(four.page("flagged_pairs", ItemFilter(tag="ngram"), sort="id_asc")) == [
        "fp-a",
        "fp-b",
        "fp-d",
    ]
    assert four.count("flagged_pairs", ItemFilter(tag="gram")) == 0


def test_score_range_is_inclusive_and_excludes_unscored(four):
    f = ItemFilter(score_min=0.5, score_max=0.6)
    assert ids(four.page("flagged_pairs", f, sort="id_asc")) == ["fp-b", "fp-d"]


def test_text_search_reaches_the_payload_case_insensitively(four):
    assert ids(four.page("flagged_pairs", ItemFilter(text="NATALIA"))) == ["fp-b"]
    assert ids(four.page("flagged_pairs", ItemFilter(text="charl"))) == ["fp-c"]


def test_filters_combine(four):
    f = ItemFilter(tag="ngram", status="undecided")
    assert ids(four.page("flagged_pairs", f)) == ["fp-d"]
    assert four.count("flagged_pairs", f) == 1


def test_id_order_is_the_human_id_a_row_shows_not_the_hash(workspace):
    # Item ids hash the evidence, so their order says nothing to a person; the title
    # leads with the eval item's id, as the list shows it.
    shown = {
        "fp-0c": "q-001: first",
        "fp-0a": "q-003: third",
        "fp-0b": "Q-002: second",
        "fp-0d": "q-003: third",  # the same title: the hash breaks the tie
    }
    workspace.ingest(
        [
            BacklogItem.make("flagged_pairs", item_id, "r1", _pair(title, 0.5, []))
            for item_id, title in shown.items()
        ]
    )
    ascending = ["fp-0c", "fp-0b", "fp-0a", "fp-0d"]
    assert ids(workspace.page("flagged_pairs", sort="id_asc")) == ascending
    assert ids(workspace.page("flagged_pairs", sort="id_desc")) == ascending[::-1]
    for sort, listing in (("id_asc", ascending), ("id_desc", ascending[::-1])):
        for index, item_id in enumerate(listing):
            assert workspace.position("flagged_pairs", item_id, sort=sort) == index


@pytest.mark.parametrize("sort", ["score_desc", "score_asc", "id_asc", "id_desc"])
def test_position_is_the_index_in_the_listing(four, sort):
    listing = ids(four.page("flagged_pairs", sort=sort))
    for index, item_id in enumerate(listing):
        assert four.position("flagged_pairs", item_id, sort=sort) == index


def test_progress_counts_effective_decisions_per_queue(four):
    p = four.progress()
    fp = p["flagged_pairs"]
    assert (fp.total, fp.accept, fp.reject, fp.skip, fp.decided) == (4, 1, 1, 0, 2)
    assert p["adjudication"].total == 1 and p["adjudication"].decided == 0
    assert p["weak_categories"].total == 0


def test_watermark_moves_when_items_or_records_arrive(four, enrol):
    tom = enrol("tom", "reviewer")  # an enrol record of its own: made before the readings
    before = four.watermark()
    four.ingest([BacklogItem.make("flagged_pairs", "fp-e", "r1", _pair("echo", 0.1, []))])
    after_ingest = four.watermark()
    assert after_ingest.items_rowid > before.items_rowid
    assert after_ingest.head_seq == before.head_seq
    four.decide(tom, "flagged_pairs", "fp-e", "accept")
    assert four.watermark().head_seq == after_ingest.head_seq + 1


def test_bad_filter_names_the_field(four):
    with pytest.raises(InputError) as err:
        four.page("flagged_pairs", ItemFilter(status="maybe"))
    assert err.value.field == "status"
    with pytest.raises(InputError) as err:
        four.count("flagged_pairs", ItemFilter(score_min=0.9, score_max=0.1))
    assert err.value.field == "score_min"
    with pytest.raises(InputError) as err:
        four.page("flagged_pairs", sort="random")
    assert err.value.field == "sort"
