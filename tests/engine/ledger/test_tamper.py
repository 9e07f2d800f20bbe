"""Every kind of tampering is caught by verify, naming the right record."""

from __future__ import annotations

import sqlite3
from datetime import UTC

import pytest

from engine.ledger import store
from engine.signoff.verify import verify_workspace
from engine.workspace import BacklogItem
from tests.conftest import FOUNDER
from tests.support.backlog import make_items
from tests.support.below_policy import append_unchecked

DROP_TRIGGERS = """
DROP TRIGGER records_no_update; DROP TRIGGER records_no_delete; DROP TRIGGER records_next_link;
"""


@pytest.fixture
def ledger(workspace, enrol):
    """A workspace with five items and five decisions by rita (reviewer).

    Gives (workspace, rita's signer, the five decisions' seqs): the genesis
    and rita's enrolment come first.
    """
    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(5))
    seqs = [
        workspace.decide(rita, "flagged_pairs", f"item-{i}", "accept" if i % 2 else "reject").seq
        for i in range(5)
    ]
    assert verify_workspace(workspace).ok
    return workspace, rita, seqs


def raw(ws) -> sqlite3.Connection:
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript(DROP_TRIGGERS)
    return conn


def first_fault(ws):
    report = verify_workspace(ws, processes=1)
    assert not report.ok
    return report.first


def test_untampered_ledger_verifies(ledger):
    ws, _, seqs = ledger
    report = verify_workspace(ws)
    authority = seqs[0] - 1  # the genesis and rita's enrolment, both signed by the founder
    assert report.ok and report.records == seqs[-1] == authority + 5
    assert report.signers == {FOUNDER: authority, "rita": 5}


def test_field_edited_by_raw_sql_is_caught(ledger):
    ws, _, seqs = ledger
    raw(ws).execute("UPDATE records SET decision='accept' WHERE seq=?", (seqs[2],))
    fault = first_fault(ws)
    assert fault.seq == seqs[2] and "decision" in fault.reason


def test_message_edited_by_raw_sql_is_caught(ledger):
    ws, _, seqs = ledger
    raw(ws).execute(
        "UPDATE records SET message=replace(message,'\"reject\"','\"accept\"') WHERE seq=?",
        (seqs[2],),
    )
    fault = first_fault(ws)
    assert fault.seq == seqs[2] and "hash" in fault.reason


def test_deleted_middle_record_is_caught(ledger):
    ws, _, seqs = ledger
    raw(ws).execute("DELETE FROM records WHERE seq=?", (seqs[2],))
    fault = first_fault(ws)
    assert fault.seq == seqs[2] and "missing" in fault.reason


def test_reordered_records_are_caught(ledger):
    ws, _, seqs = ledger
    conn = raw(ws)
    conn.execute("UPDATE records SET seq=-1 WHERE seq=?", (seqs[1],))
    conn.execute("UPDATE records SET seq=? WHERE seq=?", (seqs[1], seqs[2]))
    conn.execute("UPDATE records SET seq=? WHERE seq=-1", (seqs[2],))
    fault = first_fault(ws)
    assert fault.seq == seqs[1]


def test_signature_swapped_between_records_is_caught(ledger):
    ws, _, seqs = ledger
    conn = raw(ws)
    a, b = seqs[1], seqs[3]
    sig_a = conn.execute("SELECT signature FROM records WHERE seq=?", (a,)).fetchone()[0]
    sig_b = conn.execute("SELECT signature FROM records WHERE seq=?", (b,)).fetchone()[0]
    conn.execute("UPDATE records SET signature=? WHERE seq=?", (sig_b, a))
    conn.execute("UPDATE records SET signature=? WHERE seq=?", (sig_a, b))
    fault = first_fault(ws)
    assert fault.seq == a and "signature" in fault.reason


