"""Folding the adjudicators' signed decisions back into a sealed artifact.

Only the ledger's effective decisions count, only from records that verify
(hash, chain, SSHSIG signature, enrolment) and were signed in the
adjudicator role about exactly the item bytes this artifact produces. A
human decision settles an abstained candidate and is recorded beside its
machine votes, which stay as they were. The artifact is COMPLETE only when
nothing abstains and every sweep is complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.artifacts import read_verified
from engine.canonical import canonical_json, sha256_hex
from engine.errors import IntegrityError
from engine.exam.artifact import base_sha256, core_of, human_of, parse_artifact, seal
from engine.exam.queue import QUEUE, abstained_items
from engine.ledger import store

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
    human: dict[str, dict[str, Any]] = {}
    undecided = skipped = 0
    for cid, item in abstained_items(art, run_id="resolve"):
        eff = effective.get((QUEUE, item.item_id))
        if eff is None:
            undecided += 1
            continue
        record = store.get_record(ws.conn, eff["seq"])
        body = record.body if record else {}
        if (
            record is None
            or body.get("kind") != "decision"
            or body.get("role") != ADJUDICATOR_ROLE
            or body.get("item_sha256") != item.item_sha256
        ):
            # verify_workspace already refuses such a record; this keeps the rule
            # local and explicit: only adjudicator records about these bytes count.
            undecided += 1
            continue
        if eff["decision"] not in ("accept", "reject"):
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
    return human, undecided, skipped


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
