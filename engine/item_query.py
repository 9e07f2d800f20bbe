"""Filtered, sorted, paged reads of backlog items with their effective decision.

The review app never loads a whole queue: it asks for one page of rows at a
time and for counts, and every query here is shaped so that SQLite answers it
from an index (``items_queue_score_id`` for score order, the primary key for
id order, ``records_item`` for the effective decision of one item) and stops
as soon as the page is full.

The effective decision of an item is the latest decision record on it that
no retract record names, exactly as ``engine.ledger.store.effective_decisions``
defines it; here it is computed per row with a correlated subquery so that a
page of 100 rows costs 100 index probes, not a scan of the whole ledger. An
item with none of its own may have one carried from another item of its
subject (``engine.subjects``): one more probe, of ``subject_links``.

A re-run asks again about the same subjects, so a listing may show one row
per subject: its newest item (the one ingested last); the older items
of the subject fold under it (``ItemRow.earlier`` counts them) and are left
out with ``ItemFilter.newest_only``. Items whose payload names no subject are each
their own row.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from engine import subjects
from engine.errors import InputError

# the decision words the app reads through this module
from engine.ledger.records import SETTLING as SETTLING
from engine.ledger.records import STATUSES as STATUSES
from engine.roles import QUEUES

DECIDED_BY = ("me", "others")
SORTS = ("score_desc", "score_asc", "id_asc", "id_desc")

# How urgently an item wants a reviewer, from the triage tag a producer gives it:
# a likely leak first, a template sibling last, anything else (unclear, or no
# triage at all, as in the other queues) between. The score orders list by it
# first, so the default order shows likely leaks before look-alikes.
_PRIORITY = (
    "(CASE WHEN instr(',' || {t}tags || ',', ',likely_leak,') > 0 THEN 2 "
    "WHEN instr(',' || {t}tags || ',', ',template_sibling,') > 0 THEN 0 ELSE 1 END)"
)
_P = _PRIORITY.format(t="i.")

# items_browse covers every column a listing shows or filters on except the
# payload, so that scans for a tag, a score range or a title never read the
# (large) payload pages: on 100,000 items this takes a tag count from ~400 ms
# to ~20 ms. items_priority serves the score orders, which rank by triage
# first: without it every page of 100,000 items sorts them all (~400 ms), with
# it a page is an index walk (~0.2 ms). records_signoff finds the newest
# sign-off (for the status bar) without walking back through every record.
INDEXES = f"""
CREATE INDEX IF NOT EXISTS items_browse ON items(queue, score, item_id, title, tags);
CREATE INDEX IF NOT EXISTS items_priority ON items(queue, {_PRIORITY.format(t="")}, score, item_id);
CREATE INDEX IF NOT EXISTS records_signoff ON records(seq) WHERE kind = 'signoff';
CREATE INDEX IF NOT EXISTS items_title ON items(queue, title COLLATE NOCASE, item_id);
"""

# True for an item that a later item of its subject replaces as the subject's row (an
# index probe of items_subject; rowids grow as items are ingested, never reused).
_SUPERSEDED = (
    "EXISTS (SELECT 1 FROM items n WHERE n.queue = i.queue AND n.subject = i.subject "
    "AND n.rowid > i.rowid)"
)
_EARLIER = (
    "(SELECT COUNT(*) FROM items n WHERE n.queue = i.queue AND n.subject = i.subject "
    "AND n.rowid < i.rowid)"
)

# seq of the item's effective decision, or NULL when it has none.
_EFFECTIVE_SEQ = (
    "(SELECT d.seq FROM records d WHERE d.queue = i.queue AND d.item_id = i.item_id "
    "AND d.kind = 'decision' AND NOT EXISTS (SELECT 1 FROM records x "
    "WHERE x.retracts = d.record_hash AND x.kind = 'retract') "
    "ORDER BY d.seq DESC LIMIT 1)"
)
# The same where a review plan leaves items unsettled (engine.agreement.plan): on each
# item of the connection's plan view, the decision shown is the view's (its viewer's own
# rating, or none), not the latest.
_VIEWED_SEQ = (
    "(CASE WHEN in_plan_view(i.queue, i.item_id) THEN plan_view_seq(i.queue, i.item_id) "
    f"ELSE {_EFFECTIVE_SEQ} END)"
)
# seq of every effective decision (of one queue when "{queue}" says so).
_LATEST = (
    "(SELECT MAX(d.seq) AS seq FROM records d WHERE d.kind = 'decision' {queue} "
    "AND NOT EXISTS (SELECT 1 FROM records x WHERE x.kind = 'retract' "
    "AND x.retracts = d.record_hash) {viewed} GROUP BY d.queue, d.item_id {shown})"
)


def set_view(conn: sqlite3.Connection, rows: list[tuple[str, str, int | None]]) -> None:
    """Gives the connection a plan view: (queue, item, the seq its listings show or None)
    per item a review plan leaves unsettled. Functions, not a table: a read-only
    connection writes nothing, not even a temporary table."""
    view = {(queue, item_id): seq for queue, item_id, seq in rows}
    conn.plan_view = view  # type: ignore[attr-defined]  # sealdesk's connection class

    def seqs(queue: str | None) -> str:
        shown = [s for (q, _), s in view.items() if s is not None and queue in (None, q)]
        return json.dumps(shown)

    conn.create_function("in_plan_view", 2, lambda q, i: (q, i) in view, deterministic=True)
    conn.create_function("plan_view_seq", 2, lambda q, i: view.get((q, i)), deterministic=True)
    conn.create_function("plan_view_seqs", 1, seqs)


def _viewing(conn: sqlite3.Connection) -> bool:
    return bool(getattr(conn, "plan_view", None))


def _effective_seq(conn: sqlite3.Connection) -> str:
    return _VIEWED_SEQ if _viewing(conn) else _EFFECTIVE_SEQ


def _latest(conn: sqlite3.Connection, queue: bool) -> str:
    """Gives the subquery of every effective decision's seq (of the queue bound first)."""
    if not _viewing(conn):
        return _LATEST.format(queue="AND d.queue = ?" if queue else "", viewed="", shown="")
    return _LATEST.format(
        queue="AND d.queue = ?" if queue else "",
        viewed="AND NOT in_plan_view(d.queue, d.item_id)",
        shown="UNION ALL SELECT value FROM json_each(plan_view_seqs(?))",
    )


