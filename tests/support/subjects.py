"""Builders of backlog items that name a subject, for the tests of carried decisions."""

from __future__ import annotations

from engine.workspace import BacklogItem

QUEUE = "flagged_pairs"


def eval_subject(eval_id: str) -> dict:
    """Gives the subject of a flagged pair about eval item ``eval_id``."""
    return {"kind": "eval_item", "eval_set": {"name": "eval.jsonl"}, "eval_id": eval_id}


def flagged(item_id: str, run_id: str, eval_id: str, docs: dict[str, float]) -> BacklogItem:
    """Gives a flagged pair about eval item ``eval_id`` matching pool ``docs`` (id -> Jaccard),
    scored by its best match."""
    return BacklogItem.make(
        QUEUE,
        item_id,
        run_id,
        {
            "subject": eval_subject(eval_id),
            "summary": {"title": f"{eval_id} in {run_id}", "score": max(docs.values())},
            "eval": {"id": eval_id, "text": f"question {eval_id}"},
            "matches": [
                {"kind": "pool", "id": doc, "channels": ["ngram"], "scores": {"jaccard": j}}
                for doc, j in sorted(docs.items())
            ],
            "channels": ["ngram"],
        },
    )


WEAK = "weak_categories"  # a reviewer or a lead may decide its items


def weak(item_id: str, run_id: str, category: str, misses: list[str]) -> BacklogItem:
    """Gives a weak category of one detector and holdout, with the selected ``misses``
    (case ids): a re-run that selects another miss adds evidence about the same subject."""
    return BacklogItem.make(
        WEAK,
        item_id,
        run_id,
        {
            "subject": {
                "kind": "weak_category",
                "category": category,
                "detector_sha256": "d" * 64,
                "holdout": "holdout-1",
            },
            "summary": {"title": f"{category} in {run_id}", "score": 0.55},
            "category": category,
            "findings": [{"issue": "low_recall", "value": 0.55, "threshold": 0.8}],
            "misses": [{"case_id": case, "text": f"missed case {case}"} for case in misses],
        },
    )


def rescanned_twice(workspace, enrol) -> tuple:
    """Gives (workspace, rita's key): rita rejected q-1 and q-2 and accepted q-3 on the
    first run; the second run found q-1 with a new match (re-opened), q-2 with nothing new
    (the reject carries) and q-3 with a new match (the accept carries regardless)."""
    rita = enrol("rita", "reviewer")
    workspace.ingest(
        [
            flagged("a1", "run-1", "q-1", {"doc-1": 0.6}),
            flagged("b1", "run-1", "q-2", {"doc-3": 0.5}),
            flagged("c1", "run-1", "q-3", {"doc-4": 0.4}),
        ]
    )
    for item_id, decision in (("a1", "reject"), ("b1", "reject"), ("c1", "accept")):
        workspace.decide(rita, QUEUE, item_id, decision)
    workspace.ingest(
        [
            flagged("a2", "run-2", "q-1", {"doc-1": 0.6, "doc-2": 0.9}),
            flagged("b2", "run-2", "q-2", {"doc-3": 0.5}),
            flagged("c2", "run-2", "q-3", {"doc-4": 0.4, "doc-5": 0.7}),
        ]
    )
    return workspace, rita.path
