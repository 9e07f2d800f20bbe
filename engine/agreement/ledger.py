"""Agreement between reviewers, read from the signed decision records alone.

Every figure comes from the records' signed bodies (the canonical JSON each
signature covers; a record's hash is recomputed from those bytes), never from
the query columns beside them, so whoever can check the signatures can
recompute the figures.

What counts:

- **A rating** is a principal's standing decision on an item: the latest
  decision record that principal signed on it that no retract record names,
  made in the queue's rating role (the lowest role that decides the queue:
  reviewer for flagged pairs and weak categories, adjudicator for adjudication).
  Only accept and reject are judgements; a skip says "not me", so it counts
  as no rating. Decisions carried from another item of the same subject are
  not ratings: nobody signed them on this item.
- **The outcome** of an item is its standing decision (the latest unretracted
  decision record on it, of anyone) when that was made in a role above the
  rating role, i.e. an adjudicator or a lead settled it, and is an accept or
  a reject.

Per queue: every statistic over the items with at least two ratings (Cohen's
kappa only when exactly two principals rated there); per pair of principals:
over the items both rated; per principal against the outcome: over the items
they rated that have one, the outcome being a second rater.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from engine.agreement.gold import revealed
from engine.agreement.plan import unsettled
from engine.agreement.stats import INTERVAL, LEVEL, RESAMPLES, SEED, Agreement, agreement
from engine.canonical import sha256_hex, strict_loads
from engine.ledger.records import SETTLING
from engine.roles import QUEUES, rank, rating_role

JUDGEMENTS = SETTLING
OUTCOME = "outcome"  # the rater name the outcome takes beside a principal


@dataclass(frozen=True)
class Decision:
    """A standing decision as its signed body states it."""

    seq: int
    principal: str
    role: str
    decision: str
    record_hash: str


@dataclass(frozen=True)
class Standing:
    """Per item of one queue: each principal's standing decision, and the item's."""

    by_principal: dict[str, dict[str, Decision]]  # item_id -> principal -> decision
    item: dict[str, Decision]  # item_id -> the item's standing decision


def standing(
    conn: sqlite3.Connection,
    queues: Iterable[str] = QUEUES,
    *,
    before: int | None = None,
) -> dict[str, Standing]:
    """Gives, per queue, the standing decisions of each principal and of each item, read
    from the signed bodies of the decision and retract records (those before record
    ``before`` when given: as the ledger stood when it was appended). Revealed gold
    items are left out (they are no measure of agreement), and so are planned items no
    decision settles yet (their ratings would tell a rater kept blind what others said)."""
    gold = set(revealed(conn, before)) | unsettled(conn, before=before)
    wanted = set(queues)
    retracted: set[str] = set()
    decisions: list[tuple[dict[str, Any], str]] = []
    for (message,) in conn.execute(
        "SELECT message FROM records WHERE kind IN ('decision', 'retract') AND seq < ? "
        "ORDER BY seq",
        (2**63 - 1 if before is None else before,),
    ):
        body = strict_loads(message)
        if body["kind"] == "retract":
            retracted.add(body["retracts"])
        elif (
            body["kind"] == "decision"
            and body["queue"] in wanted
            and (body["queue"], body["item_id"]) not in gold
        ):
            decisions.append((body, sha256_hex(message.encode("utf-8"))))
    out = {q: Standing({}, {}) for q in sorted(wanted)}
    for body, record_hash in decisions:
        if record_hash in retracted:
            continue
        made = Decision(body["seq"], body["principal"], body["role"], body["decision"], record_hash)
        held = out[body["queue"]]
        mine = held.by_principal.setdefault(body["item_id"], {})
        # Bodies come in seq order: a later one replaces an earlier one.
        mine[made.principal] = made
        held.item[body["item_id"]] = made
    return out


def queue_ratings(held: Standing, queue: str) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Gives the queue's ratings (item -> principal -> accept/reject) and its outcomes
    (item -> accept/reject, where a role above the rating role settled the item)."""
    role = rating_role(queue)
    ratings: dict[str, dict[str, str]] = {}
    for item_id, by in held.by_principal.items():
        mine = {p: d.decision for p, d in by.items() if d.role == role and d.decision in JUDGEMENTS}
        if mine:
            ratings[item_id] = mine
    outcomes = {
        item_id: d.decision
        for item_id, d in held.item.items()
        if rank(d.role) > rank(role) and d.decision in JUDGEMENTS
    }
    return ratings, outcomes


def _figures(result: Agreement) -> dict[str, Any]:
    return result.to_json()


def queue_agreement(
    queue: str,
    ratings: dict[str, dict[str, str]],
    outcomes: dict[str, str],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, Any]:
    """Gives one queue's figures: over all its raters, per pair, and per rater against
    the outcome (items in item-id order, so the resamples are reproducible)."""

    def over(items: list[dict[str, str]]) -> dict[str, Any]:
        return _figures(agreement(items, categories=JUDGEMENTS, resamples=resamples, seed=seed))

    order = sorted(ratings)
    shared = [ratings[i] for i in order if len(ratings[i]) >= 2]
    principals = sorted({p for by in ratings.values() for p in by})
    pairs = []
    for a, b in combinations(principals, 2):
        both = [{a: ratings[i][a], b: ratings[i][b]} for i in order if {a, b} <= ratings[i].keys()]
        if both:
            pairs.append({"raters": [a, b], **over(both)})
    against = []
    for p in principals:
        settled = [
            {p: ratings[i][p], OUTCOME: outcomes[i]}
            for i in order
            if p in ratings[i] and i in outcomes
        ]
        if settled:
            against.append({"principal": p, **over(settled)})
    return {
        "queue": queue,
        "rating_role": rating_role(queue),
        "rated_items": len(ratings),
        "all": over(shared),
        "pairs": pairs,
        "against_outcome": against,
    }


def workspace_agreement(
    conn: sqlite3.Connection,
    queue: str | None = None,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    before: int | None = None,
) -> dict[str, Any]:
    """Gives the agreement figures of one queue, or of every queue holding a rating,
    with how the intervals were drawn (as of before record ``before`` when given)."""
    queues = [queue] if queue is not None else list(QUEUES)
    held = standing(conn, queues, before=before)
    out = []
    for q in queues:
        ratings, outcomes = queue_ratings(held[q], q)
        if ratings or queue is not None:
            out.append(queue_agreement(q, ratings, outcomes, resamples=resamples, seed=seed))
    return {
        "method": {
            "interval": INTERVAL,
            "level": LEVEL,
            "resamples": resamples,
            "seed": seed,
            "labels": list(JUDGEMENTS),
        },
        "queues": out,
    }
