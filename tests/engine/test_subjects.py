"""Subjects bind what a decision carries to: the links and the subject column are checked.

A decision signs an item's ``item_sha256``, the hash of a payload that states
the item's subject; whether it carries to another item of that subject is read
through ``items.subject`` and ``subject_links``. Those are derived, so each is
re-derived from the payloads by verify, and an items file that states a subject
its payload does not is refused.
"""

from __future__ import annotations

import sqlite3

import pytest

from engine import subjects
from engine.canonical import canonical_json
from engine.errors import IntegrityError, PermissionRefused
from engine.item_query import ItemFilter
from engine.signoff.summary import sign_off
from engine.signoff.verify import verify_workspace
from tests.support.backlog import write_items_file
from tests.support.subjects import QUEUE, WEAK, flagged, weak


@pytest.fixture
def rescanned(workspace, enrol):
    """Gives the workspace after rita rejected q-1's first item and a second run found
    q-1 again with a new pool match (re-opened) and q-2 again with nothing new."""
    rita = enrol("rita", "reviewer")
    workspace.ingest(
        [
            flagged("a1", "run-1", "q-1", {"doc-1": 0.5}),
            flagged("b1", "run-1", "q-2", {"doc-3": 0.4}),
        ]
    )
    workspace.decide(rita, QUEUE, "a1", "reject")
    workspace.decide(rita, QUEUE, "b1", "reject")
    result = workspace.ingest(
        [
            flagged("a2", "run-2", "q-1", {"doc-1": 0.5, "doc-2": 0.9}),
            flagged("b2", "run-2", "q-2", {"doc-3": 0.4}),
        ]
    )
    assert (result.added, result.related) == (2, 2)
    status = {r["item_id"]: r for r in workspace.items(queue=QUEUE)}
    assert status["a2"]["status"] == "undecided"
    assert status["a2"]["reopened"]["new"] == [{"match": "pool:doc-2"}]
    assert status["b2"]["status"] == "reject"
    assert status["b2"]["carried_from"]["item_id"] == "b1"
    assert verify_workspace(workspace, processes=1).ok
    return workspace


def raw(ws, *triggers: str) -> sqlite3.Connection:
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript("".join(f"DROP TRIGGER {t};" for t in triggers))
    return conn


def test_a_link_edited_to_carry_a_reject_over_new_evidence_fails_verify(rescanned, sealdesk):
    ws = rescanned
    raw(ws, "subject_links_no_update").execute(
        "UPDATE subject_links SET adds = 0, new = '[]' WHERE item_id = 'a2' AND other_id = 'a1'"
    )
    # The forged link is read as written: the reject now carries over the new match...
    assert ws.item(QUEUE, "a2")["status"] == "reject"
    # ...and verify, which re-derives every link from the payloads, says so.
    report = verify_workspace(ws, processes=1)
    assert [f.reason for f in report.faults] == [
        f"subject link {QUEUE}/a2 over a1 is not what the payloads say (the carry of "
        "decisions between them would be wrong)"
    ]
    proc = sealdesk("verify", workspace=ws.root)
    assert proc.returncode == 1
    assert f"subject link {QUEUE}/a2 over a1 is not what the payloads say" in proc.stderr


def test_a_link_deleted_to_stop_an_accept_carrying_fails_verify(rescanned):
    ws = rescanned
    raw(ws, "subject_links_no_delete").execute(
        "DELETE FROM subject_links WHERE item_id = 'b2' AND other_id = 'b1'"
    )
    assert ws.item(QUEUE, "b2")["carried_from"] is None
    reasons = [f.reason for f in verify_workspace(ws, processes=1).faults]
    assert (
        f"subject link {QUEUE}/b2 over b1 is missing (the carry of decisions between "
        in (reasons[0])
    )


def test_an_item_moved_to_another_subject_fails_verify_naming_it(rescanned):
    # Moving q-2's new item under q-1's subject would let q-1's decisions reach it.
    ws = rescanned
    raw(ws, "items_no_update").execute(
        "UPDATE items SET subject = (SELECT subject FROM items WHERE item_id = 'a1') "
        "WHERE item_id = 'b2'"
    )
    reasons = [f.reason for f in verify_workspace(ws, processes=1).faults]
    assert reasons[0] == (
        f"item {QUEUE}/b2: its subject column is not the subject its payload names "
        "(edited after ingest)"
    )


def test_an_items_file_stating_another_subject_than_its_payload_is_refused(
    tmp_path, workspace, sealdesk
):
    good = flagged("a1", "run-1", "q-1", {"doc-1": 0.5})
    forged = dict(good.to_json(), subject="0" * 64)
    path = tmp_path / "items.jsonl"
    write_items_file(path, [flagged("b1", "run-1", "q-2", {"doc-3": 0.4})])
    with path.open("a", encoding="utf-8") as handle:
        handle.write(canonical_json(forged).decode("utf-8") + "\n")
    proc = sealdesk("ingest", path, workspace=workspace.root)
    assert proc.returncode != 0
    (line,) = proc.stderr.strip().splitlines()
    assert f"{path}:2" in line and "'subject'" in line
    assert f"is not the subject the payload names ({good.subject})" in line
    assert workspace.items() == []