_ORDER = {
    # Triage priority first, then the score. NULL scores sort as the smallest
    # value, so they come last when descending; every key runs in the same
    # direction so that one index (items_priority) serves both directions.
    "score_desc": f"{_P} DESC, i.score DESC, i.item_id DESC",
    "score_asc": f"{_P} ASC, i.score ASC, i.item_id ASC",
    # "id" is the human one a row shows (its title leads with the eval item's id, the
    # category, the claim), not the content hash; the hash only breaks ties.
    "id_asc": "i.title COLLATE NOCASE ASC, i.item_id ASC",
    "id_desc": "i.title COLLATE NOCASE DESC, i.item_id DESC",
}


@dataclass(frozen=True)
class ItemFilter:
    """What subset of a queue to show; every field is optional."""

    status: str | None = None  # undecided, accept, reject or skip
    tag: str | None = None  # a channel or tag from the item's summary
    score_min: float | None = None
    score_max: float | None = None
    text: str | None = None  # free text: title, id, tags and payload
    decided_by: str | None = None  # "me" or "others" (needs principal)
    principal: str | None = None  # who "me" is
    items: tuple[str, ...] | None = None  # only these item ids (a chosen set, e.g. a band)
    skip: tuple[str, ...] | None = None  # not these ids (items someone else holds a claim on)
    # True: one row per subject, its newest item (the review app's and ``sealdesk items``'
    # default); False: every item of every run. A chosen set (``items``) is listed whole
    # either way: it names exactly what to show.
    newest_only: bool = False

    def validate(self) -> ItemFilter:
        """Gives self after checking every field, or raises naming the field."""
        if self.status not in (None, *STATUSES):
            raise InputError(
                f"unknown status {self.status!r} (expected {', '.join(STATUSES)})", field="status"
            )
        if self.decided_by not in (None, *DECIDED_BY):
            raise InputError(
                f"unknown decided_by {self.decided_by!r} (expected me or others)",
                field="decided_by",
            )
        if self.items is not None and not all(isinstance(i, str) for i in self.items):
            raise InputError("item ids must be strings", field="items")
        if self.skip is not None and not all(isinstance(i, str) for i in self.skip):
            raise InputError("item ids must be strings", field="skip")
        if self.decided_by and not self.principal:
            raise InputError("decided by me/others needs a signing identity", field="decided_by")
        if (
            self.score_min is not None
            and self.score_max is not None
            and self.score_min > self.score_max
        ):
            raise InputError(
                f"score range is empty ({self.score_min} > {self.score_max})", field="score_min"
            )
        return self


