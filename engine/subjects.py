"""Subjects: what a backlog item asks, and decisions that carry over to a re-run's items.

An item's ``item_sha256`` names the exact bytes a person is shown; its
``subject`` names the question those bytes ask (the eval item; the exam
candidate; the category under a detector and holdout), so that a re-run
which finds other evidence about the same question does not ask it again
as if it were new. A producer states the subject inside the payload, as
``payload["subject"]`` (so the ``item_sha256`` every decision signs covers
it); the item's subject is the SHA-256 of ``{"queue", "subject"}``, kept in
an indexed column of ``items`` and re-derived by ``subject_faults``.

Carrying is computed, never signed: no record is written for it. For an
item with no standing decision of its own, the subject's standing decision
is, of the standing accepts and rejects on the other items of the same
subject, the one made in the highest role, and of those the latest: a
decision made in a lower role never carries over one made in a higher role
(as it could never have replaced it on the same item), and among equals the
latest stands, since a later one was made knowing the earlier (or overruled
it). Then

- an accept (a confirmed leak, a gold span, a category taken into the next
  cycle) carries over;
- a reject carries over only when this item's evidence adds nothing the
  decided item did not have: no match, no channel, no higher score;
- otherwise the item is re-opened: undecided, with what is new listed.

A decision that carries counts, on the item it carries to, as the standing
decision of its original principal and role (``standing_decision``):
replacing it there is an overrule like replacing a decision made on the
item itself, named in the signed record and refused over a higher role.
A re-opened item has no standing decision: its new evidence is asked again.

What each item adds over each other item of its subject is computed once,
when the later of the two is ingested, and kept in ``subject_links`` (like
``items``, never updated or deleted); ``subject_faults`` recomputes it from
the payloads, as verify does for ``item_sha256``. Items whose payload names
no subject (those ingested before subjects existed) carry nothing.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.canonical import canonical_json, strict_loads, subject_sha256
from engine.ledger import store
from engine.ledger.records import SETTLING, SETTLING_SQL
from engine.roles import ADJUDICATION, FLAGGED_PAIRS, WEAK_CATEGORIES, rank, rank_sql
from engine.sqlitedb import write_transaction

if TYPE_CHECKING:  # verify is imported where it runs: opening a workspace does not need it
    from engine.ledger.verify import StandingElsewhere

SCHEMA = """
CREATE TABLE IF NOT EXISTS subject_links (
    queue TEXT NOT NULL,
    item_id TEXT NOT NULL,
    other_id TEXT NOT NULL,
    adds INTEGER NOT NULL,
    new TEXT NOT NULL,
    PRIMARY KEY (queue, item_id, other_id)
) STRICT;
CREATE TRIGGER IF NOT EXISTS subject_links_no_update BEFORE UPDATE ON subject_links
BEGIN SELECT RAISE(ABORT, 'subject links are derived from immutable items: UPDATE refused'); END;
CREATE TRIGGER IF NOT EXISTS subject_links_no_delete BEFORE DELETE ON subject_links
BEGIN SELECT RAISE(ABORT, 'subject links are derived from immutable items: DELETE refused'); END;
CREATE INDEX IF NOT EXISTS items_subject ON items(queue, subject) WHERE subject IS NOT NULL;
CREATE INDEX IF NOT EXISTS subject_links_other ON subject_links(queue, other_id);
"""

# The seq of the standing decision of the item at (queue, item_id), as
# engine.ledger.store.effective_decisions defines it.
_STANDING_SEQ = (
    "(SELECT d.seq FROM records d WHERE d.queue = {q} AND d.item_id = {i} "
    "AND d.kind = 'decision' AND NOT EXISTS (SELECT 1 FROM records x "
    "WHERE x.retracts = d.record_hash AND x.kind = 'retract') "
    "ORDER BY d.seq DESC LIMIT 1)"
)
# The link to, and the record of, the subject's standing decision for the row ``i``:
# of the standing accepts and rejects on other items of its subject, the one made in
# the highest role, and of those the latest.
_SUBJECT_STANDING = (
    "FROM subject_links l JOIN records e ON e.seq = "
    + _STANDING_SEQ.format(q="l.queue", i="l.other_id")
    + " WHERE l.queue = i.queue AND l.item_id = i.item_id "
    f"AND e.decision IN {SETTLING_SQL} ORDER BY {rank_sql('e.role')} DESC, e.seq DESC "
    "LIMIT 1"
)
# seq and role rank in one number, so that one MAX() picks the highest role's latest
# decision (no ledger reaches 2**40 records).
_SEQ_SPAN = 2**40
_CARRIES = "e.decision = 'accept' OR l.adds = 0"
# The decision and principal that carry to row ``i`` (NULL when none does, or when
# the item is re-opened); only meaningful where the item has no decision of its own.
CARRIED_DECISION = f"(SELECT CASE WHEN {_CARRIES} THEN e.decision END {_SUBJECT_STANDING})"
CARRIED_PRINCIPAL = f"(SELECT CASE WHEN {_CARRIES} THEN e.principal END {_SUBJECT_STANDING})"
# "decision US principal US adds" of the subject's standing decision, for a listing.
STANDING_ROW = (
    f"(SELECT e.decision || char(31) || e.principal || char(31) || l.adds {_SUBJECT_STANDING})"
)
SCORES = ("jaccard", "containment", "cosine")
SIDES = SETTLING


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Adds the subject column, its index and the links table where they are missing
    (a workspace made before subjects existed keeps its items; they have none)."""
    if "subject" not in _columns(conn):
        with write_transaction(conn):
            # Checked again under the write lock: another process may have just added it.
            if "subject" not in _columns(conn):
                conn.execute("ALTER TABLE items ADD COLUMN subject TEXT")
    conn.executescript(SCHEMA)


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {row[1] for row in conn.execute("PRAGMA table_info(items)")}


