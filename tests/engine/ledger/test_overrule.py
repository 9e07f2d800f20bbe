"""Roles rank, and nothing overrules silently: the CLI, the workspace and verify.

A decision that replaces another principal's standing decision must say so
(``--overrule``; the signed record then carries ``data.overrules``, the hash
of the decision it replaces), and none may replace a decision made in a role
above its own. Forged records, signed with real enrolled keys but written
past the workspace's checks, must be faulted by verify.
"""

from __future__ import annotations

import sqlite3

import pytest

from engine.canonical import strict_loads
from engine.errors import ConflictError, InputError
from engine.ledger import sshsig, store
from engine.ledger.records import encode_body, make_body, utc_now
from engine.roles import namespace_for
from engine.signoff.verify import verify_workspace
from tests.support.backlog import make_items, write_items_file
from tests.support.below_policy import append_unchecked
from tests.support.cli_workspace import decide_args
from tests.support.subjects import weak

WEAK = "weak_categories"  # a reviewer or a lead may decide its items
PAIRS = "flagged_pairs"  # reviewers only
# The desk's ledger: the genesis and three enrolments; decisions start at B + 1.
B = 4


@pytest.fixture
def desk(workspace, enrol):
    """rita and ravi (reviewers), lena (lead); four items in each of two queues."""
    workspace.ingest(make_items(4, queue=WEAK) + make_items(4, queue=PAIRS))
    people = (
        workspace,
        enrol("rita", "reviewer"),
        enrol("ravi", "reviewer"),
        enrol("lena", "lead"),
    )
    assert workspace.head()[0] == B
    return people


def count(ws) -> int:
    """Gives how many records are durably in the ledger (read on a fresh connection)."""
    conn = sqlite3.connect(ws.db_path)
    try:
        return conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    finally:
        conn.close()


def body_of(ws, seq: int) -> dict:
    return strict_loads(
        ws.conn.execute("SELECT message FROM records WHERE seq=?", (seq,)).fetchone()[0]
    )


def faults(ws, processes: int = 1) -> list[tuple[int, str]]:
    return sorted((f.seq, f.reason) for f in verify_workspace(ws, processes=processes).faults)


def forged(
    ws, signer, principal: str, role: str, queue: str, item_id: str, decision: str, data=None
):
    """Appends a decision signed with a real enrolled key through the store's own append,
    past every rule ``Workspace.decide`` applies (as a holder of that key could)."""
    return append_unchecked(
        ws,
        signer,
        principal,
        role,
        "decision",
        queue=queue,
        item_id=item_id,
        decision=decision,
        data=data,
    )


def inserted(ws, signer, principal: str, role: str, queue: str, item_id: str, decision: str) -> int:
    """Builds a decision's body, signs it with a real enrolled key and INSERTs the row on
    a raw connection: no sealdesk append code runs at all. Gives its seq."""
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    try:
        seq, prev = conn.execute(
            "SELECT seq, record_hash FROM records ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        item_sha, run_sha = conn.execute(
            "SELECT item_sha256, runs.manifest_sha256 FROM items JOIN runs USING (run_id) "
            "WHERE items.queue=? AND item_id=?",
            (queue, item_id),
        ).fetchone()
        body = make_body(
            workspace=ws.workspace_id,
            seq=seq + 1,
            prev=prev,
            kind="decision",
            principal=principal,
            role=role,
            key=signer.public_key.fingerprint,
            time=utc_now(),
            queue=queue,
            item_id=item_id,
            item_sha256=item_sha,
            run_sha256=run_sha,
            decision=decision,
        )
        message, record_hash = encode_body(body)
        signature = sshsig.armor(signer.sign(message, namespace_for(role)))
        conn.execute(
            "INSERT INTO records (seq, record_hash, prev_hash, kind, queue, item_id, "
            "item_sha256, decision, principal, role, retracts, time, message, signature) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                seq + 1,
                record_hash,
                prev,
                "decision",
                queue,
                item_id,
                item_sha,
                decision,
                principal,
                role,
                None,
                body["time"],
                message.decode("utf-8"),
                signature,
            ),
        )
    finally:
        conn.close()
    return seq + 1


