"""The command line: the whole decide/verify/export path, and refusals of bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engine.canonical import canonical_json
from tests.conftest import SEALDESK
from tests.support.backlog import make_items, write_items_file
from tests.support.cli_workspace import decide_args, enrol_args
from tests.support.refusals import one_line_error, snapshot
from tests.support.ssh import verify_args


def test_exported_records_verify_with_ssh_keygen(cli_ws, sealdesk, tmp_path):
    ws, keys = cli_ws
    sealdesk(
        *decide_args(keys["rita"], "item-0", "item-1", note="copied verbatim"),
        workspace=ws,
        check=True,
    )
    sealdesk(
        "undo",
        "--queue",
        "flagged_pairs",
        "--item",
        "item-1",
        "--key",
        keys["rita"],
        workspace=ws,
        check=True,
    )
    assert sealdesk("verify", workspace=ws).returncode == 0
    out = tmp_path / "records.jsonl"
    sealdesk("export", "--out", out, workspace=ws, check=True)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    # The genesis and rita's enrolment are records too, and verify the same way.
    assert [r["kind"] for r in lines] == ["genesis", "enrol", "decision", "decision", "retract"]
    for rec in lines:
        (tmp_path / "msg").write_text(rec["message"])
        (tmp_path / "msg.sig").write_text(rec["signature"])
        proc = subprocess.run(
            verify_args(
                ws / "trust" / "allowed_signers",
                rec["principal"],
                rec["namespace"],
                tmp_path / "msg.sig",
            ),
            stdin=open(tmp_path / "msg", "rb"),
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr


def test_items_json_reports_effective_decisions(cli_ws, sealdesk_main):
    ws, keys = cli_ws
    sealdesk_main(*decide_args(keys["rita"], "item-2", decision="reject"), workspace=ws, check=True)
    rows = json.loads(sealdesk_main("items", "--json", workspace=ws, check=True).stdout)
    status = {r["item_id"]: r["status"] for r in rows}
    assert status == {"item-0": "undecided", "item-1": "undecided", "item-2": "reject"}
    undecided = json.loads(
        sealdesk_main("items", "--status", "undecided", "--json", workspace=ws, check=True).stdout
    )
    assert [r["item_id"] for r in undecided] == ["item-0", "item-1"]


def test_bulk_decide_reads_ids_from_stdin(cli_ws, sealdesk):
    ws, keys = cli_ws
    sealdesk(
        *decide_args(keys["rita"], "-", decision="skip"),
        input="item-0\nitem-2\n",
        workspace=ws,
        check=True,
    )
    rows = json.loads(sealdesk("items", "--status", "skip", "--json", workspace=ws).stdout)
    assert [r["item_id"] for r in rows] == ["item-0", "item-2"]


def test_decision_in_a_role_the_signer_lacks_is_refused(cli_ws, sealdesk_main):
    ws, keys = cli_ws
    before = snapshot(ws)
    proc = sealdesk_main(*decide_args(keys["rita"], "item-0", role="lead"), workspace=ws)
    assert proc.returncode == 3 and "may not sign as lead" in proc.stderr
    proc = sealdesk_main(*decide_args(keys["adam"], "item-0"), workspace=ws)
    assert proc.returncode == 3 and "is not enrolled in this workspace's ledger" in proc.stderr
    assert snapshot(ws) == before


def test_reingesting_the_same_items_is_a_no_op(cli_ws, sealdesk_main, tmp_path):
    ws, _ = cli_ws
    proc = sealdesk_main("ingest", tmp_path / "items.jsonl", workspace=ws, check=True)
    assert "0 added, 3 already held" in proc.stdout


def test_item_id_held_with_different_bytes_is_refused(cli_ws, sealdesk_main, tmp_path):
    ws, _ = cli_ws
    changed = make_items(3)
    from engine.workspace import BacklogItem

    changed[1] = BacklogItem.make("flagged_pairs", "item-1", "run-1", {"text": "other"})
    path = tmp_path / "changed.jsonl"
    write_items_file(path, changed)
    before = snapshot(ws)
    err = one_line_error(sealdesk_main("ingest", path, workspace=ws))
    assert "item-1 already exists with different bytes" in err
    assert snapshot(ws) == before


BAD_LINES = {
    "non-canonical": (b'{"queue": "flagged_pairs"}', "not canonical", None),
    "unknown-queue": (None, "unknown queue 'flaged_pairs'", "queue"),
    "wrong-hash": (None, "is not the SHA-256 of the canonical payload", "item_sha256"),
    "not-json": (b"{oops", "not valid JSON", None),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_bad_item_line_names_file_line_and_field_and_writes_nothing(
    cli_ws, sealdesk_main, tmp_path, case
):
    ws, _ = cli_ws
    raw, message, field = BAD_LINES[case]
    good = make_items(4, run_id="run-2")
    bad_obj = good[2].to_json()
    if case == "unknown-queue":
        bad_obj["queue"] = "flaged_pairs"
    if case == "wrong-hash":
        bad_obj["item_sha256"] = "0" * 64
    lines = [canonical_json(i.to_json()) for i in good]
    lines[2] = raw if raw is not None else canonical_json(bad_obj)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    before = snapshot(ws)
    err = one_line_error(sealdesk_main("ingest", path, workspace=ws))
    assert err.startswith(f"sealdesk: error: {path}:3: ")
    assert message in err
    if field:
        assert f"field '{field}'" in err
    assert snapshot(ws) == before


def test_malformed_public_key_is_refused(cli_ws, sealdesk_main, tmp_path):
    ws, keys = cli_ws
    bad = tmp_path / "bad.pub"
    bad.write_text("ssh-ed25519 AAAAnot-base64!! x\n")
    before = snapshot(ws)
    err = one_line_error(
        sealdesk_main(
            "keys",
            "add",
            "--principal",
            "eve",
            "--role",
            "reviewer",
            "--key",
            bad,
            "--lead-key",
            keys["founder"],
            workspace=ws,
        )
    )
    assert "malformed ssh-ed25519 key" in err
    assert snapshot(ws) == before


def test_non_ed25519_key_is_refused(cli_ws, sealdesk_main, keygen):
    ws, keys = cli_ws
    rsa = keygen("old", key_type="rsa")
    before = snapshot(ws)
    err = one_line_error(
        sealdesk_main(*enrol_args("old", "reviewer", rsa, keys["founder"]), workspace=ws)
    )
    assert "ssh-ed25519 only" in err
    err = one_line_error(sealdesk_main(*decide_args(rsa, "item-0"), workspace=ws))
    assert "ssh-ed25519 only" in err
    assert snapshot(ws) == before


def test_missing_workspace_says_how_to_make_one(sealdesk_main, tmp_path):
    err = one_line_error(sealdesk_main("items", workspace=tmp_path / "nowhere"))
    assert "no workspace at" in err and "sealdesk init" in err
    assert not (tmp_path / "nowhere").exists()


def test_unreadable_workspace_database_is_refused(sealdesk_main, tmp_path):
    ws = tmp_path / "broken"
    ws.mkdir()
    (ws / "sealdesk.db").write_bytes(b"this is not sqlite" * 100)
    before = (ws / "sealdesk.db").read_bytes()
    err = one_line_error(sealdesk_main("items", workspace=ws))
    assert "not a sealdesk database" in err
    assert (ws / "sealdesk.db").read_bytes() == before


@pytest.mark.parametrize("command", [("items",), ("verify",), ("export", "--out", "x.jsonl")])
def test_an_empty_database_file_is_refused_and_stays_empty(sealdesk_main, tmp_path, command):
    ws = tmp_path / "empty"
    ws.mkdir()
    (ws / "sealdesk.db").touch()
    err = one_line_error(sealdesk_main(*command, workspace=ws))
    assert "sealdesk.db: is empty, so not a sealdesk database" in err, err
    assert (ws / "sealdesk.db").stat().st_size == 0
    assert sorted(p.name for p in ws.iterdir()) == ["sealdesk.db"]  # no -wal, no -shm


# Root reads any file whatever its mode, so as root the command runs twice in
# one process: once as root (which loads every module it imports lazily; the
# interpreter may sit under /root), then with its privileges dropped to nobody.
DROP_TO_NOBODY = (
    "import os, sys\n"
    "import engine.cli.main\n"
    "try:\n"
    "    engine.cli.main.main(sys.argv[1:])\n"
    "except SystemExit:\n"
    "    pass\n"
    "os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
    "engine.cli.main.main(sys.argv[1:])\n"
)


def test_workspace_without_read_permission_is_refused(sealdesk, init_cli, tmp_path):
    # A world-traversable parent, so only the database's own mode can refuse.
    parent = Path(tempfile.mkdtemp(prefix="sealdesk-locked-"))
    try:
        parent.chmod(0o755)
        ws = parent / "locked"
        init_cli(ws)
        ws.chmod(0o755)
        db = ws / "sealdesk.db"
        os.chmod(db, 0)
        cmd = [sys.executable, "-c", DROP_TO_NOBODY] if os.geteuid() == 0 else list(SEALDESK)
        proc = subprocess.run(
            cmd + ["--workspace", str(ws), "items"],
            capture_output=True,
            text=True,
            cwd="/",
            timeout=120,
        )
        err = one_line_error(proc)
        assert f"{db} is not readable by this user" in err
        os.chmod(db, 0o600)
        assert sealdesk("items", workspace=ws, check=True).returncode == 0
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_workspace_env_variable_is_used(sealdesk, founder_key, tmp_path):
    ws = tmp_path / "from-env"
    sealdesk(
        "init",
        "--lead",
        "founder",
        "--key",
        founder_key,
        env={"SEALDESK_WORKSPACE": str(ws)},
        check=True,
    )
    assert (ws / "sealdesk.db").exists() and (ws / "trust" / "allowed_signers").exists()
    assert (ws / "artifacts").is_dir()
    # The genesis went into that workspace's ledger, and commands find it the same way.
    listed = sealdesk("keys", "list", env={"SEALDESK_WORKSPACE": str(ws)}, check=True).stdout
    assert "genesis: record 1; founding lead(s): founder" in listed


def test_database_is_wal_full_sync_strict(workspace):
    conn = workspace.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    strict = dict(
        conn.execute(
            "SELECT name, strict FROM pragma_table_list WHERE schema='main' "
            "AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
    )
    assert strict and all(strict.values()), strict
