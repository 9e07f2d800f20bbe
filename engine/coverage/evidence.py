"""Coverage evidence: the signed benchmark, the ledger records that reviewed it, a lead's approval.

The lead's approval is an ordinary signed decision, made in role ``lead``,
on an evidence-claim item of the ``weak_categories`` queue. The claim's
payload names the benchmark bytes (digest and signature digest), its
ELIGIBLE or HOLD, its findings and every review record; because a decision
binds its item's hash, the approval is about exactly that claim, is
checked by ``sealdesk verify`` like any record, and can be withdrawn with
``sealdesk undo``. (A sign-off record binds the whole ledger instead and is
the lead's separate, final act.) The evidence file carries no release
authority: it is a facet for the promotion owner (who releases a detector, outside
sealdesk) to weigh.

The claim and the evidence also state how each reviewed category's misses
were attributed: by the measured detector, by another model for a recorded
reason, or not at all. Reviews of unexplained misses are still reviews, but
a lead who approves them is told so, and the evidence says so to whoever
reads it later. The benchmark's threat mappings travel in the claim.

A review may be carried: a later backlog run's item about the same category,
detector and holdout takes the decision made on an earlier item when the
carry rule of ``engine.subjects`` says so. Its review then names the item it
was made on (``carried_from``), and is checked against that item's record.
A claim's subject is the claim's own substance (benchmark and review
records), so an approval never carries to a claim about other reviews.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.artifacts import read_verified
from engine.backlog import BacklogItem
from engine.canonical import canonical_json, canonical_sha256, parse_canonical, sha256_hex
from engine.coverage.backlog import ITEM_KIND, QUEUE
from engine.coverage.benchmark import check_benchmark_shape
from engine.coverage.findings import FindingSource, load_benchmark
from engine.coverage.trust import TrustRoot
from engine.errors import ConflictError, InputError, IntegrityError, PermissionRefused
from engine.ledger import store
from engine.ledger.records import SETTLING
from engine.ledger.signers import Signer
from engine.run_records import write_run
from engine.signoff.verify import require_verified
from engine.workspace import Workspace

CLAIM_KIND = "coverage.evidence_claim"
# v2: the attribution of the reviewed categories is stated.
SCHEMA = "sealdesk.coverage-evidence.v2"
APPROVER_ROLE = "lead"
REVIEW_DECISIONS = SETTLING
APPROVAL_FIELDS = frozenset({"seq", "record_hash", "principal", "role", "decision", "time"})
EVIDENCE_FIELDS = frozenset(
    {
        "schema_version",
        "workspace",
        "benchmark",
        "benchmark_sha256",
        "benchmark_signature",
        "claim_item",
        "claim",
        "reviews",
        "approval",
        "ledger",
        "release_authority",
        "attribution",
    }
)
_CARRIED_OWN = ("item_id", "item_sha256", "run_sha256", "carried_from")
ATTRIBUTION_STATES = ("explained", "explained_with_override", "not_run", "partial")


@dataclass(frozen=True)
class Evidence:
    """A written evidence file and what it binds."""

    path: Path
    sha256: str
    eligibility: str
    reviews: int
    approval_record: str
    attribution_notice: str | None


def _ledger_must_verify(ws: Workspace) -> Any:
    return require_verified(ws, "no evidence is made from it", processes=1)


def _held(ws: Workspace, item_id: str) -> dict[str, Any]:
    """Gives a backlog item the workspace holds; an IntegrityError if it holds none."""
    item = ws.item(QUEUE, item_id)
    if item is None:
        raise IntegrityError(f"the workspace holds no {QUEUE} item {item_id}")
    return item


def _backlog_for(ws: Workspace, benchmark_sha256: str) -> list[dict[str, Any]]:
    found = []
    for listed in ws.items(queue=QUEUE):
        item = _held(ws, listed["item_id"])
        payload = item["payload"]
        if (
            payload.get("kind") == ITEM_KIND
            and isinstance(payload.get("source"), dict)
            and payload["source"].get("kind") == "benchmark"
            and payload["source"].get("sha256") == benchmark_sha256
        ):
            found.append(item)
    return found


def _item_attribution(item: dict[str, Any]) -> dict[str, Any]:
    """Gives how one backlog item's misses were attributed, read from its payload."""
    payload = item["payload"]
    record = payload.get("attribution") if isinstance(payload.get("attribution"), dict) else {}
    statuses = {
        m.get("attribution", {}).get("status")
        for m in payload.get("misses", [])
        if isinstance(m, dict) and isinstance(m.get("attribution"), dict)
    }
    status = (
        "explained"
        if statuses == {"explained"}
        else "not_run"
        if statuses <= {"not_run", None}
        else "partial"
    )
    return {
        "item_id": item["item_id"],
        "category": payload.get("category"),
        "status": status,
        "model_sha256": record.get("model_sha256"),
        "binding": record.get("binding") if status != "not_run" else None,
        "override_reason": record.get("override_reason"),
        "not_run_reason": record.get("not_run_reason") if status != "explained" else None,
    }