@dataclass(frozen=True)
class ItemRow:
    """One row of a queue listing: enough to draw it, not the payload."""

    rowid: int
    queue: str
    item_id: str
    title: str
    score: float | None
    tags: tuple[str, ...]
    status: str  # undecided, accept, reject or skip
    principal: str | None  # who made the effective decision
    carry: str | None = None  # "carried" (status is the subject's) or "reopened", else None
    earlier: int = 0  # how many earlier items of its subject fold under this row


@dataclass(frozen=True)
class QueueProgress:
    """How far a queue is: its total and its effective decisions by kind (carried ones
    among them; ``carried`` and ``reopened`` count those and the items new evidence sent
    back to review)."""

    total: int
    accept: int
    reject: int
    skip: int
    carried: int = 0
    reopened: int = 0

    @property
    def decided(self) -> int:
        return self.accept + self.reject + self.skip


def ensure_indexes(conn: sqlite3.Connection) -> bool:
    """Gives True after creating the browse indexes, False if the database is read-only."""
    try:
        conn.executescript(INDEXES)
    except sqlite3.OperationalError:
        # A read-only copy of a workspace still browses, only more slowly.
        return False
    return True


def _ensure_priority_index(conn: sqlite3.Connection) -> None:
    """Makes the index the score orders need, once per database (workspaces made before
    it have none): a lookup when it is there, a one-off build when it is not."""
    if conn.in_transaction:
        return  # never inside someone's write: the next read builds it
    found = conn.execute(
        "SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = 'items_priority'"
    ).fetchone()
    if found is None and not conn.execute("PRAGMA query_only").fetchone()[0]:
        ensure_indexes(conn)


def _where(conn: sqlite3.Connection, queue: str, f: ItemFilter) -> tuple[str, list[Any]]:
    if queue not in QUEUES:
        raise InputError(f"unknown queue {queue!r}", field="queue")
    f.validate()
    effective = _effective_seq(conn)
    clauses = ["i.queue = ?"]
    args: list[Any] = [queue]
    if f.tag:
        clauses.append("instr(',' || i.tags || ',', ',' || ? || ',') > 0")
        args.append(f.tag)
    if f.score_min is not None:
        clauses.append("i.score >= ?")
        args.append(float(f.score_min))
    if f.score_max is not None:
        clauses.append("i.score <= ?")
        args.append(float(f.score_max))
    if f.items is not None:
        # One JSON parameter however many ids: no limit on SQL variables.
        clauses.append("i.item_id IN (SELECT value FROM json_each(?))")
        args.append(json.dumps(list(f.items)))
    if f.skip:
        clauses.append("i.item_id NOT IN (SELECT value FROM json_each(?))")
        args.append(json.dumps(list(f.skip)))
    if f.text:
        needle = f.text.lower()
        clauses.append(
            "(instr(lower(i.title), ?) > 0 OR instr(lower(i.item_id), ?) > 0 "
            "OR instr(lower(i.tags), ?) > 0 OR instr(lower(i.payload), ?) > 0)"
        )
        args += [needle] * 4
    carrying = subjects.enabled(conn)
    if _folds(conn, f):
        clauses.append(f"NOT {_SUPERSEDED}")
    own_decision = f"(SELECT r.decision FROM records r WHERE r.seq = {effective})"
    own_principal = f"(SELECT r.principal FROM records r WHERE r.seq = {effective})"
    if carrying:
        # An item's own decision wins; only an item without one takes its subject's.
        decision = f"COALESCE({own_decision}, {subjects.CARRIED_DECISION})"
        principal = f"COALESCE({own_principal}, {subjects.CARRIED_PRINCIPAL})"
    else:
        decision, principal = own_decision, own_principal
    if f.status == "undecided":
        clauses.append(
            f"{effective} IS NULL"
            + (f" AND {subjects.CARRIED_DECISION} IS NULL" if carrying else "")
        )
    elif f.status:
        clauses.append(f"{decision} = ?")
        args.append(f.status)
    if f.decided_by:
        op = "=" if f.decided_by == "me" else "<>"
        clauses.append(f"{principal} {op} ?")
        args.append(f.principal)
    return " AND ".join(clauses), args


