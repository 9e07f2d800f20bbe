"""Who may sign what: replayed from the ledger's own genesis, enrol and revoke records.

The ledger carries its own trust. Its **genesis** record names the founding
lead key(s), signed by one of them: that is the anchor. Every later change
of who may sign is itself a record signed by someone who held the lead role
at that point: an **enrol** grants a key to a principal for some roles (a
role change is an enrol with the new set), a **revoke** ends a key's grant.
What a record at seq N may be signed by is derived from the authority
records before N, so it is decided by seq, never by a clock a signer could
set: a key revoked at seq R signs nothing after R, whatever time it claims.

A grant may also carry a validity window (``valid_after`` / ``valid_before``,
record-time texts) that the signed time of each record must fall in, as an
OpenSSH allowed_signers line's ``valid-after`` / ``valid-before`` do.

``trust/allowed_signers`` is written from this replay for ``ssh-keygen -Y
verify`` (``allowed_signers_text``); nothing here reads it, except a
migration, which signs a workspace's old file into a genesis once.

The ledger knows nothing of what items mean; this module knows only keys,
principals, roles and seqs.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from engine.canonical import strict_loads
from engine.errors import InputError, SigningKeyError
from engine.ledger import sshsig
from engine.ledger.records import parse_time, time_text
from engine.ledger.signers import PublicKey, parse_public_key
from engine.roles import NAMESPACE_BY_ROLE, ROLES, SIGNOFF_ROLE

if TYPE_CHECKING:
    from engine.ledger.allowed_signers import AllowedSigners

AUTHORITY_KINDS = ("genesis", "enrol", "revoke")
GENESIS_TYPE = "sealdesk.genesis/v1"
ENROL_TYPE = "sealdesk.enrol/v1"
REVOKE_TYPE = "sealdesk.revoke/v1"
LEAD = SIGNOFF_ROLE
OPEN_END = 1 << 62  # until_seq of a grant nothing has ended
NO_AFTER, NO_BEFORE = "", "~"  # window bounds as record-time texts: "" < any time < "~"

AUTHORITY_ROWS_SQL = (
    "SELECT seq, message, signature FROM records "
    "WHERE kind IN ('genesis', 'enrol', 'revoke') ORDER BY seq"
)


def check_principal(name: object, *, field: str = "principal") -> str:
    """Gives a principal name after checking it can stand alone on an allowed_signers line."""
    if (
        not isinstance(name, str)
        or not name
        or any(c.isspace() or c in ',"*?!' or not c.isprintable() for c in name)
    ):
        raise InputError(
            f"principal {name!r} must be a single name without spaces, commas, "
            "quotes, wildcards or control characters",
            field=field,
        )
    if name[0] in "#-":  # '#' makes an allowed_signers line a comment; '-' reads as an option
        raise InputError(f"principal {name!r} must not start with '{name[0]}'", field=field)
    if len(name) > 128:
        raise InputError(f"principal {name[:20]!r}… is longer than 128 characters", field=field)
    return name


def check_roles(roles: Iterable[object], *, field: str = "roles") -> tuple[str, ...]:
    """Gives roles in rank order after checking each is known and there is at least one."""
    given = list(roles)
    unknown = [r for r in given if r not in ROLES]
    if unknown or not given:
        raise InputError(
            f"role(s) {', '.join(map(repr, unknown)) or '(none)'} unknown; "
            f"expected one or more of {', '.join(ROLES)}",
            field=field,
        )
    if len(set(given)) != len(given):
        raise InputError("a role is given twice", field=field)
    return tuple(r for r in ROLES if r in given)


@dataclass(frozen=True)
class Grant:
    """One key's authority over a stretch of the ledger: who, which roles, from and until."""

    principal: str
    key: PublicKey
    roles: tuple[str, ...]
    valid_after: str  # record-time text; NO_AFTER when unbounded
    valid_before: str  # record-time text; NO_BEFORE when unbounded
    from_seq: int  # first seq it may sign
    until_seq: int  # first seq it may no longer sign (OPEN_END while open)
    granted_by: int  # seq of the genesis or enrol record
    granted_at: str  # that record's signed time
    ended_by: int | None = None  # seq of the revoke or re-enrol that ended it
    ended_at: str | None = None
    ended_how: str | None = None  # "revoked" | "changed"

    @property
    def open(self) -> bool:
        return self.until_seq == OPEN_END

    def covers(self, role: str, seq: int, time: str) -> bool:
        """Says whether the grant lets its key sign record ``seq`` (signed ``time``) as role."""
        return (
            role in self.roles
            and self.from_seq <= seq < self.until_seq
            and self.valid_after <= time < self.valid_before
        )

    def entry(self) -> dict[str, Any]:
        """Gives the grant as it is written into a genesis or enrol record's data."""
        return signer_entry(
            self.principal,
            self.roles,
            self.key,
            self.valid_after or None,
            None if self.valid_before == NO_BEFORE else self.valid_before,
        )


