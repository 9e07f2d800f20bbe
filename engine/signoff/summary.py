"""The lead's sign-off: what is being signed off, and the signed record binding it.

``signoff_summary(ws)`` gives everything the lead looks at before signing
(per-queue counts, what is undecided, the tree head, every artifact's hash,
and what the engine runs concluded); the CLI and the review app render it.
``sign_off(ws, signer)`` appends the sign-off record. Inside the ledger's
write transaction it re-reads the state, computes the RFC 9162 tree head
over every record so far, has the lead sign the checkpoint note, and binds
tree size, root, checkpoint signature, artifact hashes and any exceptions
into the record, so the head signed is exactly the ledger the record
extends.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.errors import IntegrityError, NotReadyError
from engine.ledger import checkpoint as cp
from engine.ledger.authority import anchor_of, authority_data, load_authority
from engine.ledger.records import Record
from engine.ledger.signers import Signer
from engine.ledger.treehead import (
    SIGNOFF_TYPE,
    SignedHead,
    TreeHead,
    head_of,
    latest_signed_head,
    leaf_hashes,
)
from engine.roles import QUEUES, SIGNOFF_ROLE
from engine.run_records import RunAuthor
from engine.signoff.artifact_checks import artifact_problems, authors_of, latest_signoff_problems
from engine.signoff.review import review_data, review_holds
from engine.signoff.run_status import (
    ArtifactRef,
    ContaminationStatus,
    CoverageStatus,
    ExamStatus,
    run_status,
)
from engine.subjects import subject_faults

_PENDING_SHOWN = 5
PENDING_ADJUDICATION = "PENDING_ADJUDICATION"


def readiness_holds(exam: ExamStatus) -> list[str]:
    """Gives what keeps a plain sign-off from being ready besides undecided items, one
    reason each (empty when nothing does).

    An exam still PENDING_ADJUDICATION has abstained candidates no resolved
    artifact has settled, whatever the queue says: signing it off as done would
    bind a verdict nobody reached. Sign off with exceptions to bind it as it is.
    """
    out = []
    if PENDING_ADJUDICATION in (exam.state, exam.adjudication):
        out.append(
            f"the exam is {PENDING_ADJUDICATION}: decide its adjudication items, then "
            "resolve it (sealdesk exam resolve --run-id RUN)"
        )
    return out


@dataclass(frozen=True)
class QueueStatus:
    """One queue's counts; a skipped item is still undecided. ``carried`` counts the
    accepted and rejected items whose decision was made on another item of their
    subject; ``reopened`` the undecided ones new evidence sent back to review;
    ``subjects`` how many subjects the items ask about (each re-run's item of a subject
    asks the same question again; an item naming no subject is its own)."""

    queue: str
    total: int
    accepted: int
    rejected: int
    skipped: int
    undecided: int
    carried: int = 0
    reopened: int = 0
    subjects: int = 0

    @property
    def decided(self) -> int:
        return self.accepted + self.rejected

    def span(self) -> str | None:
        """Gives ``15 subjects over 30 items`` when re-runs asked some subject again,
        else None (one item per subject says nothing the total does not)."""
        if self.subjects >= self.total:
            return None
        noun = "subject" if self.subjects == 1 else "subjects"
        return f"{self.subjects} {noun} over {self.total} items"


@dataclass(frozen=True)
class PendingItem:
    """An item with no accept/reject yet: a sign-off lists it as an exception."""

    queue: str
    item_id: str
    item_sha256: str
    title: str
    status: str  # undecided | skip


@dataclass(frozen=True)
class SignerStatus:
    """One enrolment in force: who may sign, in which roles, since which record."""

    principal: str
    roles: tuple[str, ...]
    key: str  # fingerprint
    since: int


@dataclass(frozen=True)
class SignoffSummary:
    """What the lead signs off on, as of one tree size."""

    workspace_id: str
    tree: TreeHead
    queues: tuple[QueueStatus, ...]
    pending: tuple[PendingItem, ...]
    artifacts: tuple[ArtifactRef, ...]
    runs: tuple[tuple[str, str], ...]  # (run_id, manifest SHA-256)
    problems: tuple[str, ...]  # integrity problems that block signing
    warnings: tuple[str, ...]
    contamination: ContaminationStatus
    exam: ExamStatus
    coverage: CoverageStatus
    last_signoff: SignedHead | None
    signers: tuple[SignerStatus, ...] = ()  # who may sign what now
    anchor: tuple[str, ...] = ()  # the genesis's founding lead key fingerprints
    multi_key: tuple[tuple[str, tuple[str, ...]], ...] = ()  # principals who signed with 2+ keys
    # artifact path -> who produced it: the signer of the run record binding its bytes
    authors: tuple[tuple[str, str], ...] = ()
    # the review plan, its progress and the agreement figures (engine.signoff.review)
    review: dict[str, Any] | None = None

    def author_of(self, path: str) -> str | None:
        """Gives who produced an artifact (principal, role and run record), or None."""
        return dict(self.authors).get(path)

    @property
    def holds(self) -> list[str]:
        """Gives what keeps a plain sign-off from being ready besides undecided items."""
        return readiness_holds(self.exam) + review_holds(self.review)

    @property
    def ready(self) -> bool:
        """Says whether a plain sign-off (without exceptions) would be accepted."""
        return not self.pending and not self.problems and not self.holds

    def blocker(self, with_exceptions: bool = False) -> str | None:
        """Gives why ``sign_off`` would refuse this state, or None when it would sign.

        The review app asks before it asks the lead to confirm; ``sign_off``
        still decides, inside its write transaction.
        """
        if self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return f"will not sign off: {self.problems[0]}{more}"
        if with_exceptions:
            return None
        if self.pending:
            return (
                f"{len(self.pending)} item(s) are undecided: {pending_text(self.pending)}; "
                "decide them, or sign off with exceptions to list them in the record"
            )
        if self.holds:
            return f"not ready: {'; '.join(self.holds)}; or sign off with exceptions"
        return None

    def to_json(self) -> dict[str, Any]:
        """Gives the summary as plain JSON values (hashes as hex)."""
        out = asdict(self)
        out["tree"] = {
            "origin": self.tree.origin,
            "size": self.tree.size,
            "root": self.tree.root_hex,
            "root_base64": self.tree.root_b64,
        }
        out["queues"] = [{**asdict(q), "decided": q.decided} for q in self.queues]
        out["runs"] = dict(self.runs)
        out["ready"] = self.ready
        out["holds"] = self.holds
        if self.last_signoff is not None:
            last = self.last_signoff
            out["last_signoff"] = {
                "seq": last.seq,
                "record_hash": last.record_hash,
                "principal": last.principal,
                "time": last.time,
                "tree_size": last.tree.size,
                "root": last.tree.root_hex,
                "with_exceptions": last.with_exceptions,
                "exceptions": last.exceptions,
            }
        return out


def _queues_and_pending(ws) -> tuple[tuple[QueueStatus, ...], tuple[PendingItem, ...]]:
    # One pass over the items with their effective decisions gives both.
    counts: dict[str, Counter[str]] = {q: Counter() for q in QUEUES}
    pending = []
    asked: dict[str, set[str]] = {q: set() for q in QUEUES}
    for r in ws.items():
        counts[r["queue"]][r["status"]] += 1
        asked[r["queue"]].add(r["subject"] or f"item:{r['item_id']}")
        counts[r["queue"]]["carried"] += r["carried_from"] is not None
        counts[r["queue"]]["reopened"] += r["reopened"] is not None
        if r["status"] in ("undecided", "skip"):
            pending.append(
                PendingItem(r["queue"], r["item_id"], r["item_sha256"], r["title"], r["status"])
            )
    queues = []
    for q, c in counts.items():
        total = c["accept"] + c["reject"] + c["skip"] + c["undecided"]
        queues.append(
            QueueStatus(
                q,
                total,
                c["accept"],
                c["reject"],
                c["skip"],
                total - c["accept"] - c["reject"],
                c["carried"],
                c["reopened"],
                len(asked[q]),
            )
        )
    return tuple(queues), tuple(pending)


def _runs(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return list(conn.execute("SELECT run_id, manifest_sha256, manifest FROM runs ORDER BY run_id"))


def signoff_summary(ws) -> SignoffSummary:
    """Gives the sign-off summary of a workspace as it stands now."""
    status = run_status(ws.artifacts_dir)
    leaves = leaf_hashes(ws.conn)
    queues, pending = _queues_and_pending(ws)
    runs = _runs(ws.conn)
    problems, warnings = artifact_problems(status, ws.conn)
    warnings += [f"cannot read {u}" for u in status.unreadable]
    auth = ws.authority()
    if auth.genesis is None:
        problems.append(
            "the ledger has no genesis record: nobody is anchored to sign off "
            "(sealdesk keys migrate)"
        )
    signers = tuple(
        SignerStatus(g.principal, g.roles, g.key.fingerprint, g.granted_by) for g in auth.in_force()
    )
    return SignoffSummary(
        ws.workspace_id,
        head_of(cp.origin_for(ws.workspace_id), leaves),
        queues,
        pending,
        status.artifacts,
        tuple((r[0], r[1]) for r in runs),
        tuple(problems),
        tuple(warnings),
        status.contamination,
        status.exam,
        status.coverage,
        latest_signed_head(ws.conn),
        signers,
        anchor_of(auth),
        signed_with_several_keys(ws.conn),
        tuple(
            (path, author_text(a))
            for path, a in sorted(authors_of(status.artifacts, ws.conn).items())
        ),
        review_data(ws.conn),
    )


def author_text(author: RunAuthor) -> str:
    """Gives who produced an artifact as a summary says it: principal, role, the run and
    the record that signs it."""
    return f"{author.principal} ({author.role}), run {author.run_id}, record #{author.seq}"


def signed_with_several_keys(conn: sqlite3.Connection) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Gives each principal whose records were signed with more than one key, with the keys."""
    keys: dict[str, list[str]] = {}
    for principal, key in conn.execute(
        "SELECT DISTINCT principal, json_extract(message, '$.key') FROM records "
        "ORDER BY principal, seq"
    ):
        if isinstance(key, str) and key not in keys.setdefault(principal, []):
            keys[principal].append(key)
    return tuple((p, tuple(k)) for p, k in keys.items() if len(k) > 1)


