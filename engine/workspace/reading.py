"""What a queue holds and what an item has been through: items, pages and counts, an
item's evidence and history, as the reader may see them under a review plan.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

from engine import claims, item_query, reasons, subjects
from engine.agreement import plan as review_plan
from engine.errors import (
    InputError,
)
from engine.ledger import store
from engine.ledger.records import STATUSES
from engine.workspace.planning import Planning


def _with_reasons(
    conn: sqlite3.Connection, decided: dict[tuple[str, str], dict[str, Any]], queue: str | None
) -> dict[tuple[str, str], dict[str, Any]]:
    """Gives the standing decisions with the ``reason`` and ``rationale`` their signed
    records give (None where they give none)."""
    said = reasons.given(conn, queue) if decided else {}
    return {
        key: {
            **eff,
            "reason": said.get(eff["record_hash"], (None, None))[0],
            "rationale": said.get(eff["record_hash"], (None, None))[1],
        }
        for key, eff in decided.items()
    }


def _status_fields(own: dict[str, Any] | None, carry: subjects.Carry | None) -> dict[str, Any]:
    """Gives an item's ``status``, ``carried_from`` and ``reopened`` from its own standing
    decision and, when it has none, its subject's (``engine.subjects``)."""
    if own is not None:
        return {"status": own["decision"], "carried_from": None, "reopened": None}
    if carry is None:
        return {"status": "undecided", "carried_from": None, "reopened": None}
    return {"status": carry.status, **carry.to_json()}


