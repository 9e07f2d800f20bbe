"""Where the review goes after a signed decision, as a rule apart from the screen (the
screen's key-press tests walk the same cases through the app)."""

from __future__ import annotations

import pytest

from reviewer.after_decision import Keys, Move, after_decision

KEYS = Keys("a", "x", "n")


def move(**given) -> Move:
    args = dict(
        index=3,
        total=10,
        was_undecided=True,
        decision="accept",
        moved_meanwhile=False,
        next_undecided=lambda i: i + 4,  # rows 4 to 6 were decided meanwhile
        left=5,
        done=False,
        message="accept fp-3",
        keys=KEYS,
    )
    return after_decision(**{**args, **given})


def test_from_an_undecided_item_the_cursor_skips_what_was_decided_meanwhile():
    assert move() == Move(7)


def test_from_a_decided_item_the_cursor_goes_to_the_next_row():
    assert move(was_undecided=False) == Move(4)


@pytest.mark.parametrize("index", [3, 9])
def test_the_cursor_stays_when_the_list_moved_while_signing(index):
    assert move(index=index, moved_meanwhile=True) == Move(None)


def test_a_decision_on_the_last_row_ends_the_queue_and_says_what_is_left():
    assert move(index=9, message="reject fp-9", decision="reject") == Move(
        None,
        ended=True,
        notice="reject fp-9 · end of queue; 5 still undecided: n goes to the first",
    )


def test_a_skip_on_the_last_row_leaves_it_open_and_names_the_keys_that_decide_it():
    got = move(index=9, decision="skip", message="skip fp-9", left=1234)
    assert got == Move(
        None,
        ended=False,
        notice="skip fp-9 · last item, still open: a or x decides it; 1,234 undecided: "
        "n goes to the first",
    )


def test_the_last_decision_of_a_done_queue_ends_it_quietly_for_the_next_step_to_speak():
    assert move(index=9, left=0, done=True) == Move(None, ended=True)
