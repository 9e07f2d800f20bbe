"""Who is working on which undecided item right now: short, renewable claims, so that
two people reviewing one workspace at once (each in their own app, over SSH or not)
are not sent to the same item.

A claim is advice about work in progress, not a decision: it lives in its own
table of the workspace's database, beside the ledger, is never signed and never
exported, and ends on its own when its lease runs out (an app that crashed frees
its item within the lease). The ledger stays the only authority: a decision on
an item someone else holds is still a valid decision, and if both sign, the
second is refused as an overrule unless confirmed, as ever.

Taking the next items is one write transaction (``BEGIN IMMEDIATE``): two
processes that ask at the same moment are served one after the other, so they
never get the same item. Items a review plan samples are not claimed: the plan
itself says who decides them.

One person holds at most ``MAX_HELD`` claims at once (all queues together), so
that nobody can hold a queue's items away from colleagues; the app holds one. A
lead may end anyone's claims (``claim --release --of NAME``), proving it with a
signature of the moment.

Times are the host's clock in seconds since the epoch. Every process that
claims runs on the review host (people reach it over SSH), so they read one
clock; a clock set back keeps a claim alive longer, by as much as it was set
back, and never past a new lease.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from engine.errors import ConflictError, InputError, PermissionRefused
from engine.sqlitedb import write_transaction

# How long a claim lasts unless renewed: the app renews the one it holds while it
# shows the item; a command's claims last as long as it asks (``--minutes``).
APP_LEASE_SECONDS = 10 * 60
DEFAULT_MINUTES = 30
MAX_MINUTES = 24 * 60
# The most claims one person holds at once, all queues together.
MAX_HELD = 100

SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    queue TEXT NOT NULL,
    item_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    since REAL NOT NULL,
    until REAL NOT NULL,
    PRIMARY KEY (queue, item_id)
) STRICT;
CREATE INDEX IF NOT EXISTS claims_principal ON claims(principal);
"""


@dataclass(frozen=True)
class Claim:
    """One live claim: who holds which item, since when and until when."""

    queue: str
    item_id: str
    principal: str
    since: float
    until: float

    def as_dict(self) -> dict[str, str]:
        """Gives the claim as ``items --json`` shows it (times in UTC, ISO 8601)."""
        return {"principal": self.principal, "since": _iso(self.since), "until": _iso(self.until)}

    def said(self) -> str:
        """Gives the claim in words: who holds it and until when."""
        return f"{self.principal} holds it until {_clock(self.until)} UTC"


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Adds the claims table where it is missing (a workspace made before claims)."""
    conn.executescript(SCHEMA)


def enabled(conn: sqlite3.Connection) -> bool:
    """Says whether the database holds the claims table (a read-only copy made before
    claims existed does not, and then nobody holds anything)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'claims'"
    ).fetchone()
    return row is not None


def held(conn: sqlite3.Connection, queue: str | None, now: float) -> dict[tuple[str, str], Claim]:
    """Gives every live claim (of one queue, or of all), by (queue, item id)."""
    if not enabled(conn):
        return {}
    sql = "SELECT queue, item_id, principal, since, until FROM claims WHERE until > ?"
    args: list[object] = [now]
    if queue is not None:
        sql += " AND queue = ?"
        args.append(queue)
    return {(r[0], r[1]): Claim(*r) for r in conn.execute(sql, args)}


def held_by_others(
    conn: sqlite3.Connection, queue: str, principal: str | None, now: float
) -> tuple[str, ...]:
    """Gives the ids of a queue's items someone other than principal holds now."""
    return tuple(
        sorted(c.item_id for c in held(conn, queue, now).values() if c.principal != principal)
    )