def enabled(conn: sqlite3.Connection) -> bool:
    """Says whether the workspace holds subjects (a read-only copy made before them does not)."""
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'subject_links'"
        ).fetchone()
        is not None
    )


def subject_of(queue: str, payload: dict[str, Any]) -> str | None:
    """Gives the item's subject: the SHA-256 of its queue and its payload's subject, or
    None when the payload names none."""
    stated = payload.get("subject")
    return None if stated is None else subject_sha256(queue, stated)


def subject_problem(payload: dict[str, Any]) -> str | None:
    """Gives why a payload's subject is unusable, or None when it is absent or fine."""
    stated = payload.get("subject")
    if stated is None:
        return None
    if not isinstance(stated, dict) or not stated:
        return "must be a non-empty JSON object naming what is decided"
    return None


# -- evidence -----------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """What an item's payload offers for its subject, in the terms the carry rule
    compares: matches (each with its channels and scores), channels, a score."""

    matches: dict[str, tuple[frozenset[str], dict[str, float]]]
    channels: frozenset[str]
    score: float | None
    known: bool  # False: a payload shape the rule does not read, so any difference counts


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _summary_score(payload: dict[str, Any]) -> float | None:
    summary = payload.get("summary")
    return _number(summary.get("score")) if isinstance(summary, dict) else None


def _strings(values: Any) -> frozenset[str]:
    if not isinstance(values, list):
        return frozenset()
    return frozenset(v for v in values if isinstance(v, str))


def evidence(queue: str, payload: dict[str, Any]) -> Evidence:
    """Gives the evidence of a payload of the queue's contract shape.

    flagged_pairs: a match is a pool document or eval sibling (``pool:ID``),
    with its channels and its exact Jaccard, containment and cosine; the
    channels are the item's. adjudication: a match is a vote that took a
    side (``voter=accept``), a channel a voter that took one, the score the
    share of accepting votes. weak_categories: a match is a selected miss,
    a channel a finding's issue, the score the category's severity.
    """
    matches: dict[str, tuple[frozenset[str], dict[str, float]]] = {}
    if queue == FLAGGED_PAIRS and isinstance(payload.get("matches"), list):
        for m in payload["matches"]:
            if not isinstance(m, dict):
                continue
            key = f"{m.get('kind')}:{m.get('id')}"
            stated = m.get("scores")
            scores: dict[str, Any] = stated if isinstance(stated, dict) else {}
            matches[key] = (
                _strings(m.get("channels")) | _strings(m.get("via")),
                {k: v for k in SCORES if (v := _number(scores.get(k))) is not None},
            )
        return Evidence(matches, _strings(payload.get("channels")), None, True)
    if queue == ADJUDICATION and isinstance(payload.get("votes"), list):
        voters = set()
        for v in payload["votes"]:
            if isinstance(v, dict) and v.get("vote") in SIDES:
                matches[f"{v.get('voter')}={v['vote']}"] = (frozenset(), {})
                voters.add(str(v.get("voter")))
        return Evidence(matches, frozenset(voters), _summary_score(payload), True)
    if queue == WEAK_CATEGORIES and isinstance(payload.get("misses"), list):
        for miss in payload["misses"]:
            if isinstance(miss, dict):
                matches[f"miss:{miss.get('case_id')}"] = (frozenset(), {})
        issues = frozenset(
            f["issue"]
            for f in payload.get("findings") or ()
            if isinstance(f, dict) and isinstance(f.get("issue"), str)
        )
        return Evidence(matches, issues, _summary_score(payload), True)
    return Evidence({}, frozenset(), _summary_score(payload), False)


def added(new: Evidence, old: Evidence) -> list[dict[str, Any]]:
    """Gives what ``new`` has that ``old`` had not: matches, channels (of the item or
    of a match both hold) and higher scores; empty when it adds nothing."""
    out: list[dict[str, Any]] = []
    if not (new.known and old.known):
        return [{"payload": "differs (a shape the carry rule does not read)"}]
    out += [{"channel": c} for c in sorted(new.channels - old.channels)]
    for key in sorted(new.matches):
        channels, scores = new.matches[key]
        if key not in old.matches:
            out.append({"match": key})
            continue
        had_channels, had_scores = old.matches[key]
        out += [{"channel": c, "match": key} for c in sorted(channels - had_channels)]
        for name in sorted(scores):
            before = had_scores.get(name)
            if before is None or scores[name] > before:
                out.append({"score": name, "match": key, "before": before, "now": scores[name]})
    if new.score is not None and not any(s for _, s in new.matches.values()):
        if old.score is None or new.score > old.score:
            out.append({"score": "score", "before": old.score, "now": new.score})
    return out


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def describe(new: list[dict[str, Any]]) -> str:
    """Gives what is new, in words: ``new match pool:doc-9; containment 0.61→0.83 on …``."""
    said = []
    for entry in new:
        if "payload" in entry:
            said.append(f"payload {entry['payload']}")
        elif "score" in entry:
            where = f" on {entry['match']}" if "match" in entry else ""
            said.append(f"{entry['score']} {_num(entry['before'])}→{_num(entry['now'])}{where}")
        elif "match" in entry and "channel" in entry:
            said.append(f"channel {entry['channel']} on {entry['match']}")
        elif "match" in entry:
            said.append(f"new match {entry['match']}")
        else:
            said.append(f"new channel {entry['channel']}")
    return "; ".join(said)


# -- links (written at ingest, inside its transaction) ---------------------------


def link(
    conn: sqlite3.Connection, queue: str, item_id: str, subject: str, payload: dict[str, Any]
) -> int:
    """Gives how many items of the same subject were held, after recording what this item
    and each of them adds over the other."""
    mine = evidence(queue, payload)
    held = conn.execute(
        "SELECT item_id, payload FROM items WHERE queue = ? AND subject = ? AND item_id <> ?",
        (queue, subject, item_id),
    ).fetchall()
    for other_id, other_payload in held:
        theirs = evidence(queue, strict_loads(other_payload))
        for a, b, new in (
            (item_id, other_id, added(mine, theirs)),
            (other_id, item_id, added(theirs, mine)),
        ):
            conn.execute(
                "INSERT OR IGNORE INTO subject_links VALUES (?,?,?,?,?)",
                (queue, a, b, int(bool(new)), canonical_json(new).decode("utf-8")),
            )
    return len(held)


# -- carried decisions --------------------------------------------------------------


@dataclass(frozen=True)
class Carry:
    """The subject's standing decision as it bears on an item with none of its own."""

    queue: str
    item_id: str
    carried: bool  # True: the decision stands for this item; False: it is re-opened
    record: dict[str, Any]  # the deciding record: item_id, seq, record_hash, decision, ...
    new: tuple[dict[str, Any], ...]  # what this item adds over the decided one
    later: bool  # re-opened: this item was ingested after the decision (False when carried)

    @property
    def status(self) -> str:
        """Gives the item's effective status: the carried decision, or undecided."""
        return self.record["decision"] if self.carried else "undecided"

    def text(self) -> str:
        """Gives the one line that says where the status comes from."""
        r = self.record
        whose = f"{r['principal']}'s {r['decision']} of {str(r['time'])[:10]}"
        if self.carried:
            # An accept carries whatever else was found; a reject only without new evidence.
            why = "" if r["decision"] == "accept" else "; no new evidence since"
            return f"carried: {whose} on {r['item_id']} (#{r['seq']}){why}"
        since = "new evidence since" if self.later else "evidence not seen by"
        return f"re-opened: {since} {whose} on {r['item_id']}: {describe(list(self.new))}"

    def to_json(self) -> dict[str, Any]:
        """Gives ``{"carried_from": record}`` or ``{"reopened": {since, new, text}}``."""
        if self.carried:
            return {"carried_from": dict(self.record), "reopened": None}
        return {
            "carried_from": None,
            "reopened": {"since": dict(self.record), "new": list(self.new), "text": self.text()},
        }