def signer_entry(
    principal: str,
    roles: Iterable[str],
    key: PublicKey,
    valid_after: str | None = None,
    valid_before: str | None = None,
) -> dict[str, Any]:
    """Gives one signer as genesis and enrol records carry it (checked first)."""
    entry = {
        "principal": check_principal(principal),
        "roles": list(check_roles(roles)),
        "key": key.openssh(),
        "valid_after": valid_after,
        "valid_before": valid_before,
    }
    _read_entry(entry)  # the same checks a verifier applies
    return entry


@dataclass(frozen=True)
class Genesis:
    """The ledger's anchor: its seq, hash, founding lead keys and the records it adopted."""

    seq: int
    record_hash: str
    founders: tuple[tuple[str, PublicKey], ...]  # (principal, key) granted lead by the genesis
    adopts: int  # records before it (signed under the file a migration signed in)
    time: str


@dataclass
class Authority:
    """The replayed authority of one ledger: every grant, the genesis, and what was refused.

    ``verdicts`` holds, per authority record that was read, None when it was
    applied or the reason it was not; a refused record grants nothing.
    """

    grants: list[Grant] = field(default_factory=list)
    genesis: Genesis | None = None
    verdicts: dict[int, str | None] = field(default_factory=dict)
    last_seq: int = 0  # highest seq of an authority record read
    revoked: dict[bytes, int] = field(default_factory=dict)  # key blob -> seq of its revoke
    _index: dict[tuple[str, bytes, str], tuple[tuple[int, int, str, str], ...]] = field(
        default_factory=dict, repr=False
    )

    # -- questions a verifier asks, record by record -------------------------
    def windows(
        self, principal: str, blob: bytes, role: str
    ) -> tuple[tuple[int, int, str, str], ...]:
        """Gives (from_seq, until_seq, valid_after, valid_before) of every grant that lets
        principal sign as role with the key."""
        key = (principal, blob, role)
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = tuple(
                (g.from_seq, g.until_seq, g.valid_after, g.valid_before)
                for g in self.grants
                if g.key.blob == blob and g.principal == principal and role in g.roles
            )
        return found

    def allows(self, principal: str, blob: bytes, role: str, seq: int, time: str) -> bool:
        """Says whether record ``seq``, signed at ``time``, may be signed by principal with
        the key in role."""
        # A loop, not any() over a generator: verify asks this once per record.
        for lo, hi, after, before in self.windows(principal, blob, role):
            if lo <= seq < hi and after <= time < before:
                return True
        return False

    def why_not(self, principal: str, blob: bytes, role: str, seq: int, time: str) -> str:
        """Gives, for a record ``allows`` refuses, the reason in a person's words."""
        fp = sshsig.fingerprint(blob)
        mine = [g for g in self.grants if g.key.blob == blob]
        if not mine:
            return f"key {fp} was never enrolled in this ledger ({principal} as {role})"
        named = [g for g in mine if g.principal == principal]
        if not named:
            return (
                f"key {fp} is enrolled as {', '.join(sorted({g.principal for g in mine}))}"
                f", not {principal}"
            )
        revoked = self.revoked.get(blob)
        if revoked is not None and seq >= revoked:
            return f"{principal}'s key {fp} was revoked at record {revoked}"
        if all(seq < g.from_seq for g in named):
            first = min(g.granted_by for g in named)
            return f"{principal}'s key {fp} is enrolled only from record {first}"
        in_force = [g for g in named if g.from_seq <= seq < g.until_seq]
        if in_force and not any(role in g.roles for g in in_force):
            held = ", ".join(sorted({r for g in in_force for r in g.roles}))
            return f"{principal} with key {fp} holds {held} at record {seq}, not {role}"
        if in_force:
            return (
                f"{principal}'s key {fp} may sign only inside its validity window; the "
                f"record is signed at {time}"
            )
        return f"{principal} with key {fp} was not enrolled as {role} at record {seq}"

    # -- questions a writer asks, about the ledger as it stands ----------------
    def in_force(self, seq: int | None = None) -> list[Grant]:
        """Gives the grants in force at seq (default: the next record to be appended)."""
        at = OPEN_END - 1 if seq is None else seq
        return [g for g in self.grants if g.from_seq <= at < g.until_seq]

    def principals_for(self, blob: bytes) -> list[str]:
        """Gives the principals a key is enrolled as now, in enrolment order."""
        return list(dict.fromkeys(g.principal for g in self.in_force() if g.key.blob == blob))

    def roles_for(self, principal: str, blob: bytes, when: datetime | None = None) -> list[str]:
        """Gives the roles principal may sign in with the key now (at ``when``'s time)."""
        at = time_text(when) if when is not None else None
        held = {
            r
            for g in self.in_force()
            if g.key.blob == blob
            and g.principal == principal
            and (at is None or g.valid_after <= at < g.valid_before)
            for r in g.roles
        }
        return [r for r in ROLES if r in held]

    def roles_of_key(self, blob: bytes, when: datetime | None = None) -> set[str]:
        """Gives the roles any principal enrolled with the key holds now."""
        return {r for name in self.principals_for(blob) for r in self.roles_for(name, blob, when)}

    def authorizes(
        self, principal: str, blob: bytes, namespace: str, when: datetime | None = None
    ) -> bool:
        """Says whether principal ever held the namespace's role with the key in this ledger
        (at ``when``'s time, when given): the question a checkpoint's signature asks."""
        role = next((r for r, ns in NAMESPACE_BY_ROLE.items() if ns == namespace), None)
        at = time_text(when) if when is not None else None
        return role is not None and any(
            role in g.roles
            and g.principal == principal
            and g.key.blob == blob
            and (at is None or g.valid_after <= at < g.valid_before)
            for g in self.grants
        )

    def keys(self) -> list[PublicKey]:
        """Gives every key enrolled now."""
        return list({g.key.blob: g.key for g in self.in_force()}.values())

    def grant_of(self, principal: str, blob: bytes) -> Grant | None:
        """Gives the open grant of principal with the key, or None."""
        return next(
            (g for g in self.in_force() if g.principal == principal and g.key.blob == blob), None
        )

    def leads(self) -> list[Grant]:
        """Gives the grants in force that hold the lead role."""
        return [g for g in self.in_force() if LEAD in g.roles]

    def multi_key_principals(self) -> dict[str, list[str]]:
        """Gives principals holding more than one key now, with the keys' fingerprints."""
        keys: dict[str, list[str]] = {}
        for g in self.in_force():
            keys.setdefault(g.principal, [])
            if g.key.fingerprint not in keys[g.principal]:
                keys[g.principal].append(g.key.fingerprint)
        return {p: fps for p, fps in keys.items() if len(fps) > 1}

    # -- what a verifier reports -------------------------------------------------
    def verdict(self, seq: int, kind: str) -> str | None:
        """Gives why the authority record at seq grants nothing, or None when it applied."""
        if seq not in self.verdicts:
            return f"this {kind} record was not read by the enrolment replay"
        return self.verdicts[seq]

    def faults(self) -> list[tuple[int, str]]:
        """Gives the (seq, reason) faults of the ledger as a whole (none per record)."""
        if self.genesis is None and self.verdicts:
            return [
                (
                    min(self.verdicts),
                    "the ledger has enrolment records but no genesis: nothing anchors who may sign",
                )
            ]
        return []


