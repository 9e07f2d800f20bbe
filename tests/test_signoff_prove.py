"""``sealdesk prove``: inclusion proofs of records against signed tree heads."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import subprocess

import pytest

from engine.errors import InputError, IntegrityError
from engine.ledger.checkpoint import read_checkpoint
from engine.ledger.signoff import sign_off
from engine.ledger.treehead import checkpoint_of, prove_inclusion
from engine.workspace import BacklogItem

from tests.conftest import require_tool


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


@pytest.fixture
def ledger(workspace, enrol):
    """Six decisions, a sign-off (#7) over them, then one more decision (#8)."""
    rita = enrol("rita", "reviewer")
    lena = enrol("lena", "lead")
    items = [BacklogItem.make("flagged_pairs", f"fp-{i}", "run-1",
                              {"summary": {"title": f"pair {i}", "score": None, "tags": []}})
             for i in range(7)]
    workspace.ingest(items, runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    for item in items[:6]:
        workspace.decide(rita, "flagged_pairs", item.item_id, "accept")
    sign_off(workspace, lena, with_exceptions=True)
    workspace.decide(rita, "flagged_pairs", "fp-6", "reject")
    return workspace


def test_prove_json_checks_out_with_an_independent_verifier_and_ssh_keygen(ledger, sealdesk,
                                                                            tmp_path):
    require_tool("ssh-keygen")
    proc = sealdesk("prove", "3", "--json", workspace=ledger.root, check=True)
    doc = json.loads(proc.stdout)
    message = doc["record"]["message"].encode("utf-8")
    assert hashlib.sha256(message).hexdigest() == doc["record"]["record_hash"]
    leaf = hashlib.sha256(b"\x00" + message).digest()
    root = independent_root(leaf, doc["leaf_index"], doc["tree_size"],
                            [bytes.fromhex(p) for p in doc["inclusion_path"]])
    assert (doc["leaf_index"], doc["tree_size"]) == (2, 6)
    assert root.hex() == doc["root"]
    # The root is the one the lead signed: it is in the note, and ssh-keygen accepts the note.
    head = doc["signed_tree_head"]
    assert head["checkpoint_note"].split("\n")[1:3] == ["6", base64.b64encode(root).decode()]
    (tmp_path / "note").write_text(head["checkpoint_note"])
    (tmp_path / "note.sig").write_text(head["checkpoint_signature"])
    check = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(ledger.allowed_signers_path), "-I",
         head["principal"], "-n", "lead@sealdesk", "-s", str(tmp_path / "note.sig")],
        stdin=open(tmp_path / "note", "rb"), capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_prove_prints_the_audit_path_from_leaf_to_signed_root(ledger, sealdesk):
    proc = sealdesk("prove", "#1", workspace=ledger.root, check=True)
    assert "record #1" in proc.stdout and "is leaf 0 of the tree of size 6" in proc.stdout
    assert "signed in sign-off #7 by lena" in proc.stdout
    assert "audit path (3 node(s), leaf to root)" in proc.stdout
    assert proc.stdout.rstrip().endswith("ok: the path leads from the record's leaf to the "
                                         "signed root")


def test_a_record_hash_prefix_proves_the_same_record_as_its_seq(ledger):
    by_seq = prove_inclusion(ledger.conn, "4", ledger.allowed_signers())
    by_hash = prove_inclusion(ledger.conn, by_seq.record_hash[:10], ledger.allowed_signers())
    assert by_hash.to_json() == by_seq.to_json()


def test_a_record_newer_than_the_signed_head_is_refused_until_the_next_signoff(ledger, sealdesk):
    proc = sealdesk("prove", "8", workspace=ledger.root)
    assert proc.returncode == 2
    assert "record 8 is newer than the latest signed tree head" in proc.stderr


def test_prove_before_any_signoff_says_how_to_get_one(workspace, enrol):
    rita = enrol("rita", "reviewer")
    item = BacklogItem.make("flagged_pairs", "fp-0", "run-1", {"n": 0})
    workspace.ingest([item])
    workspace.decide(rita, "flagged_pairs", "fp-0", "accept")
    with pytest.raises(InputError, match="no signed tree head yet.*sealdesk signoff"):
        prove_inclusion(workspace.conn, "1", workspace.allowed_signers())


def test_an_unknown_record_is_an_error_naming_it(ledger):
    with pytest.raises(InputError, match="no record '99'"):
        prove_inclusion(ledger.conn, "99", ledger.allowed_signers())
    with pytest.raises(InputError, match="neither a record seq nor a record hash"):
        prove_inclusion(ledger.conn, "xyz", ledger.allowed_signers())


def test_a_seq_too_large_for_sqlite_or_in_other_digits_is_an_input_error(ledger, sealdesk):
    with pytest.raises(InputError, match="no record '99999999999999999999999'"):
        prove_inclusion(ledger.conn, "99999999999999999999999", ledger.allowed_signers())
    for ref in ("\u00b2", "\u0661"):  # superscript two, Arabic-Indic one: isdigit() says yes
        with pytest.raises(InputError, match="neither a record seq nor a record hash"):
            prove_inclusion(ledger.conn, ref, ledger.allowed_signers())
    proc = sealdesk("prove", "9" * 40, workspace=ledger.root)  # 40 digits: also hex, no match
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"no record '{'9' * 40}'" in proc.stderr


def test_prove_against_a_checkpoint_file(ledger, sealdesk, tmp_path):
    path = tmp_path / "checkpoint.txt"
    path.write_text(checkpoint_of(ledger.conn, ledger.allowed_signers())[1], encoding="utf-8")
    proc = sealdesk("prove", "5", "--checkpoint", path, "--json", workspace=ledger.root,
                    check=True)
    doc = json.loads(proc.stdout)
    assert doc["tree_size"] == 6
    assert doc["root_base64"] == read_checkpoint(path).root_b64
    assert doc["checkpoint"]["principal"] == "lena"


def test_a_rewritten_record_has_no_inclusion_proof(ledger):
    conn = sqlite3.connect(ledger.db_path, isolation_level=None)
    conn.execute("DROP TRIGGER records_no_update")
    conn.execute("UPDATE records SET message = replace(message, '\"accept\"', '\"reject\"') "
                 "WHERE seq = 2")
    conn.close()
    with pytest.raises(IntegrityError, match="does not lead to the root"):
        prove_inclusion(ledger.conn, "2", ledger.allowed_signers())


def test_a_signoff_whose_tree_head_a_reviewer_signed_proves_nothing(ledger, sealdesk):
    # The attacker (rita's key, SQL access) appends a "sign-off" over the ledger
    # as it now stands, naming lena, with a checkpoint note rita signed herself.
    from engine.ledger import checkpoint as cp
    from engine.ledger import store
    from engine.ledger.signers import FileSigner
    from engine.ledger.treehead import SIGNOFF_TYPE, head_of, leaf_hashes

    rita = FileSigner(ledger.root.parent / "keys" / "rita")
    head = head_of(cp.origin_for(ledger.workspace_id), leaf_hashes(ledger.conn))
    body = cp.note_body(head.origin, head.size, head.root)
    forged = {"type": SIGNOFF_TYPE,
              "tree": {"origin": head.origin, "size": head.size, "root": head.root_hex},
              "checkpoint": {"note": body.decode(), "signature": cp.sign_note(rita, body)}}
    store.append(ledger.db, rita, workspace_id=ledger.workspace_id, principal="lena",
                 role="lead", kind="signoff", data=forged)
    proc = sealdesk("prove", "8", workspace=ledger.root)
    assert proc.returncode == 1, proc.stdout
    assert "ok:" not in proc.stdout
    assert "sign-off #9" in proc.stderr and "may not sign as lead" in proc.stderr


def test_a_signoff_whose_tree_differs_from_its_signed_note_proves_nothing(ledger):
    # The lead signed the note; the tree beside it in the record is not what was signed.
    conn = sqlite3.connect(ledger.db_path, isolation_level=None)
    conn.execute("DROP TRIGGER records_no_update")
    message = conn.execute("SELECT message FROM records WHERE seq=7").fetchone()[0]
    body = json.loads(message)
    body["data"]["tree"]["size"] = 5
    forged = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    conn.execute("UPDATE records SET message=?, record_hash=? WHERE seq=7",
                 (forged, hashlib.sha256(forged.encode()).hexdigest()))
    conn.close()
    with pytest.raises(IntegrityError, match="note"):
        prove_inclusion(ledger.conn, "3", ledger.allowed_signers())
