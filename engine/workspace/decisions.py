"""Decisions, notes, retractions, sign-offs and the reason lists, and ``_append``, which
every signed record a person makes goes through (plans and gold use it from
``planning``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine import reasons, subjects
from engine.agreement import plan as review_plan
from engine.canonical import sha256_hex
from engine.errors import (
    ConflictError,
    InputError,
    IntegrityError,
    OverruleRequired,
    PermissionRefused,
)
from engine.ledger import store
from engine.ledger.records import DECISIONS, Record
from engine.ledger.signers import Signer
from engine.reasons import Guidelines, Reason
from engine.roles import QUEUE_ROLES, QUEUES, SIGNOFF_ROLE, outranks
from engine.workspace.base import WorkspaceBase


@dataclass(frozen=True)
class DecisionOutcome:
    """What deciding one item did: the record appended (None when the signer's own
    standing decision already said the same) and the decision that stood before."""

    queue: str
    item_id: str
    decision: str
    record: Record | None
    standing: dict[str, Any] | None  # subjects.standing_decision's, just before deciding

    @property
    def overruled(self) -> dict[str, Any] | None:
        """Gives the standing decision this record overrules, or None."""
        if self.record is None or "overrules" not in (self.record.body["data"] or {}):
            return None  # none, or an independent rating under a review plan
        return self.standing

    @property
    def reason(self) -> str | None:
        """Gives the reason code the record appended carries, or None."""
        if self.record is None:
            return None
        return (self.record.body["data"] or {}).get("reason")


def _replacing(
    standing: dict[str, Any] | None,
    queue: str,
    item_id: str,
    decision: str,
    principal: str,
    role: str,
    overrule: bool | str,
) -> dict[str, Any] | None:
    """Gives the extra fields of a decision replacing ``standing`` ({} for none, the
    ``overrules`` data for an overrule), None when it would say what already stands,
    or raises when it may not replace it."""
    if standing is None:
        if isinstance(overrule, str):
            raise ConflictError(
                f"{queue}/{item_id}: the decision you chose to overrule "
                f"({overrule[:12]}…) no longer stands; nothing was signed"
            )
        return {}
    who, made_as = standing["principal"], standing["role"]
    what = f"{queue}/{item_id} stands at {subjects.said(standing)}"
    if outranks(made_as, role):
        # As with undo: only the role that made a decision (or one above it) replaces it.
        mine = f" (decide as {made_as} to change it)" if who == principal else ""
        raise PermissionRefused(
            f"{what}; a decision as {role} may not replace one made as "
            f"{made_as}, which ranks above it{mine}; nothing was signed"
        )
    if who == principal:
        # One's own decision carried from another item is signed on this one all the
        # same: the item then has a decision of its own, whatever the subject does next.
        carried = standing.get("carried_from") is not None
        if standing["decision"] == decision and made_as == role and not carried:
            return None
        return {}
    if not overrule:
        raise OverruleRequired(
            f"{what}; deciding {decision} would overrule {who}. Nothing was "
            "signed: to overrule explicitly (recorded in the signed "
            "record), run sealdesk decide again with --overrule, or "
            "confirm the overrule in the review app",
            standing=standing,
        )
    if isinstance(overrule, str) and overrule != standing["record_hash"]:
        raise ConflictError(
            f"{what}, not the decision you chose to overrule ({overrule[:12]}…); nothing was signed"
        )
    return {"data": {"overrules": standing["record_hash"]}}


def _says(conn: sqlite3.Connection, standing: dict[str, Any] | None, said: dict[str, str]) -> bool:
    """Says whether the standing decision's record gives the very reason and rationale
    ``said`` gives (then signing the same decision again would say nothing new)."""
    if standing is None:
        return False
    row = conn.execute(
        "SELECT message FROM records WHERE record_hash = ?", (standing["record_hash"],)
    ).fetchone()
    if row is None:
        return False
    from engine.canonical import strict_loads

    data = strict_loads(row[0]).get("data") or {}
    return all(data.get(name) == said.get(name) for name in ("reason", "rationale"))


class Deciding(WorkspaceBase):
    """The records people sign into the ledger, checked before each is appended."""

    # -- reasons and guidelines (engine.reasons) ----------------------------
    def reasons(self, queue: str) -> tuple[Reason, ...]:
        """Gives the reason codes a decision on the queue may give, in order."""
        return reasons.reasons_for(self.root, queue)

    def guidelines(self, queue: str) -> Guidelines | None:
        """Gives the queue's guidelines as the lead set them, or None."""
        return reasons.guidelines_for(self.root, queue)

    def set_reasons(
        self, signer: Signer, queue: str, source: Path | None, *, principal: str | None = None
    ) -> tuple[Reason, ...]:
        """Gives the queue's reasons after the lead set them from ``source`` (None: back to
        the defaults); refused unless the signer's key is enrolled as lead."""
        self.identify(signer, principal, "lead")
        if source is None:
            return reasons.reset_reasons(self.root, queue)
        return reasons.set_reasons(self.root, queue, source)

    def set_guidelines(
        self, signer: Signer, queue: str, source: Path | None, *, principal: str | None = None
    ) -> Guidelines | None:
        """Gives the queue's guidelines after the lead set them from ``source`` (None:
        removed); refused unless the signer's key is enrolled as lead."""
        self.identify(signer, principal, "lead")
        if source is None:
            reasons.clear_guidelines(self.root, queue)
            return None
        return reasons.set_guidelines(self.root, queue, source)

    # -- decisions ----------------------------------------------------------
    def identify(
        self,
        signer: Signer,
        principal: str | None = None,
        role: str | None = None,
        queue: str | None = None,
    ) -> tuple[str, str]:
        """Gives (principal, role) for a signer, refusing anyone not enrolled for it."""
        if queue is not None and queue not in QUEUES:
            raise InputError(
                f"unknown queue {queue!r} (expected {', '.join(QUEUES)})", field="queue"
            )
        allowed = self.authority()
        blob = signer.public_key.blob
        names = allowed.principals_for(blob)
        if principal is None:
            if not names:
                raise PermissionRefused(
                    f"key {signer.public_key.fingerprint} is not enrolled in this workspace's "
                    "ledger (a lead enrols it with: sealdesk keys add --principal P --role R "
                    "--key KEY.pub)"
                )
            if len(names) > 1:
                raise PermissionRefused(
                    f"key {signer.public_key.fingerprint} is enrolled as "
                    f"{', '.join(names)}; choose one with --principal"
                )
            principal = names[0]
        # Valid now, as verify will check at the record's signed time: a key outside
        # its valid-after/valid-before window would leave a record that never verifies.
        held = allowed.roles_for(principal, blob, datetime.now(UTC))
        if not held:
            raise PermissionRefused(
                f"{principal} with key {signer.public_key.fingerprint} may "
                "not sign in any role now (see: sealdesk keys list)"
            )
        wanted = QUEUE_ROLES[queue] if queue else None
        if role is None:
            choices = [r for r in (wanted or held) if r in held]
            if not choices:
                raise PermissionRefused(
                    f"{principal} holds role(s) {', '.join(held)}; items "
                    f"of {queue} need {' or '.join(wanted or ())}"
                )
            role = choices[0]
        if role not in held:
            raise PermissionRefused(f"{principal} may not sign as {role} (holds {', '.join(held)})")
        if wanted and role not in wanted:
            raise PermissionRefused(
                f"role {role} may not decide items of {queue} (needs {' or '.join(wanted)})"
            )
        return principal, role

    def decide(
        self,
        signer: Signer,
        queue: str,
        item_id: str,
        decision: str,
        *,
        note: str | None = None,
        principal: str | None = None,
        role: str | None = None,
        overrule: bool | str = False,
        reason: str | None = None,
        rationale: str | None = None,
    ) -> Record:
        """Gives the record that now states the decision on an item: the one just
        durably appended, or the signer's own standing one when it already said so.

        ``overrule``, ``reason`` and ``rationale`` are ``decide_many``'s: without
        ``overrule``, replacing another principal's standing decision is refused.
        """
        (outcome,) = self.decide_many(
            signer,
            queue,
            [item_id],
            decision,
            note=note,
            principal=principal,
            role=role,
            overrule=overrule,
            reason=reason,
            rationale=rationale,
        )
        if outcome.record is not None:
            return outcome.record
        # No record appended: the signer's own standing decision already said the same.
        assert outcome.standing is not None
        standing = store.get_record(self.conn, outcome.standing["seq"])
        assert standing is not None  # it stood inside the transaction just closed
        return standing

    def decide_many(
        self,
        signer: Signer,
        queue: str,
        item_ids: Iterable[str],
        decision: str,
        *,
        note: str | None = None,
        principal: str | None = None,
        role: str | None = None,
        overrule: bool | str | Mapping[str, str] = False,
        reason: str | None = None,
        rationale: str | None = None,
    ) -> list[DecisionOutcome]:
        """Gives what deciding each item did, after signing and durably appending every
        needed record in one write transaction: all or nothing.

        Who may replace a standing decision is checked inside that transaction,
        against the ledger being extended:

        - the standing decision is the item's own, else the one its subject carries
          to it (``subjects.standing_decision``), as made by its original principal
          in its original role;
        - the signer's own standing decision on the item, in the same role and with
          the same decision, already says it: nothing is signed for that item;
        - the signer may change their own decision freely;
        - another principal's decision is replaced only with ``overrule`` (True,
          or the record hash of the very decision the person agreed to overrule),
          and the record then carries ``data: {"overrules": <its record hash>}``;
        - a decision made in a role that outranks the signer's is never replaced
          (PermissionRefused), as it is never retracted from another role.

        ``overrule`` as a mapping names, per item, the record hash of the decision
        the person agreed to overrule on it (a bulk decision shows every one and
        takes one confirmation); an item it does not name is not overruled.

        ``reason`` (one of the queue's reason codes, ``engine.reasons``) and
        ``rationale`` (free text) go into each record's signed ``data``, and so
        does the SHA-256 of the queue's guidelines while the lead has set them.
        An unknown code or a blank rationale is refused before anything is
        signed. The signer's own standing decision that says the same but gives
        another reason or rationale is signed again, with the new ones.
        """
        if decision not in DECISIONS:
            raise InputError(
                f"unknown decision {decision!r} (expected {', '.join(DECISIONS)})", field="decision"
            )
        if queue not in QUEUES:
            raise InputError(f"unknown queue {queue!r}", field="queue")
        ids = list(item_ids)
        if isinstance(overrule, str) and len(ids) != 1:
            raise InputError(
                "an overrule naming the decision it replaces is about one item", field="overrule"
            )
        per_item = overrule if isinstance(overrule, Mapping) else None
        if per_item is not None and not set(per_item) <= set(ids):
            stray = sorted(set(per_item) - set(ids))[0]
            raise InputError(
                f"an overrule names item {stray!r}, which is not being decided", field="overrule"
            )
        said: dict[str, str] = {}
        if reason is not None:
            said["reason"] = reasons.reason_code(self.root, queue, reason)
        if rationale is not None:
            said["rationale"] = reasons.rationale_text(rationale)
        guidelines = reasons.guidelines_for(self.root, queue)
        bound = {**said}
        if guidelines is not None:
            bound["guidelines_sha256"] = guidelines.sha256
        principal, role = self.identify(signer, principal, role, queue)
        standing: list[dict[str, Any] | None] = [None] * len(ids)
        # The decisions this batch has overruled so far. Deciding one item of a subject
        # can change what the subject carries to another item of the batch: the decision
        # agreed to be overruled there then no longer reaches it (it was overruled here,
        # and the item now carries this signer's decision or is re-opened).
        overruled_here: set[str] = set()

        def check_for(index: int) -> Callable[[sqlite3.Connection], dict[str, Any] | None]:
            def check(conn: sqlite3.Connection) -> dict[str, Any] | None:
                binding = self._item_binding(conn, queue, ids[index])
                standing[index] = subjects.standing_decision(conn, queue, ids[index])
                allowed = (
                    overrule.get(ids[index], False) if isinstance(overrule, Mapping) else overrule
                )
                if standing[index] is None and allowed in overruled_here:
                    allowed = False
                extra = review_plan.decision_extra(
                    conn,
                    queue,
                    ids[index],
                    decision,
                    principal,
                    role,
                    standing[index],
                    again=bool(said),
                )
                if extra is False:
                    extra = _replacing(
                        standing[index], queue, ids[index], decision, principal, role, allowed
                    )
                if extra is None:
                    if not said or _says(conn, standing[index], said):
                        return None
                    extra = {}
                assert isinstance(extra, dict)
                overrules = extra.get("data", {}).get("overrules")
                if overrules is not None:
                    overruled_here.add(overrules)
                data = {**bound, **extra.get("data", {})}
                return {**binding, **extra, "data": data or None}

            return check

        records = store.append_many(
            self.db,
            signer,
            workspace_id=self.workspace_id,
            principal=principal,
            role=role,
            entries=[
                store.Entry(
                    "decision",
                    {"queue": queue, "item_id": item_id, "decision": decision, "note": note},
                    check_for(index),
                )
                for index, item_id in enumerate(ids)
            ],
        )
        return [
            DecisionOutcome(queue, item_id, decision, record, before)
            for item_id, record, before in zip(ids, records, standing, strict=True)
        ]

    def note(
        self,
        signer: Signer,
        queue: str,
        item_id: str,
        note: str,
        *,
        principal: str | None = None,
        role: str | None = None,
    ) -> Record:
        """Gives the signed record after appending a note on an item (no decision)."""
        if not note.strip():
            raise InputError("a note must not be empty", field="note")
        principal, role = self.identify(signer, principal, role, queue)
        return self._append(
            signer,
            "note",
            principal,
            role,
            lambda c: self._item_binding(c, queue, item_id),
            queue=queue,
            item_id=item_id,
            note=note,
        )

    def retract(
        self,
        signer: Signer,
        queue: str,
        item_id: str,
        *,
        record_hash: str | None = None,
        note: str | None = None,
        principal: str | None = None,
        role: str | None = None,
    ) -> Record:
        """Gives the retract record that undoes the item's effective decision (or one named)."""
        principal, role = self.identify(signer, principal, role, queue)

        def check(conn: sqlite3.Connection) -> dict[str, Any]:
            binding = self._item_binding(conn, queue, item_id)
            target = record_hash
            if target is None:
                eff = store.effective_decisions_for(conn, queue, item_id)
                if eff is None:
                    raise InputError(
                        f"nothing to undo: {queue}/{item_id} has no standing decision", field="item"
                    )
                target = eff["record_hash"]
            row = conn.execute(
                "SELECT kind, queue, item_id, role, principal FROM records WHERE record_hash=?",
                (target,),
            ).fetchone()
            if row is None or row[0] != "decision" or (row[1], row[2]) != (queue, item_id):
                raise InputError(
                    f"record {target[:12]}… is not a decision on {queue}/{item_id}",
                    field="retracts",
                )
            if row[4] != principal:
                # Undoing another's decision would overrule it without saying so.
                raise PermissionRefused(
                    f"the standing decision on {queue}/{item_id} is "
                    f"{row[4]}'s; undo takes back only your own (to replace "
                    "theirs, decide with --overrule, or confirm the "
                    "overrule in the review app)"
                )
            if row[3] != role:
                raise PermissionRefused(
                    f"the decision was made as {row[3]}; only that role may retract it"
                )
            if conn.execute(
                "SELECT 1 FROM records WHERE kind='retract' AND retracts=?", (target,)
            ).fetchone():
                raise InputError(f"record {target[:12]}… is already retracted", field="retracts")
            return {**binding, "retracts": target}

        return self._append(
            signer, "retract", principal, role, check, queue=queue, item_id=item_id, note=note
        )

    def _append(
        self,
        signer: Signer,
        kind: str,
        principal: str,
        role: str,
        check: Callable[[sqlite3.Connection], dict[str, Any]] | None,
        **fields: Any,
    ) -> Record:
        """Gives the one record of ``kind`` signed and appended after ``check`` passed inside
        the append's write transaction (a note, a retract, a sign-off; decisions go in
        batches through ``decide_many``)."""
        return store.append(
            self.db,
            signer,
            workspace_id=self.workspace_id,
            principal=principal,
            role=role,
            kind=kind,
            check=check,
            **fields,
        )

    def _item_binding(self, conn: sqlite3.Connection, queue: str, item_id: str) -> dict[str, Any]:
        row = conn.execute(
            "SELECT item_sha256, payload, runs.manifest_sha256, runs.manifest FROM items "
            "JOIN runs USING (run_id) WHERE items.queue=? AND item_id=?",
            (queue, item_id),
        ).fetchone()
        if row is None:
            raise InputError(f"no item {item_id!r} in queue {queue}", field="item")
        # A record binds the hashes; refuse to sign if the bytes behind them were edited.
        if sha256_hex(row[1].encode("utf-8")) != row[0]:
            raise IntegrityError(
                f"item {queue}/{item_id}: stored payload no longer hashes to "
                "its item_sha256 (edited after ingest); nothing was signed"
            )
        if sha256_hex(row[3].encode("utf-8")) != row[2]:
            raise IntegrityError(
                f"item {queue}/{item_id}: its run manifest no longer hashes "
                "to manifest_sha256 (edited after ingest); nothing was signed"
            )
        return {"item_sha256": row[0], "run_sha256": row[2]}

    def signoff(
        self,
        signer: Signer,
        data: dict[str, Any] | None,
        *,
        note: str | None = None,
        principal: str | None = None,
        check: Callable[[sqlite3.Connection], dict[str, Any]] | None = None,
    ) -> Record:
        """Gives the lead's sign-off record binding ``data`` (tree head, artifacts).

        ``check`` runs inside the append's write transaction and may refuse, or
        return ``{"data": ...}`` computed from exactly the ledger being extended
        (``engine.signoff.summary.sign_off`` binds its tree head this way).
        """
        principal, role = self.identify(signer, principal, SIGNOFF_ROLE)
        return self._append(signer, "signoff", principal, role, check, note=note, data=data)
