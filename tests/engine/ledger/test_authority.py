"""Who may sign is itself signed: the genesis, enrolments and revocations are ledger records.

Each test plays an attacker with a shell on the review host (and some
person's key) against the real CLI, real SQLite and real ssh-keygen keys,
and shows what catches them: a refusal before anything is signed, or
``sealdesk verify`` naming the record.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from engine.ledger import sshsig, store
from engine.ledger.records import INDEXED_FIELDS, encode_body, make_body, utc_now
from engine.ledger.signers import FileSigner
from engine.roles import namespace_for
from tests.support.backlog import make_items
from tests.support.cli_workspace import decide_args, enrol_args, found_through_cli, revoke_args
from tests.support.ssh import verify_args


@pytest.fixture
def desk(tmp_path, sealdesk, keygen):
    """A workspace lena founded through the CLI, rita enrolled as reviewer, three items."""
    ws = tmp_path / "ws"
    keys = {name: keygen(name) for name in ("lena", "rita", "mallory")}
    found_through_cli(
        sealdesk,
        ws,
        "lena",
        keys["lena"],
        [("rita", "reviewer", keys["rita"])],
        make_items(3) + make_items(1, queue="weak_categories"),
    )
    return ws, keys


def head(ws: Path) -> int:
    with sqlite3.connect(ws / "sealdesk.db") as conn:
        return conn.execute("SELECT COALESCE(MAX(seq), 0) FROM records").fetchone()[0]


def forge(
    ws: Path,
    key: Path,
    *,
    principal: str,
    role: str,
    kind: str = "decision",
    time: str | None = None,
    **fields,
) -> int:
    """Signs a record with a real key and INSERTs it as the next link, as an attacker with
    the key and the database file would (no sealdesk check runs); gives its seq."""
    conn = sqlite3.connect(ws / "sealdesk.db", isolation_level=None)
    try:
        workspace_id = conn.execute("SELECT value FROM meta WHERE key='workspace_id'").fetchone()[0]
        seq, prev = store.head(conn)
        if kind == "decision":
            item = conn.execute(
                "SELECT item_sha256, runs.manifest_sha256 FROM items JOIN runs "
                "USING (run_id) WHERE items.queue=? AND item_id=?",
                (fields["queue"], fields["item_id"]),
            ).fetchone()
            fields.update(item_sha256=item[0], run_sha256=item[1])
        signer = FileSigner(key)
        body = make_body(
            workspace=workspace_id,
            seq=seq + 1,
            prev=prev,
            kind=kind,
            principal=principal,
            role=role,
            key=signer.public_key.fingerprint,
            time=time or utc_now(),
            **fields,
        )
        message, record_hash = encode_body(body)
        signature = sshsig.armor(signer.sign(message, namespace_for(role)))
        row = {name: body[name] for name in INDEXED_FIELDS}
        row.update(
            record_hash=record_hash, prev_hash=prev, message=message.decode(), signature=signature
        )
        names = ", ".join(row)
        conn.execute(
            f"INSERT INTO records ({names}) VALUES ({', '.join('?' * len(row))})",
            tuple(row.values()),
        )
        return seq + 1
    finally:
        conn.close()


def failure(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode != 0, proc.stdout
    return proc.stderr


def named_by_verify(sealdesk, ws: Path, key: Path, **record) -> str:
    """Forges a decision (``forge``; on flagged_pairs' item-0, accepted, unless record
    says otherwise) and gives verify's failure, which names it by its seq."""
    for name, value in (("queue", "flagged_pairs"), ("item_id", "item-0"), ("decision", "accept")):
        record.setdefault(name, value)
    seq = forge(ws, key, **record)
    err = failure(sealdesk("verify", workspace=ws))
    assert f"record {seq}:" in err
    return err


def test_keys_add_without_a_lead_signature_is_refused_and_writes_nothing(desk, sealdesk):
    ws, keys = desk
    before = head(ws)
    proc = sealdesk(*enrol_args("lena", "lead", keys["mallory"], keys["mallory"]), workspace=ws)
    assert proc.returncode == 3
    assert "not enrolled" in proc.stderr or "does not hold the lead role" in proc.stderr
    assert head(ws) == before
    assert "mallory" not in sealdesk("keys", "list", workspace=ws, check=True).stdout


def test_a_reviewer_cannot_promote_herself(desk, sealdesk):
    ws, keys = desk
    before = head(ws)
    proc = sealdesk(*enrol_args("rita", "lead", keys["rita"], keys["rita"]), workspace=ws)
    assert proc.returncode == 3
    assert "does not hold the lead role" in proc.stderr
    assert head(ws) == before


def test_a_hand_edited_allowed_signers_grants_nothing(desk, sealdesk):
    ws, keys = desk
    trust = ws / "trust" / "allowed_signers"
    mallory = Path(f"{keys['mallory']}.pub").read_text().split()[:2]
    with trust.open("a") as f:  # as any shell on the review account could
        f.write(f'lena namespaces="lead@sealdesk,reviewer@sealdesk" {" ".join(mallory)}\n')
    proc = sealdesk(*decide_args(keys["mallory"], "item-0"), workspace=ws)
    assert proc.returncode == 3 and "not enrolled" in proc.stderr
    # With the database file too, the forged record is signed but named by verify.
    err = named_by_verify(sealdesk, ws, keys["mallory"], principal="lena", role="reviewer")
    assert "never enrolled" in err


