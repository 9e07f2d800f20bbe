"""A match's facts say how much of the eval numbers' weight it keeps, when the scan said."""

from __future__ import annotations

from reviewer.panes.flagged import facts

TRIAGE = {"label": "unclear", "eval": ["3", "7", "$1,250"], "match": ["3", "7"], "shared": 2}


def test_the_kept_row_gives_the_share_of_weight_beside_the_count():
    match = {"kind": "pool", "channels": ["embed"], "triage": {**TRIAGE, "weighted_kept": 0.2381}}
    shown = facts(match, {}).plain
    assert "2 of 3 eval numbers, 24% of their weight" in shown


def test_a_payload_without_weights_shows_the_count_alone():
    shown = facts({"kind": "pool", "channels": ["embed"], "triage": TRIAGE}, {}).plain
    assert "2 of 3 eval numbers" in shown and "weight" not in shown
