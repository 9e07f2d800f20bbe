"""Triage of flagged matches: the numbers a text states, the label each match gets, the
rule measured on the shipped labelled pairs, and the queue's likely-leaks-first order."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from engine.contamination.channels.numbers import number_overlap, quantities
from engine.contamination.report.triage import (
    DEFAULT_PAIRS,
    LIKELY_LEAK,
    TEMPLATE_SIBLING,
    UNCLEAR,
    measure,
    read_pairs,
    triage,
)
from engine.errors import InputError
from engine.item_query import ItemFilter
from engine.workspace import BacklogItem, Workspace


@pytest.mark.parametrize(
    "text, values",
    [
        ("She bought 1,200 apples and 3.75 kg of flour for $34.", ["1200", "3.75", "34"]),
        ("twenty-five pupils, one hundred and five chairs, a thousand pins", ["25", "105", "1000"]),
        ("half a dozen eggs, three quarters of a pie, one and a half hours", ["6", "3/4", "3/2"]),
        ("It doubled twice; at 3:30 it was 2 1/2 m, then -4 °C, then minus 4", None),
        ("45% of 1.5 million", ["45", "1500000"]),
    ],
)
def test_numbers_are_read_in_the_forms_word_problems_write_them(text, values):
    got = [q.value for q in quantities(text)]
    if values is None:  # the clock time in hours, the mixed number, both negatives
        assert got == [Fraction(2), Fraction(7, 2), Fraction(5, 2), -4, -4]
    else:
        assert got == [Fraction(v) for v in values]


def test_ordinals_codes_and_the_pronoun_one_are_not_numbers():
    assert quantities("On the 21st day, for the third time, in room A4, one of them left") == []


@pytest.mark.parametrize(
    "eval_text, match_text",
    [
        ("50% of the class passed", "half of the class passed"),
        ("the film ran 90 minutes", "the film ran 1.5 hours"),
        ("a pen costs 150 cents", "a pen costs $1.50"),
        ("she has 7 apples", "she has seven apples"),
    ],
)
def test_a_number_written_another_way_is_the_same_number(eval_text, match_text):
    assert number_overlap(eval_text, match_text).shared == 1


EVAL = (
    "Maria sold clips to 76 of her friends in April, and then she sold half as many clips "
    "in May. How many clips did Maria sell altogether in April and May?"
)


def test_a_rephrasing_that_keeps_the_numbers_is_a_likely_leak():
    match = (
        "In April, Maria managed to sell seventy-six clips to friends. In May her sales were "
        "only half of April's. What is the total number of clips she sold?"
    )
    got = triage(EVAL, match, copied=False)
    assert got.label == LIKELY_LEAK
    assert got.to_json()["eval"] == ["76", "half"] and got.overlap.shared == 2


def test_the_same_story_with_other_numbers_is_a_template_sibling_unless_copied():
    match = (
        "In March Kenji gave 72 stickers to his neighbours, and in April he gave away a third "
        "as many. How many stickers did he give away in both months?"
    )
    assert triage(EVAL, match, copied=False).label == TEMPLATE_SIBLING
    # n-gram channels found the text copied: never put on the sibling pile
    assert triage(EVAL, match, copied=True).label == UNCLEAR


def test_one_shared_number_alone_is_not_enough_for_a_likely_leak():
    eval_text = "Tom has 12 marbles. How many marbles does Tom have?"
    match = "Ann keeps 12 marbles in a jar on her desk."
    assert triage(eval_text, match, copied=False).label == UNCLEAR
    assert triage(eval_text, match, copied=True).label == LIKELY_LEAK
    # no number in the eval text: only a copy makes it a likely leak
    assert triage("Why is the sky blue?", "Why is the sky blue, then?", False).label == UNCLEAR


def test_on_the_shipped_labelled_pairs_no_leak_is_ever_called_a_sibling():
    pairs, _ = read_pairs(DEFAULT_PAIRS)
    rates = measure(pairs)
    assert (rates["tune"]["pairs"], rates["holdout"]["pairs"]) == (288, 144)
    for split in ("tune", "holdout"):
        # the mistake that costs most: a leak rejected in bulk with the siblings
        assert rates[split]["leaks_likely_or_unclear"] == 1.0
        assert rates[split]["template_sibling"]["precision"] == 1.0
        assert rates[split]["likely_leak"]["precision"] >= 0.9


def test_a_bad_labelled_pairs_file_names_its_line_and_field(tmp_path):
    path = tmp_path / "pairs.jsonl"
    good = {"id": "a", "split": "tune", "label": "leak", "eval": "x 1", "match": "y 1"}
    path.write_text(
        json.dumps(good) + "\n" + json.dumps({**good, "id": "b", "split": "test"}) + "\n"
    )
    with pytest.raises(InputError) as err:
        read_pairs(path)
    assert f"{path}:2" in str(err.value) and "split" in str(err.value)
    assert "tune, holdout" in str(err.value)


def _item(item_id: str, score: float, label: str | None) -> BacklogItem:
    tags = ["embed"] + ([label] if label else [])
    payload = {"eval": {"id": item_id, "text": "t"}, "matches": [], "triage": label}
    payload["summary"] = {"title": item_id, "score": score, "tags": tags}
    return BacklogItem.make("flagged_pairs", item_id, "run-1", payload)


def test_the_score_order_lists_likely_leaks_first_and_template_siblings_last(tmp_path):
    ws = Workspace.init(tmp_path / "ws")
    try:
        ws.ingest(
            [
                _item("sibling-high", 0.99, TEMPLATE_SIBLING),
                _item("leak-low", 0.81, LIKELY_LEAK),
                _item("unclear-mid", 0.9, UNCLEAR),
                _item("untagged", 0.95, None),
                _item("leak-high", 0.97, LIKELY_LEAK),
            ]
        )
        f = ItemFilter()
        down = [r.item_id for r in ws.page("flagged_pairs", f, "score_desc", 0, 10)]
        up = [r.item_id for r in ws.page("flagged_pairs", f, "score_asc", 0, 10)]
        assert down == ["leak-high", "leak-low", "untagged", "unclear-mid", "sibling-high"]
        assert up == list(reversed(down))
        assert ws.position("flagged_pairs", "unclear-mid", f, "score_desc") == 3
    finally:
        ws.close()
