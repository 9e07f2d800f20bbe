"""Where each planned item stands under the newest signed review plan.

The plan (``engine.ledger.plan``) says which items of a queue need ``k``
independent decisions and who gives them. Here, from the ledger:

- **a rating** on a planned item is a principal's latest unretracted decision
  on it made under the plan (its signed ``data.plan.blind`` is true), in the
  queue's rating role;
- **a resolution** is a later unretracted decision on it from a role above the
  rating role (an adjudicator or a lead);
- **the outcome**: ``adjudicated`` when a resolution stands; ``unanimous``
  when ``k`` principals rated and all said the same; ``unresolved`` when
  ratings disagree (``k`` given or not: a dispute is known at the second);
  ``pending`` while fewer than ``k`` ratings agree so far.

While an item is pending or unresolved nobody's single rating settles it:
listings show it undecided to everyone but each rater, who sees their own
rating (``hidden``), and a rater who has not decided it sees no other
decision on it (``blind_to``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from engine.canonical import strict_loads
from engine.ledger import plan as plan_shape
from engine.roles import rank, rating_role

UNANIMOUS, ADJUDICATED, UNRESOLVED, PENDING = "unanimous", "adjudicated", "unresolved", "pending"
OUTCOMES = (UNANIMOUS, ADJUDICATED, UNRESOLVED, PENDING)
_SETTLED = (UNANIMOUS, ADJUDICATED)


@dataclass(frozen=True)
class Plan:
    """The newest signed plan: its record and what it says per queue."""

    seq: int
    record_hash: str
    principal: str
    queues: dict[str, dict[str, Any]]
    # Where draw keys are read, and those read (an item's subject never changes).
    conn: sqlite3.Connection | None = field(default=None, compare=False, repr=False)
    keys: dict[tuple[str, str], str] = field(default_factory=dict, compare=False, repr=False)
    read_queues: set[str] = field(default_factory=set, compare=False, repr=False)

    def for_queue(self, queue: str) -> dict[str, Any] | None:
        return self.queues.get(queue)

    def planned(self, queue: str, item_id: str) -> bool:
        """Says whether the plan asks ``k`` decisions on this item."""
        q = self.queues.get(queue)
        return q is not None and plan_shape.sampled(q, queue, self.key(queue, item_id))

    def assigned(self, queue: str, item_id: str) -> tuple[str, ...]:
        """Gives who the plan assigns this item to (nobody when the queue is not planned)."""
        q = self.queues.get(queue)
        return () if q is None else plan_shape.assigned(q, queue, self.key(queue, item_id))

    def key(self, queue: str, item_id: str) -> str:
        """Gives the item's draw key (``engine.ledger.plan``): its subject, else its id."""
        found = self.keys.get((queue, item_id))
        if found is None:
            if self.conn is None:
                return item_id
            found = plan_shape.draw_keys(self.conn, queue, [item_id]).get(item_id, item_id)
            self.keys[(queue, item_id)] = found
        return found

    def read_keys(self, queue: str) -> None:
        """Reads every draw key of a queue in one query (before a pass over all its items)."""
        if self.conn is not None and queue not in self.read_queues:
            for item_id, key in plan_shape.draw_keys(self.conn, queue).items():
                self.keys[(queue, item_id)] = key
            self.read_queues.add(queue)

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "record_hash": self.record_hash,
            "signed_by": self.principal,
            "queues": self.queues,
        }


def current(conn: sqlite3.Connection, before: int | None = None) -> Plan | None:
    """Gives the newest plan record (before record ``before`` when given), or None."""
    limit = 2**63 - 1 if before is None else before
    # The kind is written out, not bound: SQLite then reads the partial index records_plan.
    row = conn.execute(
        "SELECT seq, record_hash, principal, message FROM records "
        "WHERE kind = 'plan' AND seq < ? ORDER BY seq DESC LIMIT 1",
        (limit,),
    ).fetchone()
    if row is None:
        return None
    return Plan(row[0], row[1], row[2], strict_loads(row[3])["data"]["queues"], conn)


def plan_by_hash(conn: sqlite3.Connection, record_hash: str) -> Plan | None:
    """Gives the plan signed as record ``record_hash``, or None."""
    row = conn.execute(
        "SELECT seq, record_hash, principal, message FROM records WHERE record_hash = ? "
        "AND kind = ?",
        (record_hash, plan_shape.PLAN_KIND),
    ).fetchone()
    if row is None:
        return None
    return Plan(row[0], row[1], row[2], strict_loads(row[3])["data"]["queues"], conn)


@dataclass(frozen=True)
class Rating:
    seq: int
    principal: str
    role: str
    decision: str
    record_hash: str


