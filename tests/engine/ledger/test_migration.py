"""A workspace from before enrolment was recorded is migrated once, and keeps every record.

The fixture under tests/data/v1-workspace was built by sealdesk as it stood
before the genesis record existed (its README says how); these tests run
today's CLI on a copy of it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.backlog import make_items, write_items_file
from tests.support.cli_workspace import decide_args
from tests.support.ssh import verify_args

V1 = REPO / "tests" / "data" / "v1-workspace"


@pytest.fixture
def v1(tmp_path) -> tuple[Path, Path]:
    """Gives (workspace, keys dir) of a private copy of the v1 workspace."""
    shutil.copytree(V1, tmp_path / "v1")
    keys = tmp_path / "v1" / "keys"
    for key in keys.iterdir():
        key.chmod(0o600)
    write_items_file(tmp_path / "v1" / "new-items.jsonl", make_items(1, run_id="v2-run"))
    return tmp_path / "v1" / "ws", keys


def digest(ws: Path) -> str:
    return hashlib.sha256((ws / "sealdesk.db").read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "command",
    [
        [
            "decide",
            "--queue",
            "flagged_pairs",
            "--item",
            "fl-0",
            "--decision",
            "reject",
            "--key",
            "{keys}/rita",
        ],
        [
            "keys",
            "add",
            "--principal",
            "eve",
            "--role",
            "lead",
            "--key",
            "{keys}/rita.pub",
            "--lead-key",
            "{keys}/lena",
        ],
        ["signoff", "--yes", "--key", "{keys}/lena"],
        ["undo", "--queue", "flagged_pairs", "--item", "fl-0", "--key", "{keys}/rita"],
        ["init", "--lead", "lena", "--key", "{keys}/lena"],
        ["ingest", "{keys}/../new-items.jsonl"],
        ["exam", "queue", "--run-id", "none"],
    ],
)
def test_every_writing_command_is_refused_with_the_command_that_migrates(v1, sealdesk, command):
    ws, keys = v1
    before = digest(ws)
    proc = sealdesk(*[part.format(keys=keys) for part in command], workspace=ws)
    assert proc.returncode != 0
    assert "keys migrate" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert digest(ws) == before


def test_read_commands_work_and_verify_says_the_ledger_is_not_anchored(v1, sealdesk):
    ws, _ = v1
    items = json.loads(sealdesk("items", "--json", workspace=ws, check=True).stdout)
    assert len(items) == 7
    listing = sealdesk("keys", "list", workspace=ws, check=True).stdout
    assert "predates enrolment in the ledger" in listing and "rita" in listing
    assert "bob" in listing and "skipped: ssh-rsa key (line 6)" in listing
    proc = sealdesk("verify", workspace=ws)
    assert proc.returncode == 1 and "no genesis record" in proc.stderr


def test_migration_by_a_lead_keeps_every_record_valid(v1, sealdesk, tmp_path):
    ws, keys = v1
    refused = sealdesk("keys", "migrate", "--lead-key", keys / "rita", workspace=ws)
    assert refused.returncode == 3 and "not a lead" in refused.stderr

    out = sealdesk("keys", "migrate", "--lead-key", keys / "lena", workspace=ws, check=True).stdout
    assert "#11 genesis" in out and "adopting its 10 record(s)" in out
    assert [line.split()[0] for line in out.splitlines() if line.startswith("  ")] == [
        "rita",
        "adam",
        "lena",
    ]  # bob's ssh-rsa line authorises nothing here
    verified = sealdesk(
        "verify", "--checkpoint", V1 / "checkpoint.txt", workspace=ws, check=True
    ).stdout
    assert "ok: 11 record(s)" in verified and "rita 6" in verified
    anchor = tmp_path / "anchor"
    anchor.write_text(f'lena namespaces="lead@sealdesk" {(keys / "lena.pub").read_text()}')
    sealdesk("verify", "--anchor", anchor, workspace=ws, check=True)

    # From now on the ledger decides: rita signs, and a lead enrols with a record.
    sealdesk(*decide_args(keys / "rita", "fl-0", decision="reject"), workspace=ws, check=True)
    generated = (ws / "trust" / "allowed_signers").read_text()
    assert "generated from the ledger" in generated and "ssh-rsa" not in generated
    again = sealdesk("keys", "migrate", "--lead-key", keys / "lena", workspace=ws)
    assert again.returncode == 4 and "nothing to migrate" in again.stderr
    sealdesk("verify", workspace=ws, check=True)


def test_old_records_still_verify_with_ssh_keygen_and_the_generated_file(v1, sealdesk, tmp_path):
    ws, keys = v1
    sealdesk("keys", "migrate", "--lead-key", keys / "lena", workspace=ws, check=True)
    out = tmp_path / "records.jsonl"
    sealdesk("export", "--out", out, workspace=ws, check=True)
    for line in map(json.loads, out.read_text().splitlines()):
        (tmp_path / "msg").write_text(line["message"])
        (tmp_path / "msg.sig").write_text(line["signature"])
        with open(tmp_path / "msg", "rb") as stdin:
            proc = subprocess.run(
                verify_args(
                    ws / "trust" / "allowed_signers",
                    line["principal"],
                    line["namespace"],
                    tmp_path / "msg.sig",
                    f"-Overify-time={line['verify_time']}",
                ),
                stdin=stdin,
                capture_output=True,
                text=True,
            )
        assert proc.returncode == 0, (line["seq"], proc.stderr)


def test_a_principal_pattern_cannot_be_migrated(v1, sealdesk):
    ws, keys = v1
    trust = ws / "trust" / "allowed_signers"
    text = trust.read_text()
    trust.write_text(text.replace("rita namespaces=", "r* namespaces=", 1))
    line = next(n for n, t in enumerate(trust.read_text().split("\n"), 1) if t.startswith("r*"))
    before = digest(ws)
    proc = sealdesk("keys", "migrate", "--lead-key", keys / "lena", workspace=ws)
    assert proc.returncode != 0
    assert f"allowed_signers:{line}: field 'principals'" in proc.stderr
    assert digest(ws) == before