_RECORD_FIELDS = ("seq", "record_hash", "decision", "principal", "role", "time", "item_id")


def _best(queue: str | None) -> tuple[str, list[Any]]:
    """Gives the ``WITH`` clause whose ``best`` holds, per item with no standing decision
    of its own, the link to its subject's standing decision (the highest role's latest
    standing accept or reject on another item of its subject): ``seq`` its record;
    ``other_id``, ``adds``, ``new`` from that link."""
    mine = " AND d.queue = ?" if queue is not None else ""
    # SQLite takes a bare column (other_id, adds, new) from the row holding the MAX().
    sql = f"""
    WITH own AS MATERIALIZED (
        SELECT queue, item_id, MAX(seq) AS seq FROM records d
        WHERE d.kind = 'decision'{mine} AND NOT EXISTS (SELECT 1 FROM records x
            WHERE x.kind = 'retract' AND x.retracts = d.record_hash)
        GROUP BY queue, item_id
    ),
    best AS (
        SELECT l.queue, l.item_id,
               MAX({rank_sql("r.role")} * {_SEQ_SPAN} + o.seq) % {_SEQ_SPAN} AS seq,
               l.other_id AS other_id, l.adds AS adds, l.new AS new
        FROM own o JOIN records r ON r.seq = o.seq
        JOIN subject_links l ON l.queue = o.queue AND l.other_id = o.item_id
        WHERE r.decision IN {SETTLING_SQL} AND NOT EXISTS (
            SELECT 1 FROM own s WHERE s.queue = l.queue AND s.item_id = l.item_id)
        GROUP BY l.queue, l.item_id
    )"""
    return sql, [] if queue is None else [queue]


