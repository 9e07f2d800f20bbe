"""Folding the adjudicators' signed decisions back into a sealed artifact.

Only the ledger's effective decisions count, only from records that verify
(hash, chain, SSHSIG signature, enrolment) and were signed in the
adjudicator role about exactly the item bytes this artifact produces. A
human decision settles an abstained candidate and is recorded beside its
machine votes, which stay as they were. A decision made on another run's item
about the same candidate counts when it carries over (``engine.subjects``):
it is recorded with ``carried_from`` naming the item it was made on. The
artifact is COMPLETE only when nothing abstains and every sweep is complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.artifacts import read_verified
from engine.backlog import BacklogItem
from engine.canonical import canonical_json, sha256_hex
from engine.errors import IntegrityError
from engine.exam.artifact import base_sha256, core_of, human_of, parse_artifact, seal
from engine.exam.queue import QUEUE, abstained_items, without_subject
from engine.ledger import store
from engine.ledger.records import SETTLING
from engine.subjects import carries

ADJUDICATOR_ROLE = "adjudicator"


@dataclass(frozen=True)
class Resolution:
    """A resolved artifact and what went into it."""

    artifact: dict[str, Any]
    applied: int
    undecided: int
    skipped: int


def verified_ledger(ws: Any) -> None:
    """Refuses a workspace whose ledger does not verify from first record to last."""
    from engine.signoff.verify import require_verified

    require_verified(ws, "no decision is folded from it")


def adjudicator_decisions(
    ws: Any, art: dict[str, Any]
) -> tuple[dict[str, dict[str, Any]], int, int]:
    """Gives the human adjudications per candidate, and counts of undecided and skipped."""
    effective = store.effective_decisions(ws.conn, QUEUE)
    carried = carries(ws.conn, QUEUE)
    human: dict[str, dict[str, Any]] = {}
    undecided = skipped = 0
    for cid, made in abstained_items(art, run_id="resolve"):
        item = as_held(ws, made)
        eff = effective.get((QUEUE, item.item_id))
        # What the deciding record must bind.
        decided_on: tuple[str, str | None] = (item.item_id, item.item_sha256)
        carry = None
        if eff is None:
            carry = carried.get((QUEUE, item.item_id))
            if carry is None or not carry.carried:
                undecided += 1
                continue
            eff = carry.record
            decided_on = eff["item_id"], _held_sha256(ws, eff["item_id"])
        record = store.get_record(ws.conn, eff["seq"])
        body = record.body if record else {}
        if (
            record is None
            or body.get("kind") != "decision"
            or body.get("role") != ADJUDICATOR_ROLE
            or (body.get("item_id"), body.get("item_sha256")) != decided_on
        ):
            # verify_workspace already refuses such a record; this keeps the rule
            # local and explicit: only adjudicator records about these bytes count.
            undecided += 1
            continue
        if eff["decision"] not in SETTLING:
            skipped += 1
            continue
        human[cid] = {
            "decision": eff["decision"],
            "principal": body["principal"],
            "role": body["role"],
            "seq": record.seq,
            "record_hash": record.record_hash,
            "item_id": item.item_id,
            "item_sha256": item.item_sha256,
        }
        if carry is not None:
            human[cid]["carried_from"] = {"item_id": decided_on[0], "item_sha256": decided_on[1]}
    return human, undecided, skipped


def as_held(ws: Any, item: BacklogItem) -> BacklogItem:
    """Gives the item in the form the workspace holds it: a run queued before items named
    their subject holds it without one."""
    if _held_sha256(ws, item.item_id) is None:
        legacy = without_subject(item)
        if _held_sha256(ws, legacy.item_id) is not None:
            return legacy
    return item


def _held_sha256(ws: Any, item_id: str) -> str | None:
    row = ws.conn.execute(
        "SELECT item_sha256 FROM items WHERE queue = ? AND item_id = ?", (QUEUE, item_id)
    ).fetchone()
    return None if row is None else row[0]


def resolve(ws: Any, path: Path) -> Resolution | None:
    """Gives the resolved artifact (or None when no adjudicator has decided anything)."""
    data = read_verified(path)
    art = parse_artifact(data, path)
    verified_ledger(ws)
    human, undecided, skipped = adjudicator_decisions(ws, art)
    if not human:
        return None
    resolution = {
        "base_sha256": base_sha256(art),
        "workspace_id": ws.workspace_id,
        "records": sorted(h["record_hash"] for h in human.values()),
    }
    resolved = seal(core_of(art), human, resolution)
    return Resolution(resolved, len(human), undecided, skipped)


def check_against_ledger(ws: Any, art: dict[str, Any]) -> None:
    """Refuses a resolved artifact whose human decisions the ledger no longer stands by."""
    resolution = art.get("resolution")
    if resolution is None:
        return
    if resolution["workspace_id"] != ws.workspace_id:
        raise IntegrityError(
            f"the artifact was resolved against workspace "
            f"{resolution['workspace_id']}, not this one ({ws.workspace_id})"
        )
    verified_ledger(ws)
    current, _, _ = adjudicator_decisions(ws, art)
    recorded = human_of(art)
    for cid, held in sorted(recorded.items()):
        now = current.get(cid)
        if now is None or now["record_hash"] != held["record_hash"]:
            raise IntegrityError(
                f"candidate {cid}: the ledger's effective adjudicator "
                f"decision is no longer record {held['record_hash'][:12]} "
                "(retracted or superseded); run sealdesk exam resolve again"
            )
        if now != held:
            raise IntegrityError(
                f"candidate {cid}: the artifact records "
                f"{held['decision']!r} by {held['principal']}, but ledger "
                f"record {held['record_hash'][:12]} says {now['decision']!r} "
                f"by {now['principal']}"
            )
    if sorted(h["record_hash"] for h in recorded.values()) != resolution["records"]:
        raise IntegrityError("resolution.records does not list exactly the records applied")


def resolved_run_id(base_run: str, art: dict[str, Any]) -> str:
    """Gives the default run id of a resolved artifact: named by its own content."""
    return f"{base_run}-resolved-{sha256_hex(canonical_json(art))[:12]}"
