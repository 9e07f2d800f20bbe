"""Verify's fast path for common rows may pass only what the general path passes.

``RecordChecker._pass_common`` checks a row of the common shape on the
message's text fields, without building a body, and either passes it or
hands it to ``_stage``, which passes it or names the fault. These tests hold
the fast path to ``_stage`` on real signed rows, edited one to three ways:
signed fields (re-encoded, with or without the columns and the hash kept in
step), stored columns, the signature, and the workspace's items.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.canonical import canonical_json
from engine.ledger import sshsig
from engine.ledger.authority import AUTHORITY_KINDS, signer_policy
from engine.ledger.fastbody import common_fields
from engine.ledger.records import BODY_FIELDS
from engine.ledger.verify import (
    _COLUMNS,
    _KIND_COLUMN,
    _ROW_SQL,
    RecordChecker,
    _body_facts,
    _dearmored,
    load_context,
)
from tests.support.backlog import make_items

QUEUES = ("weak_categories", "flagged_pairs")


@pytest.fixture
def desk(workspace, enrol):
    """Real signed rows of every kind the fast path takes, by two signers in three roles."""
    rita = enrol("rita", "reviewer", "lead")
    ada = enrol("ada", "adjudicator")
    workspace.ingest(
        make_items(2, queue="weak_categories")
        + make_items(2, queue="flagged_pairs")
        + make_items(1, queue="adjudication")
    )
    first = workspace.decide(rita, "weak_categories", "item-0", "accept", role="reviewer")
    workspace.decide(rita, "weak_categories", "item-1", "reject", role="lead")
    workspace.decide(rita, "flagged_pairs", "item-0", "skip", role="reviewer")
    workspace.decide(ada, "adjudication", "item-0", "accept", role="adjudicator")
    workspace.note(rita, "flagged_pairs", "item-1", "looked at it", role="reviewer")
    workspace.retract(
        rita, "weak_categories", "item-0", record_hash=first.record_hash, role="reviewer"
    )
    ctx = load_context(
        workspace.conn,
        workspace.db_path,
        workspace.workspace_id,
        signer_policy(workspace.conn, workspace.allowed_signers_path),
    )
    # The genesis and enrol records carry data: they always take the general path.
    rows = [
        row
        for row in workspace.conn.execute(_ROW_SQL, (1, 99)).fetchall()
        if row[_KIND_COLUMN] not in AUTHORITY_KINDS
    ]
    return ctx, rows


def checks(checker: RecordChecker, row: tuple):
    """Gives (fast answer, general answer) for one row."""
    text = row[3]
    message = text.encode("utf-8")
    ready = (message, hashlib.sha256(message).hexdigest())
    blob, digest = _dearmored(row[4]), hashlib.sha512(message).digest()
    fields = common_fields(text)
    fast = None if fields is None else checker._pass_common(row, *ready, fields, blob, digest)
    return fast, checker._stage(row, *ready, None, blob, digest)


def same_deferred(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a[1:] == b[1:] and a[0].public_bytes_raw() == b[0].public_bytes_raw()


def test_every_unedited_row_takes_the_fast_path(desk):
    ctx, rows = desk
    checker = RecordChecker(ctx)
    kinds = set()
    for row in rows:
        fast, slow = checks(checker, row)
        assert fast is not None, row[0]
        assert slow[0] is None and slow[3] is None
        assert fast[1] == _body_facts(slow[1])
        kinds.add(fast[1][2])
    assert kinds == {"decision", "note", "retract"}


def warmed(ctx, rows) -> RecordChecker:
    """A checker that has seen each signer's first signature, as it has in a verify."""
    checker = RecordChecker(ctx)
    for good in rows:
        checker._verifier.prepare(
            sshsig.dearmor(good[4]), good[3].encode(), json.loads(good[3])["role"] + "@sealdesk"
        )
    return checker


# Rows of the desk: 0 a reviewer's decision, 4 a note, 5 a retract. One case per test
# the fast path makes; each must go to the general path, which names the fault.
BROKEN = [
    (0, [("column", "record_hash", "0" * 64)], "record hash does not match"),
    (0, [("signed", "v", 2)], "version-1"),
    (0, [("column", "seq", 9)], "signed as seq 4"),  # after the genesis and two enrolments
    (
        0,
        [("column", "seq", "1")],
        "stored at seq 1 but signed",
    ),  # text, as a rebuilt table may hold
    (0, [("column", "prev_hash", "1" * 64)], "previous-hash column"),
    (0, [("column", "decision", "reject")], "column 'decision' was edited"),
    (0, [("signed", "workspace", "elsewhere")], "another workspace"),
    (0, [("signed", "decision", "maybe")], "unknown decision"),
    (0, [("signed", "retracts", "ab" * 32)], "'retracts', which only a retract"),
    (5, [("signed", "decision", "accept")], "'decision', which only a decision"),
    (5, [("signed", "retracts", "")], "names no record"),
    (4, [("signed", "note", "")], "carries no 'note'"),
    (4, [("signed", "decision", "accept")], "'decision', which only a decision"),
    (4, [("signed", "retracts", "ab" * 32)], "'retracts', which only a retract"),
    (4, [("signed", "kind", "vote")], "unknown record kind"),
    (4, [("signed", "kind", "signoff")], "a signoff record carries"),
    (0, [("signed", "role", "auditor")], "unknown role"),
    (0, [("signed", "role", "adjudicator")], "signature namespace"),
    (1, [("signed", "queue", "flagged_pairs")], "role lead may not decide"),
    (0, [("signed", "queue", None)], "unknown queue"),
    (0, [("item", 0, None)], "item payload edited"),
    (0, [("item", 1, None)], "is not the workspace's item"),
    (0, [("item", 2, None)], "run artifact hash differs"),
    (0, [("signed", "key", "SHA256:" + "A" * 43)], "differs from the record's key"),
    (0, [("signed", "principal", "ada")], "is enrolled as rita, not ada"),
    (0, [("signature", 3, None)], "signature namespace"),
]