def _has_links(conn: sqlite3.Connection) -> bool:
    return (
        enabled(conn) and conn.execute("SELECT 1 FROM subject_links LIMIT 1").fetchone() is not None
    )


def carries(
    conn: sqlite3.Connection, queue: str | None = None, item_id: str | None = None
) -> dict[tuple[str, str], Carry]:
    """Gives, per item with no standing decision of its own whose subject has one, how
    that decision bears on it (carried or re-opened)."""
    if not _has_links(conn):
        return {}
    if item_id is not None:
        one = carry_to(conn, str(queue), item_id)
        return {} if one is None else {(one.queue, one.item_id): one}
    # One statement for a whole queue: a probe per item from Python cost about a second
    # on 20,000 re-scanned items, and the sign-off summary and clean read every item.
    best, args = _best(queue)
    out = {}
    for q, iid, other_id, adds, new, ingested_at, *fields in conn.execute(
        f"""{best}
        SELECT b.queue, b.item_id, b.other_id, b.adds, b.new,
               CASE WHEN r.decision = 'reject' AND b.adds <> 0 THEN (SELECT i.ingested_at
                    FROM items i WHERE i.queue = b.queue AND i.item_id = b.item_id) END,
               r.seq, r.record_hash, r.decision, r.principal, r.role, r.time
        FROM best b JOIN records r ON r.seq = b.seq""",
        args,
    ):
        out[(q, iid)] = _carry(
            q,
            iid,
            other_id,
            adds,
            new,
            ingested_at,
            dict(zip(_RECORD_FIELDS[:6], fields, strict=True)),
        )
    return out