def _folds(conn: sqlite3.Connection, f: ItemFilter) -> bool:
    """Says whether the listing shows one row per subject (not every run's items)."""
    return f.newest_only and f.items is None and subjects.enabled(conn)


def page(
    conn: sqlite3.Connection, queue: str, f: ItemFilter, sort: str, offset: int, limit: int
) -> list[ItemRow]:
    """Gives up to ``limit`` rows of a queue from ``offset``, filtered and sorted."""
    if sort not in _ORDER:
        raise InputError(f"unknown sort {sort!r} (expected {', '.join(SORTS)})", field="sort")
    where, args = _where(conn, queue, f)
    if sort.startswith("score"):
        _ensure_priority_index(conn)
    standing = subjects.STANDING_ROW if subjects.enabled(conn) else "NULL"
    earlier = _EARLIER if subjects.enabled(conn) else "0"
    effective = _effective_seq(conn)
    sql = (
        f"SELECT i.rowid, i.item_id, i.title, i.score, i.tags, {earlier}, "
        f"(SELECT r.decision || char(31) || r.principal FROM records r "
        f"WHERE r.seq = {effective}), "
        f"CASE WHEN {effective} IS NULL THEN {standing} END "
        f"FROM items i WHERE {where} ORDER BY {_ORDER[sort]} LIMIT ? OFFSET ?"
    )
    rows = []
    for rowid, item_id, title, score, tags, before, eff, subject_standing in conn.execute(
        sql, [*args, max(0, int(limit)), max(0, int(offset))]
    ):
        status, principal = eff.split("\x1f", 1) if eff else ("undecided", None)
        carry = None
        if subject_standing:
            decision, by, adds = subject_standing.split("\x1f", 2)
            if decision == "accept" or adds == "0":
                status, principal, carry = decision, by, "carried"
            else:
                carry = "reopened"
        rows.append(
            ItemRow(
                rowid,
                queue,
                item_id,
                title,
                score,
                tuple(tags.split(",")) if tags else (),
                status,
                principal,
                carry,
                before,
            )
        )
    return rows


def triage_ranks(conn: sqlite3.Connection, queue: str) -> bool:
    """Says whether the score orders of a queue rank by triage before the score: some
    item carries a triage tag (likely_leak, template_sibling), so the scores are in
    order only within each triage rank (an index walk of items_priority)."""
    found = conn.execute(
        f"SELECT EXISTS (SELECT 1 FROM items WHERE queue = ? "
        f"AND {_PRIORITY.format(t='')} IN (0, 2))",
        (queue,),
    ).fetchone()[0]
    return bool(found)


def count(conn: sqlite3.Connection, queue: str, f: ItemFilter) -> int:
    """Gives how many items of a queue pass the filter."""
    where, args = _where(conn, queue, f)
    if (
        (f.status or f.decided_by)
        and not (
            f.tag
            or f.text
            or f.score_min is not None
            or f.score_max is not None
            or f.items is not None
            or f.skip
        )
        and not (_folds(conn, f) and _rescanned(conn, queue))
    ):
        return _count_by_decision(conn, queue, f)
    return conn.execute(f"SELECT COUNT(*) FROM items i WHERE {where}", args).fetchone()[0]


def _rescanned(conn: sqlite3.Connection, queue: str) -> bool:
    """Says whether some subject of the queue has more than one item (so that one row
    per subject lists fewer rows than the queue holds items)."""
    found = conn.execute("SELECT 1 FROM subject_links WHERE queue = ? LIMIT 1", (queue,))
    return found.fetchone() is not None


