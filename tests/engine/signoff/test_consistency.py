"""Consistency proofs: a checkpoint's tree is a prefix of the latest signed tree head.

``sealdesk prove --consistency CHECKPOINT`` prints the RFC 9162 consistency
path; the test checks it with its own verifier, written from RFC 9162
section 2.1.4.2 and independent of engine.ledger.merkle, and checks that a
tampered path or a rewritten ledger is refused. Every hint the sign-off
prints runs through the SSH gate.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import subprocess

import pytest

from engine.cli.gate_policy import GatePolicy
from engine.cli.ssh_gate import gate_argv
from reviewer.main import tree
from tests.support.backlog import make_items


def node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def rfc9162_consistent(
    size1: int, size2: int, root1: bytes, root2: bytes, path: list[bytes]
) -> bool:
    """RFC 9162 2.1.4.2, step by step."""
    if size1 == size2:
        return not path and root1 == root2
    if size1 == 0 or not path:
        return False
    if size1 & (size1 - 1) == 0:  # a power of two: the first root is the first node
        path = [root1] + path
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            while fn & 1 == 0 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == root1 and sr == root2


@pytest.fixture
def signed_twice(workspace, enrol, sealdesk, tmp_path):
    """A checkpoint from a first sign-off, then more decisions and a second sign-off."""
    lena, rita = enrol("lena", "lead"), enrol("rita", "reviewer")
    workspace.ingest(make_items(9))
    for n in range(3):
        workspace.decide(rita, "flagged_pairs", f"item-{n}", "accept")
    sealdesk(
        "signoff",
        "--yes",
        "--with-exceptions",
        "--key",
        lena.path,
        workspace=workspace.root,
        check=True,
    )
    old = tmp_path / "old-checkpoint.txt"
    old.write_text(sealdesk("checkpoint", "export", workspace=workspace.root, check=True).stdout)
    for n in range(3, 9):
        workspace.decide(rita, "flagged_pairs", f"item-{n}", "reject")
    sealdesk("signoff", "--yes", "--key", lena.path, workspace=workspace.root, check=True)
    return workspace, old


def test_the_printed_consistency_proof_verifies_by_rfc_9162(signed_twice, sealdesk):
    ws, old = signed_twice
    out = json.loads(
        sealdesk("prove", "--consistency", old, "--json", workspace=ws.root, check=True).stdout
    )
    first, second = out["first"], out["second"]
    assert 0 < first["tree_size"] < second["tree_size"] == ws.head()[0] - 1
    path = [bytes.fromhex(h) for h in out["consistency_path"]]
    assert rfc9162_consistent(
        first["tree_size"],
        second["tree_size"],
        bytes.fromhex(first["root"]),
        bytes.fromhex(second["root"]),
        path,
    )
    # The same verifier refuses the path with any one node flipped.
    for i in range(len(path)):
        bad = list(path)
        bad[i] = bytes([bad[i][0] ^ 1]) + bad[i][1:]
        assert not rfc9162_consistent(
            first["tree_size"],
            second["tree_size"],
            bytes.fromhex(first["root"]),
            bytes.fromhex(second["root"]),
            bad,
        )
    text = sealdesk(
        "prove", "--consistency", "-", workspace=ws.root, input=old.read_text(), check=True
    ).stdout
    assert "ok: the path leads from the checkpoint's root to the signed root" in text


def test_a_checkpoint_the_ledger_no_longer_extends_gets_no_proof(signed_twice, sealdesk):
    ws, old = signed_twice
    lines = old.read_text().split("\n")
    forged_root = lines[2][:-4] + ("AAA=" if not lines[2].endswith("AAA=") else "BBB=")
    lines[2] = forged_root  # the signature no longer covers it
    tampered = old.with_name("tampered.txt")
    tampered.write_text("\n".join(lines))
    proc = sealdesk("prove", "--consistency", tampered, workspace=ws.root)
    assert proc.returncode != 0 and "signature" in proc.stderr


def test_prove_takes_a_record_or_a_consistency_checkpoint_not_both(signed_twice, sealdesk):
    ws, old = signed_twice
    assert sealdesk("prove", workspace=ws.root).returncode == 2
    both = sealdesk("prove", "3", "--consistency", old, workspace=ws.root)
    assert both.returncode == 2 and "one of them" in both.stderr


def test_every_hint_the_signoff_prints_runs_through_the_gate(workspace, enrol, sealdesk, tmp_path):
    lena = enrol("lena", "lead")
    sock = tmp_path / "agent.sock"
    agent = subprocess.run(
        ["ssh-agent", "-a", str(sock)], capture_output=True, text=True, check=True
    )
    pid = int(agent.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        subprocess.run(
            ["ssh-add", "-q", str(lena.path)],
            env={**os.environ, "SSH_AUTH_SOCK": str(sock)},
            check=True,
            capture_output=True,
        )
        # Through the gate a lead signs with the forwarded agent, never a key file.
        env = {
            "SSH_AUTH_SOCK": str(sock),
            "SEALDESK_GATE": GatePolicy.for_workspace(
                workspace.root, ("signoff", "checkpoint", "prove", "verify")
            ).to_env("request"),
        }
        out = (
            sealdesk(
                "signoff", "--yes", "--key", lena.path, workspace=workspace.root, check=True
            ).stdout
            + sealdesk("signoff", "--yes", workspace=workspace.root, env=env, check=True).stdout
        )
    finally:
        os.kill(pid, signal.SIGTERM)
    hints = [
        line.split(": ", 1)[1]
        for line in out.splitlines()
        if line.startswith("keep a copy off this host: ")
    ]
    assert len(hints) == 2, out
    gated = hints[-1]  # printed under the gate: only what the gate lets through
    command = shlex.split(gated.split(" > ")[0])
    argv = gate_argv(shlex.join(command), str(workspace.root), root=tree())
    assert argv[-2:] == ["checkpoint", "export"]
    assert "witness add" not in gated and "witness add" in hints[0]
