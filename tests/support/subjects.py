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
