"""Changing who may sign: genesis, enrolment, revocation and migration, as signed records.

Each function appends one authority record through ``store.append``; its
check replays the authority inside the append's write transaction, so the
record is judged against exactly the ledger it extends (two leads enrolling
at once serialise, and neither can grant what the other just revoked).
Afterwards ``write_allowed_signers`` regenerates ``trust/allowed_signers``
for ``ssh-keygen``; the ledger stays the only source of truth.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.errors import ConflictError, InputError, PermissionRefused
from engine.ledger import clock, store
from engine.ledger.allowed_signers import AllowedSigners
from engine.ledger.authority import (
    LEAD,
    Authority,
    allowed_signers_text,
    check_principal,
    check_roles,
    enrol_data,
    genesis_data,
    load_authority,
    revoke_data,
    signer_entry,
)
from engine.ledger.records import Record, time_text, utc_now
from engine.ledger.signers import PublicKey, Signer
from engine.roles import ROLES


def _lead(auth: Authority, signer: Signer, principal: str | None) -> str:
    """Gives the principal under which signer holds the lead role now; refuses anyone else."""
    blob = signer.public_key.blob
    names = auth.principals_for(blob)
    if principal is not None:
        names = [n for n in names if n == principal]
    leads = [n for n in names if LEAD in auth.roles_for(n, blob, datetime.now(UTC))]
    if not leads:
        held = ", ".join(f"{g.principal} ({'/'.join(g.roles)})" for g in auth.leads())
        raise PermissionRefused(
            f"key {signer.public_key.fingerprint} does not hold the lead role in this ledger; "
            f"only a lead enrols, changes roles or revokes (leads now: {held or 'none'})"
        )
    if len(leads) > 1:
        raise PermissionRefused(
            f"key {signer.public_key.fingerprint} is lead as "
            f"{', '.join(leads)}; choose one with --lead"
        )
    return leads[0]


def found(
    db, workspace_id: str, signer: Signer, principal: str, roles: tuple[str, ...] = (LEAD,)
) -> Record:
    """Gives the genesis record after appending it to an empty ledger: the signer's key,
    under principal, is the founding lead (the workspace's trust anchor)."""
    roles = check_roles(roles, field="role")
    if LEAD not in roles:
        raise InputError("the founding signer must hold the lead role", field="role")
    entry = signer_entry(principal, roles, signer.public_key)

    def check(conn: sqlite3.Connection) -> dict[str, Any]:
        seq, _ = store.head(conn)
        if seq:
            auth = load_authority(conn)
            if auth.genesis is not None:
                raise ConflictError(
                    f"this workspace already has its genesis (record "
                    f"{auth.genesis.seq}); enrol people with sealdesk keys add"
                )
            raise ConflictError(
                f"the ledger already holds {seq} record(s) signed under the "
                "old trust/allowed_signers; migrate it with sealdesk keys "
                "migrate"
            )
        return {"data": genesis_data([entry], 0)}

    return store.append(
        db,
        signer,
        workspace_id=workspace_id,
        principal=principal,
        role=LEAD,
        kind="genesis",
        check=check,
    )


def migration_plan(
    legacy: AllowedSigners, signer: Signer, principal: str | None = None
) -> tuple[list[dict[str, Any]], str]:
    """Gives (genesis signers, the lead signing) for signing a legacy allowed_signers file in.

    Every line that can authorise a sealdesk record becomes a signer of the
    genesis, with its roles (namespaces) and validity window. A line whose
    principals are patterns cannot name one person and is refused, naming
    it; the signer must be a lead the file names.
    """
    entries, leads = [], []
    for e in legacy.entries:
        for name in e.principals:
            if any(c in name for c in "*?!"):
                raise InputError(
                    f"principal pattern {name!r} cannot be migrated: a genesis "
                    "names each signer; write one line per person first",
                    path=legacy.path,
                    line=e.line,
                    field="principals",
                )
            if not e.roles:
                continue
            entry = signer_entry(
                name,
                e.roles,
                e.key,
                time_text(e.valid_after) if e.valid_after else None,
                time_text(e.valid_before) if e.valid_before else None,
            )
            entries.append(entry)
            if e.key.blob == signer.public_key.blob and LEAD in e.roles:
                leads.append(name)
    if not entries:
        raise InputError(
            "names nobody who may sign; nothing to migrate (a new workspace "
            "starts with: sealdesk init --lead NAME)",
            path=legacy.path,
        )
    if principal is not None:
        leads = [n for n in leads if n == principal]
    if not leads:
        raise PermissionRefused(
            f"key {signer.public_key.fingerprint} is not a lead in "
            f"{legacy.path}; the migration is signed by a lead it names"
        )
    if len(set(leads)) > 1:
        raise PermissionRefused(
            f"key {signer.public_key.fingerprint} is lead as "
            f"{', '.join(sorted(set(leads)))}; choose one with --lead"
        )
    return entries, leads[0]


def migrate(
    db, workspace_id: str, signer: Signer, plan: tuple[list[dict[str, Any]], str]
) -> Record:
    """Gives the genesis record that signs a legacy file's signers (``migration_plan``) into
    the ledger, adopting every record before it. The caller has checked that the ledger
    verifies under the file."""
    entries, lead = plan

    def check(conn: sqlite3.Connection) -> dict[str, Any]:
        if load_authority(conn).verdicts:
            raise ConflictError("this ledger already has authority records; nothing to migrate")
        seq, _ = store.head(conn)
        return {"data": genesis_data(entries, seq)}

    return store.append(
        db,
        signer,
        workspace_id=workspace_id,
        principal=lead,
        role=LEAD,
        kind="genesis",
        check=check,
    )


def enrol(
    db,
    workspace_id: str,
    lead: Signer,
    principal: str,
    roles: tuple[str, ...],
    key: PublicKey,
    *,
    lead_principal: str | None = None,
    replace: bool = False,
    valid_after: str | None = None,
    valid_before: str | None = None,
) -> Record:
    """Gives the enrol record after a lead signs it: principal may sign with key in roles.

    Roles are added to what the key already holds, unless ``replace`` (a
    role change that may also take roles away). A key enrolled for another
    person, or once revoked, is refused.
    """
    check_principal(principal)
    roles = check_roles(roles, field="role")

    def check(conn: sqlite3.Connection) -> dict[str, Any]:
        auth = load_authority(conn)
        if key.blob in auth.revoked:
            raise ConflictError(
                f"key {key.fingerprint} was revoked at record "
                f"{auth.revoked[key.blob]}; a revoked key is never enrolled "
                "again (make a new key: ssh-keygen -t ed25519)"
            )
        others = sorted({n for n in auth.principals_for(key.blob) if n != principal})
        if others:
            raise ConflictError(
                f"key {key.fingerprint} is already enrolled as "
                f"{', '.join(others)}; one key signs for one person"
            )
        held = auth.grant_of(principal, key.blob)
        wanted = set(roles) if replace or held is None else set(roles) | set(held.roles)
        new = tuple(r for r in ROLES if r in wanted)
        if held is not None and new == held.roles and not (valid_after or valid_before):
            raise ConflictError(
                f"{principal} already holds {', '.join(new)} with key "
                f"{key.fingerprint}; nothing to record"
            )
        if held is not None and LEAD in held.roles and LEAD not in new:
            _keep_a_lead(auth, principal, key)
        entry = signer_entry(principal, new, key, valid_after, valid_before)
        return {"data": enrol_data(entry)}

    return _append(db, workspace_id, lead, lead_principal, check)


def revoke(
    db,
    workspace_id: str,
    lead: Signer,
    principal: str,
    key: PublicKey,
    *,
    lead_principal: str | None = None,
    reason: str | None = None,
) -> Record:
    """Gives the revoke record after a lead signs it: the key signs nothing after it."""
    return revoke_resetting_clock(
        db, workspace_id, lead, principal, key, lead_principal=lead_principal, reason=reason
    )[1]


def revoke_resetting_clock(
    db,
    workspace_id: str,
    lead: Signer,
    principal: str,
    key: PublicKey,
    *,
    lead_principal: str | None = None,
    reason: str | None = None,
) -> tuple[Record | None, Record]:
    """Gives (the clock record, or None; the revoke record) after a lead signs them in
    one transaction: when the chain head is dated too far ahead (``clock``), the
    revocation first resets the ledger's time, so a lead can always revoke."""
    check_principal(principal)

    def check(conn: sqlite3.Connection) -> dict[str, Any]:
        auth = load_authority(conn)
        held = auth.grant_of(principal, key.blob)
        if held is None:
            raise InputError(
                f"{principal} holds no enrolment with key {key.fingerprint} "
                "(see: sealdesk keys list)",
                field="key",
            )
        if LEAD in held.roles:
            _keep_a_lead(auth, principal, key)
        return {"data": revoke_data(principal, key, reason)}

    reset = f"so that {principal}'s key could be revoked"
    records = _append_many(
        db,
        workspace_id,
        lead,
        lead_principal,
        [(clock.CLOCK_KIND, _reset_if_poisoned(reset)), ("revoke", check)],
    )
    assert records[1] is not None  # the revoke's check never asks to skip
    return records[0], records[1]


def reset_clock(
    db, workspace_id: str, lead: Signer, *, lead_principal: str | None = None, reason: str | None
) -> Record:
    """Gives the clock record after a lead signs it: the ledger's time steps back from a
    chain head dated more than ``clock.SKEW_S`` ahead of this host's clock to now.

    Refused (ConflictError) when the head is not that far ahead.
    """

    def check(conn: sqlite3.Connection) -> dict[str, Any]:
        _, resets = _head_time(conn)
        return {"data": clock.clock_data(resets, reason)}

    return _append(db, workspace_id, lead, lead_principal, check, kind=clock.CLOCK_KIND)


def _head_time(conn: sqlite3.Connection) -> tuple[int, str]:
    """Gives (seq, time) of the chain head, or (0, "") when the ledger is empty."""
    row = conn.execute("SELECT seq, time FROM records ORDER BY seq DESC LIMIT 1").fetchone()
    return (0, "") if row is None else (row[0], row[1])


def _reset_if_poisoned(reason: str):
    """Gives a batch check that appends a clock record only when the head is dated too
    far ahead of this host's clock (None, which skips it, otherwise)."""

    def check(conn: sqlite3.Connection) -> dict[str, Any] | None:
        seq, last = _head_time(conn)
        try:
            poisoned = seq > 0 and clock.seconds_ahead(last, utc_now()) > clock.SKEW_S
        except ValueError:
            poisoned = False  # an unreadable head time is verify's to report
        return {"data": clock.clock_data(last, reason)} if poisoned else None

    return check


def _keep_a_lead(auth: Authority, principal: str, key: PublicKey) -> None:
    others = [g for g in auth.leads() if (g.principal, g.key.blob) != (principal, key.blob)]
    if not others:
        raise PermissionRefused(
            f"{principal}'s key {key.fingerprint} is the last lead key; "
            "enrol another lead first, or nobody could enrol or sign "
            "off again"
        )


def _append(
    db, workspace_id: str, lead: Signer, lead_principal: str | None, check, kind: str = "enrol"
) -> Record:
    """Appends one record signed by a lead (an enrol, revoke or clock), checked against
    the ledger it extends."""
    (record,) = _append_many(db, workspace_id, lead, lead_principal, [(kind, check)])
    assert record is not None  # these checks never ask to skip
    return record


def _append_many(
    db, workspace_id: str, lead: Signer, lead_principal: str | None, checks: list
) -> list[Record | None]:
    """Appends (kind, check) records signed by a lead in one transaction, each checked
    against the ledger it extends; gives each record (None where its check skipped)."""
    principal = _lead(load_authority(db.conn), lead, lead_principal)

    def still_lead(check):
        def checked(conn: sqlite3.Connection) -> dict[str, Any] | None:
            # Again inside the write transaction: the lead may have been revoked meanwhile.
            if _lead(load_authority(conn), lead, lead_principal) != principal:
                raise PermissionRefused(
                    "who holds the lead role changed while this was signed; "
                    "nothing was recorded, try again"
                )
            return check(conn)

        return checked

    return store.append_many(
        db,
        lead,
        workspace_id=workspace_id,
        principal=principal,
        role=LEAD,
        entries=[store.Entry(kind, {}, still_lead(check)) for kind, check in checks],
    )


def write_allowed_signers(conn: sqlite3.Connection, path: Path, workspace_id: str) -> None:
    """Writes trust/allowed_signers generated from the ledger (for ssh-keygen only)."""
    from engine.artifacts import atomic_write
    from engine.sqlitedb import write_transaction

    # Replayed and written under the ledger's write lock: two writers that each appended
    # an authority record would otherwise race, and the one that read the ledger first
    # could write last, leaving the file without the other's record.
    with write_transaction(conn):
        text = allowed_signers_text(load_authority(conn), workspace_id)
        atomic_write(Path(path), text.encode("utf-8"), mode=0o644)
