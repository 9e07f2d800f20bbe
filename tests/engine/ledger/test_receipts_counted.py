"""Receipts and witnesses count what they compared, and comparing nothing is no pass.

A database swapped for another workspace's has another workspace id: receipts
and witness checkpoints kept for the genuine one name the old id. Skipping them
left nothing compared and ``verify`` said ok; an empty receipts directory or a
witness directory that does not exist passed the same way.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.backlog import make_items
from tests.support.cli_workspace import decide_args, found_through_cli


@pytest.fixture
def two_desks(tmp_path, sealdesk_main, keygen):
    """Two workspaces founded by lena with rita enrolled: the genuine one and another."""
    keys = {name: keygen(name) for name in ("lena", "rita")}
    made = []
    for name in ("ws", "other"):
        ws = tmp_path / name / "ws"
        ws.parent.mkdir()
        found_through_cli(
            sealdesk_main,
            ws,
            "lena",
            keys["lena"],
            [("rita", "reviewer", keys["rita"])],
            make_items(4),
        )
        made.append(ws)
    return made[0], made[1], keys


def decide(run, ws, key, item, decision, receipts):
    return run(
        *decide_args(key, item, decision=decision),
        workspace=ws,
        check=True,
        env={"SEALDESK_RECEIPTS": str(receipts)},
    )


def workspace_id(ws: Path) -> str:
    with sqlite3.connect(ws / "sealdesk.db") as conn:
        return conn.execute("SELECT value FROM meta WHERE key='workspace_id'").fetchone()[0]


def test_receipts_of_another_workspace_fail_a_swapped_database(two_desks, sealdesk_main, tmp_path):
    genuine, other, keys = two_desks
    mine = tmp_path / "rita-state"
    decide(sealdesk_main, genuine, keys["rita"], "item-0", "accept", mine)
    decide(sealdesk_main, genuine, keys["rita"], "item-1", "reject", mine)

    proc = sealdesk_main("verify", "--receipts", mine, workspace=other)
    assert proc.returncode == 1, proc.stdout
    assert f"is of workspace {workspace_id(genuine)}, not this one" in proc.stderr
    assert "(and 1 more)" in proc.stderr
    assert f"0 receipts compared ({mine})" in proc.stdout
    # The same receipts against the genuine workspace: both compared, and it passes.
    ok = sealdesk_main("verify", "--receipts", mine, workspace=genuine)
    assert ok.returncode == 0, ok.stderr
    assert f"2 receipts compared ({mine})" in ok.stdout.splitlines()


def test_an_empty_receipts_directory_is_a_failure_not_a_pass(two_desks, sealdesk_main, tmp_path):
    genuine, _, _ = two_desks
    empty = tmp_path / "gathered"
    empty.mkdir()
    proc = sealdesk_main("verify", "--receipts", empty, workspace=genuine)
    assert proc.returncode == 1
    assert f"0 receipts compared: {empty} holds no receipt of this workspace" in proc.stderr


def test_receipts_from_a_file_or_stdin_are_compared_and_counted(two_desks, sealdesk_main, tmp_path):
    genuine, _, keys = two_desks
    mine = tmp_path / "rita-state"
    decide(sealdesk_main, genuine, keys["rita"], "item-0", "accept", mine)
    (kept,) = mine.glob("*.jsonl")
    by_file = sealdesk_main("verify", "--receipts", kept, workspace=genuine)
    assert by_file.returncode == 0 and f"1 receipt compared ({kept})" in by_file.stdout
    by_stdin = sealdesk_main("verify", "--receipts", "-", workspace=genuine, input=kept.read_text())
    assert by_stdin.returncode == 0 and "1 receipt compared (<stdin>)" in by_stdin.stdout


def test_a_receipt_line_with_hostile_text_is_refused_naming_its_line(
    two_desks, sealdesk_main, tmp_path
):
    genuine, _, keys = two_desks
    mine = tmp_path / "rita-state"
    decide(sealdesk_main, genuine, keys["rita"], "item-0", "accept", mine)
    (kept,) = mine.glob("*.jsonl")
    receipt = json.loads(kept.read_text())
    forged = tmp_path / "forged.jsonl"
    forged.write_text(json.dumps({**receipt, "workspace": "x\x1b]0;pwned\x07"}) + "\n")
    proc = sealdesk_main("verify", "--receipts", forged, workspace=genuine)
    assert proc.returncode == 2
    assert f"{forged}:1: field 'workspace': must be a workspace id" in proc.stderr
    assert "\x1b" not in proc.stderr + proc.stdout


def test_a_witness_that_does_not_exist_or_holds_another_workspace_fails(
    two_desks, sealdesk_main, tmp_path
):
    genuine, other, keys = two_desks
    witness = tmp_path / "witness"
    sealdesk_main("checkpoint", "witness", "add", witness, workspace=genuine, check=True)
    decide(sealdesk_main, genuine, keys["rita"], "item-0", "accept", tmp_path / "r")
    sealdesk_main(
        "signoff",
        "--yes",
        "--with-exceptions",
        "--key",
        keys["lena"],
        workspace=genuine,
        check=True,
    )

    missing = tmp_path / "no-such-witness"
    proc = sealdesk_main("verify", "--witness", missing, workspace=genuine)
    assert proc.returncode == 1
    assert f"witness {missing}: no such directory; 0 checkpoints compared" in proc.stderr

    swapped = sealdesk_main("verify", "--witness", witness, workspace=other)
    assert swapped.returncode == 1
    assert f"holds checkpoints of sealdesk/{workspace_id(genuine)}, not only" in swapped.stderr
    assert f"0 checkpoints compared (witness {witness})" in swapped.stdout

    ok = sealdesk_main("verify", "--witness", witness, workspace=genuine)
    assert ok.returncode == 0, ok.stderr
    assert f"1 checkpoint compared (witness {witness})" in ok.stdout.splitlines()
    # One workspace's folder of a witness shared by several is named directly.
    folder = witness / workspace_id(genuine)
    direct = sealdesk_main("verify", "--witness", folder, workspace=genuine)
    assert direct.returncode == 0 and f"1 checkpoint compared (witness {folder})" in direct.stdout


def sqlite_copy(src: Path, dest: Path) -> None:
    """Copies one database onto another with SQLite's online backup API."""
    source, target = sqlite3.connect(src), sqlite3.connect(dest)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def test_plain_verify_catches_a_rollback_by_the_receipts_you_keep(two_desks, sealdesk, tmp_path):
    genuine, other, keys = two_desks
    state = tmp_path / "rita-state"
    env = {"SEALDESK_RECEIPTS": str(state)}
    kept = state / f"{workspace_id(genuine)}.jsonl"
    none_yet = sealdesk("verify", workspace=genuine, env=env)
    assert none_yet.returncode == 0
    assert f"0 receipts compared (yours, {kept})" in none_yet.stdout

    decide(sealdesk, genuine, keys["rita"], "item-0", "accept", state)
    saved = tmp_path / "before.db"
    sqlite_copy(genuine / "sealdesk.db", saved)
    decide(sealdesk, genuine, keys["rita"], "item-1", "reject", state)
    decide(sealdesk, genuine, keys["rita"], "item-2", "accept", state)
    assert "3 receipts compared (yours" in sealdesk("verify", workspace=genuine, env=env).stdout
    sqlite_copy(saved, genuine / "sealdesk.db")  # the old copy restored: two decisions gone

    # Someone else, who kept no receipt here, sees a ledger that verifies...
    assert sealdesk("verify", workspace=genuine).returncode == 0
    # ...rita's own plain verify names what it lost.
    proc = sealdesk("verify", workspace=genuine, env=env)
    assert proc.returncode == 1
    assert f"record 4: receipt {kept}:2: record 4" in proc.stderr and "rolled back" in proc.stderr
    assert "(1 further fault(s) after it)" in proc.stderr
    assert "3 receipts compared (yours" in proc.stdout
    # Her state directory holds other workspaces' files too: only this one's is read.
    decide(sealdesk, other, keys["rita"], "item-0", "accept", state)
    named = sealdesk("verify", "--receipts", state, workspace=other, env=env)
    assert named.returncode == 0, named.stderr
    assert "1 receipt compared (yours" in named.stdout