class SignerPolicy(Protocol):
    """What verification asks of whoever decides who may sign (``Authority``, or
    ``LegacySigners`` for a ledger that predates its own enrolment records)."""

    def allows(self, principal: str, blob: bytes, role: str, seq: int, time: str) -> bool: ...

    def why_not(self, principal: str, blob: bytes, role: str, seq: int, time: str) -> str: ...

    def verdict(self, seq: int, kind: str) -> str | None: ...

    def faults(self) -> list[tuple[int, str]]: ...


NOT_MIGRATED = (
    "the ledger has no genesis record, so who may sign is only the unsigned file "
    "trust/allowed_signers, which anyone with a shell can edit; sign it into the "
    "ledger once with: sealdesk keys migrate"
)


class LegacySigners:
    """Who may sign in a ledger that has no genesis yet: its old trust/allowed_signers.

    Verification still checks every record against the file (so a record it
    never allowed is named), and reports the ledger itself as unanchored.
    """

    def __init__(self, allowed: AllowedSigners, records: int) -> None:
        self.allowed = allowed
        self.records = records
        self._windows: dict[tuple[str, bytes, str], tuple[tuple[str, str], ...]] = {}

    def allows(self, principal: str, blob: bytes, role: str, seq: int, time: str) -> bool:
        key = (principal, blob, role)
        windows = self._windows.get(key)
        if windows is None:
            windows = self._windows[key] = self.allowed.windows(
                principal, blob, NAMESPACE_BY_ROLE[role]
            )
        for after, before in windows:
            if after <= time < before:
                return True
        return False

    def why_not(self, principal: str, blob: bytes, role: str, seq: int, time: str) -> str:
        return (
            f"{principal} with key {sshsig.fingerprint(blob)} is not allowed to sign as "
            f"{role} ({NAMESPACE_BY_ROLE[role]}) in trust/allowed_signers"
        )

    def verdict(self, seq: int, kind: str) -> str | None:
        return f"a {kind} record in a ledger that has no genesis"

    def faults(self) -> list[tuple[int, str]]:
        return [(0, NOT_MIGRATED)] if self.records else []