def attribution_summary(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Gives the attribution state of reviewed backlog items and each item's part in it.

    ``explained``: every miss was explained by the measured detector;
    ``explained_with_override``: by a model that is not it, for a recorded reason;
    ``not_run``: no miss was explained; ``partial``: some were.
    """
    parts = [_item_attribution(i) for i in sorted(items, key=lambda i: i["item_id"])]
    statuses = {p["status"] for p in parts}
    if statuses == {"explained"}:
        state = (
            "explained"
            if all(p["binding"] == "measured_detector" for p in parts)
            else "explained_with_override"
        )
    elif statuses == {"not_run"}:
        state = "not_run"
    else:
        state = "partial"
    return {"state": state, "categories": parts}


def attribution_notice(summary: Any) -> str | None:
    """Gives the one line a lead must read about unexplained or overridden attribution,
    or None when the measured detector explained every selected miss."""
    if not isinstance(summary, dict) or summary.get("state") == "explained":
        return None
    parts = [p for p in summary.get("categories", []) if isinstance(p, dict)]
    unexplained = [p for p in parts if p.get("status") != "explained"]
    overridden = [p for p in parts if p.get("binding") == "override"]
    said = []
    if unexplained:
        reasons = sorted(
            {str(p.get("not_run_reason")) for p in unexplained if p.get("not_run_reason")}
        )
        names = ", ".join(sorted(str(p.get("category")) for p in unexplained))
        why = f" ({'; '.join(reasons)})" if reasons else ""
        said.append(
            f"attribution not run for {len(unexplained)} of {len(parts)} reviewed "
            f"categor{'y' if len(parts) == 1 else 'ies'} ({names}): their misses were "
            f"reviewed unexplained{why}"
        )
    if overridden:
        reasons = sorted({str(p.get("override_reason")) for p in overridden})
        said.append(
            f"{len(overridden)} categor{'y was' if len(overridden) == 1 else 'ies were'}"
            f" attributed with a model that is not the measured detector: "
            f"{'; '.join(reasons)}"
        )
    return "; ".join(said) or f"attribution {summary.get('state')}"


def reviews_of(ws: Workspace, source: FindingSource) -> list[dict[str, Any]]:
    """Gives the effective review record of every backlog item of the benchmark.

    Refuses while a weak category has no backlog item, or an item has no
    standing accept or reject.
    """
    return _reviewed(ws, source)[0]


def _reviewed(
    ws: Workspace, source: FindingSource
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Gives (review records, the items they review) of the benchmark's backlog."""
    items = _backlog_for(ws, source.sha256)
    weak = sorted({f["category"] for f in source.findings})
    covered = {i["payload"]["category"] for i in items}
    missing = [c for c in weak if c not in covered]
    if missing:
        raise InputError(
            f"weak category {missing[0]!r} has no backlog item in the workspace "
            "(run: sealdesk coverage backlog --benchmark ...)",
            path=source.path,
        )
    reviews = []
    for item in sorted(items, key=lambda i: i["item_id"]):
        decision = item["decision"] or item["carried_from"]
        if decision is None or decision["decision"] not in REVIEW_DECISIONS:
            state = "undecided" if decision is None else decision["decision"]
            if item["reopened"]:
                state = item["reopened"]["text"]
            raise InputError(
                f"backlog item {item['item_id']} ({item['payload']['category']}) "
                f"is {state}: every weak category needs an accept or reject "
                "before evidence",
                field="item",
            )
        review = {
            "item_id": item["item_id"],
            "item_sha256": item["item_sha256"],
            "run_sha256": item["run_sha256"],
            "category": item["payload"]["category"],
            "decision": decision["decision"],
            "principal": decision["principal"],
            "role": decision["role"],
            "seq": decision["seq"],
            "record_hash": decision["record_hash"],
        }
        if item["carried_from"]:
            made_on = ws.item(QUEUE, decision["item_id"])
            review["carried_from"] = {
                "item_id": decision["item_id"],
                "item_sha256": made_on["item_sha256"] if made_on else None,
            }
        reviews.append(review)
    return reviews, sorted(items, key=lambda i: i["item_id"])


def claim_payload(
    source: FindingSource,
    signature: bytes,
    reviews: list[dict[str, Any]],
    attribution: dict[str, Any],
) -> dict[str, Any]:
    """Gives the payload of the claim a lead approves."""
    doc = source.document
    n = len(reviews)
    tags = ["evidence", source.eligibility]
    if attribution["state"] != "explained":
        tags.append(f"attribution:{attribution['state']}")
    return {
        "subject": {
            "kind": "evidence_claim",
            "benchmark_sha256": source.sha256,
            "review_records": sorted(r["record_hash"] for r in reviews),
        },
        "kind": CLAIM_KIND,
        "benchmark_sha256": source.sha256,
        "benchmark_signature_sha256": sha256_hex(signature),
        "eligibility": source.eligibility,
        "detector_sha256": source.detector_sha256,
        "detector_version": source.detector_version,
        "holdout_id": doc["holdout_id"],
        "holdout_version": doc["holdout_version"],
        "holdout_manifest_sha256": doc["holdout_manifest_sha256"],
        "evaluation_policy_sha256": doc["evaluation_policy_sha256"],
        "weak_categories": list(source.findings),
        "reviews": reviews,
        "threat_mappings": source.threat_mappings,
        "attribution": attribution,
        "release_authority": "none",
        "summary": {
            "title": f"coverage evidence: {source.eligibility} for "
            f"{source.detector_version} on {doc['holdout_id']} "
            f"({n} review{'s' if n != 1 else ''})",
            "score": None,
            "tags": tags,
        },
    }


def make_evidence(
    ws: Workspace,
    benchmark_path: Path,
    signature_path: Path,
    trust: TrustRoot,
    signer: Signer | None,
    *,
    principal: str | None = None,
    note: str | None = None,
) -> Evidence:
    """Gives the written evidence after checking reviews and the ledger and obtaining
    (or finding) the lead's approval of the exact claim."""
    source, raw, signature = load_benchmark(benchmark_path, signature_path, trust)
    reviews, reviewed = _reviewed(ws, source)
    attribution = attribution_summary(reviewed)
    report = _ledger_must_verify(ws)
    if signer is not None:
        # Refuse a non-lead before anything is written.
        ws.identify(signer, principal, APPROVER_ROLE, QUEUE)
    claim = claim_payload(source, signature, reviews, attribution)
    claim_digest = canonical_sha256({"queue": QUEUE, "claim": claim})
    run_id = f"coverage-evidence-{claim_digest[:16]}"
    item = BacklogItem.make(QUEUE, f"ev-{claim_digest[:16]}", run_id, claim)
    # The claim run writes nothing itself: the evidence file, which names this run's
    # manifest, is recorded by a run of its own once the approval stands.
    manifest = {
        "kind": "coverage-evidence",
        "artifacts": {},
        "inputs": {
            "benchmark_sha256": source.sha256,
            "benchmark_signature_sha256": sha256_hex(signature),
            "review_records": [r["record_hash"] for r in reviews],
        },
    }
    ws.ingest([item], runs={run_id: manifest}, source=str(benchmark_path))

    path = ws.artifacts_dir / run_id / "coverage_evidence.json"
    standing = store.effective_decisions_for(ws.conn, QUEUE, item.item_id)
    if standing is None:
        if path.exists():
            # A new approval would make other evidence, which could never be written.
            raise ConflictError(
                f"{path} already holds the evidence of this claim, whose "
                "approval no longer stands; sealed evidence is never "
                "rewritten (nothing was written)"
            )
        if signer is None:
            raise PermissionRefused(
                f"claim {item.item_id} awaits a lead's approval: run again "
                "with --key LEAD_KEY (or a lead's key in ssh-agent)"
            )
        ws.decide(
            signer,
            QUEUE,
            item.item_id,
            "accept",
            note=note,
            principal=principal,
            role=APPROVER_ROLE,
        )
        standing = store.effective_decisions_for(ws.conn, QUEUE, item.item_id)
        report = _ledger_must_verify(ws)  # the evidence names the head that holds the approval
    if standing is None or standing["decision"] != "accept" or standing["role"] != APPROVER_ROLE:
        # None: the approval just recorded was retracted before it was read back.
        stands = (
            "undecided"
            if standing is None
            else f"{standing['decision']} by {standing['principal']} as {standing['role']}"
        )
        raise PermissionRefused(
            f"claim {item.item_id} stands at {stands}; evidence needs an accept made as lead"
        )
    held = _held(ws, item.item_id)
    evidence = {
        "schema_version": SCHEMA,
        "workspace": ws.workspace_id,
        "benchmark": source.document,
        "benchmark_sha256": source.sha256,
        "benchmark_signature": signature.hex(),
        "claim_item": {
            "queue": QUEUE,
            "item_id": item.item_id,
            "item_sha256": item.item_sha256,
            "run_sha256": held["run_sha256"],
        },
        "claim": claim,
        "reviews": reviews,
        "approval": {k: standing[k] for k in sorted(APPROVAL_FIELDS)},
        "ledger": {"records": report.records, "head_hash": report.head_hash},
        "release_authority": "none",
        "attribution": attribution,
    }
    # Sealed once written: a sign-off may bind these bytes, and a later run (the
    # ledger has grown since) would otherwise replace them.
    written = write_run(
        ws,
        run_id,
        {path.name: canonical_json(evidence)},
        {
            "kind": "coverage-evidence-file",
            "inputs": {
                "claim_item": item.item_id,
                "claim_sha256": item.item_sha256,
                "approval_record": standing["record_hash"],
            },
        },
        hint="it stands as written: check it with `sealdesk coverage check-evidence`",
    )
    return Evidence(
        written.directory / path.name,
        written.digests[path.name],
        source.document["eligibility"],  # a benchmark's, checked against its findings
        len(reviews),
        standing["record_hash"],
        attribution_notice(attribution),
    )


def _record_matches(
    ws: Workspace,
    entry: dict[str, Any],
    *,
    item_id: str,
    item_sha256: str,
    decision: str,
    roles: tuple[str, ...],
    what: str,
    path: Path,
) -> None:
    """Raises unless the ledger record ``entry`` names is a standing decision of the item
    and every field ``entry`` states about it is what the record says."""
    record_hash = entry["record_hash"]
    record = store.get_record(ws.conn, record_hash) if isinstance(record_hash, str) else None
    if record is None or record.record_hash != record_hash:
        raise IntegrityError(f"{what}: record {str(record_hash)[:16]}… is not in the ledger")
    body = record.body
    if (body["kind"], body["queue"], body["item_id"], body["item_sha256"], body["decision"]) != (
        "decision",
        QUEUE,
        item_id,
        item_sha256,
        decision,
    ):
        raise IntegrityError(
            f"{what}: record #{record.seq} is not a {decision} of item {item_id} with those bytes"
        )
    if body["role"] not in roles:
        raise IntegrityError(
            f"{what}: record #{record.seq} was made as {body['role']}, needs {' or '.join(roles)}"
        )
    held = dict(body, seq=record.seq, record_hash=record.record_hash)
    for name in sorted(entry):
        if name in held and entry[name] != held[name]:
            raise IntegrityError(
                f"{path}: field '{what}.{name}' is {entry[name]!r}, ledger "
                f"record #{record.seq} says {held[name]!r}"
            )
    standing = store.effective_decisions_for(ws.conn, QUEUE, item_id)
    if standing is None or standing["record_hash"] != record_hash:
        raise IntegrityError(
            f"{what}: record #{record.seq} no longer stands (retracted or "
            "superseded); make the evidence again"
        )


def _ledger_matches(ws: Workspace, ledger: Any, approval_seq: int, path: Path) -> None:
    """Raises unless ``ledger`` names a head of this ledger that holds the approval."""
    if not isinstance(ledger, dict) or set(ledger) != {"records", "head_hash"}:
        raise InputError("must be exactly records and head_hash", path=path, field="ledger")
    count = ledger["records"]
    if type(count) is not int or count < approval_seq:
        raise IntegrityError(
            f"{path}: field 'ledger.records' is {count!r}, not a head that "
            f"holds the approval (record #{approval_seq})"
        )
    record = store.get_record(ws.conn, count)
    if record is None or record.record_hash != ledger["head_hash"]:
        raise IntegrityError(
            f"{path}: field 'ledger.head_hash' is not the hash of ledger record #{count}"
        )


def check_evidence(ws: Workspace, path: Path, trust: TrustRoot) -> dict[str, Any]:
    """Gives the evidence document after re-checking every binding it makes: sidecar,
    benchmark bytes and signature, claim item, each review record and the approval,
    all against a ledger that verifies."""
    path = Path(path)
    value = parse_canonical(read_verified(path), path=str(path))
    if (
        not isinstance(value, dict)
        or set(value) != EVIDENCE_FIELDS
        or value["schema_version"] != SCHEMA
    ):
        raise InputError("not a coverage evidence file (fields or schema differ)", path=path)
    if value["workspace"] != ws.workspace_id:
        raise IntegrityError(f"{path}: evidence belongs to workspace {value['workspace']}")
    raw = canonical_json(value["benchmark"])
    if sha256_hex(raw) != value["benchmark_sha256"]:
        raise IntegrityError(f"{path}: embedded benchmark does not hash to benchmark_sha256")
    try:
        signature = bytes.fromhex(value["benchmark_signature"])
    except (TypeError, ValueError):
        raise InputError("must be hex", path=path, field="benchmark_signature") from None
    trust.verify("benchmark", raw, signature, what=f"{path}: benchmark")
    check_benchmark_shape(value["benchmark"], path=str(path))
    _ledger_must_verify(ws)
    if value["release_authority"] != "none":
        raise IntegrityError(
            f"{path}: field 'release_authority' is "
            f"{value['release_authority']!r}; evidence carries none"
        )
    claim, item = value["claim"], value["claim_item"]
    held = ws.item(QUEUE, item["item_id"])
    if (
        held is None
        or held["item_sha256"] != item["item_sha256"]
        or canonical_sha256(claim) != item["item_sha256"]
    ):
        raise IntegrityError(f"{path}: the claim is not the workspace's item {item['item_id']}")
    for name, expected in (("queue", QUEUE), ("run_sha256", held["run_sha256"])):
        if item[name] != expected:
            raise IntegrityError(
                f"{path}: field 'claim_item.{name}' is {item[name]!r}, the "
                f"workspace's item has {expected!r}"
            )
    if (claim["benchmark_sha256"], claim["benchmark_signature_sha256"], claim["reviews"]) != (
        value["benchmark_sha256"],
        sha256_hex(signature),
        value["reviews"],
    ):
        raise IntegrityError(f"{path}: the claim binds another benchmark or other reviews")
    reviewed_categories = {r["category"] for r in value["reviews"]}
    unreviewed = sorted(
        {f["category"] for f in value["benchmark"]["weak_categories"]} - reviewed_categories
    )
    if unreviewed:
        raise IntegrityError(f"{path}: weak category {unreviewed[0]!r} has no review record")
    reviewed_items: list[dict[str, Any]] = []
    for i, review in enumerate(value["reviews"]):
        reviewed = ws.item(QUEUE, review["item_id"])
        if (
            reviewed is None
            or reviewed["payload"].get("source", {}).get("sha256") != value["benchmark_sha256"]
        ):
            raise IntegrityError(
                f"{path}: reviewed item {review['item_id']} is not a backlog item of this benchmark"
            )
        if review["category"] != reviewed["payload"].get("category"):
            raise IntegrityError(
                f"{path}: field 'reviews[{i}].category' is "
                f"{review['category']!r}, item {review['item_id']} is about "
                f"{reviewed['payload'].get('category')!r}"
            )
        carried = review.get("carried_from")
        made_on = review if carried is None else carried
        if not (
            isinstance(made_on, dict)
            and isinstance(made_on.get("item_id"), str)
            and isinstance(made_on.get("item_sha256"), str)
        ):
            raise InputError(
                "must name the item_id and item_sha256 the review was made on",
                path=path,
                field=f"reviews[{i}]" + ("" if carried is None else ".carried_from"),
            )
        # A carried review's item and run are the later item's; its record is about the
        # item it was made on.
        stated = {k: v for k, v in review.items() if carried is None or k not in _CARRIED_OWN}
        _record_matches(
            ws,
            stated,
            item_id=made_on["item_id"],
            item_sha256=made_on["item_sha256"],
            decision=review["decision"],
            roles=("reviewer", "lead"),
            what=f"reviews[{i}]",
            path=path,
        )
        if carried is not None:
            for name in ("item_sha256", "run_sha256"):
                if review.get(name) != reviewed[name]:
                    raise IntegrityError(
                        f"{path}: field 'reviews[{i}].{name}' is not item "
                        f"{review['item_id']}'s ({reviewed[name]})"
                    )
            now = reviewed.get("carried_from") or {}
            if now.get("record_hash") != review["record_hash"]:
                raise IntegrityError(
                    f"{path}: reviews[{i}] is carried to item {review['item_id']} from record "
                    f"{str(review['record_hash'])[:12]}…, which no longer carries to it "
                    "(retracted, superseded or re-opened by new evidence); make the evidence "
                    "again"
                )
        reviewed_items.append(reviewed)
    attribution = attribution_summary(reviewed_items)
    for name, stated in (
        ("attribution", value["attribution"]),
        ("claim.attribution", claim.get("attribution")),
    ):
        if stated != attribution:
            raise IntegrityError(
                f"{path}: field '{name}' does not state how the reviewed "
                f"items' misses were attributed (they are "
                f"{attribution['state']})"
            )
    approval = value["approval"]
    if not isinstance(approval, dict) or set(approval) != APPROVAL_FIELDS:
        raise InputError(
            f"must be exactly {', '.join(sorted(APPROVAL_FIELDS))}", path=path, field="approval"
        )
    _record_matches(
        ws,
        approval,
        item_id=item["item_id"],
        item_sha256=item["item_sha256"],
        decision="accept",
        roles=(APPROVER_ROLE,),
        what="approval",
        path=path,
    )
    _ledger_matches(ws, value["ledger"], approval["seq"], path)
    return value