def _status_data(status) -> dict[str, Any]:
    """Gives the compact run conclusions (of a run_status) bound into the sign-off record."""
    c, e, v = status.contamination, status.exam, status.coverage
    return {
        "contamination": {
            "state": c.state,
            "flagged_pending_review": c.flagged_rate,
            "leakage_rate_confirmed": c.leakage_rate,
            "confirmed_items": c.confirmed_items,
            "pending_review": c.pending_items,
            "power": [asdict(p) for p in c.power],
        },
        "exam": {
            "state": e.state,
            "adjudication": e.adjudication,
            "gates": [asdict(g) for g in e.gates],
        },
        "coverage": {
            "state": v.state,
            "categories": {k.category: k.eligibility for k in v.categories},
        },
    }


def lead_signer(ws, key: str | Path | None = None) -> Signer:
    """Gives the lead's signer: the key file if named, else the agent key enrolled as lead.

    An agent may hold several people's keys (a lead who also reviews); the one
    enrolled in the lead role is taken, whatever the agent's order.
    """
    from engine.identity import choose_signer

    return choose_signer(key, ws.signers(), (SIGNOFF_ROLE,))


def pending_text(pending: tuple[PendingItem, ...]) -> str:
    """Gives the first few pending items as queue/id, and how many more."""
    shown = ", ".join(f"{p.queue}/{p.item_id}" for p in pending[:_PENDING_SHOWN])
    more = f" and {len(pending) - _PENDING_SHOWN} more" if len(pending) > _PENDING_SHOWN else ""
    return shown + more