def carry_to(
    conn: sqlite3.Connection, queue: str, item_id: str, before: int | None = None
) -> Carry | None:
    """Gives how the subject's standing decision bears on an item with none of its own
    (carried or re-opened), None when the item has its own or its subject has none;
    with ``before``, as it stood when record ``before`` was appended.

    By a few index probes: deciding, a bulk preview, the detail pane and
    verify's replay read one item at a time.
    """
    if not _has_links(conn) or store.effective_decisions_for(conn, queue, item_id, before):
        return None
    best = None
    for other_id, adds, new in conn.execute(
        "SELECT other_id, adds, new FROM subject_links WHERE queue = ? AND item_id = ?",
        (queue, item_id),
    ).fetchall():
        eff = store.effective_decisions_for(conn, queue, other_id, before)
        if eff is None or eff["decision"] not in SIDES:
            continue
        key = (rank(eff["role"]), eff["seq"])
        if best is None or key > best[0]:
            best = (key, eff, other_id, adds, new)
    if best is None:
        return None
    _, eff, other_id, adds, new = best
    (ingested_at,) = conn.execute(
        "SELECT ingested_at FROM items WHERE queue = ? AND item_id = ?", (queue, item_id)
    ).fetchone()
    return _carry(queue, item_id, other_id, adds, new, ingested_at, eff)


def standing_decision(conn: sqlite3.Connection, queue: str, item_id: str) -> dict[str, Any] | None:
    """Gives the decision standing on an item, as the rule of who may replace whose
    decision reads it: the item's own latest unretracted decision, else the decision
    its subject carries to it (its record's seq, decision, principal, role, time and
    record_hash, and ``carried_from``, the item it was made on), else None.

    Deciding, the bulk preview and verify's replay (``carried_standing``) all read
    it here, so a carried decision is overruled, or refused, exactly as its own.
    """
    own = store.effective_decisions_for(conn, queue, item_id)
    return own if own is not None else carried_standing(conn, queue, item_id)


def carried_standing(
    conn: sqlite3.Connection, queue: str, item_id: str, before: int | None = None
) -> dict[str, Any] | None:
    """Gives the decision the item's subject carries to it as its standing decision
    (``standing_decision``'s fields), or None when none carries (none held, the item is
    re-opened, or it has its own); with ``before``, as when record ``before`` was
    appended."""
    carry = carry_to(conn, queue, item_id, before)
    if carry is None or not carry.carried:
        return None
    r = carry.record
    return {
        **{name: r[name] for name in _RECORD_FIELDS if name != "item_id"},
        "carried_from": r["item_id"],
    }


# Items decided where an earlier decision on another item of their subject was made by
# another principal or in another role: where a carried decision may have been replaced.
_CARRIED_CONTESTED = """
SELECT d.queue, d.item_id FROM records d
JOIN subject_links l ON l.queue = d.queue AND l.item_id = d.item_id
JOIN records e ON e.queue = l.queue AND e.item_id = l.other_id
WHERE d.kind = 'decision' AND e.kind = 'decision' AND e.seq < d.seq
    AND (e.principal <> d.principal OR e.role <> d.role)
"""


def carried_elsewhere(conn: sqlite3.Connection) -> StandingElsewhere | None:
    """Gives what verify's replay of overrules needs to judge a decision that replaced a
    carried one (``carried_standing`` as it stood then), or None for a workspace without
    subjects."""
    from engine.ledger.verify import StandingElsewhere

    if not enabled(conn):
        return None
    return StandingElsewhere(_CARRIED_CONTESTED, carried_standing)