def test_enrolment_records_decide_who_signs_and_verify_replays_them(desk, sealdesk):
    ws, keys = desk
    sealdesk(*decide_args(keys["rita"], "item-0"), workspace=ws, check=True)
    listing = sealdesk("keys", "list", workspace=ws, check=True).stdout
    assert "genesis: record 1" in listing and "rita" in listing and "reviewer" in listing
    out = sealdesk("verify", workspace=ws, check=True).stdout
    assert "ok: 3 record(s)" in out and "lena 2, rita 1" in out  # genesis, enrolment, decision


def test_a_role_taken_away_is_replayed_by_seq(desk, sealdesk):
    ws, keys = desk
    sealdesk(*enrol_args("rita", "lead", keys["rita"], keys["lena"]), workspace=ws, check=True)
    sealdesk(
        *decide_args(keys["rita"], "item-0", queue="weak_categories", role="lead"),
        workspace=ws,
        check=True,
    )
    sealdesk(*revoke_args("rita", keys["lena"], "--role", "lead"), workspace=ws, check=True)
    assert sealdesk("verify", workspace=ws).returncode == 0  # her lead decision came first
    refused = sealdesk(
        *decide_args(
            keys["rita"], "item-0", decision="reject", queue="weak_categories", role="lead"
        ),
        workspace=ws,
    )
    assert refused.returncode == 3
    err = named_by_verify(
        sealdesk,
        ws,
        keys["rita"],
        principal="rita",
        role="lead",
        queue="weak_categories",
        decision="reject",
    )
    assert "holds reviewer" in err and "not lead" in err


def test_a_revoked_key_cannot_backdate_a_record(desk, sealdesk):
    ws, keys = desk
    sealdesk(*decide_args(keys["rita"], "item-0"), workspace=ws, check=True)
    with sqlite3.connect(ws / "sealdesk.db") as conn:
        decided_at = conn.execute("SELECT time FROM records ORDER BY seq DESC LIMIT 1").fetchone()[
            0
        ]
    sealdesk(
        *revoke_args("rita", keys["lena"], "--reason", "laptop stolen"), workspace=ws, check=True
    )
    revoked_at = head(ws)
    with sqlite3.connect(ws / "sealdesk.db") as conn:
        revoke_time = conn.execute(
            "SELECT time FROM records WHERE seq=?", (revoked_at,)
        ).fetchone()[0]
    # The thief signs with rita's key, claiming the revocation's own moment: the clock
    # says nothing is wrong (not before the last record), the seq does.
    assert decided_at <= revoke_time
    err = named_by_verify(
        sealdesk,
        ws,
        keys["rita"],
        principal="rita",
        role="reviewer",
        time=revoke_time,
        item_id="item-1",
        decision="reject",
    )
    assert f"revoked at record {revoked_at}" in err
    refused = sealdesk(*decide_args(keys["rita"], "item-2"), workspace=ws)
    assert refused.returncode == 3


def test_a_record_outside_its_signers_validity_window_is_named(desk, sealdesk, tmp_path):
    ws, keys = desk
    sealdesk(
        *enrol_args(
            "mallory",
            "reviewer",
            keys["mallory"],
            keys["lena"],
            "--valid-before",
            "2026-01-01T00:00:00Z",
        ),
        workspace=ws,
        check=True,
    )
    refused = sealdesk(*decide_args(keys["mallory"], "item-0"), workspace=ws)
    assert refused.returncode == 3 and "may not sign in any role now" in refused.stderr
    err = named_by_verify(sealdesk, ws, keys["mallory"], principal="mallory", role="reviewer")
    assert "validity window" in err


def test_the_last_lead_key_cannot_be_revoked(desk, sealdesk):
    ws, keys = desk
    before = head(ws)
    proc = sealdesk(
        "keys", "revoke", "--principal", "lena", "--lead-key", keys["lena"], workspace=ws
    )
    assert proc.returncode == 3 and "last lead key" in proc.stderr
    assert head(ws) == before


def test_a_revoked_key_is_never_enrolled_again(desk, sealdesk):
    ws, keys = desk
    sealdesk(*revoke_args("rita", keys["lena"]), workspace=ws, check=True)
    proc = sealdesk(*enrol_args("rita", "reviewer", keys["rita"], keys["lena"]), workspace=ws)
    assert proc.returncode == 4 and "never enrolled again" in proc.stderr


def test_one_key_signs_for_one_person(desk, sealdesk):
    ws, keys = desk
    proc = sealdesk(*enrol_args("ravi", "reviewer", keys["rita"], keys["lena"]), workspace=ws)
    assert proc.returncode == 4 and "already enrolled as rita" in proc.stderr


