"""``sealdesk verify`` over a whole workspace: the ledger, then the artifacts it vouches for.

The ledger's own audit (``engine.ledger.audit``) checks records and tree
heads as signed bytes; what they bind on disk is checked here: every
artifact the latest sign-off bound must still hold those bytes, and every
artifact a run recorded must still hold the hash its run recorded
(``engine.signoff.artifact_checks``), and every item's subject and the
links that carry decisions between items of one subject must still be what
the items' payloads say (``engine.subjects``). Who replaced whose decision
is replayed across those links too: a decision carried to an item stood on
it, so replacing it there was an overrule. The faults come in that
order, so the first one reported is the same whichever part finds it.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import IntegrityError
from engine.ledger.audit import audit_outside, audit_records
from engine.ledger.verify import Fault, Report, one_verify_at_a_time
from engine.signoff.artifact_checks import (
    recorded_artifact_faults,
    unvouched_signoff_faults,
    verify_signed_artifacts,
)
from engine.signoff.review import review_faults
from engine.subjects import carried_elsewhere, subject_faults


def verify_workspace(
    ws,
    *,
    processes: int | None = None,
    show_progress: bool = False,
    checkpoint: Path | None = None,
    anchor: Path | None = None,
    receipts: Path | None = None,
    witnesses: tuple[Path, ...] = (),
    own_receipts: bool = False,
    receipts_text: str | None = None,
) -> Report:
    """Gives the verification report of every record in the workspace and of the
    artifacts its runs recorded and its latest sign-off bound.

    Who may sign each record is replayed from the ledger's genesis and
    enrolment records; with ``anchor`` (an allowed_signers file the verifier
    brings), the genesis must also be signed by a lead key it trusts. With
    ``own_receipts``, the receipts the current user keeps for this workspace
    are compared too; ``receipts_text`` is what ``receipts`` ``-`` reads.
    """
    with one_verify_at_a_time():  # two verifies in threads of a process: one forks at a time
        report = audit_records(
            ws,
            processes=processes,
            show_progress=show_progress,
            anchor=anchor,
            elsewhere=carried_elsewhere(ws.conn),
        )
        verify_signed_artifacts(ws, report)
        report.faults += unvouched_signoff_faults(ws.conn)
        # The latest sign-off covers only what it bound; every run's own record covers
        # the rest.
        report.faults += [
            Fault(0, why) for why in recorded_artifact_faults(ws.artifacts_dir, ws.conn)
        ]
        report.faults += [Fault(0, why) for why in subject_faults(ws.conn)]
        report.faults += review_faults(ws.conn)
        audit_outside(
            ws,
            report,
            checkpoint=checkpoint,
            receipts=receipts,
            witnesses=witnesses,
            own_receipts=own_receipts,
            stdin_text=receipts_text,
        )
    return report


def require_verified(ws, consequence: str, *, processes: int | None = None) -> Report:
    """Gives the report of a ledger that verifies; else an IntegrityError naming the
    first fault and what is refused because of it (``consequence``)."""
    report = verify_workspace(ws, processes=processes)
    first = report.first
    if first is not None:  # the first fault of a ledger that does not verify
        raise IntegrityError(
            f"the ledger does not verify ({first.where}); {consequence}", seq=first.seq or None
        )
    return report
