"""Backlog items for the human adjudicator: one per abstained candidate.

A payload holds what the adjudicator needs and nothing of the artifact's
later state: the completion, its context, the candidate, every vote with
its source and why the votes did not settle it. The item id is derived from
the payload's hash, so the same question asked again with the same votes is
the same item (and one decision answers it). Its subject is the candidate
itself (completion, span interval, family, normalised entity): a re-run whose
votes differ makes a new item about the same subject, to which an earlier
adjudication carries by the rule of ``engine.subjects``.
"""

from __future__ import annotations

from typing import Any

from engine.backlog import BacklogItem
from engine.canonical import canonical_sha256, sha256_hex
from engine.endpoint.failures import NOT_RECORDED, Failure, merge, tally
from engine.exam.protocol import PROTOCOL_VERSION
from engine.roles import ADJUDICATION

QUEUE = ADJUDICATION


def _score(votes: list[dict[str, Any]]) -> float | None:
    # Share of accepting votes among the votes that took a side: 0.5 is a
    # true split, which the app can sort to the top.
    sided = [v for v in votes if v["vote"] in ("accept", "reject")]
    if not sided:
        return None
    return sum(v["vote"] == "accept" for v in sided) / len(sided)


def failed_attempts(completion: dict[str, Any], cand: dict[str, Any]) -> list[dict[str, Any]]:
    """Gives, per vote lost to operational failure, why its attempts failed.

    A lane's reasons are in its lane row (the completion's ``lanes``); a
    model vote's are in the vote. ``reasons`` counts attempts per reason
    (``not_recorded`` when a file counted them without reasons); ``details``
    holds each distinct detail once, in attempt order.
    """
    out = []
    for vote in cand["votes"]:
        if vote["vote"] != "operational_failure":
            continue
        if vote["basis"] == "invalid_response":
            # The lane file's row was ok, but its claims do not place in the source.
            invalid = completion["lanes"][vote["voter"]]["invalid"] or {}
            out.append(
                {
                    "voter": vote["voter"],
                    "basis": vote["basis"],
                    "source": vote["source"],
                    "reasons": {"span": 1},
                    "details": [
                        (f"span: claims[{invalid.get('claim_index')}]: {invalid.get('reason')}")
                    ],
                }
            )
            continue
        if vote["basis"] == "lane_failed":
            state = completion["lanes"][vote["voter"]]
            listed = state.get("failures")
            counted = state["invalid_response_attempts"] + state["failed_request_attempts"]
        else:
            listed = vote.get("failures", [])
            counted = vote.get("invalid_response_attempts", 0) + vote.get(
                "failed_request_attempts", 0
            )
        failures = [Failure.from_json(f) for f in listed or ()]
        reasons = merge(tally(failures), {NOT_RECORDED: 0 if listed is not None else counted})
        details = list(dict.fromkeys(f"{f.reason}: {f.detail}" for f in failures))
        out.append(
            {
                "voter": vote["voter"],
                "basis": vote["basis"],
                "source": vote["source"],
                "reasons": reasons,
                "details": details,
            }
        )
    return out


def payload_for(completion: dict[str, Any], cand: dict[str, Any]) -> dict[str, Any]:
    """Gives the backlog payload for one abstained candidate of a sealed core.

    ``failed_attempts`` is present only when a vote was lost to operational
    failure, so that an item without one keeps the bytes (and the decision)
    it had before reasons were recorded.
    """
    span = cand["span_exact_text"]
    title = span if len(span) <= 60 else span[:57] + "..."
    tags = [cand["family"], cand["origin"]] + sorted(
        {v["vote"] for v in cand["votes"] if v["vote"] in ("operational_failure", "absent")}
    )
    payload = {
        "subject": {
            "kind": "exam_candidate",
            "completion_id": completion["completion_id"],
            "completion_sha256": sha256_hex(completion["text"].encode("utf-8")),
            "start": cand["start"],
            "end": cand["end"],
            "family": cand["family"],
            "entity_normalized": cand["entity_normalized"],
        },
        "exam": {"protocol_version": PROTOCOL_VERSION},
        "completion": {
            "id": completion["completion_id"],
            "text": completion["text"],
            "session_id": completion["session_id"],
            "target_turn_id": completion["target_turn_id"],
        },
        "context": completion["context"],
        "candidate": {
            "id": cand["candidate_id"],
            "origin": cand["origin"],
            "start": cand["start"],
            "end": cand["end"],
            "span_exact_text": span,
            "family": cand["family"],
            "entity": cand["entity"],
            "entity_normalized": cand["entity_normalized"],
        },
        "votes": [
            {"voter": v["voter"], "vote": v["vote"], "basis": v["basis"], "source": v["source"]}
            for v in cand["votes"]
        ],
        "reason": cand["reason"],  # why the votes abstained
        "question": "Is this span a claim of this family about this entity, under the "
        "rubric? accept = it is gold, reject = it is not.",
        "summary": {
            "title": f"{title!r} ({cand['family']}/{cand['entity']})",
            "score": _score(cand["votes"]),
            "tags": tags,
        },
    }
    failed = failed_attempts(completion, cand)
    if failed:
        payload["failed_attempts"] = failed
    return payload


def item_for(completion: dict[str, Any], cand: dict[str, Any], run_id: str) -> BacklogItem:
    """Gives the backlog item of one abstained candidate."""
    return _item(payload_for(completion, cand), run_id)


def _item(payload: dict[str, Any], run_id: str) -> BacklogItem:
    sha = canonical_sha256(payload)
    return BacklogItem(QUEUE, "exam-" + sha[:16], run_id, payload, sha)


def without_subject(item: BacklogItem) -> BacklogItem:
    """Gives the item as queued before items named their subject: the same payload
    without it (so a run queued then is still resolved by the decisions made on it)."""
    payload = {k: v for k, v in item.payload.items() if k != "subject"}
    return _item(payload, item.run_id)


def abstained_items(
    art: dict[str, Any], run_id: str, *, only_open: bool = False
) -> list[tuple[str, BacklogItem]]:
    """Gives (candidate id, item) for each candidate the votes left abstained.

    With ``only_open`` the ones a human has since settled are left out.
    """
    out = []
    for comp in art["completions"]:
        for cand in comp["candidates"]:
            if cand["decision"] != "abstain":
                continue
            if only_open and cand.get("human"):
                continue
            out.append((cand["candidate_id"], item_for(comp, cand, run_id)))
    return out