def rebuilt_by_mallory(ws: Path, mallory: Path, tmp_path: Path) -> None:
    """Replaces the workspace's database with one mallory founded under lena's name and the
    same workspace id: a ledger consistent in itself, signed by other keys."""
    from engine.ledger.enrol import found
    from engine.workspace import Workspace

    with sqlite3.connect(ws / "sealdesk.db") as conn:
        workspace_id = conn.execute("SELECT value FROM meta WHERE key='workspace_id'").fetchone()[0]
    fake = tmp_path / "fake"
    other = Workspace.init(fake)
    other.conn.execute("UPDATE meta SET value=? WHERE key='workspace_id'", (workspace_id,))
    other.close()
    with Workspace.open(fake) as forged:
        found(forged.db, forged.workspace_id, FileSigner(mallory), "lena", ("lead", "reviewer"))
        forged.ingest(make_items(3) + make_items(1, queue="weak_categories"))
        forged.decide(FileSigner(mallory), "flagged_pairs", "item-0", "reject")
    for suffix in ("", "-wal", "-shm"):
        (ws / f"sealdesk.db{suffix}").unlink(missing_ok=True)
    shutil.copy(fake / "sealdesk.db", ws / "sealdesk.db")


def test_an_insider_rebuilt_ledger_is_caught_by_the_anchor_and_the_checkpoint(
    desk, sealdesk, tmp_path
):
    ws, keys = desk
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    anchor = laptop / "anchor"
    anchor.write_text(sealdesk("keys", "anchor", workspace=ws, check=True).stdout)
    sealdesk(
        *decide_args(keys["rita"], "item-0", "item-1", "item-2"),
        workspace=ws,
        check=True,
        env={"SEALDESK_RECEIPTS": str(laptop / "rita-receipts")},
    )
    sealdesk(
        "signoff", "--yes", "--with-exceptions", "--key", keys["lena"], workspace=ws, check=True
    )
    checkpoint = laptop / "checkpoint.txt"
    sealdesk("checkpoint", "export", "--out", checkpoint, workspace=ws, check=True)
    assert (
        sealdesk("verify", "--anchor", anchor, "--checkpoint", checkpoint, workspace=ws).returncode
        == 0
    )

    rebuilt_by_mallory(ws, keys["mallory"], tmp_path)
    # On its own the rebuilt ledger is consistent: nothing inside it can tell...
    assert sealdesk("verify", workspace=ws).returncode == 0
    # ...but rita's own verify compares the receipts she kept of her decisions.
    rita = {"SEALDESK_RECEIPTS": str(laptop / "rita-receipts")}
    assert "receipt " in failure(sealdesk("verify", workspace=ws, env=rita))
    err = failure(sealdesk("verify", "--anchor", anchor, workspace=ws))
    assert "record 1:" in err and "does not trust as lead" in err
    err = failure(sealdesk("verify", "--checkpoint", checkpoint, workspace=ws))
    assert "anchored to the lead key(s)" in err


def test_a_sign_off_binds_the_signer_set_and_the_summary_shows_it(desk, sealdesk):
    ws, keys = desk
    summary = sealdesk("signoff", "--summary-only", workspace=ws, check=True).stdout
    assert "Who may sign (from the ledger; anchor SHA256:" in summary
    assert "rita" in summary and "since #2" in summary
    sealdesk(
        "signoff", "--yes", "--with-exceptions", "--key", keys["lena"], workspace=ws, check=True
    )
    with sqlite3.connect(ws / "sealdesk.db") as conn:
        body = json.loads(
            conn.execute("SELECT message FROM records WHERE kind='signoff'").fetchone()[0]
        )
    bound = body["data"]["authority"]
    assert [s["principal"] for s in bound["signers"]] == ["lena", "rita"]
    assert bound["anchor"] == [FileSigner(keys["lena"]).public_key.fingerprint]


def test_a_grant_begun_and_ended_within_one_second_still_gives_a_line_ssh_keygen_takes(
    keygen, tmp_path
):
    from engine.ledger.authority import Authority, Grant, allowed_signers_line

    key = keygen("brief")
    signer = FileSigner(key)
    grant = Grant(
        "brief",
        signer.public_key,
        ("reviewer",),
        "",
        "~",
        3,
        5,
        2,
        "2026-12-01T10:00:00.100000Z",
        4,
        "2026-12-01T10:00:00.900000Z",
        "revoked",
    )
    line = allowed_signers_line(Authority(grants=[grant]), grant)
    allowed = tmp_path / "allowed"
    allowed.write_text(line)
    message = tmp_path / "msg"
    message.write_bytes(b"a record signed within that second")
    (tmp_path / "msg.sig").write_text(
        sshsig.armor(signer.sign(message.read_bytes(), "reviewer@sealdesk"))
    )
    with open(message, "rb") as stdin:
        proc = subprocess.run(
            verify_args(
                allowed,
                "brief",
                "reviewer@sealdesk",
                tmp_path / "msg.sig",
                "-Overify-time=20261201100000Z",
            ),
            stdin=stdin,
            capture_output=True,
            text=True,
        )
    assert proc.returncode == 0, (line, proc.stderr)