def decide_cli(sealdesk, ws, signer, queue: str, item_id: str, decision: str, *extra: str):
    return sealdesk(
        *decide_args(signer.path, item_id, decision=decision, queue=queue),
        *extra,
        workspace=ws.root,
    )


def one_line_error(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# -- ranks: a reviewer never replaces a lead's decision ------------------------------


@pytest.mark.parametrize("flag", [(), ("--overrule",)], ids=["plain", "overrule"])
def test_a_reviewer_cannot_replace_the_leads_evidence_approval(desk, sealdesk, flag):
    ws, rita, _, lena = desk
    approved = decide_cli(sealdesk, ws, lena, WEAK, "item-0", "accept", "--role", "lead")
    assert approved.returncode == 0, approved.stderr
    proc = decide_cli(sealdesk, ws, rita, WEAK, "item-0", "reject", *flag)
    assert proc.returncode == 3, proc.stderr  # PermissionRefused
    err = one_line_error(proc)
    assert f"accept by lena as lead (#{B + 1})" in err and "as reviewer may not" in err, err
    assert count(ws) == B + 1
    standing = ws.item(WEAK, "item-0")["decision"]
    assert (standing["decision"], standing["principal"], standing["role"]) == (
        "accept",
        "lena",
        "lead",
    )
    assert verify_workspace(ws).ok


# -- an explicit overrule by an equal (or higher) rank ----------------------------------


def test_replacing_another_reviewers_decision_needs_overrule_and_names_what_it_replaces(
    desk, sealdesk
):
    ws, rita, ravi, _ = desk
    first = ws.decide(rita, PAIRS, "item-1", "reject")
    refused = decide_cli(sealdesk, ws, ravi, PAIRS, "item-1", "accept")
    assert refused.returncode == 4, refused.stderr
    err = one_line_error(refused)
    assert f"reject by rita as reviewer (#{B + 1})" in err and "--overrule" in err, err
    assert count(ws) == B + 1

    proc = decide_cli(sealdesk, ws, ravi, PAIRS, "item-1", "accept", "--overrule")
    assert proc.returncode == 0, proc.stderr
    assert f"overrules reject by rita as reviewer, #{B + 1}" in proc.stdout
    body = body_of(ws, B + 2)
    assert (body["principal"], body["decision"]) == ("ravi", "accept")
    assert body["data"] == {"overrules": first.record_hash}
    verified = sealdesk("verify", "-q", workspace=ws.root)
    assert verified.returncode == 0, verified.stderr
    assert faults(ws, processes=2) == []


def test_a_lead_overrules_a_reviewer_explicitly_and_it_verifies(desk):
    ws, rita, _, lena = desk
    reviewed = ws.decide(rita, WEAK, "item-2", "accept")
    with pytest.raises(ConflictError, match="--overrule"):
        ws.decide(lena, WEAK, "item-2", "reject", role="lead")
    record = ws.decide(lena, WEAK, "item-2", "reject", role="lead", overrule=True)
    assert record.body["data"] == {"overrules": reviewed.record_hash}
    assert faults(ws) == []


def test_an_overrule_agreed_for_one_decision_is_refused_once_another_stands(desk):
    ws, rita, ravi, _ = desk
    shown = ws.decide(rita, PAIRS, "item-0", "accept")
    ws.decide(rita, PAIRS, "item-0", "reject")  # rita changes it meanwhile
    with pytest.raises(ConflictError, match="not the decision you chose to overrule"):
        ws.decide(ravi, PAIRS, "item-0", "skip", overrule=shown.record_hash)
    assert count(ws) == B + 2


def test_after_its_overrule_is_retracted_the_earlier_decision_must_be_overruled_again(desk):
    ws, rita, ravi, _ = desk
    ws.decide(rita, PAIRS, "item-0", "accept")
    ws.decide(ravi, PAIRS, "item-0", "reject", overrule=True)
    ws.retract(ravi, PAIRS, "item-0")  # rita's accept stands again
    with pytest.raises(ConflictError, match="--overrule"):
        ws.decide(ravi, PAIRS, "item-0", "skip")
    again = ws.decide(ravi, PAIRS, "item-0", "skip", overrule=True)
    assert again.body["data"] == {"overrules": body_hash(ws, B + 1)}
    assert faults(ws) == [] and faults(ws, processes=2) == []


def body_hash(ws, seq: int) -> str:
    return ws.conn.execute("SELECT record_hash FROM records WHERE seq=?", (seq,)).fetchone()[0]


# -- your own decision -----------------------------------------------------------------


def test_the_same_decision_twice_signs_once_and_a_change_of_mind_needs_no_overrule(desk, sealdesk):
    ws, rita, _, _ = desk
    first = decide_cli(sealdesk, ws, rita, PAIRS, "item-3", "accept")
    assert first.returncode == 0, first.stderr
    again = decide_cli(sealdesk, ws, rita, PAIRS, "item-3", "accept")
    assert again.returncode == 0, again.stderr
    assert f"already accept by you (#{B + 1})" in again.stdout
    assert count(ws) == B + 1
    changed = decide_cli(sealdesk, ws, rita, PAIRS, "item-3", "reject")
    assert changed.returncode == 0, changed.stderr
    assert count(ws) == B + 2 and body_of(ws, B + 2)["data"] is None
    assert faults(ws) == []


# -- a batch is one transaction -------------------------------------------------------------


def tamper_payload(ws, queue: str, item_id: str) -> None:
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.executescript("DROP TRIGGER items_no_update;")
    conn.execute(
        "UPDATE items SET payload = '{\"edited\":true}' WHERE queue=? AND item_id=?",
        (queue, item_id),
    )
    conn.close()


@pytest.mark.parametrize("bad", ["decided by another", "payload edited"])
def test_a_batch_with_one_refused_item_writes_nothing(desk, sealdesk, bad):
    ws, rita, ravi, _ = desk
    if bad == "decided by another":
        ws.decide(ravi, PAIRS, "item-2", "reject")
    else:
        tamper_payload(ws, PAIRS, "item-2")
    before = count(ws)
    proc = sealdesk(
        *decide_args(rita.path, "-", queue=PAIRS),
        workspace=ws.root,
        input="item-0\nitem-1\nitem-2\nitem-3\n",
    )
    assert proc.returncode != 0
    assert "item-2" in one_line_error(proc)
    assert count(ws) == before
    assert all(ws.item(PAIRS, f"item-{i}")["decision"] is None for i in (0, 1, 3))
    if bad == "decided by another":  # said explicitly, the whole batch is signed, one by one
        proc = sealdesk(
            "decide",
            "--queue",
            PAIRS,
            "--item",
            "-",
            "--decision",
            "accept",
            "--overrule",
            "--key",
            rita.path,
            workspace=ws.root,
            input="item-0\nitem-1\nitem-2\nitem-3\n",
        )
        assert proc.returncode == 0, proc.stderr
        assert [line.split()[0] for line in proc.stdout.splitlines()] == [
            f"#{B + n}" for n in (2, 3, 4, 5)
        ]
        assert "(overrules reject by ravi" in proc.stdout.splitlines()[2]
        assert faults(ws) == []


def test_a_bulk_overrule_names_each_decision_it_replaces_and_only_those(desk):
    ws, rita, ravi, _ = desk
    shown = ws.decide(rita, PAIRS, "item-1", "reject")
    unseen = ws.decide(rita, PAIRS, "item-2", "reject")
    ids = ["item-0", "item-1", "item-2"]
    with pytest.raises(ConflictError, match="item-2 stands at reject by rita"):
        ws.decide_many(ravi, PAIRS, ids, "accept", overrule={"item-1": shown.record_hash})
    assert count(ws) == B + 2
    agreed = {"item-1": shown.record_hash, "item-2": unseen.record_hash}
    outcomes = ws.decide_many(ravi, PAIRS, ids, "accept", overrule=agreed)
    assert [o.record.body["data"] for o in outcomes] == [
        None,
        {"overrules": shown.record_hash},
        {"overrules": unseen.record_hash},
    ]
    assert [o.record.body["item_sha256"] for o in outcomes] == [
        ws.item(PAIRS, item_id)["item_sha256"] for item_id in ids
    ]
    assert faults(ws) == []


def test_a_bulk_overrule_is_refused_whole_when_an_item_it_does_not_name_was_decided(desk):
    ws, rita, ravi, _ = desk
    shown = ws.decide(rita, PAIRS, "item-1", "reject")
    ws.decide(rita, PAIRS, "item-2", "reject")  # lands after the person looked
    with pytest.raises(ConflictError, match="item-2 stands at reject by rita"):
        ws.decide_many(
            ravi, PAIRS, ["item-1", "item-2"], "accept", overrule={"item-1": shown.record_hash}
        )
    ws.decide(rita, PAIRS, "item-1", "skip")  # the decision agreed to is no longer the one
    with pytest.raises(ConflictError, match="not the decision you chose to overrule"):
        ws.decide_many(ravi, PAIRS, ["item-1"], "accept", overrule={"item-1": shown.record_hash})
    with pytest.raises(InputError, match="names item 'item-3', which is not being decided"):
        ws.decide_many(ravi, PAIRS, ["item-1"], "accept", overrule={"item-3": "ab" * 32})
    assert count(ws) == B + 3


# -- verify: forged overrules ---------------------------------------------------------------


@pytest.mark.parametrize("processes", [1, 2])
def test_a_forged_silent_overrule_is_faulted(desk, processes):
    ws, rita, ravi, _ = desk
    ws.decide(rita, PAIRS, "item-0", "reject")  # seq B + 1
    forged(ws, ravi, "ravi", "reviewer", PAIRS, "item-0", "accept")  # B + 2: no overrules
    assert faults(ws, processes) == [
        (
            B + 2,
            f"replaces rita's standing decision (record {B + 1}) without naming it in "
            "'overrules': a silent overrule",
        )
    ]


def test_a_reviewer_record_inserted_over_a_leads_approval_is_faulted(desk):
    ws, rita, _, lena = desk
    ws.decide(lena, WEAK, "item-0", "accept", role="lead")  # seq B + 1: the approval
    seq = inserted(ws, rita, "rita", "reviewer", WEAK, "item-0", "reject")
    assert ws.item(WEAK, "item-0")["decision"]["decision"] == "reject"  # it would stand
    assert faults(ws) == [
        (
            seq,
            f"replaces the decision lena made as lead (record {B + 1}) from the lower role "
            "reviewer",
        )
    ]


def test_an_overrule_of_a_higher_role_is_faulted_even_when_it_names_it(desk):
    ws, rita, _, lena = desk
    approval = ws.decide(lena, WEAK, "item-1", "accept", role="lead")
    forged(
        ws,
        rita,
        "rita",
        "reviewer",
        WEAK,
        "item-1",
        "reject",
        data={"overrules": approval.record_hash},
    )
    assert faults(ws) == [
        (
            B + 2,
            f"replaces the decision lena made as lead (record {B + 1}) from the lower role "
            "reviewer",
        )
    ]


def test_an_overrule_naming_a_record_that_does_not_stand_is_faulted(desk):
    ws, rita, ravi, _ = desk
    old = ws.decide(rita, PAIRS, "item-0", "accept")  # seq B + 1
    ws.decide(rita, PAIRS, "item-0", "reject")  # B + 2: now standing
    forged(
        ws, ravi, "ravi", "reviewer", PAIRS, "item-0", "skip", data={"overrules": old.record_hash}
    )  # B + 3: names B + 1
    ws.decide(rita, PAIRS, "item-1", "accept")  # B + 4
    forged(
        ws,
        rita,
        "rita",
        "reviewer",
        PAIRS,
        "item-1",
        "reject",
        data={"overrules": body_hash(ws, B + 4)},
    )  # B + 5: its own decision
    forged(
        ws, ravi, "ravi", "reviewer", PAIRS, "item-2", "reject", data={"overrules": old.record_hash}
    )  # B + 6: nothing stands
    assert faults(ws) == [
        (
            B + 3,
            f"overrules record {old.record_hash[:12]}…, which is not the standing "
            f"decision (record {B + 2}, by rita)",
        ),
        (
            B + 5,
            f"overrules record {body_hash(ws, B + 4)[:12]}…, but the standing decision "
            f"(record {B + 4}) is its own signer's",
        ),
        (B + 6, f"overrules record {old.record_hash[:12]}…, but no decision stood on the item"),
    ]


@pytest.mark.parametrize(
    "data, reason",
    [
        ({"overrules": "nothex"}, "'data.overrules' is not the record hash"),
        ({"overrules": "ab" * 32, "also": 1}, "'data' carries 'also', not one of overrules"),
        (["ab" * 32], "'data' is neither null nor an object"),
        ({}, "'data' is neither null nor an object"),
        ({"reason": "Exact Copy"}, "'data.reason' is not a reason code"),
        ({"reason": 1}, "'data.reason' is not a reason code"),
        ({"rationale": "  "}, "'data.rationale' is not non-blank text"),
        ({"rationale": "x" * 2001}, "'data.rationale' is not non-blank text"),
        ({"guidelines_sha256": "AB" * 32}, "'data.guidelines_sha256' is not the SHA-256"),
        ({"plan": {"blind": "yes", "record": "ab" * 32}}, "'data.plan' is not {blind: true"),
        ({"plan": {"record": "ab" * 32, "resolves": []}}, "'data.plan' is not {blind: true"),
        ({"plan": {"blind": True}}, "'data.plan' is not {blind: true"),
    ],
)
def test_a_decision_carries_data_of_known_keys_each_of_its_shape(desk, data, reason):
    ws, rita, ravi, _ = desk
    ws.decide(rita, PAIRS, "item-0", "accept")
    forged(ws, ravi, "ravi", "reviewer", PAIRS, "item-0", "reject", data=data)
    found = faults(ws)
    assert [seq for seq, _ in found] == [B + 2] and reason in found[0][1], found


def test_an_overrule_is_found_behind_a_reason_and_guidelines(desk):
    """The replay reads "overrules" wherever the sorted keys put it in "data", and a
    decision that only carries a reason makes no item contested."""
    ws, rita, ravi, _ = desk
    first = ws.decide(rita, PAIRS, "item-0", "accept", reason="exact-copy")
    forged(
        ws,
        ravi,
        "ravi",
        "reviewer",
        PAIRS,
        "item-0",
        "reject",
        data={"guidelines_sha256": "ab" * 32, "overrules": first.record_hash, "reason": "x"},
    )
    forged(
        ws,
        ravi,
        "ravi",
        "reviewer",
        PAIRS,
        "item-1",
        "reject",
        data={"guidelines_sha256": "ab" * 32, "overrules": first.record_hash},
    )
    assert faults(ws) == [
        (B + 3, f"overrules record {first.record_hash[:12]}…, but no decision stood on the item")
    ]


def test_a_note_may_not_carry_overrules(desk):
    ws, rita, _, _ = desk
    ws.decide(rita, PAIRS, "item-0", "accept")
    append_unchecked(
        ws,
        rita,
        "rita",
        "reviewer",
        "note",
        queue=PAIRS,
        item_id="item-0",
        note="hm",
        data={"overrules": body_hash(ws, B + 1)},
    )
    assert faults(ws) == [
        (
            B + 2,
            "a note record carries 'data', which only a signoff, decision, run, plan, gold, "
            "clock or authority record has",
        )
    ]


# -- undo takes back only your own decision --------------------------------------------------


def test_undo_of_another_principals_decision_is_refused_and_writes_nothing(desk, sealdesk):
    ws, rita, ravi, _ = desk
    ws.decide(rita, PAIRS, "item-0", "reject")
    before = count(ws)
    proc = sealdesk(
        "undo", "--queue", PAIRS, "--item", "item-0", "--key", ravi.path, workspace=ws.root
    )
    assert proc.returncode == 3
    assert "is rita's; undo takes back only your own" in one_line_error(proc)
    assert count(ws) == before
    assert ws.item(PAIRS, "item-0")["decision"]["principal"] == "rita"


def test_a_forged_undo_of_another_principals_decision_is_faulted(desk):
    ws, rita, ravi, _ = desk
    decided = ws.decide(rita, PAIRS, "item-0", "reject")
    record = store.append(
        ws.db,
        ravi,
        workspace_id=ws.workspace_id,
        principal="ravi",
        role="reviewer",
        kind="retract",
        queue=PAIRS,
        item_id="item-0",
        check=lambda conn: {
            **ws._item_binding(conn, PAIRS, "item-0"),
            "retracts": decided.record_hash,
        },
    )
    assert faults(ws) == [
        (
            record.seq,
            "retracts rita's decision: an undo takes back only its "
            "signer's own (another's is replaced by an explicit "
            "overrule)",
        )
    ]


# -- a decision carried from another item of the subject stands as its maker's ---------------


@pytest.fixture
def carried(desk, tmp_path, sealdesk):
    """Gives (desk, rescan): rescan(decider, name, role) lets that person accept wc-0, a weak
    category of the first run, through the CLI, then ingests, through the CLI too, a re-run's
    wc-0b about the same category with one more miss (an accept carries regardless)."""
    ws = desk[0]
    ws.ingest([weak("wc-0", "run-1", "obfuscation", ["obf-1"])])

    def rescan(decider, name: str, role: str) -> None:
        made = decide_cli(sealdesk, ws, decider, WEAK, "wc-0", "accept", "--role", role)
        assert made.returncode == 0, made.stderr
        path = tmp_path / "rerun.jsonl"
        write_items_file(path, [weak("wc-0b", "run-2", "obfuscation", ["obf-1", "obf-2"])])
        ingested = sealdesk("ingest", path, workspace=ws.root)
        assert ingested.returncode == 0, ingested.stderr
        listed = sealdesk("items", "--queue", WEAK, workspace=ws.root)
        (line,) = [x for x in listed.stdout.splitlines() if "wc-0b" in x]
        assert "accept (carried)" in line and name in line, line
        assert count(ws) == B + 1

    return desk, rescan


@pytest.mark.parametrize("flag", [(), ("--overrule",)], ids=["plain", "overrule"])
def test_a_reviewer_cannot_replace_a_leads_decision_carried_to_a_rerun_item(
    carried, sealdesk, flag
):
    (ws, rita, _, lena), rescan = carried
    rescan(lena, "lena", "lead")
    proc = decide_cli(sealdesk, ws, rita, WEAK, "wc-0b", "reject", *flag)
    assert proc.returncode == 3, proc.stderr  # PermissionRefused
    err = one_line_error(proc)
    assert f"stands at accept by lena as lead (#{B + 1}, carried from wc-0)" in err, err
    assert "as reviewer may not replace one made as lead" in err, err
    assert count(ws) == B + 1
    assert ws.item(WEAK, "wc-0b")["status"] == "accept"
    assert verify_workspace(ws).ok


def test_replacing_a_carried_decision_of_the_same_rank_is_an_overrule_naming_it(carried, sealdesk):
    (ws, rita, ravi, _), rescan = carried
    rescan(rita, "rita", "reviewer")
    refused = decide_cli(sealdesk, ws, ravi, WEAK, "wc-0b", "reject")
    assert refused.returncode == 4, refused.stderr  # OverruleRequired
    err = one_line_error(refused)
    assert f"accept by rita as reviewer (#{B + 1}, carried from wc-0)" in err, err
    assert "--overrule" in err, err
    assert count(ws) == B + 1

    proc = decide_cli(sealdesk, ws, ravi, WEAK, "wc-0b", "reject", "--overrule")
    assert proc.returncode == 0, proc.stderr
    assert f"(overrules accept by rita as reviewer, #{B + 1} on wc-0)" in proc.stdout
    assert body_of(ws, B + 2)["data"] == {"overrules": body_hash(ws, B + 1)}
    verified = sealdesk("verify", "-q", workspace=ws.root)
    assert verified.returncode == 0, verified.stderr
    assert faults(ws) == [] and faults(ws, processes=2) == []


def test_a_lead_overrules_a_reviewers_carried_decision_explicitly(carried):
    (ws, rita, _, lena), rescan = carried
    rescan(rita, "rita", "reviewer")
    with pytest.raises(
        ConflictError, match=r"accept by rita as reviewer \(#5, carried from wc-0\)"
    ):
        ws.decide(lena, WEAK, "wc-0b", "reject", role="lead")
    record = ws.decide(lena, WEAK, "wc-0b", "reject", role="lead", overrule=True)
    assert record.body["data"] == {"overrules": body_hash(ws, B + 1)}
    # Its maker changes nothing by deciding the carried item: it is theirs.
    assert ws.decide(rita, WEAK, "wc-0", "reject").body["data"] is None
    assert faults(ws) == []


def test_the_carried_decision_of_ones_own_is_changed_without_an_overrule(carried):
    (ws, rita, _, _), rescan = carried
    rescan(rita, "rita", "reviewer")
    record = ws.decide(rita, WEAK, "wc-0b", "reject")
    assert record.body["data"] is None and record.seq == B + 2
    assert faults(ws) == []


def test_a_reviewer_record_inserted_over_a_carried_lead_decision_is_faulted(carried):
    (ws, rita, _, lena), rescan = carried
    rescan(lena, "lena", "lead")
    seq = inserted(ws, rita, "rita", "reviewer", WEAK, "wc-0b", "reject")
    assert ws.item(WEAK, "wc-0b")["status"] == "reject"  # it would stand
    expected = [
        (
            seq,
            f"replaces the decision lena made as lead (record {B + 1}, carried from wc-0) "
            "from the lower role reviewer",
        )
    ]
    assert faults(ws) == expected and faults(ws, processes=2) == expected


def test_a_forged_silent_overrule_of_a_carried_decision_is_faulted(carried):
    (ws, rita, ravi, _), rescan = carried
    rescan(rita, "rita", "reviewer")
    forged(ws, ravi, "ravi", "reviewer", WEAK, "wc-0b", "reject")  # B + 2: no overrules
    assert faults(ws) == [
        (
            B + 2,
            f"replaces rita's standing decision (record {B + 1}, carried from wc-0) without "
            "naming it in 'overrules': a silent overrule",
        )
    ]


@pytest.mark.parametrize("order", [["wc-0", "wc-0b"], ["wc-0b", "wc-0"]])
def test_a_bulk_overrule_of_a_decision_and_its_carry_signs_both_in_either_order(carried, order):
    # Overruling rita's accept on wc-0 first re-opens wc-0b (ravi's reject does not carry
    # over its new miss): the overrule agreed for wc-0b was made within the batch.
    (ws, rita, ravi, _), rescan = carried
    rescan(rita, "rita", "reviewer")
    hers = body_hash(ws, B + 1)
    outcomes = ws.decide_many(ravi, WEAK, order, "reject", overrule=dict.fromkeys(order, hers))
    data = {o.item_id: o.record.body["data"] for o in outcomes}
    assert data["wc-0"] == {"overrules": hers}
    assert data["wc-0b"] == (None if order[0] == "wc-0" else {"overrules": hers})
    assert faults(ws) == [] and faults(ws, processes=2) == []
