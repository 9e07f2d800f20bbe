"""Gold items as the signed ledger holds them: which answers are revealed, which commits
still wait, and each principal's accuracy on the revealed gold.

Gold items stay out of every agreement figure (``engine.agreement.ledger`` leaves
the revealed ones out): they measure each reviewer against a known answer, not
reviewers against each other. They never reach the clean set, which is built from
a scan's own items.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from engine.canonical import strict_loads


def _gold_records(conn: sqlite3.Connection, before: int | None) -> list[tuple[int, str, dict]]:
    limit = 2**63 - 1 if before is None else before
    return [
        (seq, record_hash, strict_loads(message)["data"])
        for seq, record_hash, message in conn.execute(
            "SELECT seq, record_hash, message FROM records WHERE kind = 'gold' AND seq < ? "
            "ORDER BY seq",
            (limit,),
        )
    ]


def revealed(conn: sqlite3.Connection, before: int | None = None) -> dict[tuple[str, str], str]:
    """Gives the known answer per revealed gold item (queue, item id)."""
    records = _gold_records(conn, before)
    commits = {h: d for _, h, d in records if d["type"] == "commit"}
    out = {}
    for _, _, d in records:
        if d["type"] == "reveal" and d["commit"] in commits:
            queue = commits[d["commit"]]["queue"]
            out.update({(queue, item_id): answer for item_id, answer in d["answers"].items()})
    return out


def commit_state(conn: sqlite3.Connection, commit_hash: str) -> tuple[dict | None, bool]:
    """Gives the data of the gold commit signed as record ``commit_hash`` (None if there
    is none) and whether a reveal of it is held already."""
    records = _gold_records(conn, None)
    commit = next((d for _, h, d in records if h == commit_hash and d["type"] == "commit"), None)
    shown = any(d["type"] == "reveal" and d["commit"] == commit_hash for _, _, d in records)
    return commit, shown


def waiting(conn: sqlite3.Connection, before: int | None = None) -> list[dict[str, Any]]:
    """Gives the gold commits not revealed yet: their seq, queue and count."""
    records = _gold_records(conn, before)
    shown = {d["commit"] for _, _, d in records if d["type"] == "reveal"}
    return [
        {"seq": seq, "queue": d["queue"], "count": d["count"]}
        for seq, h, d in records
        if d["type"] == "commit" and h not in shown
    ]


def accuracy(conn: sqlite3.Connection, before: int | None = None) -> dict[str, dict[str, Any]]:
    """Gives per queue and principal, on the revealed gold items: how many they decided
    (accept or reject, their latest unretracted decision there, from its signed body) and
    how many of those match the answer."""
    answers = revealed(conn, before)
    out: dict[str, dict[str, Any]] = {}
    limit = 2**63 - 1 if before is None else before
    for (queue, item_id), answer in sorted(answers.items()):
        per = out.setdefault(queue, {"gold_items": 0, "principals": {}})
        per["gold_items"] += 1
        latest: dict[str, str] = {}
        for (message,) in conn.execute(
            "SELECT message FROM records d WHERE queue = ? AND item_id = ? AND kind = "
            "'decision' AND seq < ? AND NOT EXISTS (SELECT 1 FROM records x WHERE "
            "x.kind = 'retract' AND x.retracts = d.record_hash AND x.seq < ?) ORDER BY seq",
            (queue, item_id, limit, limit),
        ):
            body = strict_loads(message)
            latest[body["principal"]] = body["decision"]
        for principal, decision in latest.items():
            if decision not in ("accept", "reject"):
                continue
            mine = per["principals"].setdefault(principal, {"decided": 0, "correct": 0})
            mine["decided"] += 1
            mine["correct"] += decision == answer
    return out
