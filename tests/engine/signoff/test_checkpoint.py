"""Checkpoints: exported, checked by ssh-keygen, and every tampering detected.

The attacker here holds rita's reviewer key and write access to the
database file. They drop the append-only triggers, rewrite the records they
want, re-number and re-chain everything after the genesis and enrolments
(which only a lead signs, so they stay as they were), re-sign every such
record with rita's valid key, and delete the lead's sign-off (which they
cannot re-sign). Plain ``verify`` then passes: each test asserts that, to
show the checkpoint is what catches it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.ledger import sshsig, store
from engine.ledger.authority import AUTHORITY_KINDS
from engine.ledger.records import INDEXED_FIELDS, encode_body
from engine.ledger.treehead import checkpoint_of
from engine.roles import namespace_for
from engine.signoff.summary import sign_off
from engine.signoff.verify import verify_workspace
from engine.workspace import BacklogItem, Workspace
from tests.conftest import require_tool
from tests.support.below_policy import append_unchecked
from tests.support.ssh import verify_args


@pytest.fixture
def signed(workspace, enrol, tmp_path):
    """After the genesis and two enrolments, four decisions by rita, then the lead's
    sign-off, its checkpoint exported. Gives (workspace, rita, lena, checkpoint path,
    the number of records the checkpoint covers)."""
    rita = enrol("rita", "reviewer")
    lena = enrol("lena", "lead")
    items = [
        BacklogItem.make(
            "flagged_pairs",
            f"fp-{i}",
            "run-1",
            {"summary": {"title": f"pair {i}", "score": None, "tags": []}},
        )
        for i in range(8)
    ]
    workspace.ingest(items, runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    for item in items[:4]:
        workspace.decide(rita, "flagged_pairs", item.item_id, "accept")
    size = workspace.head()[0]
    assert sign_off(workspace, lena, with_exceptions=True).seq == size + 1
    path = tmp_path / "checkpoint.txt"
    path.write_text(checkpoint_of(workspace.conn, workspace.signers())[1], encoding="utf-8")
    return workspace, rita, lena, path, size


def forge(ws: Workspace, rewrite: Callable[[list[dict]], list[dict]], signer) -> None:
    """The attacker: no triggers; the records after the genesis and enrolments replaced,
    re-chained and re-signed with signer (those only a lead signs are kept as they are)."""
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    for trigger in ("records_no_update", "records_no_delete", "records_next_link"):
        conn.execute(f"DROP TRIGGER {trigger}")
    rows = conn.execute("SELECT seq, record_hash, message FROM records ORDER BY seq").fetchall()
    kept = 0
    while json.loads(rows[kept][2])["kind"] in AUTHORITY_KINDS:
        kept += 1
    assert kept, "the ledger starts with its genesis"
    bodies = [json.loads(m) for _, _, m in rows[kept:]]
    new = rewrite(bodies)
    conn.execute("DELETE FROM records WHERE seq > ?", (kept,))
    prev, last_time = rows[kept - 1][1], json.loads(rows[kept - 1][2])["time"]
    for seq, body in enumerate(new, kept + 1):
        # Times must not go back along the chain (verify checks it): the attacker keeps them so.
        last_time = max(last_time, body["time"])
        body = {
            **body,
            "seq": seq,
            "prev": prev,
            "key": signer.public_key.fingerprint,
            "time": last_time,
        }
        message, record_hash = encode_body(body)
        signature = sshsig.armor(signer.sign(message, namespace_for(body["role"])))
        row = {name: body[name] for name in INDEXED_FIELDS}
        row.update(
            record_hash=record_hash, prev_hash=prev, message=message.decode(), signature=signature
        )
        conn.execute(
            f"INSERT INTO records ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
        prev = record_hash
    store.create_schema(conn)  # put the triggers back, as a careful attacker would
    conn.close()


def truncate(ws: Workspace, keep: int) -> None:
    """The attacker: no triggers, every record after ``keep`` deleted; nothing re-signed."""
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.execute("DROP TRIGGER records_no_delete")
    conn.execute("DELETE FROM records WHERE seq > ?", (keep,))
    store.create_schema(conn)
    conn.close()


def reasons(ws: Workspace, checkpoint: Path) -> list[str]:
    return [f.reason for f in verify_workspace(ws, checkpoint=checkpoint).faults]


def without_signoffs(bodies: list[dict]) -> list[dict]:
    return [b for b in bodies if b["kind"] != "signoff"]


def about(ws: Workspace, body: dict, item_id: str) -> dict:
    """A copy of a decision body made about another item (its bytes bound correctly)."""
    return {
        **body,
        "item_id": item_id,
        "item_sha256": ws.item("flagged_pairs", item_id)["item_sha256"],
    }


def test_checkpoint_verifies_against_the_untouched_workspace(signed):
    ws, _rita, _lena, path, _size = signed
    assert reasons(ws, path) == []


def test_checkpoint_still_verifies_after_the_ledger_legitimately_grows(signed):
    ws, rita, lena, path, _size = signed
    ws.decide(rita, "flagged_pairs", "fp-5", "reject")
    ws.decide(rita, "flagged_pairs", "fp-6", "accept")
    sign_off(ws, lena, with_exceptions=True)
    ws.decide(rita, "flagged_pairs", "fp-7", "accept")
    assert reasons(ws, path) == []


def test_checkpoint_file_is_origin_size_root_anchor_then_the_lead_signature(signed, founder_key):
    from engine.ledger.signers import FileSigner

    ws, _rita, lena, path, size = signed
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[:2] == [f"sealdesk/{ws.workspace_id}", str(size)]
    assert lines[3] == f"anchor {FileSigner(founder_key).public_key.fingerprint}"
    assert lines[4] == ""
    assert lines[5] == f"\u2014 lena lead@sealdesk {lena.public_key.fingerprint}"
    assert lines[6] == "-----BEGIN SSH SIGNATURE-----"


def test_checkpoint_note_verifies_with_ssh_keygen_as_documented(signed, tmp_path):
    require_tool("ssh-keygen")
    ws, *_ = signed
    script = (
        "awk '/^$/{exit} {print}' checkpoint.txt > note && "
        "sed -n '/^-----BEGIN SSH/,/^-----END SSH/p' checkpoint.txt > note.sig && "
        f"ssh-keygen -Y verify -f {ws.allowed_signers_path} -I lena -n lead@sealdesk "
        "-s note.sig < note"
    )
    proc = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert 'Good "lead@sealdesk" signature for lena' in proc.stdout


def test_ssh_keygen_refuses_the_note_once_its_size_is_edited(signed, tmp_path):
    require_tool("ssh-keygen")
    ws, _rita, _lena, path, size = signed
    text = path.read_text(encoding="utf-8")
    note = text.split("\n\n")[0]
    assert f"\n{size}\n" in note
    (tmp_path / "note").write_text(note.replace(f"\n{size}\n", f"\n{size - 1}\n") + "\n")
    (tmp_path / "note.sig").write_text(text[text.index("-----BEGIN") :])
    proc = subprocess.run(
        verify_args(ws.allowed_signers_path, "lena", "lead@sealdesk", "note.sig"),
        stdin=open(tmp_path / "note", "rb"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0


# -- the ledger attacked -------------------------------------------------------


def test_deleting_a_record_before_the_checkpoint_is_detected(signed):
    ws, rita, _lena, path, _size = signed
    forge(ws, lambda b: [x for x in without_signoffs(b) if x["item_id"] != "fp-1"], rita)
    assert verify_workspace(ws).ok, "the forgery must pass plain verify"
    found = reasons(ws, path)
    assert found and "the ledger was truncated" in found[0]


def test_deleting_a_record_and_padding_the_ledger_back_is_detected(signed):
    ws, rita, _lena, path, _size = signed

    def attack(bodies):
        kept = [x for x in without_signoffs(bodies) if x["item_id"] != "fp-1"]
        return kept + [about(ws, kept[-1], "fp-6"), about(ws, kept[-1], "fp-7")]

    forge(ws, attack, rita)
    assert verify_workspace(ws).ok
    assert any("are not the ones the lead signed" in r for r in reasons(ws, path))


def test_rewriting_a_decision_before_the_checkpoint_is_detected(signed):
    ws, rita, _lena, path, size = signed

    def attack(bodies):
        kept = without_signoffs(bodies)
        kept[1] = {**kept[1], "decision": "reject", "note": "never a leak"}
        # Grow past the checkpoint so the consistency proof has work to do.
        return kept + [about(ws, kept[0], "fp-5"), about(ws, kept[0], "fp-6")]

    forge(ws, attack, rita)
    assert verify_workspace(ws).ok
    found = reasons(ws, path)
    assert len(found) == 1 and f"records 1..{size} are not the ones the lead signed" in found[0]


def test_reordering_records_before_the_checkpoint_is_detected(signed):
    ws, rita, _lena, path, _size = signed

    def attack(bodies):
        kept = without_signoffs(bodies)
        kept[1], kept[2] = kept[2], kept[1]
        return kept + [about(ws, kept[0], "fp-5")]

    forge(ws, attack, rita)
    assert verify_workspace(ws).ok
    assert any("are not the ones the lead signed" in r for r in reasons(ws, path))


def test_truncating_before_the_checkpoint_is_detected(signed):
    ws, _rita, _lena, path, size = signed
    truncate(ws, keep=size - 2)  # the last two decisions go
    assert verify_workspace(ws).ok, "a prefix of a valid ledger is valid on its own"
    found = reasons(ws, path)
    assert f"checkpoint covers {size} records, the workspace holds {size - 2}" in found[0]


def test_cutting_the_ledger_back_to_exactly_the_checkpoint_is_detected(signed):
    ws, _rita, _lena, path, size = signed
    truncate(ws, keep=size)
    assert verify_workspace(ws).ok
    found = reasons(ws, path)
    assert len(found) == 1 and f"record {size + 1}) is missing" in found[0]


def test_rewriting_under_a_kept_signoff_breaks_the_signed_tree_head(signed):
    ws, rita, _lena, _path, size = signed
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    signoff_row = conn.execute("SELECT * FROM records WHERE seq=?", (size + 1,)).fetchone()
    conn.close()

    forge(
        ws,
        lambda b: [
            {**x, "decision": "reject"} if x["item_id"] == "fp-0" else x
            for x in without_signoffs(b)
        ],
        rita,
    )
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.execute("DROP TRIGGER records_next_link")
    conn.execute(
        f"INSERT INTO records VALUES ({', '.join('?' * len(signoff_row))})", signoff_row
    )  # the lead's sign-off put back untouched
    conn.close()
    faults = verify_workspace(ws).faults
    assert any(
        f.seq == size + 1 and "no longer hash to the root the lead signed" in f.reason
        for f in faults
    )


# -- the checkpoint file attacked ----------------------------------------------


def edited(path: Path, old: str, new: str) -> Path:
    text = path.read_text(encoding="utf-8")
    assert old in text
    out = path.with_name("edited.txt")
    out.write_text(text.replace(old, new, 1), encoding="utf-8")
    return out


def test_a_checkpoint_with_an_edited_size_is_refused(signed):
    ws, _rita, _lena, path, size = signed
    found = reasons(ws, edited(path, f"\n{size}\n", f"\n{size - 1}\n"))
    assert found and "signature" in found[0]


def test_a_checkpoint_with_an_edited_root_is_refused(signed):
    ws, _rita, _lena, path, _size = signed
    root_line = path.read_text(encoding="utf-8").split("\n")[2]
    other = ("A" if root_line[0] != "A" else "B") + root_line[1:]
    found = reasons(ws, edited(path, root_line, other))
    assert found and "signature" in found[0]


def test_a_checkpoint_of_another_workspace_is_refused(signed):
    ws, _rita, _lena, path, _size = signed
    found = reasons(ws, edited(path, ws.workspace_id, "0" * 8 + ws.workspace_id[8:]))
    assert found and "is for log" in found[0]


def _forged_checkpoint(
    path: Path, ws: Workspace, signer, principal: str, namespace: str, size: int = 2
) -> Path:
    from engine.ledger import merkle
    from engine.ledger.checkpoint import format_checkpoint, note_body, origin_for
    from engine.ledger.treehead import leaf_hashes

    root = merkle.root_of(leaf_hashes(ws.conn)[:size])
    body = note_body(origin_for(ws.workspace_id), size, root)
    text = format_checkpoint(
        body, principal, signer.public_key.fingerprint, sshsig.armor(signer.sign(body, namespace))
    )
    out = path.with_name("forged.txt")
    out.write_text(text.replace("lead@sealdesk", namespace, 1), encoding="utf-8")
    return out


def test_a_checkpoint_signed_by_a_reviewer_key_is_refused(signed):
    ws, rita, _lena, path, _size = signed
    found = reasons(ws, _forged_checkpoint(path, ws, rita, "rita", "lead@sealdesk"))
    assert found and "rita" in found[0] and "may not sign as lead" in found[0]


def test_a_checkpoint_in_the_reviewer_namespace_is_refused(signed):
    ws, rita, _lena, path, _size = signed
    found = reasons(ws, _forged_checkpoint(path, ws, rita, "rita", "reviewer@sealdesk"))
    assert found and "namespace" in found[0]


def test_removing_the_lead_from_the_trust_file_does_not_touch_her_checkpoint(signed):
    """Who signed as lead is read from the ledger; the generated file is never read back."""
    ws, _rita, _lena, path, _size = signed
    lines = ws.allowed_signers_path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert any(line.startswith("lena ") for line in lines)
    ws.allowed_signers_path.write_text(
        "".join(ln for ln in lines if not ln.startswith("lena")), encoding="utf-8"
    )
    assert reasons(ws, path) == []


def test_a_revoked_lead_keeps_her_earlier_checkpoint_and_signs_off_no_more(signed, founder_key):
    """A revocation is a record: what lena signed before it stays valid (judged by seq),
    and from it on she can sign no sign-off or checkpoint."""
    from engine.errors import PermissionRefused
    from engine.ledger.enrol import revoke
    from engine.ledger.signers import FileSigner

    ws, rita, lena, path, _size = signed
    revoked = revoke(ws.db, ws.workspace_id, FileSigner(founder_key), "lena", lena.public_key)
    ws.write_allowed_signers()
    assert reasons(ws, path) == []
    ws.decide(rita, "flagged_pairs", "fp-5", "accept")
    with pytest.raises(PermissionRefused):
        sign_off(ws, lena, with_exceptions=True)
    # Past the app's refusal, straight through the store: verify names the revocation.
    forged = append_unchecked(
        ws, lena, "lena", "lead", "note", queue="flagged_pairs", item_id="fp-6", note="still lead?"
    )
    faults = verify_workspace(ws).faults
    assert [(f.seq, f.reason) for f in faults] == [
        (
            forged.seq,
            f"lena's key {lena.public_key.fingerprint} was revoked at record {revoked.seq}",
        )
    ]


# -- the command line ----------------------------------------------------------


def test_cli_export_then_verify_checkpoint_passes(signed, sealdesk, tmp_path):
    ws, _rita, _lena, _path, size = signed
    out = tmp_path / "exported.txt"
    sealdesk("checkpoint", "export", "--out", out, workspace=ws.root, check=True)
    assert out.read_text(encoding="utf-8") == (tmp_path / "checkpoint.txt").read_text("utf-8")
    proc = sealdesk("verify", "--checkpoint", out, workspace=ws.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"ok: {size + 1} record(s) verified")


def test_cli_verify_checkpoint_reads_stdin_and_fails_on_a_forgery(signed, sealdesk):
    ws, rita, _lena, path, size = signed
    forge(ws, lambda b: [{**x, "decision": "reject"} for x in without_signoffs(b)], rita)
    proc = sealdesk(
        "verify", "--checkpoint", "-", workspace=ws.root, input=path.read_text(encoding="utf-8")
    )
    assert proc.returncode == 1
    assert (
        f"FAIL: record {size}: checkpoint <stdin>: records 1..{size} are not the ones the "
        "lead signed"
    ) in proc.stderr


@pytest.mark.parametrize(
    "old,new,where",
    [
        ("\n{size}\n", "\nfour\n", ":2: field 'size'"),
        ("\nanchor SHA256:", "\nanchor MD5:", ":4: field 'anchor'"),
        ("\n\n\u2014", "\n\u2014", ":5: field 'root'"),
        ("\u2014 lena", "- lena", ":6: field 'signature'"),
    ],
)
def test_a_malformed_checkpoint_is_an_error_naming_line_and_field(
    signed, sealdesk, old, new, where
):
    ws, _rita, _lena, path, size = signed
    bad = edited(path, old.format(size=size), new)
    proc = sealdesk("verify", "--checkpoint", bad, workspace=ws.root)
    assert proc.returncode == 2
    assert f"sealdesk: error: {bad}{where}" in proc.stderr


def test_cli_export_before_any_signoff_says_what_to_do(workspace, sealdesk):
    proc = sealdesk("checkpoint", "export", workspace=workspace.root)
    assert proc.returncode == 2
    assert "no sign-off with a tree head yet" in proc.stderr


def _signature_not_text(message: str) -> str:
    body = json.loads(message)
    body["data"]["checkpoint"]["signature"] = 7
    return json.dumps(body)


@pytest.mark.parametrize(
    "mangle",
    [lambda m: "not json", lambda m: "[1,2]", _signature_not_text],
    ids=["not-json", "not-an-object", "signature-not-text"],
)
def test_a_mangled_signoff_record_is_a_checkpoint_fault_not_a_crash(signed, mangle):
    import hashlib

    ws, _rita, _lena, path, size = signed
    conn = sqlite3.connect(ws.db_path, isolation_level=None)
    conn.execute("DROP TRIGGER records_no_update")
    message = mangle(
        conn.execute("SELECT message FROM records WHERE seq=?", (size + 1,)).fetchone()[0]
    )
    conn.execute(
        "UPDATE records SET message=?, record_hash=? WHERE seq=?",
        (message, hashlib.sha256(message.encode()).hexdigest(), size + 1),
    )
    conn.close()
    report = verify_workspace(ws, checkpoint=path)
    assert any(
        f.seq == size + 1 and "not the sign-off that made this checkpoint" in f.reason
        for f in report.faults
    )
