"""A review plan: how many independent decisions each item of a queue needs, and who gives them.

A lead signs a plan as a ``plan`` record; its ``data`` is::

    {"queues": {"flagged_pairs": {"k": 2, "share": 0.2, "seed": 7,
                                  "principals": ["rita", "sam"]}}}

- ``k``: independent decisions a planned item needs (2 or more; 1 means no
  double review and is refused, a plan that asks nothing is no plan);
- ``share``: the part of the queue that is double-reviewed, in (0, 1];
- ``seed``: with the queue and the item's draw key, it decides which items
  are in that share and in what order each principal is asked (so anyone
  holding the signed record draws the same sample and the same assignment).
  The draw key is the item's subject (the question it asks: for a flagged
  pair, the eval set, the eval item's id and its text's SHA-256) when it has
  one, else its id. A subject is the same on every machine and in every
  re-scan, where an item id (a hash of all the evidence, scores included)
  can differ in a score's last digit from one CPU to another, and always
  differs once new evidence comes: a question double-reviewed stays so;
- ``principals``: who takes part (at least ``k``), each named once.

Everything here is a pure function of the signed body, so ``verify`` can
redraw the sample from the record alone.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import Any

from engine.canonical import subject_sha256

PLAN_KIND = "plan"
_QUEUE_KEYS = {"k", "share", "seed", "principals"}
_SCALE = float(1 << 64)


def _draw(*parts: str) -> float:
    """Gives a number in [0, 1) drawn from the SHA-256 of the parts joined by NUL."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def sampled(queue_plan: dict[str, Any], queue: str, key: str) -> bool:
    """Says whether the plan asks ``k`` independent decisions on the item of this draw key."""
    return _draw("sample", str(queue_plan["seed"]), queue, key) < queue_plan["share"]


def order(queue_plan: dict[str, Any], queue: str, key: str) -> tuple[str, ...]:
    """Gives the plan's principals in the order the item of this draw key asks them: a
    planned item is assigned to the first ``k``, any other item to the first one."""
    seed = str(queue_plan["seed"])
    return tuple(
        sorted(queue_plan["principals"], key=lambda p: (_draw("assign", seed, queue, key, p), p))
    )


def assigned(queue_plan: dict[str, Any], queue: str, key: str) -> tuple[str, ...]:
    """Gives who the plan assigns the item of this draw key to."""
    ranked = order(queue_plan, queue, key)
    return ranked[: queue_plan["k"]] if sampled(queue_plan, queue, key) else ranked[:1]


def draw_key(queue: str, item_id: str, payload: dict[str, Any]) -> str:
    """Gives the draw key of an item: the SHA-256 of its queue and its payload's subject
    (the items table's ``subject`` column holds the same), else its id."""
    stated = payload.get("subject")
    return item_id if stated is None else subject_sha256(queue, stated)


def draw_keys(
    conn: sqlite3.Connection, queue: str, item_ids: list[str] | None = None
) -> dict[str, str]:
    """Gives the draw key of a queue's items (all, or those named), read from the items
    table's subject column (an item without one, or a database made before subjects,
    draws by its id)."""
    where, args = "queue = ?", [queue]
    if item_ids is not None:
        where += " AND item_id IN (SELECT value FROM json_each(?))"
        args.append(json.dumps(item_ids))
    try:
        rows = conn.execute(
            f"SELECT item_id, COALESCE(subject, item_id) FROM items WHERE {where}", args
        ).fetchall()
    except sqlite3.OperationalError:  # made before subjects: no subject column
        rows = conn.execute(f"SELECT item_id, item_id FROM items WHERE {where}", args).fetchall()
    return dict(rows)


def plan_fault(data: Any, queues: tuple[str, ...]) -> str | None:
    """Gives why a plan record's ``data`` is not a plan over ``queues``, or None."""
    if type(data) is not dict or data.keys() != {"queues"} or type(data["queues"]) is not dict:
        return "a plan record's 'data' is not {\"queues\": {...}}"
    if not data["queues"]:
        return "a plan record plans no queue"
    for queue, q in data["queues"].items():
        where = f"the plan for {queue}"
        if queue not in queues:
            return f"a plan record names the unknown queue {queue!r}"
        if type(q) is not dict or q.keys() != _QUEUE_KEYS:
            return f"{where} is not {{k, share, seed, principals}}"
        k, share, seed, principals = q["k"], q["share"], q["seed"], q["principals"]
        if type(k) is not int or k < 2:
            return f"{where}: k must be a whole number of at least 2, not {k!r}"
        if type(share) not in (int, float) or not 0 < share <= 1:
            return f"{where}: share must be above 0 and at most 1, not {share!r}"
        if type(seed) is not int or seed < 0:
            return f"{where}: seed must be a whole number of at least 0, not {seed!r}"
        if (
            type(principals) is not list
            or not all(type(p) is str and p for p in principals)
            or len(set(principals)) != len(principals)
        ):
            return f"{where}: principals must be distinct names"
        if len(principals) < k:
            return f"{where}: {len(principals)} principal(s) cannot give {k} decisions"
    return None