# -- reading authority records ---------------------------------------------------


class _Refused(Exception):
    """An authority record that grants nothing, with the reason."""


def _read_entry(
    entry: object, where: str = "signer"
) -> tuple[str, tuple[str, ...], PublicKey, str, str]:
    """Gives (principal, roles, key, valid_after, valid_before) of a signer entry; raises
    InputError naming the field."""
    if not isinstance(entry, dict) or set(entry) != {
        "principal",
        "roles",
        "key",
        "valid_after",
        "valid_before",
    }:
        raise InputError(
            f"{where} must hold exactly principal, roles, key, valid_after, valid_before",
            field=where,
        )
    principal = check_principal(entry["principal"], field=f"{where}.principal")
    if not isinstance(entry["roles"], list):
        raise InputError("must be a list", field=f"{where}.roles")
    roles = check_roles(entry["roles"], field=f"{where}.roles")
    if list(roles) != entry["roles"]:
        raise InputError(f"must be in rank order ({', '.join(roles)})", field=f"{where}.roles")
    if not isinstance(entry["key"], str):
        raise InputError("must be an ssh-ed25519 key line", field=f"{where}.key")
    try:
        key = parse_public_key(entry["key"], source=f"{where}.key")
    except SigningKeyError as exc:
        raise InputError(str(exc), field=f"{where}.key") from exc
    if key.openssh() != entry["key"]:
        raise InputError("must be 'ssh-ed25519 <base64>' with no comment", field=f"{where}.key")
    bounds = []
    for name in ("valid_after", "valid_before"):
        value = entry[name]
        if value is not None:
            try:
                parse_time(value)
            except ValueError as exc:
                raise InputError(str(exc), field=f"{where}.{name}") from exc
        bounds.append(value)
    after, before = bounds[0] or NO_AFTER, bounds[1] or NO_BEFORE
    if after >= before:
        raise InputError(
            "valid_after must be earlier than valid_before", field=f"{where}.valid_before"
        )
    return principal, roles, key, after, before