def test_an_edited_enrolment_grants_nothing(ledger):
    """The enrol record names its roles in signed bytes: promoting rita by editing it (and
    its hash) breaks its signature, and every record she signed under it is then unsigned-for."""
    import hashlib

    ws, _, seqs = ledger
    conn = raw(ws)
    enrol_seq, message = conn.execute(
        "SELECT seq, message FROM records WHERE kind='enrol'"
    ).fetchone()
    forged = message.replace('"roles":["reviewer"]', '"roles":["reviewer","adjudicator"]')
    assert forged != message
    conn.execute(
        "UPDATE records SET message=?, record_hash=? WHERE seq=?",
        (forged, hashlib.sha256(forged.encode()).hexdigest(), enrol_seq),
    )
    report = verify_workspace(ws, processes=1)
    assert report.first.seq == enrol_seq and "signature" in report.first.reason
    # Every decision rita signed has no enrolment behind it now (the first one's link
    # to the edited record is broken as well).
    unenrolled = {f.seq for f in report.faults if "never enrolled" in f.reason}
    assert unenrolled == set(seqs), report.faults


def test_record_by_a_key_never_enrolled_is_caught(ledger, keygen):
    from engine.ledger.signers import FileSigner

    ws, _, seqs = ledger
    mallory = FileSigner(keygen("mallory"))
    append_unchecked(
        ws,
        mallory,
        "rita",
        "reviewer",
        "decision",
        queue="flagged_pairs",
        item_id="item-0",
        decision="accept",
    )
    fault = first_fault(ws)
    assert fault.seq == seqs[-1] + 1 and "never enrolled" in fault.reason


def test_record_in_a_role_the_signer_lacks_is_caught(ledger, enrol):
    ws, rita, seqs = ledger
    ws.ingest([BacklogItem.make("adjudication", "cand-1", "run-2", {"span": "x"})])
    # rita is a reviewer only; sign as adjudicator by going below the policy layer.
    append_unchecked(
        ws,
        rita,
        "rita",
        "adjudicator",
        "decision",
        queue="adjudication",
        item_id="cand-1",
        decision="accept",
    )
    fault = first_fault(ws)
    assert fault.seq == seqs[-1] + 1 and "adjudicator" in fault.reason


def test_record_naming_an_item_hash_the_workspace_does_not_hold_is_caught(ledger):
    ws, rita, seqs = ledger
    append_unchecked(
        ws,
        rita,
        "rita",
        "reviewer",
        "decision",
        queue="flagged_pairs",
        item_id="item-1",
        decision="accept",
        item_sha256="ab" * 32,
        run_sha256=ws.run_manifest_sha256("run-1"),
    )
    fault = first_fault(ws)
    assert fault.seq == seqs[-1] + 1 and "item hash" in fault.reason


def test_truncated_tail_is_not_a_fault_without_a_checkpoint(ledger):
    # Without an external checkpoint a dropped tail is indistinguishable from a
    # shorter ledger; sign-off checkpoints (verify --checkpoint) catch it.
    ws, _, seqs = ledger
    raw(ws).execute("DELETE FROM records WHERE seq=?", (seqs[-1],))
    report = verify_workspace(ws)
    assert report.ok and report.records == seqs[-1] - 1


def test_verify_cli_names_the_first_bad_record(ledger, sealdesk):
    ws, _, seqs = ledger
    raw(ws).execute("UPDATE records SET principal='lena' WHERE seq=?", (seqs[3],))
    proc = sealdesk("verify", workspace=ws.root)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"FAIL: record {seqs[3]}: column 'principal' was edited")


def raw_items(ws) -> sqlite3.Connection:
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript("DROP TRIGGER items_no_update; DROP TRIGGER runs_no_update;")
    return conn


def test_item_payload_edited_under_its_kept_hash_is_caught(ledger):
    # The record binds item_sha256; the reviewer was shown the payload. Editing
    # the payload while keeping the hash column must not pass as the same item.
    ws, _, seqs = ledger
    raw_items(ws).execute(
        "UPDATE items SET payload=replace(payload, 'eval text 2', "
        "'other text') WHERE item_id='item-2'"
    )
    report = verify_workspace(ws, processes=1)
    assert not report.ok
    record_faults = [f for f in report.faults if f.seq == seqs[2]]
    assert record_faults and "payload" in record_faults[0].reason
    assert any(f.seq == 0 and "flagged_pairs/item-2" in f.reason for f in report.faults)


def test_run_manifest_edited_under_its_kept_hash_is_caught(ledger):
    ws, _, seqs = ledger
    raw_items(ws).execute("UPDATE runs SET manifest='{\"kind\":\"forged\"}' WHERE run_id='run-1'")
    report = verify_workspace(ws, processes=1)
    assert not report.ok
    assert any(f.seq == seqs[0] and "manifest" in f.reason for f in report.faults)
    assert any(f.seq == 0 and "run-1" in f.reason for f in report.faults)