@dataclass
class ItemState:
    """One planned item: its ratings, a resolution, and the outcome."""

    queue: str
    item_id: str
    k: int
    principals: tuple[str, ...] = ()  # who the plan asks for decisions on the queue
    ratings: dict[str, Rating] = field(default_factory=dict)
    resolution: Rating | None = None

    @property
    def outcome(self) -> str:
        if self.resolution is not None:
            return ADJUDICATED
        said = {r.decision for r in self.ratings.values()}
        if len(said) > 1:
            return UNRESOLVED
        if len(self.ratings) >= self.k:
            return UNANIMOUS
        return PENDING

    @property
    def settled(self) -> bool:
        return self.outcome in _SETTLED

    def to_json(self) -> dict[str, Any]:
        """What ``items --json`` says of it (who rated and what only once it is settled)."""
        out: dict[str, Any] = {"k": self.k, "ratings": len(self.ratings), "outcome": self.outcome}
        if self.resolution is not None:
            out["resolves"] = sorted(r.record_hash for r in self.ratings.values())
        return out


def _decisions(
    conn: sqlite3.Connection, queue: str, item_ids: list[str] | None, before: int | None
) -> list[tuple[str, int, str, str, str, str, dict[str, Any] | None]]:
    """Gives the unretracted decisions (item, seq, principal, role, decision, hash, data) on
    the items of a queue (all, or those named), in seq order, as of before ``before``."""
    limit = 2**63 - 1 if before is None else before
    sql = (
        "SELECT item_id, seq, principal, role, decision, record_hash, message FROM records d "
        "WHERE kind = 'decision' AND queue = ? AND seq < ? AND NOT EXISTS (SELECT 1 FROM "
        "records x WHERE x.kind = 'retract' AND x.retracts = d.record_hash AND x.seq < ?)"
    )
    args: list[Any] = [queue, limit, limit]
    if item_ids is not None:
        sql += " AND item_id IN (SELECT value FROM json_each(?))"
        import json

        args.append(json.dumps(item_ids))
    rows = conn.execute(sql + " ORDER BY seq", args).fetchall()
    return [(*r[:6], strict_loads(r[6])["data"]) for r in rows]


def states(
    conn: sqlite3.Connection,
    plan: Plan,
    queue: str,
    item_ids: list[str] | None = None,
    *,
    before: int | None = None,
) -> dict[str, ItemState]:
    """Gives each planned item of a queue (all, or those named that are planned) with its
    ratings and resolution; the items the plan does not sample are left out."""
    q = plan.for_queue(queue)
    if q is None:
        return {}
    if item_ids is None:
        item_ids = [
            r[0] for r in conn.execute("SELECT item_id FROM items WHERE queue = ?", (queue,))
        ]
    asked = tuple(q["principals"])
    if len(item_ids) > 1:
        plan.read_keys(queue)
    out = {i: ItemState(queue, i, q["k"], asked) for i in item_ids if plan.planned(queue, i)}
    if not out:
        return out
    role = rating_role(queue)
    for item_id, seq, principal, made_as, decision, record_hash, data in _decisions(
        conn, queue, list(out), before
    ):
        made = Rating(seq, principal, made_as, decision, record_hash)
        state = out[item_id]
        under = data.get("plan") if isinstance(data, dict) else None
        if made_as == role and isinstance(under, dict) and under.get("blind") is True:
            if decision in ("accept", "reject"):
                state.ratings[principal] = made
            else:  # a skip is "not me": it withdraws the principal's rating
                state.ratings.pop(principal, None)
        elif rank(made_as) > rank(role):
            state.resolution = made
    return out


def hidden(
    conn: sqlite3.Connection, viewer: str | None, plan: Plan | None = None
) -> list[tuple[str, str, int | None]]:
    """Gives (queue, item, the decision's seq a listing shows or None) for every planned
    item no decision settles yet: to ``viewer`` their own rating, to anyone else nothing."""
    plan = plan if plan is not None else current(conn)
    if plan is None:
        return []
    out = []
    for queue in plan.queues:
        for item_id, state in states(conn, plan, queue).items():
            if state.settled:
                continue
            own = state.ratings.get(viewer) if viewer is not None else None
            out.append((queue, item_id, own.seq if own is not None else None))
    return out


def blind_to(state: ItemState, viewer: str | None) -> bool:
    """Says whether ``viewer`` may not see others' decisions on the item yet: it is not
    settled, and they are one of the plan's raters who has not rated it, or nobody known.
    Whoever the plan does not ask (an adjudicator, a lead) is not kept blind: they settle
    what the raters disagree on."""
    if state.settled:
        return False
    return viewer is None or (viewer in state.principals and viewer not in state.ratings)