def _data(body: dict, kind_type: str, fields: set[str]) -> dict:
    data = body.get("data")
    if not isinstance(data, dict) or data.get("type") != kind_type:
        raise _Refused(f"a {body['kind']} record's data must be a {kind_type} object")
    if set(data) != fields:
        extra = sorted(set(data) ^ fields)
        raise _Refused(
            f"a {body['kind']} record's data must hold exactly "
            f"{', '.join(sorted(fields))} (differs in {', '.join(extra)})"
        )
    return data


class _Replay:
    """Applies authority records one at a time, in seq order."""

    def __init__(self) -> None:
        self.auth = Authority()

    def apply(self, seq: int, record_hash: str, body: dict, signer_blob: bytes) -> None:
        """Applies one authority record whose signature is good; raises _Refused."""
        kind, auth = body["kind"], self.auth
        if body["role"] != LEAD:
            raise _Refused(f"a {kind} record is signed in the {LEAD} role, not {body['role']}")
        for name in ("queue", "item_id", "item_sha256", "run_sha256", "decision", "retracts"):
            if body.get(name) is not None:
                raise _Refused(f"a {kind} record carries '{name}'")
        if kind == "genesis":
            self._genesis(seq, record_hash, body, signer_blob)
            return
        if auth.genesis is None:
            raise _Refused(f"a {kind} record before the genesis: nobody holds authority yet")
        if not auth.allows(body["principal"], signer_blob, LEAD, seq, body["time"]):
            raise _Refused(
                "only a lead enrols or revokes: "
                + auth.why_not(body["principal"], signer_blob, LEAD, seq, body["time"])
            )
        if kind == "enrol":
            self._enrol(seq, body)
        else:
            self._revoke(seq, body)

    def _genesis(self, seq: int, record_hash: str, body: dict, signer_blob: bytes) -> None:
        auth = self.auth
        if auth.genesis is not None:
            raise _Refused(
                f"a second genesis record (the ledger's genesis is record {auth.genesis.seq})"
            )
        if auth.verdicts:
            raise _Refused("the genesis must be the ledger's first authority record")
        data = _data(body, GENESIS_TYPE, {"type", "signers", "adopts"})
        if type(data["adopts"]) is not int or data["adopts"] != seq - 1:
            raise _Refused(
                f"the genesis adopts {data['adopts']!r} earlier records, but {seq - 1} precede it"
            )
        signers = data["signers"]
        if not isinstance(signers, list) or not signers:
            raise _Refused("the genesis names no signers")
        entries = []
        for number, entry in enumerate(signers):
            try:
                entries.append(_read_entry(entry, f"signers[{number}]"))
            except InputError as exc:
                raise _Refused(f"the genesis's {exc.reason} (field {exc.field})") from None
        founders = tuple((p, k) for p, roles, k, _, _ in entries if LEAD in roles)
        if (body["principal"], signer_blob) not in {(p, k.blob) for p, k in founders}:
            raise _Refused(
                "the genesis must be signed by a founding lead key it names "
                f"({body['principal']} with {sshsig.fingerprint(signer_blob)} "
                "is not one)"
            )
        pairs = [(p, k.blob) for p, _, k, _, _ in entries]
        if len(set(pairs)) != len(pairs):
            raise _Refused("the genesis names one principal with one key twice")
        auth.grants.extend(
            Grant(principal, key, roles, after, before, 1, OPEN_END, seq, body["time"])
            for principal, roles, key, after, before in entries
        )
        auth.genesis = Genesis(seq, record_hash, founders, seq - 1, body["time"])

    def _enrol(self, seq: int, body: dict) -> None:
        auth = self.auth
        data = _data(body, ENROL_TYPE, {"type", "signer"})
        try:
            principal, roles, key, after, before = _read_entry(data["signer"])
        except InputError as exc:
            raise _Refused(f"the enrolment's {exc.reason} (field {exc.field})") from None
        if key.blob in auth.revoked:
            raise _Refused(
                f"key {key.fingerprint} was revoked at record "
                f"{auth.revoked[key.blob]}; a revoked key is never enrolled again"
            )
        others = sorted(
            {
                g.principal
                for g in auth.in_force(seq)
                if g.key.blob == key.blob and g.principal != principal
            }
        )
        if others:
            raise _Refused(
                f"key {key.fingerprint} is already enrolled as {', '.join(others)}; "
                "one key signs for one person"
            )
        self._end(principal, key.blob, seq, body["time"], "changed")
        auth.grants.append(
            Grant(principal, key, roles, after, before, seq + 1, OPEN_END, seq, body["time"])
        )

    def _revoke(self, seq: int, body: dict) -> None:
        data = _data(body, REVOKE_TYPE, {"type", "principal", "key", "reason"})
        try:
            principal = check_principal(data["principal"])
            key = parse_public_key(
                data["key"] if isinstance(data["key"], str) else "", source="key"
            )
        except (InputError, SigningKeyError) as exc:
            raise _Refused(f"the revocation: {exc}") from None
        if data["reason"] is not None and not isinstance(data["reason"], str):
            raise _Refused("the revocation's reason must be text or null")
        if not self._end(principal, key.blob, seq, body["time"], "revoked"):
            raise _Refused(f"revokes {principal}'s key {key.fingerprint}, which is not enrolled")
        self.auth.revoked[key.blob] = seq

    def _end(self, principal: str, blob: bytes, seq: int, time: str, how: str) -> bool:
        """Ends the open grant of principal with the key after record seq; says if one was."""
        grants = self.auth.grants
        for i, g in enumerate(grants):
            if g.open and g.principal == principal and g.key.blob == blob:
                # The record that ends a grant may itself be signed by that key (a lead
                # revoking their own key), so the grant covers up to and including it.
                grants[i] = Grant(
                    g.principal,
                    g.key,
                    g.roles,
                    g.valid_after,
                    g.valid_before,
                    g.from_seq,
                    seq + 1,
                    g.granted_by,
                    g.granted_at,
                    seq,
                    time,
                    how,
                )
                self.auth._index.clear()
                return True
        return False