def _refuse(problems: list[str]) -> None:
    """Raises IntegrityError naming the first problem (and how many more) if there is any."""
    if problems:
        raise IntegrityError(
            f"will not sign off: {problems[0]}"
            + (f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else "")
        )


def sign_off(
    ws,
    signer: Signer,
    with_exceptions: bool = False,
    *,
    principal: str | None = None,
    note: str | None = None,
    expected_size: int | None = None,
) -> Record:
    """Gives the lead's sign-off record after appending it.

    Refuses (NotReadyError) while any item is undecided or skipped, or
    anything ``holds`` names holds (an exam PENDING_ADJUDICATION), unless
    ``with_exceptions``, which lists those items in the record (the exam's
    status is bound in it either way); refuses
    (IntegrityError), naming the file, any artifact that no run recorded,
    that differs from its sidecar, from the hash its run recorded or from
    what the latest sign-off bound, or that is a signature which does not
    verify over its artifact (``engine.signoff.artifact_checks``). ``expected_size``
    is the tree size the lead reviewed: if the ledger has grown since,
    nothing is signed and the lead looks again.
    """
    # Only the artifact checks and run conclusions are needed up front; the tree
    # head, queues and pending items are read inside the write transaction.
    run = run_status(ws.artifacts_dir)
    _refuse(artifact_problems(run, ws.conn)[0])
    # The counts the record binds take carried decisions through the subject links: a
    # link edited to carry a reject over new evidence would make an open item decided.
    _refuse(subject_faults(ws.conn))
    held = readiness_holds(run.exam)
    if held and not with_exceptions:
        raise NotReadyError(
            f"not ready: {'; '.join(held)}; or sign off with --with-exceptions, which "
            "binds the exam's status as it stands"
        )
    artifacts = {a.path: a.sha256 for a in run.artifacts}
    # Every artifact has an author by now (artifact_problems refused one without):
    # the record names the signed run record behind each number it binds.
    authors = {p: a.record_hash for p, a in authors_of(run.artifacts, ws.conn).items()}
    status = _status_data(run)

    def bind(conn: sqlite3.Connection) -> dict[str, Any]:
        # Runs inside the append's write transaction: no record can land between
        # the head computed here and the sign-off that binds it.
        # A sign-off appended since the checks above must not let a changed artifact through.
        _refuse(latest_signoff_problems(conn, artifacts))
        leaves = leaf_hashes(conn)
        head = head_of(cp.origin_for(ws.workspace_id), leaves)
        if expected_size is not None and head.size != expected_size:
            raise NotReadyError(
                f"the ledger changed while you reviewed it ({expected_size} -> "
                f"{head.size} records); look at the new summary and sign again"
            )
        queues, pending = _queues_and_pending(ws)
        review = review_data(conn)
        unreviewed = review_holds(review)
        if unreviewed and not with_exceptions:
            raise NotReadyError(
                f"not reviewed as planned: {'; '.join(unreviewed)}; or sign off with "
                "--with-exceptions, which binds the plan's progress as it stands"
            )
        if pending and not with_exceptions:
            raise NotReadyError(
                f"{len(pending)} item(s) are undecided: {pending_text(pending)}; "
                "decide them, or sign off with --with-exceptions to list "
                "them in the record"
            )
        auth = load_authority(conn)
        anchor = anchor_of(auth)
        body = cp.note_body(head.origin, head.size, head.root, anchor)
        data = {
            "type": SIGNOFF_TYPE,
            "tree": {"origin": head.origin, "size": head.size, "root": head.root_hex},
            "checkpoint": {"note": body.decode("utf-8"), "signature": cp.sign_note(signer, body)},
            "artifacts": artifacts,
            "run_records": authors,
            "runs": {run_id: sha for run_id, sha, _ in _runs(conn)},
            "queues": {
                q.queue: {
                    "total": q.total,
                    "accept": q.accepted,
                    "reject": q.rejected,
                    "skip": q.skipped,
                    "undecided": q.undecided,
                    "carried": q.carried,
                    "reopened": q.reopened,
                }
                for q in queues
            },
            "with_exceptions": bool(pending) and with_exceptions,
            "exceptions": [
                {
                    "queue": p.queue,
                    "item_id": p.item_id,
                    "item_sha256": p.item_sha256,
                    "status": p.status,
                }
                for p in pending
            ],
            "status": status,
            "authority": authority_data(auth),
        }
        if review is not None:
            data["review"] = review
        return {"data": data}

    return ws.signoff(signer, None, note=note, principal=principal, check=bind)
