"""What the review offers once a queue has nothing left undecided: the steps that follow.

``after_queue`` gives them best first, each with the binding that takes it, so
the review's notice says the key as the keymap binds it now: going on to the
next queue this session decides that still has work; for an adjudication
queue whose candidates are only skipped, that they must be accepted or
rejected before the exam resolves (once all are, the review offers the key
that resolves it); once no queue has work left, the sign-off (for a lead;
anyone else is told it is the lead's), but only when it is READY: while
anything holds it (an exam still PENDING_ADJUDICATION, an engine run still
running that changes what it binds), that is said instead; and when the
ledger's newest record is a sign-off, that it is signed off, by whom.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine import jobs
from engine.item_query import QueueProgress
from engine.roles import ADJUDICATION, QUEUES
from engine.terminal_text import visible
from reviewer.session import Session
from reviewer.widgets.bars import QUEUE_LABELS

EXAM_QUEUE = ADJUDICATION
# First words of the engine runs whose outcome changes what a sign-off binds (new
# items, artifacts, an exam's status): while one runs, the sign-off is not READY.
CHANGES_SIGNOFF = frozenset({"scan", "exam", "coverage", "contamination", "ingest"})


def running_holds(workspace_root: Path) -> list[str]:
    """Gives one reason per engine run still running that changes what a sign-off binds."""
    return [
        visible(f"sealdesk {job.argv[0]} is still running (job {job.job_id})")
        for job in jobs.list_jobs(workspace_root)
        if job.state == "running" and job.argv and job.argv[0] in CHANGES_SIGNOFF
    ]


def signoff_holds(ws) -> list[str]:
    """Gives what keeps a plain sign-off from being READY besides undecided items: the
    summary's holds (an exam PENDING_ADJUDICATION) and the runs still running."""
    # Loaded on first use, as the sign-off screen is: the review starts without them.
    from engine.signoff.run_status import run_status
    from engine.signoff.summary import readiness_holds

    return readiness_holds(run_status(ws.artifacts_dir).exam) + running_holds(ws.root)


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
        if (session.read_only or session.works_on(other)) and undecided(progress, other):
            return other
    return None


def after_queue(
    queue: str,
    progress: dict[str, QueueProgress],
    session: Session,
    holds: Callable[[], list[str]] = list,
    signed_off_by: str | None = None,
) -> list[Step]:
    """Gives the steps to offer once ``queue`` has nothing undecided, best first.
    ``holds`` gives what keeps the sign-off from being READY (asked only once every
    queue is decided: it reads the artifacts); ``signed_off_by`` names who signed off
    when the ledger's newest record is that sign-off (nothing was decided since, so
    nobody signs off next)."""
    steps = []
    then = next_queue(queue, progress, session)
    if then is not None:
        steps.append(
            Step(
                "review.next_undecided",
                f"go on to {QUEUE_LABELS[then]} ({undecided(progress, then):,} to decide)",
            )
        )
    skipped = progress[queue].skip if queue in progress else 0
    if queue == EXAM_QUEUE and skipped:
        # A skip settles nothing: resolving now would leave the exam pending.
        steps.append(
            Step(
                None,
                f"{skipped:,} skipped: accept or reject them before the exam can be resolved",
            )
        )
    if not any(undecided(progress, q) for q in QUEUES):
        if signed_off_by is not None:
            steps.append(Step(None, f"every queue is decided and signed off by {signed_off_by}"))
            return steps
        held = holds()
        if held:
            steps.append(
                Step(None, f"every queue is decided; sign-off NOT READY: {'; '.join(held)}")
            )
        elif session.signoff_refusal() is None:
            steps.append(Step("review.signoff", "every queue is decided: sign off"))
        else:
            steps.append(Step(None, "every queue is decided: the lead signs off next"))
    return steps
