"""What one decision on many items would do to each of them: the preview a person confirms.

A bulk decision (a duplicate cluster, a marked selection) is shown in full
before it is signed: each item's title and hash, and what deciding it would
do to the decision standing on it. ``Workspace.decide_many`` still decides,
inside its one write transaction, given exactly the overrules the preview
listed (``BulkPlan.overrules``): should the ledger have moved since, nothing
is signed rather than something nobody saw.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine import subjects
from engine.errors import InputError
from engine.roles import QUEUES, outranks

# What deciding an item would do: sign a first (or this person's changed) decision,
# overrule another principal's, nothing (a higher role's decision stands), or nothing
# because no such item is held.
EFFECTS = ("decide", "overrule", "refused", "absent")


@dataclass(frozen=True)
class Planned:
    """One item of a bulk decision and what deciding it would do."""

    item_id: str
    title: str
    item_sha256: str | None
    # The decision standing now, its own or carried (subjects.standing_decision)
    standing: dict[str, Any] | None
    effect: str  # one of EFFECTS


@dataclass(frozen=True)
class BulkPlan:
    """A bulk decision as a person would confirm it: every item, in the order given."""

    queue: str
    principal: str | None
    role: str | None
    items: tuple[Planned, ...]

    @property
    def signable(self) -> list[str]:
        """Gives the ids a confirmation signs (not the refused, not the absent)."""
        return [p.item_id for p in self.items if p.effect in ("decide", "overrule")]

    @property
    def overrules(self) -> dict[str, str]:
        """Gives, per item it overrules, the record hash of the decision shown standing."""
        return {
            p.item_id: p.standing["record_hash"]
            for p in self.items
            if p.effect == "overrule" and p.standing is not None
        }

    def count(self, effect: str) -> int:
        """Gives how many items would have that effect."""
        return sum(p.effect == effect for p in self.items)


def plan(
    conn: sqlite3.Connection,
    queue: str,
    item_ids: Iterable[str],
    principal: str | None,
    role: str | None,
) -> BulkPlan:
    """Gives what deciding each item, in ``role`` as ``principal``, would do (duplicates
    dropped, order kept). Without a principal (a session that may not decide here) every
    held item reads "decide": the decision itself is refused."""
    if queue not in QUEUES:
        raise InputError(f"unknown queue {queue!r}", field="queue")
    ids = list(dict.fromkeys(item_ids))
    held = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT item_id, title, item_sha256 FROM items WHERE queue = ? "
            "AND item_id IN (SELECT value FROM json_each(?))",
            (queue, json.dumps(ids)),
        )
    }
    items = []
    for item_id in ids:
        if item_id not in held:
            items.append(Planned(item_id, item_id, None, None, "absent"))
            continue
        title, sha = held[item_id]
        standing = subjects.standing_decision(conn, queue, item_id)
        items.append(Planned(item_id, title, sha, standing, _effect(standing, principal, role)))
    return BulkPlan(queue, principal, role, tuple(items))


def _effect(standing: dict[str, Any] | None, principal: str | None, role: str | None) -> str:
    # The same rule decide_many applies (engine.workspace.decisions._replacing), read ahead of it.
    if standing is None or principal is None or role is None:
        return "decide"
    if outranks(standing["role"], role):
        return "refused"
    return "decide" if standing["principal"] == principal else "overrule"
