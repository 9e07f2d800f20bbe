"""``sealdesk prove``: inclusion proofs of records against signed tree heads."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import subprocess
from typing import NamedTuple

import pytest

from engine.errors import InputError, IntegrityError
from engine.ledger.checkpoint import read_checkpoint
from engine.ledger.treehead import checkpoint_of, prove_inclusion
from engine.signoff.summary import sign_off
from engine.workspace import BacklogItem, Workspace
from tests.conftest import require_tool
from tests.support.below_policy import append_unchecked
from tests.support.ssh import verify_args


def independent_path_length(index: int, size: int) -> int:
    """RFC 9162 section 2.1.3.1's PATH(m, D[n]), counted: the nodes of an audit path."""
    if size == 1:
        return 0
    k = 1
    while k * 2 < size:
        k *= 2
    return 1 + (
        independent_path_length(index, k)
        if index < k
        else independent_path_length(index - k, size - k)
    )


def independent_root(leaf: bytes, index: int, size: int, path: list[bytes]) -> bytes:
    """RFC 9162 section 2.1.3.2, written out here so the check owes nothing to sealdesk."""
    fn, sn, r = index, size - 1, leaf
    for p in path:
        assert sn != 0
        if fn % 2 == 1 or fn == sn:
            r = hashlib.sha256(b"\x01" + p + r).digest()
            while fn % 2 == 0 and fn != 0:
                fn, sn = fn // 2, sn // 2
        else:
            r = hashlib.sha256(b"\x01" + r + p).digest()
        fn, sn = fn // 2, sn // 2
    assert sn == 0
    return r


class Ledger(NamedTuple):
    ws: Workspace
    decisions: list[int]  # seqs of the six decisions the sign-off covers
    signoff: int  # seq of the sign-off; it covers every record before it
    later: int  # seq of the decision after it


