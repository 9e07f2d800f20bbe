"""``sealdesk backup`` copies a workspace in use through SQLite's backup, keeps only a copy
that verifies, and never writes over anything."""

from __future__ import annotations

import sqlite3

import pytest

from tests.support.held_workspace import Held

DROP_TRIGGERS = "DROP TRIGGER records_no_update;"


def records(root) -> dict[int, str]:
    with sqlite3.connect(root / "sealdesk.db") as db:
        return dict(db.execute("SELECT seq, record_hash FROM records"))


def test_a_backup_taken_while_another_process_writes_is_whole_and_verifies(
    two_reviewers_ws,
    sealdesk,
    tmp_path,
):
    ws, keys = two_reviewers_ws
    held = Held(ws, keys["rita"], tmp_path / "receipts")
    try:
        acks = [held.ask(f"decide item-{i} accept") for i in range(3)]
        made = sealdesk("backup", tmp_path / "copy", workspace=ws, check=True)
        acks += [held.ask(f"decide item-{i} reject") for i in range(3, 6)]
    finally:
        held.quit()
    assert "the copy verifies" in made.stdout
    copy = records(tmp_path / "copy")
    # The copy holds every record acknowledged before it, and is a prefix of the ledger.
    assert all(copy.get(a["seq"]) == a["record_hash"] for a in acks[:3])
    assert copy.items() <= records(ws).items()
    assert all(records(ws).get(a["seq"]) == a["record_hash"] for a in acks)
    assert sealdesk("verify", workspace=tmp_path / "copy").returncode == 0
    assert (tmp_path / "copy" / "trust" / "allowed_signers").read_bytes() == (
        ws / "trust" / "allowed_signers"
    ).read_bytes()
    assert not any(p.name.startswith(".copy.partial-") for p in tmp_path.iterdir())


@pytest.mark.parametrize("where", ["existing", "inside"])
def test_a_backup_never_writes_over_anything_or_into_the_workspace(
    two_reviewers_ws,
    sealdesk,
    tmp_path,
    where,
):
    ws, _ = two_reviewers_ws
    dest = tmp_path / "taken" if where == "existing" else ws / "artifacts" / "copy"
    if where == "existing":
        dest.mkdir()
    proc = sealdesk("backup", dest, workspace=ws)
    assert proc.returncode == 2
    said = proc.stderr.strip()
    assert said.count("\n") == 0 and "field 'DEST'" in said
    assert ("already exists" if where == "existing" else "is inside the workspace") in said
    assert list(dest.iterdir()) == [] if where == "existing" else not dest.exists()


def test_a_copy_that_does_not_verify_is_not_kept(two_reviewers_ws, sealdesk, tmp_path):
    ws, keys = two_reviewers_ws
    sealdesk(
        *("decide", "--queue", "flagged_pairs", "--item", "item-0", "--decision", "accept"),
        *("--key", keys["rita"]),
        workspace=ws,
        check=True,
    )
    with sqlite3.connect(ws / "sealdesk.db", isolation_level=None) as db:
        db.executescript(DROP_TRIGGERS)
        db.execute("UPDATE records SET decision='reject' WHERE kind='decision'")
    proc = sealdesk("backup", tmp_path / "copy", workspace=ws)
    assert proc.returncode == 1
    assert "the copy does not verify" in proc.stderr and "no backup was kept" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if "copy" in p.name) == []
