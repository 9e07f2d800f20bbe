"""The ledger's time cannot freeze the workspace or rewrite it.

A signer's host clock is set for real with libfaketime (``faketime``), so the
record is dated exactly as a reviewer whose clock says 2099 would date it.
The way out is a lead's clock record (``keys reset-clock``, or by itself in
``keys revoke``); records crafted below sealdesk's checks show what verify
makes of a clock record that tries to backdate or is not a lead's.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.ledger.clock import CLOCK_TYPE, SKEW_S
from engine.ledger.records import time_text, utc_now
from tests.conftest import FOUNDER, SEALDESK, require_tool
from tests.engine.ledger.test_authority import forge
from tests.support.cli_workspace import decide_args

FAR_AHEAD = "2099-01-01 00:00:00"


@pytest.fixture
def at(tmp_path):
    """Gives a runner of the real CLI on a host whose clock reads ``when`` (faketime's
    absolute form: the clock starts there and runs on)."""
    faketime = require_tool("faketime")

    def run(when: str, *args, workspace: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [faketime, when, *SEALDESK, "--workspace", str(workspace), *map(str, args)],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            cwd=tmp_path,
            timeout=300,
        )

    return run


def decide(run, ws: Path, key: Path, item: str, decision: str = "accept"):
    return run(*decide_args(key, item, decision=decision), workspace=ws)


def times(ws: Path) -> list[tuple[int, str, str]]:
    with sqlite3.connect(ws / "sealdesk.db") as conn:
        return conn.execute("SELECT seq, kind, time FROM records ORDER BY seq").fetchall()


def test_a_decision_dated_2099_no_longer_freezes_the_workspace(cli_ws, sealdesk, at):
    ws, keys = cli_ws
    rogue = decide(functools.partial(at, FAR_AHEAD), ws, keys["rita"], "item-0")
    assert rogue.returncode == 0, rogue.stderr
    seq, kind, dated = times(ws)[-1]
    assert (kind, dated[:4]) == ("decision", "2099")

    # verify flags it: it is dated ahead of the verifier's clock.
    proc = sealdesk("verify", workspace=ws)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"FAIL: record {seq}: signed time {dated} is ahead of this ")

    # Ordinary appends stop, saying at which record and what a lead does about it.
    blocked = decide(sealdesk, ws, keys["rita"], "item-1")
    assert blocked.returncode != 0
    assert f"the last record (#{seq}, signed by rita) claims time {dated}" in blocked.stderr
    assert "sealdesk keys reset-clock" in blocked.stderr
    assert times(ws)[-1][0] == seq  # nothing appended

    # The lead can always revoke: the revocation resets the ledger's time first.
    revoked = sealdesk(
        "keys", "revoke", "--principal", "rita", "--lead-key", keys["founder"], workspace=ws
    )
    assert revoked.returncode == 0, revoked.stderr
    lines = revoked.stdout.splitlines()
    assert lines[0].startswith(f"#{seq + 1} clock: the ledger's time steps back from {dated} to ")
    assert lines[1].startswith(f"#{seq + 2} revoked rita's key ")
    (_, clock_kind, reset_to), (_, revoke_kind, _) = times(ws)[-2:]
    assert (clock_kind, revoke_kind) == ("clock", "revoke")
    assert reset_to < utc_now()

    # Work goes on, and verify passes while showing the auditor what was reset.
    adam = sealdesk(
        "keys", "add", "--principal", "adam", "--role", "reviewer",
        "--key", f"{keys['adam']}.pub", "--lead-key", keys["founder"], workspace=ws,
    )  # fmt: skip
    assert adam.returncode == 0, adam.stderr
    assert decide(sealdesk, ws, keys["adam"], "item-1").returncode == 0
    proc = sealdesk("verify", workspace=ws)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == (
        f"note: record {seq + 1}: {FOUNDER} (lead) reset the ledger's time from {dated} to "
        f"{reset_to}: 1 earlier record(s) ({seq}-{seq}) claim a time after it"
    )


def test_a_lead_resets_the_time_and_the_same_signer_works_on(cli_ws, sealdesk, at):
    ws, keys = cli_ws
    assert decide(functools.partial(at, FAR_AHEAD), ws, keys["rita"], "item-0").returncode == 0
    reset = sealdesk(
        "keys", "reset-clock", "--reason", "rita's laptop clock", "--lead-key", keys["founder"],
        workspace=ws,
    )  # fmt: skip
    assert reset.returncode == 0, reset.stderr
    assert re.match(r"#\d+ clock: the ledger's time steps back from 2099-", reset.stdout)
    assert decide(sealdesk, ws, keys["rita"], "item-1").returncode == 0
    proc = sealdesk("verify", workspace=ws)
    assert proc.returncode == 0, proc.stderr
    assert "reset the ledger's time from 2099-" in proc.stdout


def test_a_reset_is_refused_when_the_time_is_sound(cli_ws, sealdesk):
    ws, keys = cli_ws
    before = times(ws)
    proc = sealdesk("keys", "reset-clock", "--lead-key", keys["founder"], workspace=ws)
    assert proc.returncode == 4, proc.stderr
    assert "the ledger's time needs no reset" in proc.stderr
    assert times(ws) == before


def test_a_reset_is_a_leads(cli_ws, sealdesk, at):
    ws, keys = cli_ws
    assert decide(functools.partial(at, FAR_AHEAD), ws, keys["rita"], "item-0").returncode == 0
    proc = sealdesk("keys", "reset-clock", "--lead-key", keys["rita"], workspace=ws)
    assert proc.returncode == 3, proc.stderr
    assert "does not hold the lead role" in proc.stderr


def test_a_clock_a_little_ahead_is_carried_forward_not_refused(cli_ws, sealdesk, at):
    ws, keys = cli_ws
    soon = datetime.now(UTC) + timedelta(seconds=SKEW_S / 2)
    ahead = decide(
        functools.partial(at, soon.strftime("%Y-%m-%d %H:%M:%S")), ws, keys["rita"], "item-0"
    )
    assert ahead.returncode == 0, ahead.stderr
    assert decide(sealdesk, ws, keys["rita"], "item-1").returncode == 0
    (_, _, first), (_, _, second) = times(ws)[-2:]
    assert second == first  # the later record keeps the time from going back
    assert sealdesk("verify", workspace=ws).returncode == 0


def _clock_data(resets: str) -> dict:
    return {"type": CLOCK_TYPE, "resets": resets, "reason": None}


@pytest.mark.parametrize(
    "how, why",
    [
        ("backdate", "steps the ledger's time back only "),
        ("wrong-resets", "resets the ledger's time from 2000-01-01T00:00:00.000000Z, but the "),
        ("not-a-lead", "clock record made in role reviewer: only a lead resets time"),
    ],
)
def test_verify_faults_a_clock_record_that_backdates_or_is_not_a_leads(cli_ws, how, why):
    ws, keys = cli_ws
    last = times(ws)[-1][2]
    earlier = time_text(datetime.fromisoformat(last[:-1]) - timedelta(seconds=60))
    resets = "2000-01-01T00:00:00.000000Z" if how == "wrong-resets" else last
    signer, principal, role = (
        (keys["rita"], "rita", "reviewer")
        if how == "not-a-lead"
        else (keys["founder"], FOUNDER, "lead")
    )
    seq = forge(ws, signer, principal=principal, role=role, kind="clock", time=earlier,
                data=_clock_data(resets))  # fmt: skip
    proc = subprocess.run(
        [*SEALDESK, "--workspace", str(ws), "verify"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"FAIL: record {seq}: {why}"), proc.stderr