class Reading(Planning):
    """A workspace's queues and items, read."""

    # -- items ------------------------------------------------------------------
    def item(self, queue: str, item_id: str) -> dict[str, Any] | None:
        """Gives one item with its payload, run, subject and effective decision, or None.

        ``decision`` is the item's own standing decision; ``status`` is the
        effective one, which for an item with none of its own may be carried
        from another item of its subject (``carried_from`` names the record) or
        say that new evidence re-opened it (``reopened``).
        """
        row = self.conn.execute(
            "SELECT items.queue, item_id, run_id, item_sha256, payload, title, score, tags, "
            "runs.manifest_sha256 FROM items JOIN runs USING (run_id) "
            "WHERE items.queue=? AND item_id=?",
            (queue, item_id),
        ).fetchone()
        if row is None:
            return None
        from engine.canonical import strict_loads

        effective = self._shown(queue, item_id, store.effective_decisions_for)
        if effective is not None:
            effective = _with_reasons(self.conn, {(queue, item_id): effective}, queue)[
                (queue, item_id)
            ]
        payload = strict_loads(row[4])
        carry = (
            None if effective else subjects.carries(self.conn, queue, item_id).get((queue, item_id))
        )
        return {
            "queue": row[0],
            "item_id": row[1],
            "run_id": row[2],
            "item_sha256": row[3],
            "subject": subjects.subject_of(queue, payload),
            "payload": payload,
            "title": row[5],
            "score": row[6],
            "tags": row[7].split(",") if row[7] else [],
            "run_sha256": row[8],
            "decision": effective,
            **_status_fields(effective, carry),
        }

    def items(
        self,
        queue: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        newest_only: bool = False,
    ) -> list[dict[str, Any]]:
        """Gives items (without payload) with their effective status, in id order.

        ``decision`` is an item's own standing decision; ``status`` counts a
        decision carried from another item of its subject (``carried_from``),
        and ``reopened`` says when new evidence sent the item back to review.
        ``earlier`` counts the items of its subject ingested before it (earlier
        runs' items); ``newest`` says no later one is held. With ``newest_only``,
        one row per subject: its newest item.
        """
        if status not in (None, *STATUSES):
            raise InputError(
                f"unknown status {status!r} (expected {', '.join(STATUSES)})",
                field="status",
            )
        decided = store.effective_decisions(self.conn, queue)
        planned = self._planned_states(queue)
        for key, seq in self._plan_view().items():
            decided.pop(key, None)
            if seq is not None:
                decided[key] = self._decision_at(seq)
        decided = _with_reasons(self.conn, decided, queue)
        carried = subjects.carries(self.conn, queue)
        holding = claims.held(self.conn, queue, time.time())
        with_subjects = subjects.enabled(self.conn)
        subject = "subject" if with_subjects else "NULL"
        earlier, later = (
            (
                "(SELECT COUNT(*) FROM items n WHERE n.queue = i.queue AND n.subject = i.subject "
                f"AND n.rowid {op} i.rowid)"
                for op in ("<", ">")
            )
            if with_subjects
            else ("0", "0")
        )
        sql = (
            f"SELECT queue, item_id, run_id, item_sha256, title, score, tags, {subject}, "
            f"{earlier}, {later} FROM items i"
        )
        args: list[Any] = []
        if queue:
            sql += " WHERE queue=?"
            args.append(queue)
        sql += " ORDER BY queue, item_id"
        out = []
        for q, iid, run_id, sha, title, score, tags, subj, before, after in self.conn.execute(
            sql, args
        ):
            if newest_only and after:
                continue
            eff = decided.get((q, iid))
            fields = _status_fields(eff, None if eff else carried.get((q, iid)))
            if status and fields["status"] != status:
                continue
            out.append(
                {
                    "queue": q,
                    "item_id": iid,
                    "run_id": run_id,
                    "item_sha256": sha,
                    "subject": subj,
                    "title": title,
                    "score": score,
                    "tags": tags.split(",") if tags else [],
                    "decision": eff,
                    **fields,
                    "earlier": before,
                    "newest": not after,
                    **(
                        {"review": review_plan.seen_by(planned[(q, iid)], self.viewer)}
                        if (q, iid) in planned
                        else {}
                    ),
                    # who is on it now, while it waits for a decision (engine.claims)
                    "claim": (
                        holding[(q, iid)].as_dict()
                        if (q, iid) in holding and fields["status"] == "undecided"
                        else None
                    ),
                }
            )
        return out[offset : None if limit is None else offset + limit]

    # -- browsing (the review app reads through these) ----------------------
    def page(
        self,
        queue: str,
        filters: item_query.ItemFilter | None = None,
        sort: str = "score_desc",
        offset: int = 0,
        limit: int = 100,
    ) -> list[item_query.ItemRow]:
        """Gives one page of a queue's rows, filtered and sorted, with their status."""
        self._plan_view()
        return item_query.page(
            self.conn, queue, filters or item_query.ItemFilter(), sort, offset, limit
        )

    def count(self, queue: str, filters: item_query.ItemFilter | None = None) -> int:
        """Gives how many items of a queue pass the filters."""
        self._plan_view()
        return item_query.count(self.conn, queue, filters or item_query.ItemFilter())

    def position(
        self,
        queue: str,
        item_id: str,
        filters: item_query.ItemFilter | None = None,
        sort: str = "score_desc",
    ) -> int | None:
        """Gives an item's index in the filtered, sorted listing, or None if absent."""
        self._plan_view()
        return item_query.position(
            self.conn, queue, filters or item_query.ItemFilter(), sort, item_id
        )

    def progress(self) -> dict[str, item_query.QueueProgress]:
        """Gives per queue: total items and effective decisions by kind."""
        self._plan_view()
        return item_query.progress(self.conn)

    def _shown(self, queue: str, item_id: str, latest: Callable[..., Any]) -> Any:
        """Gives the decision shown on an item: under the plan view, the viewer's own rating
        or None; elsewhere ``latest(conn, queue, item_id)``."""
        view = self._plan_view()
        if (queue, item_id) in view:
            seq = view[(queue, item_id)]
            return None if seq is None else self._decision_at(seq)
        return latest(self.conn, queue, item_id)

    def blind(self, queue: str, item_id: str) -> bool:
        """Says whether the viewer may not yet see others' decisions on the item (a plan
        asks them for an independent one and they have not given it)."""
        current = self.plan()
        if current is None or not current.planned(queue, item_id):
            return False
        state = review_plan.states(self.conn, current, queue, [item_id])[item_id]
        return review_plan.blind_to(state, self.viewer)

    def history(self, queue: str, item_id: str) -> list[dict[str, Any]]:
        """Gives every record about an item, oldest first, marking retracted ones; to a
        viewer the plan keeps blind, only their own records on it."""
        rows = self.conn.execute(
            "SELECT seq, kind, decision, principal, role, time, record_hash, retracts, message "
            "FROM records WHERE queue=? AND item_id=? ORDER BY seq",
            (queue, item_id),
        ).fetchall()
        if self.blind(queue, item_id):
            rows = [r for r in rows if r[3] == self.viewer]
        retracted = {r[7] for r in rows if r[1] == "retract"}
        from engine.canonical import strict_loads

        out = []
        for r in rows:
            body = strict_loads(r[8])
            # a decision's reason and rationale; another kind's "data" is not shown here
            data = (body.get("data") or {}) if r[1] == "decision" else {}
            out.append(
                {
                    "seq": r[0],
                    "kind": r[1],
                    "decision": r[2],
                    "principal": r[3],
                    "role": r[4],
                    "time": r[5],
                    "record_hash": r[6],
                    "retracts": r[7],
                    "note": body.get("note"),
                    "reason": data.get("reason"),
                    "rationale": data.get("rationale"),
                    "guidelines_sha256": data.get("guidelines_sha256"),
                    "retracted": r[6] in retracted,
                }
            )
        return out

    def subject_history(self, queue: str, item_id: str) -> list[dict[str, Any]]:
        """Gives every record about the other items of an item's subject (its earlier and
        later runs' items), oldest first, each as ``history`` gives it plus ``item_id``,
        ``run_id`` and ``earlier`` (made on an item ingested before this one): the
        chain a carried or re-opened decision comes from. Empty without a subject."""
        if not subjects.enabled(self.conn):
            return []
        row = self.conn.execute(
            "SELECT rowid, subject FROM items WHERE queue = ? AND item_id = ?", (queue, item_id)
        ).fetchone()
        if row is None or row[1] is None:
            return []
        out = []
        for other, run_id, rowid in self.conn.execute(
            "SELECT item_id, run_id, rowid FROM items WHERE queue = ? AND subject = ? "
            "AND item_id <> ?",
            (queue, row[1], item_id),
        ).fetchall():
            for rec in self.history(queue, other):
                out.append({**rec, "item_id": other, "run_id": run_id, "earlier": rowid < row[0]})
        return sorted(out, key=lambda rec: rec["seq"])

    def carries_to_others(self, queue: str, item_id: str) -> bool:
        """Says whether a decision on this item may carry to, or re-open, other items of
        its subject (so that a listing showing them must be read again)."""
        if not subjects.enabled(self.conn):
            return False
        return (
            self.conn.execute(
                "SELECT 1 FROM subject_links WHERE queue = ? AND other_id = ? LIMIT 1",
                (queue, item_id),
            ).fetchone()
            is not None
        )

    def _decision_at(self, seq: int) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT seq, decision, principal, role, time, record_hash FROM records WHERE seq=?",
            (seq,),
        ).fetchone()
        keys = ("seq", "decision", "principal", "role", "time", "record_hash")
        return dict(zip(keys, row, strict=True))