@pytest.fixture
def ledger(workspace, enrol) -> Ledger:
    """After the genesis and two enrolments, six decisions, a sign-off over them, then one
    more decision."""
    rita = enrol("rita", "reviewer")
    lena = enrol("lena", "lead")
    items = [
        BacklogItem.make(
            "flagged_pairs",
            f"fp-{i}",
            "run-1",
            {"summary": {"title": f"pair {i}", "score": None, "tags": []}},
        )
        for i in range(7)
    ]
    workspace.ingest(items, runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    decisions = [
        workspace.decide(rita, "flagged_pairs", item.item_id, "accept").seq for item in items[:6]
    ]
    signoff = sign_off(workspace, lena, with_exceptions=True).seq
    later = workspace.decide(rita, "flagged_pairs", "fp-6", "reject").seq
    assert decisions[0] > 3 and signoff == decisions[-1] + 1 and later == signoff + 1
    return Ledger(workspace, decisions, signoff, later)


def test_prove_json_checks_out_with_an_independent_verifier_and_ssh_keygen(
    ledger, sealdesk, tmp_path
):
    require_tool("ssh-keygen")
    ws, decisions, signoff, _ = ledger
    third = decisions[2]
    proc = sealdesk("prove", str(third), "--json", workspace=ws.root, check=True)
    doc = json.loads(proc.stdout)
    message = doc["record"]["message"].encode("utf-8")
    assert hashlib.sha256(message).hexdigest() == doc["record"]["record_hash"]
    assert json.loads(message)["seq"] == third
    leaf = hashlib.sha256(b"\x00" + message).digest()
    root = independent_root(
        leaf, doc["leaf_index"], doc["tree_size"], [bytes.fromhex(p) for p in doc["inclusion_path"]]
    )
    assert (doc["leaf_index"], doc["tree_size"]) == (third - 1, signoff - 1)
    assert root.hex() == doc["root"]
    # The root is the one the lead signed: it is in the note, and ssh-keygen accepts the note
    # with the trust/allowed_signers generated from the ledger.
    head = doc["signed_tree_head"]
    assert head["checkpoint_note"].split("\n")[1:3] == [
        str(signoff - 1),
        base64.b64encode(root).decode(),
    ]
    (tmp_path / "note").write_text(head["checkpoint_note"])
    (tmp_path / "note.sig").write_text(head["checkpoint_signature"])
    check = subprocess.run(
        verify_args(
            ws.allowed_signers_path, head["principal"], "lead@sealdesk", tmp_path / "note.sig"
        ),
        stdin=open(tmp_path / "note", "rb"),
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr


def test_prove_prints_the_audit_path_from_leaf_to_signed_root(ledger, sealdesk):
    ws, decisions, signoff, _ = ledger
    first, size = decisions[0], signoff - 1
    proc = sealdesk("prove", f"#{first}", workspace=ws.root, check=True)
    assert (
        f"record #{first}" in proc.stdout
        and f"is leaf {first - 1} of the tree of size {size}" in proc.stdout
    )
    assert f"signed in sign-off #{signoff} by lena" in proc.stdout
    nodes = independent_path_length(first - 1, size)
    assert f"audit path ({nodes} node(s), leaf to root)" in proc.stdout
    assert proc.stdout.rstrip().endswith(
        "ok: the path leads from the record's leaf to the signed root"
    )


def test_the_genesis_is_proved_in_the_signed_tree_like_any_record(ledger, sealdesk):
    ws, _, signoff, _ = ledger
    doc = json.loads(sealdesk("prove", "1", "--json", workspace=ws.root, check=True).stdout)
    message = doc["record"]["message"].encode("utf-8")
    assert json.loads(message)["kind"] == "genesis"
    root = independent_root(
        hashlib.sha256(b"\x00" + message).digest(),
        doc["leaf_index"],
        doc["tree_size"],
        [bytes.fromhex(p) for p in doc["inclusion_path"]],
    )
    assert (doc["leaf_index"], doc["tree_size"]) == (0, signoff - 1)
    assert root.hex() == doc["root"]


def test_a_record_hash_prefix_proves_the_same_record_as_its_seq(ledger):
    ws, decisions, _, _ = ledger
    by_seq = prove_inclusion(ws.conn, str(decisions[3]), ws.signers())
    by_hash = prove_inclusion(ws.conn, by_seq.record_hash[:10], ws.signers())
    assert by_hash.to_json() == by_seq.to_json()


def test_a_record_newer_than_the_signed_head_is_refused_until_the_next_signoff(ledger, sealdesk):
    ws, _, _, later = ledger
    proc = sealdesk("prove", str(later), workspace=ws.root)
    assert proc.returncode == 2
    assert f"record {later} is newer than the latest signed tree head" in proc.stderr


def test_prove_before_any_signoff_says_how_to_get_one(workspace, enrol):
    rita = enrol("rita", "reviewer")
    item = BacklogItem.make("flagged_pairs", "fp-0", "run-1", {"n": 0})
    workspace.ingest([item])
    decided = workspace.decide(rita, "flagged_pairs", "fp-0", "accept")
    with pytest.raises(InputError, match="no signed tree head yet.*sealdesk signoff"):
        prove_inclusion(workspace.conn, str(decided.seq), workspace.signers())


def test_an_unknown_record_is_an_error_naming_it(ledger):
    ws = ledger.ws
    with pytest.raises(InputError, match="no record '99'"):
        prove_inclusion(ws.conn, "99", ws.signers())
    with pytest.raises(InputError, match="neither a record seq nor a record hash"):
        prove_inclusion(ws.conn, "xyz", ws.signers())


def test_a_seq_too_large_for_sqlite_or_in_other_digits_is_an_input_error(ledger, sealdesk):
    ws = ledger.ws
    with pytest.raises(InputError, match="no record '99999999999999999999999'"):
        prove_inclusion(ws.conn, "99999999999999999999999", ws.signers())
    for ref in ("\u00b2", "\u0661"):  # superscript two, Arabic-Indic one: isdigit() says yes
        with pytest.raises(InputError, match="neither a record seq nor a record hash"):
            prove_inclusion(ws.conn, ref, ws.signers())
    proc = sealdesk("prove", "9" * 40, workspace=ws.root)  # 40 digits: also hex, no match
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"no record '{'9' * 40}'" in proc.stderr


def test_prove_against_a_checkpoint_file(ledger, sealdesk, tmp_path):
    ws, decisions, signoff, _ = ledger
    path = tmp_path / "checkpoint.txt"
    path.write_text(checkpoint_of(ws.conn, ws.signers())[1], encoding="utf-8")
    proc = sealdesk(
        "prove", str(decisions[4]), "--checkpoint", path, "--json", workspace=ws.root, check=True
    )
    doc = json.loads(proc.stdout)
    assert doc["tree_size"] == signoff - 1
    assert doc["root_base64"] == read_checkpoint(path).root_b64
    assert doc["checkpoint"]["principal"] == "lena"


def test_a_rewritten_record_has_no_inclusion_proof(ledger):
    ws, decisions, _, _ = ledger
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.execute("DROP TRIGGER records_no_update")
    conn.execute(
        "UPDATE records SET message = replace(message, '\"accept\"', '\"reject\"') WHERE seq = ?",
        (decisions[1],),
    )
    assert conn.total_changes == 1
    conn.close()
    with pytest.raises(IntegrityError, match="does not lead to the root"):
        prove_inclusion(ws.conn, str(decisions[1]), ws.signers())


def test_a_signoff_whose_tree_head_a_reviewer_signed_proves_nothing(ledger, sealdesk):
    # The attacker (rita's key, SQL access) appends a "sign-off" over the ledger
    # as it now stands, naming lena, with a checkpoint note rita signed herself.
    from engine.ledger import checkpoint as cp
    from engine.ledger.authority import anchor_of
    from engine.ledger.signers import FileSigner
    from engine.ledger.treehead import SIGNOFF_TYPE, head_of, leaf_hashes

    ws, _, _, later = ledger
    rita = FileSigner(ws.root.parent / "keys" / "rita")
    head = head_of(cp.origin_for(ws.workspace_id), leaf_hashes(ws.conn))
    body = cp.note_body(head.origin, head.size, head.root, anchor_of(ws.authority()))
    forged = {
        "type": SIGNOFF_TYPE,
        "tree": {"origin": head.origin, "size": head.size, "root": head.root_hex},
        "checkpoint": {"note": body.decode(), "signature": cp.sign_note(rita, body)},
    }
    rec = append_unchecked(ws, rita, "lena", "lead", "signoff", data=forged)
    assert rec.seq == later + 1
    proc = sealdesk("prove", str(later), workspace=ws.root)
    assert proc.returncode == 1, proc.stdout
    assert "ok:" not in proc.stdout
    assert f"sign-off #{rec.seq}" in proc.stderr and "may not sign as lead" in proc.stderr


def test_a_signoff_whose_tree_differs_from_its_signed_note_proves_nothing(ledger):
    # The lead signed the note; the tree beside it in the record is not what was signed.
    ws, decisions, signoff, _ = ledger
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.execute("DROP TRIGGER records_no_update")
    message = conn.execute("SELECT message FROM records WHERE seq=?", (signoff,)).fetchone()[0]
    body = json.loads(message)
    assert body["data"]["tree"]["size"] == signoff - 1
    body["data"]["tree"]["size"] = signoff - 2
    forged = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    conn.execute(
        "UPDATE records SET message=?, record_hash=? WHERE seq=?",
        (forged, hashlib.sha256(forged.encode()).hexdigest(), signoff),
    )
    conn.close()
    with pytest.raises(IntegrityError, match="note"):
        prove_inclusion(ws.conn, str(decisions[2]), ws.signers())