def said(standing: dict[str, Any]) -> str:
    """Gives a standing decision in words: ``accept by lena as lead (#7)``, and where a
    carried one was made: ``(#7, carried from wc-0)``."""
    where = f", carried from {standing['carried_from']}" if standing.get("carried_from") else ""
    return (
        f"{standing['decision']} by {standing['principal']} as {standing['role']} "
        f"(#{standing['seq']}{where})"
    )


def _carry(
    queue: str,
    item_id: str,
    other_id: str,
    adds: int,
    new: str,
    ingested_at: str | None,
    eff: dict[str, Any],
) -> Carry:
    record = {name: eff[name] for name in _RECORD_FIELDS if name != "item_id"}
    record["item_id"] = other_id
    return Carry(
        queue,
        item_id,
        record["decision"] == "accept" or not adds,
        record,
        # Plain json: the links are canonical JSON this module wrote, and subject_faults
        # re-derives them from the payloads.
        () if new == "[]" else tuple(json.loads(new)),
        ingested_at is not None and ingested_at > record["time"],
    )


def carry_counts(
    conn: sqlite3.Connection, queue: str | None = None
) -> list[tuple[str, str, str, int]]:
    """Gives (queue, status, principal, count) over the items whose status comes from
    their subject: status is the carried decision, or ``reopened``; principal is whose
    decision it was."""
    if not _has_links(conn):
        return []
    best, args = _best(queue)
    return conn.execute(
        f"""{best}
        SELECT b.queue,
               CASE WHEN r.decision = 'accept' OR b.adds = 0 THEN r.decision
                    ELSE 'reopened' END,
               r.principal, COUNT(*)
        FROM best b JOIN records r ON r.seq = b.seq GROUP BY 1, 2, 3""",
        args,
    ).fetchall()


# -- verification ---------------------------------------------------------------------


def _payload(conn: sqlite3.Connection, queue: str, item_id: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT payload FROM items WHERE queue = ? AND item_id = ?", (queue, item_id)
    ).fetchone()
    return strict_loads(row[0])


def subject_faults(conn: sqlite3.Connection) -> list[str]:
    """Gives why the subject column or the links table is not what the payloads say
    (each a sentence naming the item), empty when both are."""
    if not enabled(conn):
        return []
    faults = []
    groups: dict[tuple[str, str], list[str]] = {}
    # The subject is read out of the payload by SQLite's JSON functions: parsing
    # 100,000 whole payloads in Python would cost seconds; the subjects are small.
    for q, iid, column, stated in conn.execute(
        "SELECT queue, item_id, subject, "
        "CASE WHEN json_valid(payload) THEN payload -> '$.subject' END "
        "FROM items ORDER BY queue, item_id"
    ):
        value = None if stated is None else strict_loads(stated)
        derived = None if value is None else subject_sha256(q, value)
        if derived != column:
            faults.append(
                f"item {q}/{iid}: its subject column is not the subject its payload names "
                "(edited after ingest)"
            )
            continue
        if column is not None:
            groups.setdefault((q, column), []).append(iid)
    expected = {}
    for (q, _), members in groups.items():
        if len(members) < 2:
            continue
        found = [(iid, evidence(q, _payload(conn, q, iid))) for iid in members]
        for a, ev_a in found:
            for b, ev_b in found:
                if a != b:
                    new = added(ev_a, ev_b)
                    expected[(q, a, b)] = (int(bool(new)), canonical_json(new).decode("utf-8"))
    held = {
        (q, a, b): (adds, new) for q, a, b, adds, new in conn.execute("SELECT * FROM subject_links")
    }
    for key in sorted(set(expected) | set(held)):
        if expected.get(key) != held.get(key):
            q, a, b = key
            what = "missing" if key not in held else "not what the payloads say"
            faults.append(
                f"subject link {q}/{a} over {b} is {what} (the carry of decisions between "
                "them would be wrong)"
            )
    return faults
