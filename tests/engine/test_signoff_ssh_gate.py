"""``sealdesk ssh-gate``: what a forced-command key may and may not run.

These check the gate's decision on SSH_ORIGINAL_COMMAND strings; the same
gate behind a real sshd is exercised in signoff/test_ssh.py.
"""

from __future__ import annotations

import pytest

from engine.cli import ssh_gate
from engine.errors import PermissionRefused
from reviewer.main import tree

WS = "/srv/review"
TREE = tree()  # the program the gate is reached through: the app's commands included


def gate_argv(original, workspace, allowed=ssh_gate.DEFAULT_ALLOWED):
    return ssh_gate.gate_argv(original, workspace, allowed, root=TREE)


@pytest.mark.parametrize(
    "request_line,expected",
    [
        ("sealdesk review", ["--workspace", WS, "review"]),
        ("sealdesk --workspace /srv/review signoff --yes", ["--workspace", WS, "signoff", "--yes"]),
        ("sealdesk -w /srv/review/ verify", ["--workspace", WS, "verify"]),
        (
            "sealdesk --workspace=/srv/review verify --checkpoint -",
            ["--workspace", WS, "verify", "--checkpoint", "-"],
        ),
        ("/usr/local/bin/sealdesk checkpoint export", ["--workspace", WS, "checkpoint", "export"]),
        (
            "sealdesk checkpoint export --out -",
            ["--workspace", WS, "checkpoint", "export", "--out", "-"],
        ),
        (
            "sealdesk decide --queue flagged_pairs --item 'fp 1' --decision reject "
            "--note 'not a leak'",
            [
                "--workspace",
                WS,
                "decide",
                "--queue",
                "flagged_pairs",
                "--item",
                "fp 1",
                "--decision",
                "reject",
                "--note",
                "not a leak",
            ],
        ),
        ("sealdesk prove 12 --json", ["--workspace", WS, "prove", "12", "--json"]),
    ],
)
def test_gate_passes_review_work_on_its_own_workspace(request_line, expected):
    assert gate_argv(request_line, WS) == expected


@pytest.mark.parametrize("request_line", [None, "", "   ", "sealdesk"])
def test_a_bare_login_opens_the_review_app(request_line):
    assert gate_argv(request_line, WS) == ["--workspace", WS, "review"]


@pytest.mark.parametrize(
    "request_line,why",
    [
        ("id", "only sealdesk runs here"),
        ("sh -c 'sealdesk verify'", "only sealdesk runs here"),
        ("sealdesk verify; rm -rf /", "'sealdesk verify;' is not allowed"),
        (
            "sealdesk keys add --principal eve --role lead --key eve.pub",
            "'sealdesk keys' is not allowed",
        ),
        ("sealdesk init", "'sealdesk init' is not allowed"),
        ("sealdesk export --out /tmp/x", "'sealdesk export' is not allowed"),
        ("sealdesk ssh-gate", "'sealdesk ssh-gate' is not allowed"),
        ("sealdesk --workspace /srv/other verify", "may only use the workspace /srv/review"),
        ("sealdesk --workspace /srv/review/../other verify", "may only use the workspace"),
        (
            "sealdesk decide --queue flagged_pairs --item x --decision accept --key /home/lena/id",
            "--key is refused",
        ),
        ("sealdesk signoff --key=/tmp/k --yes", "--key is refused"),
        (
            "sealdesk checkpoint export --out /home/lena/.ssh/authorized_keys",
            "--out may only be '-'",
        ),
        (
            "sealdesk verify --checkpoint /etc/shadow",
            "--checkpoint '/etc/shadow' is not in the workspace's inputs",
        ),
        ("sealdesk checkpoint", "only 'sealdesk checkpoint export' is allowed"),
        ("sealdesk review --config /home/lena/review.toml", "--config is refused"),
        ("sealdesk review --theme x --config=/home/lena/review.toml", "--config is refused"),
        (
            "sealdesk verify --checkpoint=/home/lena/.ssh/id_ed25519",
            "--checkpoint '/home/lena/.ssh/id_ed25519' is not in the workspace's inputs",
        ),
        (
            "sealdesk decide --queue flagged_pairs --item x --decision accept -- --key k",
            "unexpected argument",
        ),
        ("sealdesk --debug verify", "option '--debug' is not allowed"),
        ("sealdesk verify 'unterminated", "cannot parse"),
    ],
)
def test_gate_refuses_everything_else(request_line, why):
    with pytest.raises(
        PermissionRefused, match="ssh-gate: .*" + why.replace("'", ".").replace("(", r"\(")
    ):
        gate_argv(request_line, WS)


def test_the_allowed_list_can_be_narrowed():
    assert gate_argv("sealdesk verify", WS, allowed=("verify",))[-1] == "verify"
    with pytest.raises(PermissionRefused, match="not allowed"):
        gate_argv("sealdesk signoff --yes", WS, allowed=("verify",))


def test_a_bare_login_opens_the_app_only_for_a_key_allowed_to_review():
    with pytest.raises(PermissionRefused, match="'sealdesk review' is not allowed"):
        gate_argv(None, WS, allowed=("verify",))


def test_the_command_the_gate_runs_never_imports_code_from_the_login_directory(tmp_path):
    # sshd starts the forced command in the user's home; a folder named
    # engine/ or reviewer/ there must not stand in for sealdesk's own.
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    home = tmp_path / "home"
    for package in ("engine", "engine/cli", "reviewer"):
        (home / package).mkdir(parents=True)
        (home / package / "__init__.py").write_text("")
        (home / package / "__main__.py").write_text("print('HIJACKED')\n")
    workspace = tmp_path / "ws"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SSH_ORIGINAL_COMMAND": "sealdesk --version"}
    # -P: started like the console script, which does not put the cwd on sys.path.
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "reviewer", "--workspace", str(workspace), "ssh-gate"],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "HIJACKED" not in proc.stdout
    assert proc.returncode == 0 and "sealdesk" in proc.stdout