@pytest.mark.parametrize(
    "index, changes, reason", BROKEN, ids=[f"{i}-{c[0][1]}-{c[0][2]}" for i, c, _ in BROKEN]
)
def test_each_rule_of_the_fast_path_hands_a_broken_row_on(desk, index, changes, reason):
    ctx, rows = desk
    row, row_ctx = edited(rows, ctx, index, changes)
    fast, slow = checks(warmed(row_ctx, rows), row)
    assert fast is None
    named = slow[0] or slow[3]
    assert named is not None and reason in named, named


PLAIN = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E, blacklist_characters='"\\'),
    max_size=6,
)


@st.composite
def edits(draw, rows):
    """A row index and one to three edits of it."""
    bodies = [json.loads(row[3]) for row in rows]
    seen = {name: sorted({json.dumps(b[name]) for b in bodies}) for name in BODY_FIELDS}
    out = []
    for _ in range(draw(st.integers(1, 3))):
        how = draw(
            st.sampled_from(
                ["signed", "signed", "signed", "unsynced", "column", "signature", "item"]
            )
        )
        if how in ("signed", "unsynced"):
            name = draw(st.sampled_from(sorted(BODY_FIELDS)))
            value = draw(
                st.one_of(
                    st.sampled_from(seen[name]).map(json.loads),
                    st.none(),
                    PLAIN,
                    st.integers(-1, 9),
                    st.booleans(),
                    st.just(""),
                    st.just("lead"),
                    st.just("signoff"),
                    st.just("adjudication"),
                )
            )
            out.append((how, name, value))
        elif how == "column":
            column = draw(st.sampled_from(("seq", "record_hash", "prev_hash", *_COLUMNS)))
            out.append(
                (
                    how,
                    column,
                    draw(
                        st.one_of(st.none(), PLAIN, st.integers(0, 9), st.integers(0, 9).map(str))
                    ),
                )
            )
        elif how == "signature":
            out.append((how, draw(st.integers(0, len(rows) - 1)), None))
        else:
            out.append((how, draw(st.integers(0, 2)), None))
    return draw(st.integers(0, len(rows) - 1)), out


def edited(rows, ctx, index: int, changes):
    """Gives (row, context) after the edits."""
    names = ("seq", "record_hash", "prev_hash", "message", "signature", *_COLUMNS)
    row = dict(zip(names, rows[index], strict=True))
    body = json.loads(row["message"])
    items = dict(ctx.items)
    for how, what, value in changes:
        if how in ("signed", "unsynced"):
            body[what] = value
            row["message"] = canonical_json(body).decode("utf-8")
            row["record_hash"] = hashlib.sha256(row["message"].encode()).hexdigest()
            if how == "signed":  # the columns say what the body says
                for name in _COLUMNS:
                    row[name] = body[name]
                row["seq"], row["prev_hash"] = body["seq"], body["prev"]
        elif how == "column":
            row[what] = value
        elif how == "signature":
            row["signature"] = rows[what][4]
        else:  # the workspace's copy of the item: edited payload, another item or run
            key = (body.get("queue"), body.get("item_id"))
            if key in items:
                sha, run, _ = items[key]
                items[key] = [
                    (sha, run, "item payload edited"),
                    ("0" * 64, run, None),
                    (sha, "1" * 64, None),
                ][what]
    return tuple(row[name] for name in names), dataclasses.replace(ctx, items=items)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_the_fast_path_never_passes_a_row_the_general_path_refuses(desk, data):
    ctx, rows = desk
    index, changes = data.draw(edits(rows))
    row, row_ctx = edited(rows, ctx, index, changes)
    fast, slow = checks(warmed(row_ctx, rows), row)
    if fast is not None:
        reason, body, deferred, after = slow
        assert reason is None and after is None, (changes, reason, after)
        assert fast[0] is None and fast[3] is None
        assert fast[1] == _body_facts(body)
        assert same_deferred(fast[2], deferred)
