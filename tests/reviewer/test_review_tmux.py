"""End to end: the real `sealdesk review` in real tmux, decisions checked by ssh-keygen.

Runs with TERM=screen and NO_COLOR=1 (the plainest terminal the app promises
to work in); every wait polls the captured screen, none sleeps blindly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from tests.support.cli_workspace import enrol_args
from tests.support.review_payloads import demo_items, numbered_pairs
from tests.support.ssh import verify_args

pytestmark = [pytest.mark.needs_tmux, pytest.mark.slow]


def test_decisions_made_in_tmux_verify_with_sealdesk_and_ssh_keygen(
    tmux, workspace, founder_key, keygen, sealdesk, tmp_path
):
    # Score order: fp-n-0000 (1.0), fp-n-0001 (0.909), fp-unknown (0.9), ...
    workspace.ingest(demo_items() + numbered_pairs(10))
    key = keygen("rita")
    sealdesk(
        *enrol_args("rita", "reviewer", key, founder_key), workspace=workspace.root, check=True
    )
    authority = 2  # the founder's genesis, then rita's enrolment: the app's records follow
    done = tmp_path / "exit-code"
    command = (
        f"cd {REPO} && env TERM=screen NO_COLOR=1 LANG=C.UTF-8 PYTHONPATH={REPO} "
        f"{sys.executable} -m reviewer --workspace {workspace.root} review "
        f"--key {key}; echo $? > {done}"
    )
    tmux.new("review", command, width=100, height=30)

    tmux.wait_for("review", "rita as reviewer")
    tmux("send-keys", "-t", "review", "a")
    tmux.wait_for("review", "1 decided this session")
    tmux("send-keys", "-t", "review", "x")
    tmux.wait_for("review", "2 decided this session")
    tmux("send-keys", "-t", "review", "Space")
    tmux.wait_for("review", "3 decided this session")
    tmux("send-keys", "-t", "review", "u")  # retracts the skip
    tmux.wait_for("review", f"ledger #{authority + 4}")
    tmux("send-keys", "-t", "review", "q")
    deadline = time.monotonic() + 30
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"

    verify = sealdesk("verify", workspace=workspace.root)
    assert verify.returncode == 0, verify.stderr
    assert verify.stdout.startswith(f"ok: {authority + 4} record(s) verified")

    out = tmp_path / "records.jsonl"
    sealdesk("export", "--out", out, workspace=workspace.root, check=True)
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["kind"], r["principal"]) for r in exported[:authority]] == [
        ("genesis", "founder"),
        ("enrol", "founder"),
    ]
    assert [
        (
            r["kind"],
            json.loads(r["message"]).get("decision"),
            json.loads(r["message"])["item_id"],
            r["principal"],
        )
        for r in exported[authority:]
    ] == [
        ("decision", "accept", "fp-n-0000", "rita"),
        ("decision", "reject", "fp-n-0001", "rita"),
        ("decision", "skip", "fp-unknown", "rita"),
        ("retract", None, "fp-unknown", "rita"),
    ]
    for n, rec in enumerate(exported):
        msg, sig = tmp_path / f"msg{n}", tmp_path / f"msg{n}.sig"
        msg.write_bytes(rec["message"].encode("utf-8"))
        sig.write_text(rec["signature"])
        check = subprocess.run(
            verify_args(workspace.allowed_signers_path, rec["principal"], rec["namespace"], sig),
            stdin=open(msg, "rb"),
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, check.stderr
        assert f'Good "{rec["namespace"]}" signature for {rec["principal"]}' in check.stdout