def seen_by(state: ItemState, viewer: str | None) -> dict[str, Any]:
    """Gives what a listing says of a planned item to ``viewer``: to one kept blind, how
    many decisions are in and that it waits (not whether they agree)."""
    out = state.to_json()
    if blind_to(state, viewer):
        out["outcome"] = PENDING
    return out


def unsettled(conn: sqlite3.Connection, *, before: int | None = None) -> set[tuple[str, str]]:
    """Gives the planned items no decision settles yet (as of before record ``before``):
    their ratings count in no agreement figure until they are settled, so no figure tells
    a rater kept blind what the others decided."""
    plan = current(conn, before)
    if plan is None:
        return set()
    return {
        (queue, item_id)
        for queue in plan.queues
        for item_id, state in states(conn, plan, queue, before=before).items()
        if not state.settled
    }


def progress(
    conn: sqlite3.Connection, plan: Plan, *, before: int | None = None
) -> dict[str, dict[str, Any]]:
    """Gives per planned queue: planned items, outcomes, and per principal how many of
    the items assigned to them they rated (and ratings in all); as of before record
    ``before`` when given."""
    out: dict[str, dict[str, Any]] = {}
    for queue, q in sorted(plan.queues.items()):
        held = states(conn, plan, queue, before=before)
        counts = {name: 0 for name in OUTCOMES}
        people = {p: {"assigned": 0, "rated": 0, "ratings": 0} for p in q["principals"]}
        for item_id, state in held.items():
            counts[state.outcome] += 1
            for p in plan.assigned(queue, item_id):
                people[p]["assigned"] += 1
                people[p]["rated"] += p in state.ratings
            for p in state.ratings:
                if p in people:
                    people[p]["ratings"] += 1
        missing = sum(max(0, s.k - len(s.ratings)) for s in held.values() if not s.settled)
        out[queue] = {
            **q,
            "planned_items": len(held),
            "outcomes": counts,
            "missing_decisions": missing,
            "principals_progress": people,
        }
    return out


def disputed(conn: sqlite3.Connection, plan: Plan) -> list[ItemState]:
    """Gives the unresolved items, most disputed first (the most ratings that differ from
    the commonest, then the most ratings), then by queue and item."""

    def spread(state: ItemState) -> tuple[int, int]:
        said = [r.decision for r in state.ratings.values()]
        common = max(said.count(d) for d in set(said))
        return len(said) - common, len(said)

    out = [
        s
        for queue in plan.queues
        for s in states(conn, plan, queue).values()
        if s.outcome == UNRESOLVED
    ]
    return sorted(out, key=lambda s: (-spread(s)[0], -spread(s)[1], s.queue, s.item_id))


def decision_extra(
    conn: sqlite3.Connection,
    queue: str,
    item_id: str,
    decision: str,
    principal: str,
    role: str,
    standing: dict[str, Any] | None,
    *,
    again: bool = False,
) -> dict[str, Any] | None | bool:
    """Gives what a decision on a planned item signs beside its fields (``{"data": ...}``),
    None when the signer's own rating already says it, or False when the item is not
    planned (the usual rules then apply). Raises when the plan does not allow it. With
    ``again`` (the decision gives a reason of its own), an own rating saying the same
    decision is signed again all the same.

    - In the rating role, only the plan's principals decide a planned item, each once
      (changing their own rating is allowed); the decision is a blind rating, and it
      replaces nobody: the other principals' ratings stand beside it.
    - Above the rating role, a decision on a planned item that no decision settles yet
      resolves its ratings: it names them, and the latest standing one as overruled.
    """
    from engine.errors import PermissionRefused

    plan = current(conn)
    if plan is None or not plan.planned(queue, item_id):
        return False
    q = plan.queues[queue]
    state = states(conn, plan, queue, [item_id])[item_id]
    rated_as = rating_role(queue)
    if role == rated_as:
        if principal not in q["principals"]:
            raise PermissionRefused(
                f"{queue}/{item_id} is double-reviewed under the plan (#{plan.seq}) by "
                f"{', '.join(q['principals'])}; {principal} is not one of them; nothing was signed"
            )
        if state.resolution is not None:
            r = state.resolution
            raise PermissionRefused(
                f"{queue}/{item_id} was settled by {r.principal} as {r.role} (record {r.seq}); "
                "a rating no longer changes it; nothing was signed"
            )
        own = state.ratings.get(principal)
        if own is not None and own.decision == decision and not again:
            return None
        return {"data": {"plan": {"blind": True, "record": plan.record_hash}}}
    if rank(role) > rank(rated_as) and not state.settled and state.ratings and standing:
        resolves = sorted(r.record_hash for r in state.ratings.values())
        return {
            "data": {
                "overrules": standing["record_hash"],
                "plan": {"record": plan.record_hash, "resolves": resolves},
            }
        }
    return False