def read_authority(rows: Iterable[tuple[int, str, str]]) -> Authority:
    """Gives the authority replayed from (seq, message, signature) rows of authority kinds,
    in seq order.

    Each record's signature is checked here (few records; a forged enrolment
    must not grant anything, even to the rest of this replay). A record that
    does not parse or whose signature fails grants nothing and gets no verdict:
    the per-record check reports it; one that is well signed but refused gets
    its reason in ``verdicts``.
    """
    from engine.canonical import canonical_json

    replay = _Replay()
    auth = replay.auth
    lead_ns = NAMESPACE_BY_ROLE[LEAD]
    for seq, message, signature in rows:
        auth.last_seq = max(auth.last_seq, seq)
        try:
            body = strict_loads(message)
            if not isinstance(body, dict) or canonical_json(body).decode("utf-8") != message:
                continue
            if body.get("kind") not in AUTHORITY_KINDS or body.get("seq") != seq:
                continue
            sig = sshsig.verify(sshsig.dearmor(signature), message.encode("utf-8"), lead_ns)
            if sshsig.fingerprint(sig.public_key) != body.get("key"):
                continue
            for name in ("principal", "role", "time"):
                if not isinstance(body.get(name), str):
                    raise _Refused(f"signed field '{name}' is not text")
            record_hash = hashlib.sha256(message.encode("utf-8")).hexdigest()
            replay.apply(seq, record_hash, body, sig.public_key)
            auth.verdicts[seq] = None
        except _Refused as exc:
            auth.verdicts[seq] = str(exc)
        except (ValueError, TypeError, sshsig.SignatureError, InputError):
            continue  # not a readable, well-signed record: its own check says why
    return auth