def test_an_undecided_item_edited_after_ingest_fails_verify_naming_it(ledger, sealdesk):
    ws, *_ = ledger
    ws.ingest(make_items(7)[5:])
    raw_items(ws).execute(
        "UPDATE items SET payload='{\"text\":\"swapped\"}' WHERE item_id='item-6'"
    )
    proc = sealdesk("verify", workspace=ws.root)
    assert proc.returncode == 1
    assert proc.stderr.startswith("FAIL: item flagged_pairs/item-6: ")


def test_no_decision_is_signed_about_an_item_whose_payload_was_edited(ledger):
    from engine.errors import IntegrityError

    ws, rita, seqs = ledger
    raw_items(ws).execute(
        "UPDATE items SET payload='{\"text\":\"swapped\"}' WHERE item_id='item-4'"
    )
    with pytest.raises(IntegrityError, match="payload"):
        ws.decide(rita, "flagged_pairs", "item-4", "accept")
    assert ws.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == seqs[-1]


def forge(ws, signer, **fields):
    """Appends a record signed by a real key but built by hand (below sealdesk's checks)."""
    import hashlib

    from engine.canonical import canonical_json
    from engine.ledger import sshsig
    from engine.ledger.records import make_body, utc_now

    seq, prev = store.head(ws.conn)
    binding = ws._item_binding(ws.conn, "flagged_pairs", "item-0")
    body = make_body(
        workspace=ws.workspace_id,
        seq=seq + 1,
        prev=prev,
        kind="decision",
        principal="rita",
        role="reviewer",
        key=signer.public_key.fingerprint,
        time=utc_now(),
        queue="flagged_pairs",
        item_id="item-0",
        decision="accept",
        **binding,
    )
    body.update(fields)
    message = canonical_json(body)
    signature = sshsig.armor(signer.sign(message, "reviewer@sealdesk"))
    ws.conn.execute(
        "INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            seq + 1,
            hashlib.sha256(message).hexdigest(),
            prev,
            body["kind"],
            body["queue"],
            body["item_id"],
            body["item_sha256"],
            body["decision"],
            body["principal"],
            body["role"],
            body["retracts"],
            body["time"],
            message.decode(),
            signature,
        ),
    )
    return seq + 1


def test_a_message_holding_nan_is_a_fault_of_its_record_not_a_crash(ledger):
    import hashlib

    ws, _, seqs = ledger
    conn = raw(ws)
    message = conn.execute("SELECT message FROM records WHERE seq=?", (seqs[1],)).fetchone()[0]
    forged = message.replace('"note":null', '"note":NaN')
    assert forged != message
    conn.execute(
        "UPDATE records SET message=?, record_hash=? WHERE seq=?",
        (forged, hashlib.sha256(forged.encode()).hexdigest(), seqs[1]),
    )
    fault = first_fault(ws)
    assert fault.seq == seqs[1] and "canonical" in fault.reason


def test_a_signed_time_that_is_not_a_utc_timestamp_is_a_fault(ledger, founder_key):
    from engine.ledger.enrol import enrol
    from engine.ledger.signers import FileSigner

    ws, rita, _ = ledger
    # A validity window puts the signed time into the signer check as well.
    enrol(
        ws.db,
        ws.workspace_id,
        FileSigner(founder_key),
        "rita",
        ("reviewer",),
        rita.public_key,
        valid_before="2999-12-31T00:00:00.000000Z",
    )
    assert ws.authority().grant_of("rita", rita.public_key.blob).valid_before.startswith("2999")
    seq = forge(ws, rita, time="yesterday")
    fault = first_fault(ws)
    assert fault.seq == seq and "time" in fault.reason


def test_a_signed_note_that_is_not_text_is_a_fault(ledger):
    ws, rita, _ = ledger
    seq = forge(ws, rita, note={"html": "<b>"})
    fault = first_fault(ws)
    assert fault.seq == seq and "note" in fault.reason


