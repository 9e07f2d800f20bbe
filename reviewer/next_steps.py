"""What the review offers once a queue has nothing left undecided: the steps that follow.

``after_queue`` gives them best first, each with the binding that takes it, so
the review's notice says the key as the keymap binds it now: going on to the
next queue this session decides that still has work; for a finished
adjudication queue, resolving each exam run it came from (a job); once no
queue has work left, the sign-off (for a lead; anyone else is told it is the
lead's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.item_query import QueueProgress
from engine.roles import QUEUES
from reviewer.session import Session
from reviewer.widgets.bars import QUEUE_LABELS

EXAM_QUEUE = "adjudication"


@dataclass(frozen=True)
class Step:
    """One thing to do next, and the binding (by id) whose key does it (None: no key,
    the text says who does it)."""

    binding_id: str | None
    text: str


def undecided(progress: dict[str, QueueProgress], queue: str) -> int:
    """Gives how many items of a queue have no standing decision."""
    p = progress.get(queue)
    return 0 if p is None else p.total - p.decided


def next_queue(queue: str, progress: dict[str, QueueProgress], session: Session) -> str | None:
    """Gives the next queue after ``queue`` (in tab order, wrapping) that this session
    decides (any, when browsing read-only) and that still has undecided items."""
    at = QUEUES.index(queue)
    for other in QUEUES[at + 1 :] + QUEUES[:at]:
        if (session.read_only or session.role_for(other)) and undecided(progress, other):
            return other
    return None


def after_queue(
    queue: str,
    progress: dict[str, QueueProgress],
    session: Session,
    exam_runs: Sequence[str] = (),
) -> list[Step]:
    """Gives the steps to offer once ``queue`` has nothing undecided, best first.

    ``exam_runs``: the runs the adjudication queue's items came from (each is
    resolved by its own ``exam resolve``)."""
    steps = []
    then = next_queue(queue, progress, session)
    if then is not None:
        steps.append(
            Step(
                "review.next_undecided",
                f"go on to {QUEUE_LABELS[then]} ({undecided(progress, then):,} to decide)",
            )
        )
    if queue == EXAM_QUEUE and not session.read_only:
        steps += [
            Step("review.jobs", f"resolve the exam: run exam resolve --run-id {run}")
            for run in exam_runs
        ]
    if not any(undecided(progress, q) for q in QUEUES):
        if session.signoff_refusal() is None:
            steps.append(Step("review.signoff", "every queue is decided: sign off"))
        else:
            steps.append(Step(None, "every queue is decided: the lead signs off next"))
    return steps