def test_signoff_refuses_counts_read_through_a_forged_link(rescanned, enrol):
    # Forged, the link makes q-1's re-opened item look rejected and the queue look done.
    ws = rescanned
    lena = enrol("lena", "lead")
    raw(ws, "subject_links_no_update").execute(
        "UPDATE subject_links SET adds = 0, new = '[]' WHERE item_id = 'a2' AND other_id = 'a1'"
    )
    assert [r["status"] for r in ws.items()] == ["reject"] * 4
    before = ws.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    with pytest.raises(IntegrityError, match="will not sign off: subject link flagged_pairs/a2"):
        sign_off(ws, lena)
    assert ws.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == before


def test_a_rerun_carries_a_leads_decision_over_a_reviewers_later_one(workspace, enrol, sealdesk):
    # rita rejected wc-0; a re-run found a new miss (re-opened) and lena accepted it as lead;
    # rita then decided wc-0 again. A third run finding nothing new is the lead's accept:
    # a decision made in a lower role never carries over one made in a higher role.
    rita, lena = enrol("rita", "reviewer"), enrol("lena", "lead")
    workspace.ingest([weak("wc-0", "run-1", "obfuscation", ["obf-1"])])
    workspace.decide(rita, WEAK, "wc-0", "reject")
    workspace.ingest([weak("wc-0b", "run-2", "obfuscation", ["obf-1", "obf-2"])])
    assert workspace.item(WEAK, "wc-0b")["status"] == "undecided"  # re-opened
    accepted = workspace.decide(lena, WEAK, "wc-0b", "accept", role="lead")
    workspace.decide(rita, WEAK, "wc-0", "skip")
    rejected = workspace.decide(rita, WEAK, "wc-0", "reject")
    assert rejected.seq > accepted.seq
    workspace.ingest([weak("wc-0c", "run-3", "obfuscation", ["obf-1"])])

    # Every reading of the carry agrees: the listing's one statement, the single-item
    # probe, the status filter, the progress counts and the CLI.
    listed = {r["item_id"]: r for r in workspace.items(queue=WEAK)}["wc-0c"]
    one = workspace.item(WEAK, "wc-0c")
    for row in (listed, one):
        assert row["status"] == "accept"
        assert (row["carried_from"]["item_id"], row["carried_from"]["principal"]) == (
            "wc-0b",
            "lena",
        )
        assert row["carried_from"]["seq"] == accepted.seq
    accepts = workspace.page(WEAK, ItemFilter(status="accept"))
    assert sorted((r.item_id, r.principal) for r in accepts) == [
        ("wc-0b", "lena"),
        ("wc-0c", "lena"),
    ]
    assert [r.item_id for r in workspace.page(WEAK, ItemFilter(status="reject"))] == ["wc-0"]
    assert subjects.carry_counts(workspace.conn, WEAK) == [(WEAK, "accept", "lena", 1)]
    shown = sealdesk("items", "--queue", WEAK, workspace=workspace.root)
    (line,) = [x for x in shown.stdout.splitlines() if "wc-0c" in x]
    assert "accept (carried)" in line and "lena" in line, line

    # And it stands as the lead's: rita may not replace it there.
    with pytest.raises(PermissionRefused, match=r"accept by lena as lead \(#\d+, carried from"):
        workspace.decide(rita, WEAK, "wc-0c", "reject")
    assert verify_workspace(workspace, processes=1).ok


def test_among_decisions_of_one_rank_the_latest_carries(workspace, enrol):
    rita, ravi = enrol("rita", "reviewer"), enrol("ravi", "reviewer")
    workspace.ingest([weak("wc-0", "run-1", "obfuscation", ["obf-1"])])
    workspace.decide(rita, WEAK, "wc-0", "accept")
    workspace.ingest([weak("wc-0b", "run-2", "obfuscation", ["obf-1"])])
    overruled = workspace.decide(ravi, WEAK, "wc-0b", "reject", overrule=True)
    workspace.ingest([weak("wc-0c", "run-3", "obfuscation", ["obf-1"])])
    carried = workspace.item(WEAK, "wc-0c")["carried_from"]
    assert (carried["item_id"], carried["seq"], carried["principal"]) == (
        "wc-0b",
        overruled.seq,
        "ravi",
    )
    assert {r["item_id"]: r["status"] for r in workspace.items(queue=WEAK)}["wc-0c"] == "reject"
    assert verify_workspace(workspace, processes=1).ok