def test_receipts_lists_and_keeps_what_a_gated_host_printed(sealdesk_main, tmp_path):
    state = tmp_path / "laptop-state"
    env = {"SEALDESK_RECEIPTS": str(state)}
    listed = sealdesk_main("receipts", env=env, check=True)
    assert listed.stdout.splitlines() == [f"receipts are kept in {state}", "none kept yet"]

    receipt = {
        "type": "sealdesk.receipt/v1",
        "workspace": "f954d45a-d329-4d51-ad78-c45b01ea4595",
        "seq": 9,
        "tree_size": 9,
        "record_hash": "c8" * 32,
        "root": "a1" * 32,
        "principal": "rita",
        "time": "2026-12-01T15:37:00.846445Z",
    }
    output = "\n".join(
        [
            "#9 accept flagged_pairs/item-0 by rita as reviewer c8c8c8c8c8c8",
            json.dumps(receipt, sort_keys=True),
            "receipt: #9 tree 9 root a1a1a1a1a1a1a1a1 (1 kept in /home/x)",
        ]
    )
    kept = sealdesk_main("receipts", "keep", env=env, input=output, check=True)
    assert kept.stdout.splitlines() == [output.splitlines()[0], output.splitlines()[2]]
    path = state / f"{receipt['workspace']}.jsonl"
    assert f"receipts: 1 kept in {path}" in kept.stderr
    assert [json.loads(line) for line in path.read_text().splitlines()] == [receipt]
    listed = sealdesk_main("receipts", env=env, check=True)
    assert f"{receipt['workspace']}  1 receipt" in listed.stdout.splitlines()

    # The same line in a terminal session's log (ssh -t through tee), the app's
    # screen reset before it and a carriage return after: kept all the same.
    logged = f"\x1b[?1049l{json.dumps({**receipt, 'seq': 10, 'tree_size': 10})}\r\n"
    sealdesk_main("receipts", "keep", env=env, input=logged, check=True)
    assert [json.loads(line)["seq"] for line in path.read_text().splitlines()] == [9, 10]

    broken = output.replace('"seq": 9', '"seq": "9"')
    refused = sealdesk_main("receipts", "keep", env=env, input=broken)
    assert refused.returncode == 2 and "<stdin>:2: field 'seq'" in refused.stderr
    assert len(path.read_text().splitlines()) == 2  # nothing more was kept