def _count_by_decision(conn: sqlite3.Connection, queue: str, f: ItemFilter) -> int:
    """Gives the count of a filter on decisions alone from the ledger side.

    Probing the ledger once per item costs ~150 ms on 100,000 items; the
    effective decisions themselves are far fewer, so count those instead.
    Every decision record binds an item the workspace holds (verify checks
    it), so the undecided are the total less the decided.
    """
    conds = ["r.queue = ?"]
    args: list[str | None] = [queue]
    if f.status and f.status != "undecided":
        conds.append("r.decision = ?")
        args.append(f.status)
    if f.decided_by:
        conds.append("r.principal = ?" if f.decided_by == "me" else "r.principal <> ?")
        args.append(f.principal)
    viewing = _viewing(conn)
    decided = conn.execute(
        f"""SELECT COUNT(*) FROM records r JOIN {_latest(conn, True)} latest
        ON latest.seq = r.seq WHERE {" AND ".join(conds)}""",
        [queue, *([queue] if viewing else []), *args],
    ).fetchone()[0]
    carried = sum(
        n
        for _, status, principal, n in subjects.carry_counts(conn, queue)
        if status != "reopened"
        and f.status in (None, "undecided", status)
        and (not f.decided_by or (principal == f.principal) == (f.decided_by == "me"))
    )
    if f.status != "undecided":
        return decided + carried
    if f.decided_by:
        return 0  # an undecided item was decided by no one
    total = conn.execute("SELECT COUNT(*) FROM items WHERE queue = ?", (queue,)).fetchone()[0]
    return total - decided - carried


def position(
    conn: sqlite3.Connection, queue: str, f: ItemFilter, sort: str, item_id: str
) -> int | None:
    """Gives the index of an item within the filtered, sorted listing, or None."""
    if sort not in _ORDER:
        raise InputError(f"unknown sort {sort!r} (expected {', '.join(SORTS)})", field="sort")
    row = conn.execute(
        f"SELECT score, title, {_PRIORITY.format(t='')} FROM items WHERE queue = ? AND item_id = ?",
        (queue, item_id),
    ).fetchone()
    if row is None:
        return None
    where, args = _where(conn, queue, f)
    before, extra = _rows_before(sort, row[0], row[1], item_id)
    if sort.startswith("score"):
        # a higher priority lists first when descending, last when ascending
        op = ">" if sort == "score_desc" else "<"
        before = f"{_P} {op} ? OR ({_P} = ? AND ({before}))"
        extra = [row[2], row[2], *extra]
    return conn.execute(
        f"SELECT COUNT(*) FROM items i WHERE {where} AND ({before})", [*args, *extra]
    ).fetchone()[0]


def _rows_before(sort: str, score: float | None, title: str, item_id: str) -> tuple[str, list[Any]]:
    """Gives the condition for rows listed before an item in a sort order."""
    if sort in ("id_asc", "id_desc"):
        op = "<" if sort == "id_asc" else ">"
        return (
            f"i.title COLLATE NOCASE {op} ? OR (i.title = ? COLLATE NOCASE AND i.item_id {op} ?)",
            [title, title, item_id],
        )
    # SQLite sorts NULL as the smallest score: last when descending, first ascending.
    if sort == "score_desc":
        if score is None:
            return "i.score IS NOT NULL OR (i.score IS NULL AND i.item_id > ?)", [item_id]
        return "i.score > ? OR (i.score = ? AND i.item_id > ?)", [score, score, item_id]
    if score is None:
        return "i.score IS NULL AND i.item_id < ?", [item_id]
    return (
        "i.score IS NULL OR i.score < ? OR (i.score = ? AND i.item_id < ?)",
        [score, score, item_id],
    )


def item_ids(
    conn: sqlite3.Connection, queue: str, f: ItemFilter, sort: str, limit: int
) -> list[str]:
    """Gives the ids of up to ``limit`` items passing the filter, in the listing's order."""
    if sort not in _ORDER:
        raise InputError(f"unknown sort {sort!r} (expected {', '.join(SORTS)})", field="sort")
    where, args = _where(conn, queue, f)
    sql = f"SELECT i.item_id FROM items i WHERE {where} ORDER BY {_ORDER[sort]} LIMIT ?"
    return [r[0] for r in conn.execute(sql, [*args, max(0, int(limit))])]