@pytest.mark.parametrize("field", ["seq", "v"])
def test_a_signed_integer_field_holding_true_is_a_fault(ledger, field):
    # JSON true equals 1 in Python; the signed bytes must still say an integer.
    ws, rita, _ = ledger
    conn = raw(ws)
    conn.execute("DELETE FROM records")
    ws.conn.executescript(store.SCHEMA)
    seq = forge(ws, rita, **{field: True})
    assert seq == 1
    # With the genesis gone the ledger is also reported unanchored (at seq 0); the record's
    # own fault is the first one at a seq.
    report = verify_workspace(ws, processes=1)
    fault = min((f for f in report.faults if f.seq), key=lambda f: f.seq)
    assert fault.seq == 1 and f"'{field}'" in fault.reason


def test_a_records_table_rebuilt_without_strict_types_is_a_fault_not_a_crash(ledger):
    ws, _, seqs = ledger
    conn = raw(ws)
    conn.executescript(
        "ALTER TABLE records RENAME TO old; "
        "CREATE TABLE records AS SELECT * FROM old; DROP TABLE old;"
    )
    conn.execute("UPDATE records SET message=CAST(message AS BLOB) WHERE seq=?", (seqs[3],))
    fault = first_fault(ws)
    assert fault.seq == seqs[3]


@pytest.mark.parametrize("stored", ["'three'", "3.5", "NULL", "X'03'"])
def test_a_record_whose_seq_is_not_an_integer_is_a_fault_not_a_crash(ledger, stored):
    # A table rebuilt without INTEGER PRIMARY KEY can hold any seq. Verify reads the
    # chain by integer ranges, so such a row is named, not skipped (the app reads it).
    ws, _, seqs = ledger
    conn = raw(ws)
    conn.executescript(
        "ALTER TABLE records RENAME TO old; "
        "CREATE TABLE records AS SELECT * FROM old; DROP TABLE old;"
    )
    conn.execute("INSERT INTO records SELECT * FROM records WHERE seq = ?", (seqs[2],))
    conn.execute(
        f"UPDATE records SET seq = {stored} WHERE rowid = (SELECT MAX(rowid) FROM records)"
    )
    report = verify_workspace(ws, processes=1)
    assert report.first.seq == 0 and "not an integer" in report.first.reason, report.faults


def test_a_record_backdated_before_the_one_it_follows_is_caught(ledger):
    # A key whose valid-before has passed could otherwise sign a new head record
    # claiming a time when it was still valid.
    ws, rita, _ = ledger
    seq = forge(ws, rita, time="2000-01-01T00:00:00.000000Z")
    fault = first_fault(ws)
    assert fault.seq == seq and "earlier" in fault.reason


def test_backdating_is_caught_across_the_ranges_verify_splits_the_chain_into(ledger, monkeypatch):
    from engine.ledger import verify

    ws, rita, _ = ledger
    seq = forge(ws, rita, time="2000-01-01T00:00:00.000000Z")
    monkeypatch.setattr(verify, "_RANGE", seq - 1)  # the forged record starts a new range
    report = verify_workspace(ws, processes=1)
    assert [f.seq for f in report.faults] == [seq]


def test_appends_never_go_back_in_time_when_the_clock_lags_a_little(ledger):
    from datetime import datetime, timedelta

    ws, rita, _ = ledger
    ahead = (datetime.now(UTC) + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    forge(ws, rita, time=ahead)
    record = ws.decide(rita, "flagged_pairs", "item-1", "reject")
    assert record.body["time"] >= ahead
    assert verify_workspace(ws, processes=1).ok


def test_a_head_dated_far_in_the_future_stops_appends_naming_it(ledger):
    from engine.errors import IntegrityError

    ws, rita, _ = ledger
    seq = forge(ws, rita, time="2999-01-01T00:00:00.000000Z")
    with pytest.raises(IntegrityError, match="clock") as err:
        ws.decide(rita, "flagged_pairs", "item-1", "reject")
    assert err.value.seq == seq
    assert ws.conn.execute("SELECT MAX(seq) FROM records").fetchone()[0] == seq


@pytest.mark.parametrize(
    "fields,named",
    [
        ({"kind": "note", "note": "fyi"}, "decision"),  # a note that also says "accept"
        ({"retracts": "ab" * 32}, "retracts"),  # a decision that names a retract
        ({"data": {"hidden": True}}, "data"),  # a decision carrying sign-off data
    ],
)
def test_a_signed_field_that_its_kind_never_carries_is_a_fault(ledger, fields, named):
    ws, rita, _ = ledger
    seq = forge(ws, rita, **fields)
    fault = first_fault(ws)
    assert fault.seq == seq and named in fault.reason
