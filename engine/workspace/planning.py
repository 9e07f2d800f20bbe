"""Review plans and gold items on a workspace: who decides what, what a planned item
settled as, which items are disputed, and what a participant may be shown.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from engine import item_query
from engine.agreement import plan as review_plan
from engine.canonical import canonical_json
from engine.errors import (
    ConflictError,
    InputError,
)
from engine.ledger import store
from engine.ledger.records import Record
from engine.ledger.signers import Signer
from engine.roles import QUEUES, SIGNOFF_ROLE
from engine.workspace.decisions import Deciding


class Planning(Deciding):
    """A workspace's review plan and gold items, read and set."""

    # -- the review plan ---------------------------------------------------------
    def plan(self) -> review_plan.Plan | None:
        """Gives the newest signed review plan, or None."""
        return review_plan.current(self.conn)

    def _plan_view(self) -> dict[tuple[str, str], int | None]:
        """Gives (and hands the connection's listings) what the plan leaves unsettled, as
        ``self.viewer`` sees it; recomputed only when the ledger or the viewer changed."""
        mark = (self.watermark(), self.viewer)
        if mark != self._view_mark:
            rows = review_plan.hidden(self.conn, self.viewer)
            item_query.set_view(self.conn, rows)
            self._view_mark = mark
            self._view = {(queue, item_id): seq for queue, item_id, seq in rows}
        return self._view

    def set_plan(
        self,
        signer: Signer,
        queues: dict[str, dict[str, Any]],
        *,
        note: str | None = None,
        principal: str | None = None,
    ) -> Record:
        """Gives the lead's signed plan record: per queue, k independent decisions on a
        seeded share of the items, by the principals named (``engine.ledger.plan``)."""
        from engine.ledger.plan import PLAN_KIND, plan_fault

        fault = plan_fault({"queues": queues}, QUEUES)
        if fault is not None:
            raise InputError(fault, field="plan")
        principal, role = self.identify(signer, principal, SIGNOFF_ROLE)
        return self._append(
            signer, PLAN_KIND, principal, role, None, note=note, data={"queues": queues}
        )

    # -- gold items --------------------------------------------------------------
    def commit_gold(
        self, signer: Signer, queue: str, answers: dict[str, str], *, principal: str | None = None
    ) -> tuple[Record, str]:
        """Gives the lead's signed gold commit and the salt it was made with (kept by the
        lead with the answers until the reveal): refused for an item the queue does not
        hold or that someone has decided already."""
        import secrets

        from engine.ledger.gold import GOLD_KIND, answers_fault, commitment

        fault = answers_fault(answers)
        if fault is not None:
            raise InputError(f"gold answers: {fault}", field="answers")
        if queue not in QUEUES:
            raise InputError(f"unknown queue {queue!r}", field="queue")
        salt = secrets.token_hex(16)

        def check(conn: sqlite3.Connection) -> dict[str, Any]:
            for item_id in sorted(answers):
                self._item_binding(conn, queue, item_id)
                if store.effective_decisions_for(conn, queue, item_id) is not None:
                    raise ConflictError(
                        f"{queue}/{item_id} is decided already: gold is committed before "
                        "anyone decides it; nothing was signed"
                    )
            return {}

        principal, role = self.identify(signer, principal, SIGNOFF_ROLE)
        data = {
            "type": "commit",
            "queue": queue,
            "count": len(answers),
            "sha256": commitment(queue, answers, salt),
        }
        return self._append(signer, GOLD_KIND, principal, role, check, data=data), salt

    def reveal_gold(
        self,
        signer: Signer,
        commit_hash: str,
        answers: dict[str, str],
        salt: str,
        *,
        principal: str | None = None,
    ) -> Record:
        """Gives the lead's signed gold reveal of a commit's answers: refused unless they
        and the salt hash to what the commit bound, and the commit is not revealed yet."""
        from engine.agreement.gold import commit_state
        from engine.ledger.gold import GOLD_KIND, reveal_fault

        data = {"type": "reveal", "commit": commit_hash, "answers": answers, "salt": salt}

        def check(conn: sqlite3.Connection) -> dict[str, Any]:
            commit, shown = commit_state(conn, commit_hash)
            if commit is None:
                raise InputError(
                    f"no gold commit {commit_hash[:12]}… in this ledger", field="commit"
                )
            if shown:
                raise ConflictError("that gold commit is revealed already; nothing was signed")
            fault = reveal_fault(commit, data)
            if fault is not None:
                raise InputError(f"gold reveal: {fault}; nothing was signed", field="answers")
            return {}

        principal, role = self.identify(signer, principal, SIGNOFF_ROLE)
        return self._append(signer, GOLD_KIND, principal, role, check, data=data)

    # -- where the plan stands: outcomes, notes, own work, disputes, progress ----
    def _planned_states(self, queue: str | None = None) -> dict[tuple[str, str], Any]:
        """Gives the plan's state of each planned item (of one queue, or all)."""
        current = self.plan()
        if current is None:
            return {}
        return {
            (q, i): state
            for q in current.queues
            if queue in (None, q)
            for i, state in review_plan.states(self.conn, current, q).items()
        }

    def review_outcomes(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Gives each planned item's outcome (k, ratings in, unanimous / adjudicated /
        unresolved / pending), as the records say it, to nobody kept blind: what an
        export carries beside each decision on a planned item."""
        return {key: state.to_json() for key, state in self._planned_states().items()}

    def plan_note(self, queue: str, item_id: str) -> str | None:
        """Gives one line on where a planned item stands for the viewer (how many of its
        decisions are in, whether they are kept from the viewer, the viewer's share of
        the plan), or None for an item no plan asks several decisions on."""
        current = self.plan()
        if current is None or not current.planned(queue, item_id):
            return None
        state = review_plan.states(self.conn, current, queue, [item_id])[item_id]
        said = f"double review (plan #{current.seq}): {len(state.ratings)} of {state.k} in"
        if state.outcome != review_plan.PENDING:
            said += f", {state.outcome}"
        if review_plan.blind_to(state, self.viewer):
            said += "; blind: others' decisions show once you decide"
        mine = self.plan_progress().get(queue, {}).get("principals_progress", {})
        if self.viewer in mine:
            n = mine[self.viewer]
            said += f" · you: {n['rated']}/{n['assigned']} assigned rated"
        return said

    def own_work(self, queue: str) -> tuple[str, ...]:
        """Gives the items of a queue that are the viewer's work first under the newest
        review plan: those it assigns to them, or, to someone outside the plan (an
        adjudicator), the unresolved ones. None without a plan for the queue or a viewer."""
        current = self.plan()
        planned = current.for_queue(queue) if current is not None else None
        if current is None or planned is None or self.viewer is None:
            return ()
        if self.viewer not in planned["principals"]:
            held = review_plan.states(self.conn, current, queue)
            return tuple(i for i, s in held.items() if s.outcome == review_plan.UNRESOLVED)
        current.read_keys(queue)
        ids = self.conn.execute("SELECT item_id FROM items WHERE queue = ?", (queue,))
        return tuple(i for (i,) in ids if self.viewer in current.assigned(queue, i))

    def disputed(self, queue: str | None = None) -> list[dict[str, Any]]:
        """Gives the planned items (of one queue, or all) whose decisions disagree, most
        disputed first (``engine.agreement.plan.disputed``), each with its title and who
        said what; an item the plan still keeps the viewer blind to is left out."""
        current = self.plan()
        if current is None:
            return []
        found = [
            s
            for s in review_plan.disputed(self.conn, current)
            if queue in (None, s.queue) and not review_plan.blind_to(s, self.viewer)
        ]
        titles = {
            (q, i): title
            for q, i, title in self.conn.execute(
                "SELECT queue, item_id, title FROM items WHERE item_id IN "
                "(SELECT value FROM json_each(?))",
                (canonical_json([s.item_id for s in found]),),
            )
        }
        return [
            {
                "queue": s.queue,
                "item_id": s.item_id,
                "title": titles.get((s.queue, s.item_id), ""),
                "k": s.k,
                "ratings": {p: r.decision for p, r in sorted(s.ratings.items())},
            }
            for s in found
        ]

    def plan_progress(self) -> dict[str, dict[str, Any]]:
        """Gives the plan's progress per queue (``engine.agreement.plan.progress``), read
        again only when the ledger or the items changed."""
        mark = self.watermark()
        if self._progress_mark != mark:
            current = self.plan()
            self._plan_progress = (
                review_plan.progress(self.conn, current) if current is not None else {}
            )
            self._progress_mark = mark
        return self._plan_progress