def load_authority(conn: sqlite3.Connection, upto: int | None = None) -> Authority:
    """Gives the authority replayed from a workspace database (records up to ``upto``)."""
    sql = AUTHORITY_ROWS_SQL
    args: tuple[int, ...] = ()
    if upto is not None:
        sql = sql.replace("ORDER BY", "AND seq <= ? ORDER BY")
        args = (upto,)
    rows = (
        (seq, message, signature)
        for seq, message, signature in conn.execute(sql, args)
        if isinstance(message, str) and isinstance(signature, str) and type(seq) is int
    )
    return read_authority(rows)


def authority_mark(conn: sqlite3.Connection) -> tuple[int, int]:
    """Gives (count, highest seq) of the authority records: changes whenever one lands."""
    row = conn.execute(
        "SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM records "
        "WHERE kind IN ('genesis', 'enrol', 'revoke')"
    ).fetchone()
    return row[0], row[1]


# -- what a writer signs --------------------------------------------------------


def genesis_data(signers: list[dict[str, Any]], adopts: int) -> dict[str, Any]:
    """Gives a genesis record's data: the founding signers and how many records it adopts."""
    return {"type": GENESIS_TYPE, "signers": signers, "adopts": adopts}


def enrol_data(entry: dict[str, Any]) -> dict[str, Any]:
    """Gives an enrol record's data: one signer entry (``signer_entry``)."""
    return {"type": ENROL_TYPE, "signer": entry}


def revoke_data(principal: str, key: PublicKey, reason: str | None) -> dict[str, Any]:
    """Gives a revoke record's data."""
    return {
        "type": REVOKE_TYPE,
        "principal": check_principal(principal),
        "key": key.openssh(),
        "reason": reason,
    }


# -- the generated allowed_signers file -------------------------------------------


def _second(text: str) -> datetime:
    """Gives a record-time text's moment cut to the whole second (as ssh-keygen reads it)."""
    return parse_time(text).replace(microsecond=0)


def _ssh_time(text: str) -> str:
    """Gives a record-time text as an allowed_signers time (UTC, whole seconds)."""
    return parse_time(text).strftime("%Y%m%d%H%M%SZ")


def grant_for(
    auth: Authority, principal: str, blob: bytes, role: str, seq: int, time: str
) -> Grant | None:
    """Gives the grant that lets a record be signed (principal, key, role, seq, time)."""
    return next(
        (
            g
            for g in auth.grants
            if g.principal == principal and g.key.blob == blob and g.covers(role, seq, time)
        ),
        None,
    )


def allowed_signers_lines(auth: Authority) -> list[str]:
    """Gives one allowed_signers line per grant, for ``ssh-keygen -Y verify``.

    A grant that has ended gets ``valid-before`` at the time of the record
    that ended it, and one that began after the genesis ``valid-after`` at its
    enrolment's time, so that ``ssh-keygen -Y verify -Overify-time=<record's
    time>`` (``sealdesk export`` gives each record's) accepts a record exactly
    where its signer was enrolled. ssh-keygen's bounds are whole seconds and
    inclusive: within the second of a revocation it cannot tell before from
    after; ``sealdesk verify`` decides by seq.
    """
    return [allowed_signers_line(auth, g) for g in auth.grants]