def take(
    conn: sqlite3.Connection,
    queue: str,
    item_ids: Iterable[str],
    principal: str,
    *,
    now: float,
    seconds: float,
    only: int | None = None,
    replacing: tuple[str, str] | None = None,
    whole: bool = False,
) -> tuple[list[Claim], list[str]]:
    """Gives (the claims taken or renewed for principal, the items not taken because
    principal holds the most one may) over item_ids, in their order, in one write
    transaction; an item someone else holds is passed over.

    With ``only`` it stops once that many are taken (``claim --next N``: the caller
    gives the candidates in listing order); ``replacing`` names principal's claim
    (queue, item id) that ends in the same step (the app holds the item it shows,
    one at a time); with ``whole`` an item someone else holds refuses them all
    (ConflictError) and nothing is claimed. A new claim past ``MAX_HELD`` of
    principal's is not taken: with ``whole`` that refuses them all
    (PermissionRefused), else taking stops there (renewing goes on)."""
    if not principal:
        raise InputError("a claim needs to know who is claiming (a key)", field="key")
    if not 0 < seconds <= MAX_MINUTES * 60:
        raise InputError(f"a claim lasts 1 to {MAX_MINUTES} minutes", field="minutes")
    mine: list[Claim] = []
    over: list[str] = []
    with write_transaction(conn):
        holding = {
            (q, i)
            for q, i in conn.execute(
                "SELECT queue, item_id FROM claims WHERE principal = ? AND until > ?",
                (principal, now),
            )
        } - {replacing}
        for item_id in item_ids:
            if only is not None and len(mine) >= only:
                break
            row = conn.execute(
                "SELECT principal, since, until FROM claims WHERE queue = ? AND item_id = ?",
                (queue, item_id),
            ).fetchone()
            if row is not None and row[0] != principal and row[2] > now:
                if whole:
                    held_by = Claim(queue, item_id, *row)
                    raise ConflictError(
                        f"{queue}/{item_id} is claimed: {held_by.said()}; nothing was claimed"
                    )
                continue  # someone else's
            if (queue, item_id) not in holding and len(holding) >= MAX_HELD:
                if whole:
                    raise PermissionRefused(
                        f"{principal} holds {len(holding)} claims, the most one person may "
                        "hold at once; nothing was claimed (give some back: sealdesk claim "
                        "--release)"
                    )
                over.append(item_id)
                continue  # the ones already held are still renewed
            holding.add((queue, item_id))
            since = row[1] if row is not None and row[0] == principal and row[2] > now else now
            conn.execute(
                "INSERT INTO claims VALUES (?, ?, ?, ?, ?) ON CONFLICT (queue, item_id) DO "
                "UPDATE SET principal = excluded.principal, since = excluded.since, "
                "until = excluded.until",
                (queue, item_id, principal, since, now + seconds),
            )
            mine.append(Claim(queue, item_id, principal, since, now + seconds))
        if replacing is not None and replacing not in {(c.queue, c.item_id) for c in mine}:
            conn.execute(
                "DELETE FROM claims WHERE principal = ? AND queue = ? AND item_id = ?",
                (principal, *replacing),
            )
        # Expired claims are nobody's: clear them while the lock is held anyway.
        conn.execute("DELETE FROM claims WHERE until <= ?", (now,))
    return mine, over


def release(
    conn: sqlite3.Connection,
    principal: str,
    queue: str | None = None,
    item_ids: Iterable[str] | None = None,
) -> int:
    """Ends principal's claims (of one queue, of some items, or all); gives how many."""
    sql = "DELETE FROM claims WHERE principal = ?"
    args: list[object] = [principal]
    if queue is not None:
        sql += " AND queue = ?"
        args.append(queue)
    if item_ids is not None:
        sql += " AND item_id IN (SELECT value FROM json_each(?))"
        args.append(_json_list(list(item_ids)))
    if not enabled(conn):
        return 0
    with write_transaction(conn):
        return conn.execute(sql, args).rowcount


def _json_list(values: list[str]) -> str:
    # One JSON parameter however many ids: no limit on SQL variables.
    return json.dumps(values)


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _clock(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%H:%M")
