"""Where the review goes after a decision is signed: the next row, or the end of a queue.

``after_decision`` is the rule, apart from the screen that applies it, so it is
tested without an app: from an undecided item the cursor goes on to the next
undecided one (what a bulk decision or a colleague decided meanwhile is not
put before this person again); from a decided one, to the next row; when the
list moved while the record was being signed, it stays where it is. On the
last row, a skip settles nothing, so the item stays open and the notice says
which keys decide it; a decision ends the queue, and the notice says how many
are still undecided (unless the queue is done, which the next step says).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Keys:
    """The keys the notices name, as the keymap binds them now."""

    accept: str
    reject: str
    next_undecided: str


@dataclass(frozen=True)
class Move:
    """What the screen does after a signed decision: move the cursor to ``cursor`` (None:
    leave it), mark the queue ended at the decided item, and say ``notice``."""

    cursor: int | None
    ended: bool = False
    notice: str | None = None


def after_decision(
    *,
    index: int,
    total: int,
    was_undecided: bool,
    decision: str,
    moved_meanwhile: bool,
    next_undecided: Callable[[int], int],
    left: int,
    done: bool,
    message: str,
    keys: Keys,
) -> Move:
    """Gives the move after deciding the row at ``index`` of ``total`` rows.

    ``next_undecided(index)`` gives the first undecided row after ``index`` (else the
    next row); ``left`` is how many items of the queue are still undecided, ``done``
    whether none is; ``message`` is what the status already says of the decision.
    """
    if moved_meanwhile:
        return Move(None)
    if index + 1 < total:
        return Move(next_undecided(index) if was_undecided else index + 1)
    if decision == "skip":
        return Move(
            None,
            notice=f"{message} · last item, still open: {keys.accept} or {keys.reject} "
            f"decides it; {left:,} undecided: {keys.next_undecided} goes to the first",
        )
    if done:
        return Move(None, ended=True)
    return Move(
        None,
        ended=True,
        notice=f"{message} · end of queue; {left:,} still undecided: {keys.next_undecided} "
        "goes to the first",
    )
