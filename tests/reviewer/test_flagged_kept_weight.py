"""A match's facts say how much of the eval numbers' weight it keeps, when the scan said:
on its own row beside the lists of numbers, or on the triage row when the texts are one
word diff (which marks the numbers themselves)."""

from __future__ import annotations

from reviewer.panes.flagged import facts

TRIAGE = {"label": "unclear", "eval": ["3", "7", "$1,250"], "match": ["3", "7"], "shared": 2}


def test_the_kept_row_gives_the_share_of_weight_beside_the_count():
    match = {"kind": "pool", "channels": ["embed"], "triage": {**TRIAGE, "weighted_kept": 0.2381}}
    shown = facts(match, {}).plain
    assert "kept          2/3 numbers, 24% by weight" in shown


def test_a_payload_without_weights_shows_the_count_alone():
    shown = facts({"kind": "pool", "channels": ["embed"], "triage": TRIAGE}, {}).plain
    assert "2/3 numbers" in shown and "weight" not in shown


def test_beside_a_word_diff_the_triage_row_says_what_it_rests_on_and_the_lists_go():
    match = {"kind": "pool", "channels": ["embed"], "triage": {**TRIAGE, "weighted_kept": 0.2381}}
    shown = facts(match, {}, lists=False).plain
    assert shown.splitlines()[0] == "triage        unclear · kept 2/3 numbers, 24% by weight"
    assert "this item" not in shown and "\nkept" not in shown
