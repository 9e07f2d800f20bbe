"""After review: the clean eval set, its content hash and the power it leaves.

Accepted items (confirmed leaks or duplicates) are dropped; rejected ones
(false positives) are kept. A decision made on an earlier scan's item about
the same eval item counts where it carries over (``engine.subjects``), and
is listed with the item it was made on. An item nobody has decided, or one
new evidence re-opened, is refused unless the caller allows it, in which
case it is kept and listed. Everything is read from the scan's own
artifacts, each checked against its sidecar and against the hash the run
manifest recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.agreement import plan as review_plan
from engine.artifacts import atomic_write, read_verified, write_sealed
from engine.canonical import (
    canonical_json,
    canonical_jsonl,
    canonical_sha256,
    sha256_hex,
    strict_loads,
)
from engine.contamination.inputs.canonical_text import content_sha256
from engine.contamination.report.findings import FLAGGED_LABEL, INTERNAL, LEAKAGE_LABEL, QUEUE
from engine.contamination.report.power import minimum_detectable_difference
from engine.contamination.scan import EVAL_ITEMS, ITEMS, REPORT
from engine.errors import InputError, IntegrityError
from engine.ledger.records import SETTLING
from engine.ledger.store import effective_decisions
from engine.reasons import given
from engine.subjects import carries, subject_faults
from engine.workspace import Workspace

CLEAN_SET = "clean_eval.jsonl"
CLEAN_REPORT = "clean_report.json"
_SHOW = 10


@dataclass(frozen=True)
class CleanOutcome:
    """The clean run: where it was written and what it says."""

    run_id: str
    run_dir: Path
    report: dict[str, Any]


def latest_scan(ws: Workspace) -> str:
    """Gives the id of the most recent contamination scan in the workspace."""
    row = ws.conn.execute(
        "SELECT run_id FROM runs WHERE kind='contamination-scan' "
        "ORDER BY created_at DESC, run_id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise InputError(
            "no contamination scan in this workspace (run: sealdesk scan "
            "contamination --eval E --pool P)",
            field="run",
        )
    return row[0]


def _artifact(ws: Workspace, run_id: str, name: str, manifest: dict[str, Any]) -> bytes:
    path = ws.artifacts_dir / run_id / name
    data = read_verified(path)
    recorded = manifest.get("artifacts", {}).get(name)
    if recorded is not None and recorded != sha256_hex(data):
        raise IntegrityError(f"{path}: bytes differ from the hash the run manifest recorded")
    return data


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [strict_loads(line) for line in data.split(b"\n") if line.strip()]


def _refuse_keeping_a_confirmed_leak(
    ws: Workspace, decided: dict, items: list[dict[str, Any]], undecided: list[dict[str, Any]]
) -> None:
    """Refuses, even with --allow-undecided, an undecided item whose eval item (same id,
    same text) a reviewer confirmed as a leak on another flagged item whose accept does
    not carry to it: one ingested before items named their subject, or one scanned from
    an eval set of another name. Keeping the item would put a confirmed leak in the
    clean set."""
    if not undecided:
        return
    texts = {item["item_id"]: item["payload"]["eval"].get("text") for item in items}
    wanted = {(u["id"], texts[u["item_id"]]): u for u in undecided}
    for (queue, item_id), decision in decided.items():
        if decision["decision"] != "accept" or item_id in texts:
            continue
        held = ws.item(queue, item_id)
        ev = (held or {}).get("payload", {}).get("eval") or {}
        match = wanted.get((ev.get("id"), ev.get("text")))
        if match is not None:
            raise InputError(
                f"eval {match['id']} was confirmed a leak on item {item_id} "
                f"(by {decision['principal']}), but this scan's item "
                f"{match['item_id']} for it is undecided: an earlier decision does "
                "not carry over to an item with other evidence; decide it",
                field="decision",
            )


def confirmed_leakage(
    flagged: int, accepted: int, rejected: int, undecided: int, n: int, duplicates: int = 0
) -> dict[str, Any]:
    """Gives the leakage rate review confirmed, beside what the scan flagged and what is
    still pending: only an accepted item is a leak; a flagged one is a suspicion.
    ``accepted`` counts leaks from the pool (or the probe); ``duplicates`` the accepted
    items flagged only as duplicates inside the eval set, which are not leaks."""
    return {
        "label": LEAKAGE_LABEL,
        "rate": round(accepted / n, 6) if n else None,
        "confirmed_items": accepted,
        "internal_duplicates_accepted": duplicates,
        "rejected_items": rejected,
        "pending_review": undecided,
        "eval_items": n,
        "flagged": {
            "label": FLAGGED_LABEL,
            "items": flagged,
            "rate": round(flagged / n, 6) if n else None,
        },
        "definition": "eval items a reviewer accepted as leaks from the pool (or the "
        "probe) / eval items; accepted internal duplicates are counted apart, not as "
        "leaks; pending_review items were flagged and nobody decided them (kept only "
        "with --allow-undecided), so the rate is a lower bound while any are pending",
    }


def _against_pool(entry: dict[str, Any]) -> bool:
    """Whether an accepted item is a leak (a pool channel or a registered one, such as
    the probe, flagged it), not only a duplicate of another eval item."""
    # a registered channel asks something other than the eval set (the probe asks the
    # served model): what it suspects is a leak too, so only internal is not one
    return any(c != INTERNAL for c in entry["channels"])


def _keep_one_of_each_cluster(
    items: list[dict[str, Any]], dropped: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Gives the accepted items that stay in the clean set as the one copy of their
    duplicate cluster: in a cluster none of whose members is kept otherwise (each
    accepted), its first member that is a duplicate only, not a leak. A cluster whose
    every member leaked from the pool keeps none."""
    accepted = {d["index"]: d for d in dropped}
    clusters = {
        tuple(sorted(m["index"] for m in item["payload"]["cluster"]))
        for item in items
        if item["payload"].get("cluster")
    }
    kept: list[dict[str, Any]] = []
    for members in sorted(clusters):
        if not all(i in accepted for i in members):
            continue  # a member is kept (rejected, undecided or not flagged)
        duplicates_only = [accepted[i] for i in members if not _against_pool(accepted[i])]
        if duplicates_only:
            kept.append(duplicates_only[0])
    return kept