def allowed_signers_line(auth: Authority, g: Grant) -> str:
    """Gives the allowed_signers line of one grant (see ``allowed_signers_lines``)."""
    options = [f'namespaces="{",".join(NAMESPACE_BY_ROLE[r] for r in g.roles)}"']
    after = max(g.valid_after, g.granted_at if g.granted_by != _genesis_seq(auth) else "")
    before = g.valid_before if g.valid_before != NO_BEFORE else None
    ended = g.ended_at is not None and (before is None or g.ended_at < before)
    if ended:
        before = g.ended_at
    # ssh-keygen refuses a line whose valid-before is not after its valid-after (in whole
    # seconds). A grant ended within the second it began covers that second; a window the
    # lead closed before the enrolment covers nothing, so only the lead's own bounds stand.
    if after and before is not None and _second(before) <= _second(after):
        if ended:
            before = time_text(_second(after) + timedelta(seconds=1))
        else:
            after = g.valid_after
    if after:
        options.append(f'valid-after="{_ssh_time(after)}"')
    if before is not None:
        options.append(f'valid-before="{_ssh_time(before)}"')
    return f"{g.principal} {','.join(options)} {g.key.openssh()}\n"


def _genesis_seq(auth: Authority) -> int | None:
    return auth.genesis.seq if auth.genesis is not None else None


def allowed_signers_text(auth: Authority, workspace_id: str) -> str:
    """Gives the whole generated trust/allowed_signers file."""
    head = (
        f"# sealdesk workspace {workspace_id}: generated from the ledger's enrolment "
        "records for ssh-keygen -Y verify.\n"
        "# Do not edit: sealdesk never reads this file. Change who may sign with\n"
        "#   sealdesk keys add / keys revoke   (records a lead signs)\n"
    )
    return head + "".join(allowed_signers_lines(auth))


# -- deciding, for a whole workspace, who may sign ----------------------------------


def signer_policy(conn: sqlite3.Connection, legacy_path: Path) -> SignerPolicy:
    """Gives who may sign in a workspace's ledger: its replayed authority, or, while it has
    no authority record at all, its legacy allowed_signers file (reported as unanchored)."""
    auth = load_authority(conn)
    if auth.verdicts:
        return auth
    from engine.ledger.allowed_signers import AllowedSigners

    records = conn.execute("SELECT COUNT(*) FROM (SELECT 1 FROM records LIMIT 1)").fetchone()[0]
    return LegacySigners(AllowedSigners.load(legacy_path), records)


def check_anchor(policy: SignerPolicy, anchor: AllowedSigners, name: str) -> list[tuple[int, str]]:
    """Gives faults where the ledger's genesis is not vouched for by an outside anchor.

    The anchor is an allowed_signers file the verifier brings (the lead's own
    copy of their key): each founding lead key of the genesis must be allowed
    there to sign as lead under its principal. Every later enrolment follows
    from the genesis by lead signatures, which the replay checks.
    """
    genesis = getattr(policy, "genesis", None)
    if genesis is None:
        return [(0, f"anchor {name}: the ledger has no genesis record to check against it")]
    lead_ns = NAMESPACE_BY_ROLE[LEAD]
    when = parse_time(genesis.time)
    faults = []
    for principal, key in genesis.founders:
        if not anchor.authorizes(principal, key.blob, lead_ns, when):
            faults.append(
                (
                    genesis.seq,
                    f"anchor {name}: the genesis names {principal} with key "
                    f"{key.fingerprint} as founding lead, which the anchor "
                    "does not trust as lead",
                )
            )
    return faults


def anchor_of(auth: Authority) -> tuple[str, ...]:
    """Gives the fingerprints of the genesis's founding lead keys (empty without a genesis):
    the anchor a checkpoint names."""
    if auth.genesis is None:
        return ()
    return tuple(key.fingerprint for _, key in auth.genesis.founders)


def authority_data(auth: Authority) -> dict[str, Any] | None:
    """Gives what a sign-off binds of who may sign: the genesis, its anchor, and every
    grant in force, so the lead signs the signer set as well as the records."""
    if auth.genesis is None:
        return None
    return {
        "genesis": auth.genesis.record_hash,
        "anchor": list(anchor_of(auth)),
        "signers": [
            {
                "principal": g.principal,
                "roles": list(g.roles),
                "key": g.key.fingerprint,
                "since": g.granted_by,
            }
            for g in auth.in_force()
        ],
    }