def items_by_field(
    conn: sqlite3.Connection,
    queue: str,
    path: str,
    values: list[Any],
    run_id: str | None = None,
) -> dict[Any, list[str]]:
    """Gives, for each value, the ids of the queue's items whose payload holds it at
    ``path`` (a JSON path such as ``$.eval.id``), within one run if named.

    It reads every payload of the queue (or run): callers run it off the UI thread.
    """
    if queue not in QUEUES:
        raise InputError(f"unknown queue {queue!r}", field="queue")
    if not path.startswith("$"):
        raise InputError(f"not a JSON path: {path!r}", field="path")
    sql = (
        "SELECT json_extract(payload, ?) AS v, item_id FROM items WHERE queue = ? "
        "AND v IN (SELECT value FROM json_each(?))"
    )
    args: list[Any] = [path, queue, json.dumps(values)]
    if run_id is not None:
        sql += " AND run_id = ?"
        args.append(run_id)
    out: dict[Any, list[str]] = {}
    for value, item_id in conn.execute(sql + " ORDER BY item_id", args):
        out.setdefault(value, []).append(item_id)
    return out


def tags(conn: sqlite3.Connection, queue: str, limit: int = 50) -> list[str]:
    """Gives the distinct tags of a queue's items, most common first."""
    counts: dict[str, int] = {}
    for joined, n in conn.execute(
        "SELECT tags, COUNT(*) FROM items WHERE queue = ? AND tags <> '' GROUP BY tags", (queue,)
    ):
        for tag in joined.split(","):
            counts[tag] = counts.get(tag, 0) + n
    return sorted(counts, key=lambda t: (-counts[t], t))[:limit]


def progress(conn: sqlite3.Connection) -> dict[str, QueueProgress]:
    """Gives every queue's total and effective decisions by kind."""
    totals = dict.fromkeys(QUEUES, 0)
    for queue, n in conn.execute("SELECT queue, COUNT(*) FROM items GROUP BY queue"):
        totals[queue] = n
    decided = {q: {"accept": 0, "reject": 0, "skip": 0} for q in QUEUES}
    sql = f"""
    SELECT r.queue, r.decision, COUNT(*) FROM records r JOIN {_latest(conn, False)} latest
    ON latest.seq = r.seq GROUP BY r.queue, r.decision
    """
    for queue, decision, n in conn.execute(sql, [None] if _viewing(conn) else []):
        if queue in decided and decision in decided[queue]:
            decided[queue][decision] = n
    carried = dict.fromkeys(QUEUES, 0)
    reopened = dict.fromkeys(QUEUES, 0)
    for queue, status, _, n in subjects.carry_counts(conn):
        if queue not in decided:
            continue
        if status == "reopened":
            reopened[queue] += n
        else:
            decided[queue][status] += n
            carried[queue] += n
    return {
        q: QueueProgress(totals[q], **decided[q], carried=carried[q], reopened=reopened[q])
        for q in QUEUES
    }


@dataclass(frozen=True)
class Watermark:
    """A cheap fingerprint of what the workspace holds; it changes when anything is added.

    Items and records are never updated or deleted, so the largest rowid and
    the largest seq change exactly when something new arrives; both are O(1).
    """

    items_rowid: int
    head_seq: int


def watermark(conn: sqlite3.Connection) -> Watermark:
    """Gives the current watermark (largest item rowid, ledger head seq)."""
    rowid = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM items").fetchone()[0]
    head = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM records").fetchone()[0]
    return Watermark(rowid, head)


@dataclass(frozen=True)
class SignoffMark:
    """The newest sign-off record: where it stands in the ledger and who signed it."""

    seq: int
    record_hash: str
    principal: str


def last_signoff(conn: sqlite3.Connection) -> SignoffMark | None:
    """Gives the newest sign-off record's seq, hash and signer, or None before the first."""
    row = conn.execute(
        "SELECT seq, record_hash, principal FROM records WHERE kind = 'signoff' "
        "ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    return None if row is None else SignoffMark(*row)