def clean(
    ws: Workspace,
    run_id: str | None = None,
    *,
    allow_undecided: bool = False,
    alpha: float = 0.05,
    power: float = 0.8,
    accuracy: float = 0.5,
    out: Path | None = None,
) -> CleanOutcome:
    """Gives the clean run after writing the clean set and its report."""
    run_id = run_id or latest_scan(ws)
    row = ws.conn.execute(
        "SELECT kind, manifest, manifest_sha256 FROM runs WHERE run_id=?", (run_id,)
    ).fetchone()
    if row is None or row[0] != "contamination-scan":
        raise InputError(f"{run_id!r} is not a contamination scan in this workspace", field="run")
    manifest = json.loads(row[1])
    report = strict_loads(_artifact(ws, run_id, REPORT, manifest))
    eval_rows = _lines(_artifact(ws, run_id, EVAL_ITEMS, manifest))
    items = _lines(_artifact(ws, run_id, ITEMS, manifest))

    faults = subject_faults(ws.conn)
    if faults:  # a carried decision is only as sound as the links it is read through
        raise IntegrityError(f"{faults[0]}; nothing was written")
    decided = effective_decisions(ws.conn, QUEUE)
    # Under a review plan one reviewer's rating does not settle a planned item: only
    # agreeing ratings or an adjudicator's decision do (the outcome is said per item).
    plan = review_plan.current(ws.conn)
    reviewed = review_plan.states(ws.conn, plan, QUEUE) if plan is not None else {}
    for item_id, state in reviewed.items():
        if not state.settled:
            decided.pop((QUEUE, item_id), None)
    reasons_given = given(ws.conn, QUEUE)  # the report says why, where a decision did
    carried = carries(ws.conn, QUEUE)
    dropped: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    undecided: list[dict[str, Any]] = []
    for item in items:
        payload = item["payload"]
        entry = {
            "item_id": item["item_id"],
            "index": payload["eval"]["index"],
            "id": payload["eval"]["id"],
            "channels": payload.get("channels", []),
        }
        decision = decided.get((QUEUE, item["item_id"]))
        carry = None if decision else carried.get((QUEUE, item["item_id"]))
        if carry is not None and carry.carried:
            decision = carry.record
            entry["carried_from"] = carry.record["item_id"]
        if decision is not None and decision["decision"] in SETTLING:
            entry.update(
                decision=decision["decision"],
                principal=decision["principal"],
                record_hash=decision["record_hash"],
            )
            if item["item_id"] in reviewed:
                entry["review"] = reviewed[item["item_id"]].outcome
            if decision["record_hash"] in reasons_given:
                entry["reason"], entry["rationale"] = reasons_given[decision["record_hash"]]
            (dropped if decision["decision"] == "accept" else kept).append(entry)
        else:
            if carry is not None:
                entry["reopened"] = carry.text()
            undecided.append(entry)
    _refuse_keeping_a_confirmed_leak(ws, decided, items, undecided)
    if undecided and not allow_undecided:
        names = ", ".join(
            f"{u['item_id']} (eval {u['id']}{', re-opened' if 'reopened' in u else ''})"
            for u in undecided[:_SHOW]
        )
        more = f" and {len(undecided) - _SHOW} more" if len(undecided) > _SHOW else ""
        reopened = sum("reopened" in u for u in undecided)
        why = f" ({reopened} re-opened by new evidence)" if reopened else ""
        raise InputError(
            f"{len(undecided)} flagged item(s) have no accept/reject decision{why}: "
            f"{names}{more}; decide them, or pass --allow-undecided to keep them",
            field="decision",
        )

    kept_one = _keep_one_of_each_cluster(items, dropped)
    dropped = [d for d in dropped if d not in kept_one]
    drop = {d["index"] for d in dropped}
    clean_rows = [r for r in eval_rows if r["index"] not in drop]
    n_before, n_after = len(eval_rows), len(clean_rows)
    mde_before = minimum_detectable_difference(
        n_before, alpha=alpha, power=power, accuracy=accuracy
    )
    mde_after = minimum_detectable_difference(n_after, alpha=alpha, power=power, accuracy=accuracy)
    accepted = dropped + kept_one
    leaks = sum(1 for d in accepted if _against_pool(d))
    leakage = confirmed_leakage(
        len(items), leaks, len(kept), len(undecided), n_before, len(accepted) - leaks
    )
    basis = [(d["item_id"], d["decision"], d["record_hash"]) for d in accepted + kept]
    # Every input of the report names the run: other parameters are another clean run,
    # never a rewrite of one already recorded.
    params = {"alpha": alpha, "power": power, "accuracy": accuracy}
    clean_id = f"{run_id}.clean-{canonical_sha256([sorted(basis), allow_undecided, params])[:10]}"
    clean_report = {
        "scan_run": run_id,
        "scan_manifest_sha256": row[2],
        "eval": report["test"],
        "n_before": n_before,
        "n_after": n_after,
        "leakage": leakage,
        "content_sha256_before": content_sha256(r["text"] for r in eval_rows),
        "content_sha256_after": content_sha256(r["text"] for r in clean_rows),
        "dropped": sorted(dropped, key=lambda d: d["index"]),
        "kept_after_review": sorted(kept, key=lambda d: d["index"]),
        # accepted duplicates inside the eval set: one copy of each cluster stays
        "kept_one_of_duplicates": sorted(kept_one, key=lambda d: d["index"]),
        "kept_undecided": sorted(undecided, key=lambda d: d["index"]),
        "carried": {
            "decisions": sum("carried_from" in d for d in accepted + kept),
            "reopened": sum("reopened" in u for u in undecided),
            "rule": "a decision on an earlier scan's item about the same eval item: an "
            "accept always, a reject when this scan's evidence adds no match, channel or "
            "higher score",
        },
        "power": {
            "test": "two-sided two-proportion z-test, two models on the same items",
            "alpha": alpha,
            "power": power,
            "accuracy": accuracy,
            "mde_before": round(mde_before, 6),
            "mde_after": round(mde_after, 6) if n_after else None,
            "mde_increase": round(mde_after - mde_before, 6) if n_after else None,
        },
    }
    clean_set = [r["row"] for r in clean_rows]
    if out is not None:  # first: a path that cannot be written leaves no run behind
        atomic_write(Path(out), canonical_jsonl(clean_set))
    run_dir = ws.run_dir(clean_id)
    written = write_sealed(
        {
            run_dir / CLEAN_SET: canonical_jsonl(clean_set),
            run_dir / CLEAN_REPORT: canonical_json(clean_report),
        },
        "this clean run is already recorded with other contents",
    )
    artifacts = {path.name: digest for path, digest in written.items()}
    ws.ingest(
        [],
        runs={
            clean_id: {
                "kind": "contamination-clean",
                "artifacts": artifacts,
                "inputs": {"scan_run": run_id, "scan_manifest_sha256": row[2]},
            }
        },
        source=f"clean {clean_id}",
    )
    return CleanOutcome(clean_id, run_dir, clean_report)
