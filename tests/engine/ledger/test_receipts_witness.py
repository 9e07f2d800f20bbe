"""Rollbacks and forks: what verifies on its own is caught by receipts and witnesses.

A workspace copied back from an old backup loses acknowledged decisions,
and two ``cp -a`` copies that go their own ways each verify on their own.
Signers' receipts and a witness directory of pushed checkpoints see both.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.backlog import make_items
from tests.support.cli_workspace import decide_args, enrol_args, found_through_cli, revoke_args
from tests.support.ssh import verify_args


@pytest.fixture
def desk(tmp_path, sealdesk, keygen):
    """lena's workspace with rita enrolled; receipts go to each person's own directory."""
    ws = tmp_path / "ws"
    keys = {name: keygen(name) for name in ("lena", "rita")}
    found_through_cli(
        sealdesk, ws, "lena", keys["lena"], [("rita", "reviewer", keys["rita"])], make_items(4)
    )
    return ws, keys


def decide(sealdesk, ws, key, item, decision, receipts):
    return sealdesk(
        *decide_args(key, item, decision=decision),
        workspace=ws,
        check=True,
        env={"SEALDESK_RECEIPTS": str(receipts)},
    )


def test_every_acknowledged_decision_leaves_a_receipt_with_the_signer(desk, sealdesk, tmp_path):
    ws, keys = desk
    mine = tmp_path / "rita-state"
    proc = decide(sealdesk, ws, keys["rita"], "item-0", "accept", mine)
    (path,) = mine.glob("*.jsonl")
    (receipt,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert receipt["seq"] == 3 and receipt["tree_size"] == 3
    assert f"receipt: #3 tree 3 root {receipt['root'][:16]}" in proc.stderr
    # The receipt's root is the tree head a sign-off would sign over the same records.
    sealdesk(
        "signoff", "--yes", "--with-exceptions", "--key", keys["lena"], workspace=ws, check=True
    )
    note = sealdesk("checkpoint", "export", workspace=ws, check=True).stdout.splitlines()
    assert note[1] == "3"  # the sign-off covers records 1..3, the receipt's tree
    import base64

    assert base64.b64decode(note[2]).hex() == receipt["root"]


def test_a_rollback_to_an_old_copy_is_caught_by_the_receipts(desk, sealdesk, tmp_path):
    ws, keys = desk
    mine = tmp_path / "rita-state"
    decide(sealdesk, ws, keys["rita"], "item-0", "accept", mine)
    backup = tmp_path / "backup"
    shutil.copytree(ws, backup)
    decide(sealdesk, ws, keys["rita"], "item-1", "reject", mine)
    decide(sealdesk, ws, keys["rita"], "item-2", "accept", mine)
    shutil.rmtree(ws)
    shutil.copytree(backup, ws)  # the database copied back: two decisions are gone

    assert sealdesk("verify", workspace=ws).returncode == 0  # every record left verifies
    proc = sealdesk("verify", "--receipts", mine, workspace=ws)
    assert proc.returncode == 1
    assert "record 4:" in proc.stderr and "rolled back" in proc.stderr


def test_two_copies_that_forked_are_reported_by_the_witness(desk, sealdesk, tmp_path):
    ws, keys = desk
    witness = tmp_path / "witness"
    subprocess.run(["git", "init", "-q", str(witness)], check=True)
    sealdesk("checkpoint", "witness", "add", witness, workspace=ws, check=True)
    copy = tmp_path / "copy"
    shutil.copytree(ws, copy)  # cp -a: one workspace id, two ledgers from here on
    decide(sealdesk, ws, keys["rita"], "item-0", "accept", tmp_path / "r1")
    decide(sealdesk, copy, keys["rita"], "item-0", "reject", tmp_path / "r2")
    for where in (ws, copy):
        assert sealdesk("verify", workspace=where).returncode == 0

    first = sealdesk(
        "signoff", "--yes", "--with-exceptions", "--key", keys["lena"], workspace=ws, check=True
    )
    assert "checkpoint pushed to witness" in first.stdout and "(committed)" in first.stdout
    log = subprocess.run(
        ["git", "-C", str(witness), "log", "--oneline"], capture_output=True, text=True, check=True
    ).stdout
    assert "checkpoint sealdesk/" in log

    second = sealdesk(
        "signoff", "--yes", "--with-exceptions", "--key", keys["lena"], workspace=copy
    )
    assert second.returncode == 1
    assert "signed off" in second.stdout and "fork" in second.stderr
    assert sealdesk("verify", "--witness", witness, workspace=ws).returncode == 0
    proc = sealdesk("verify", "--witness", witness, workspace=copy)
    assert proc.returncode == 1 and "forked" in proc.stderr


def test_a_witness_with_a_larger_checkpoint_exposes_a_rollback(desk, sealdesk, tmp_path):
    ws, keys = desk
    witness = tmp_path / "witness"
    sealdesk("checkpoint", "witness", "add", witness, workspace=ws, check=True)
    backup = tmp_path / "backup"
    shutil.copytree(ws, backup)
    decide(sealdesk, ws, keys["rita"], "item-0", "accept", tmp_path / "r")
    sealdesk(
        "signoff", "--yes", "--with-exceptions", "--key", keys["lena"], workspace=ws, check=True
    )
    proc = sealdesk("verify", "--witness", witness, workspace=backup)
    assert proc.returncode == 1 and "rolled back" in proc.stderr


def test_an_auditor_checks_every_record_offline_with_ssh_keygen_and_the_export(
    desk, sealdesk, keygen, tmp_path
):
    """Only the exported lines, the auditor's own copy of the lead key and ssh-keygen."""
    ws, keys = desk
    adam = keygen("adam")
    sealdesk(*enrol_args("adam", "reviewer", adam, keys["lena"]), workspace=ws, check=True)
    decide(sealdesk, ws, adam, "item-0", "accept", tmp_path / "a")
    sealdesk(*revoke_args("adam", keys["lena"]), workspace=ws, check=True)
    sealdesk(*enrol_args("rita", "lead", keys["rita"], keys["lena"]), workspace=ws, check=True)
    decide(sealdesk, ws, keys["rita"], "item-1", "reject", tmp_path / "r")
    sealdesk(
        "signoff", "--yes", "--with-exceptions", "--key", keys["rita"], workspace=ws, check=True
    )
    export = tmp_path / "records.jsonl"
    sealdesk("export", "--out", export, workspace=ws, check=True)
    shutil.rmtree(ws)  # the auditor has no workspace

    anchor = tmp_path / "anchor"
    lena_pub = Path(f"{keys['lena']}.pub").read_text()
    anchor.write_text(f'lena namespaces="lead@sealdesk" {lena_pub}')
    lines = [json.loads(line) for line in export.read_text().splitlines()]
    signed = {line["seq"]: json.loads(line["message"]) for line in lines}

    def keygen_verify(allowed: Path, line: dict) -> subprocess.CompletedProcess:
        (tmp_path / "msg").write_text(line["message"])
        (tmp_path / "msg.sig").write_text(line["signature"])
        with open(tmp_path / "msg", "rb") as stdin:
            return subprocess.run(
                verify_args(
                    allowed,
                    line["principal"],
                    line["namespace"],
                    tmp_path / "msg.sig",
                    f"-Overify-time={line['verify_time']}",
                ),
                stdin=stdin,
                capture_output=True,
                text=True,
            )

    assert lines[0]["kind"] == "genesis"
    assert keygen_verify(anchor, lines[0]).returncode == 0  # the genesis, by the anchor key
    for line in lines:
        # The line that authorises each record comes from a signed enrolment it names.
        grant = signed[line["granted_by"]]
        entries = (
            grant["data"]["signers"] if grant["kind"] == "genesis" else [grant["data"]["signer"]]
        )
        key = line["allowed_signers"].strip().rsplit(" ", 2)[-2:]
        assert any(
            e["principal"] == line["principal"]
            and e["key"] == " ".join(key)
            and line["role"] in e["roles"]
            for e in entries
        ), line["seq"]
        one = tmp_path / "allowed"
        one.write_text(line["allowed_signers"])
        proc = keygen_verify(one, line)
        assert proc.returncode == 0, (line["seq"], line["allowed_signers"], proc.stderr)
    kinds = [line["kind"] for line in lines]
    assert kinds.count("enrol") == 3 and kinds.count("revoke") == 1
    revoked = next(line for line in lines if line["kind"] == "revoke")
    adams = next(line for line in lines if line["principal"] == "adam")
    assert "valid-before=" in adams["allowed_signers"]  # bounded by the revocation
    assert revoked["seq"] > adams["seq"]
