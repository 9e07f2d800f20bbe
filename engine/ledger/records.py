"""Disposition records: the body that is signed, and the row that is stored.

The signed message is the canonical JSON of the body; the record hash is the
SHA-256 of exactly those bytes. Nothing outside the body is trusted: the
denormalised columns in SQLite exist for queries and are checked against the
body by ``verify``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engine.canonical import canonical_json, sha256_hex

_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z\Z")
RECORD_VERSION = 1
GENESIS_PREV = "0" * 64
KINDS = (
    "decision",
    "retract",
    "note",
    "signoff",
    "run",
    "plan",
    "gold",
    "genesis",
    "enrol",
    "revoke",
    "clock",
)
# The decision words, in one place: what a decision record may say, the two that settle
# an item (a skip leaves it for later), and an item's status (its standing decision, or
# none yet). Every command, query and screen takes them from here.
DECISIONS = ("accept", "reject", "skip")
SETTLING = ("accept", "reject")
UNDECIDED = "undecided"
STATUSES = (UNDECIDED, *DECISIONS)
SETTLING_SQL = "(" + ", ".join(f"'{word}'" for word in SETTLING) + ")"  # for IN (...)

# Columns copied out of the body for queries; verify checks each one.
INDEXED_FIELDS = (
    "seq",
    "kind",
    "queue",
    "item_id",
    "item_sha256",
    "decision",
    "principal",
    "role",
    "retracts",
    "time",
)
BODY_FIELDS = frozenset(
    {
        "v",
        "workspace",
        "seq",
        "prev",
        "kind",
        "queue",
        "item_id",
        "item_sha256",
        "run_sha256",
        "decision",
        "note",
        "retracts",
        "data",
        "principal",
        "role",
        "key",
        "time",
    }
)


# What a decision's "data" may hold: an object with any of these keys, each checked by
# its own rule (and none other). A new key is one row here; verify and the workspace
# read this table, so they cannot disagree.
RECORD_HASH = re.compile(r"[0-9a-f]{64}\Z")
REASON_CODE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*\Z")
REASON_CODE_MAX = 32
RATIONALE_MAX = 2000


def _is_hash(value: object) -> bool:
    return type(value) is str and RECORD_HASH.match(value) is not None


def _is_code(value: object) -> bool:
    return (
        type(value) is str
        and len(value) <= REASON_CODE_MAX
        and REASON_CODE.match(value) is not None
    )


def _is_rationale(value: object) -> bool:
    return type(value) is str and 0 < len(value) <= RATIONALE_MAX and bool(value.strip())


def _is_plan(value: object) -> bool:
    """A rating under a review plan ({"blind": true, "record": <the plan's hash>}), or a
    resolution of its ratings ({"record": <hash>, "resolves": [<hash>, ...]})."""
    if type(value) is not dict or not _is_hash(value.get("record")):
        return False
    if value.keys() == {"record", "blind"}:
        return value["blind"] is True
    resolves = value.get("resolves")
    return (
        value.keys() == {"record", "resolves"}
        and type(resolves) is list
        and bool(resolves)
        and all(_is_hash(h) for h in resolves)
    )


DECISION_DATA: dict[str, tuple[Any, str]] = {
    "overrules": (_is_hash, "the record hash of the decision it replaces"),
    "reason": (
        _is_code,
        f"a reason code (lower-case words joined by '-', at most {REASON_CODE_MAX})",
    ),
    "rationale": (_is_rationale, f"non-blank text of at most {RATIONALE_MAX} characters"),
    "guidelines_sha256": (_is_hash, "the SHA-256 (hex) of the queue's guidelines"),
    "plan": (
        _is_plan,
        "{blind: true, record} (a rating under the review plan record) or {record, "
        "resolves: [...]} (an adjudicator's resolution of its ratings)",
    ),
}


def decision_data_fault(data: object) -> str | None:
    """Gives why a decision's ``data`` is not null or an object of ``DECISION_DATA``'s
    keys, each of its shape, or None."""
    if data is None:
        return None
    if type(data) is not dict or not data:
        return "a decision record's 'data' is neither null nor an object of its known keys"
    for name, value in data.items():
        rule = DECISION_DATA.get(name)
        if rule is None:
            known = ", ".join(DECISION_DATA)
            return f"a decision record's 'data' carries {name!r}, not one of {known}"
        if not rule[0](value):
            return f"a decision record's 'data.{name}' is not {rule[1]}"
    return None


def utc_now() -> str:
    """Gives the current UTC time as ISO 8601 with microseconds and ``Z``."""
    return time_text(datetime.now(UTC))


def time_text(when: datetime) -> str:
    """Gives a time in the one form records use (``YYYY-MM-DDTHH:MM:SS.ffffffZ``, UTC).

    Every field is fixed-width, so two such texts sort as their times do.
    """
    d = when.astimezone(UTC)
    return (
        f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:"
        f"{d.second:02d}.{d.microsecond:06d}Z"
    )


def parse_time(value: str) -> datetime:
    """Gives the datetime of a record's ``time`` field (``YYYY-MM-DDTHH:MM:SS.ffffffZ``)."""
    # The pattern pins the one shape utc_now writes; fromisoformat then checks the
    # calendar, some ten times faster than strptime (verify calls this per record).
    if not isinstance(value, str) or not _TIME.match(value):
        raise ValueError(f"time {value!r} is not YYYY-MM-DDTHH:MM:SS.ffffffZ")
    return datetime.fromisoformat(value[:-1]).replace(tzinfo=UTC)


@dataclass(frozen=True)
class Record:
    """A stored record: its signed message, hash and armored signature."""

    seq: int
    record_hash: str
    prev_hash: str
    message: bytes
    signature: str
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.body["kind"]


def make_body(
    *,
    workspace: str,
    seq: int,
    prev: str,
    kind: str,
    principal: str,
    role: str,
    key: str,
    time: str,
    queue: str | None = None,
    item_id: str | None = None,
    item_sha256: str | None = None,
    run_sha256: str | None = None,
    decision: str | None = None,
    note: str | None = None,
    retracts: str | None = None,
    data: Any = None,
) -> dict[str, Any]:
    """Gives a record body with every field present (null where unused)."""
    return {
        "v": RECORD_VERSION,
        "workspace": workspace,
        "seq": seq,
        "prev": prev,
        "kind": kind,
        "queue": queue,
        "item_id": item_id,
        "item_sha256": item_sha256,
        "run_sha256": run_sha256,
        "decision": decision,
        "note": note,
        "retracts": retracts,
        "data": data,
        "principal": principal,
        "role": role,
        "key": key,
        "time": time,
    }


def encode_body(body: dict[str, Any]) -> tuple[bytes, str]:
    """Gives the signed message bytes and the record hash of a body."""
    message = canonical_json(body)
    return message, sha256_hex(message)
