"""SSHSIG made by sealdesk and by OpenSSH are the same thing."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import AgentError, SigningKeyError
from engine.ledger import sshsig
from engine.ledger.agent import AgentClient
from engine.ledger.signers import AgentSigner, FileSigner, read_public_key
from tests.conftest import require_tool
from tests.support.ssh import verify_args

MESSAGE = '{"decision":"accept","note":"naïve ✓"}'.encode()


def allowed_signers_file(tmp_path: Path, principal: str, pub: Path, namespaces: str) -> Path:
    line = f'{principal} namespaces="{namespaces}" {pub.read_text().strip()}\n'
    path = tmp_path / "allowed_signers"
    path.write_text(line)
    return path


def ssh_keygen_verify(
    allowed: Path, principal: str, namespace: str, sig: Path, message: bytes
) -> subprocess.CompletedProcess:
    return subprocess.run(
        verify_args(allowed, principal, namespace, sig),
        input=message,
        capture_output=True,
    )


def test_python_signature_verifies_with_ssh_keygen(tmp_path, keygen):
    key = keygen("rita")
    blob = FileSigner(key).sign(MESSAGE, "reviewer@sealdesk")
    sig = tmp_path / "msg.sig"
    sig.write_text(sshsig.armor(blob))
    allowed = allowed_signers_file(tmp_path, "rita", Path(f"{key}.pub"), "reviewer@sealdesk")
    ok = ssh_keygen_verify(allowed, "rita", "reviewer@sealdesk", sig, MESSAGE)
    assert ok.returncode == 0, ok.stderr
    wrong_ns = ssh_keygen_verify(allowed, "rita", "lead@sealdesk", sig, MESSAGE)
    assert wrong_ns.returncode != 0


def test_ssh_keygen_signature_verifies_in_python_and_is_byte_identical(tmp_path, keygen):
    key = keygen("lena")
    msg = tmp_path / "msg"
    msg.write_bytes(MESSAGE)
    subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-f", str(key), "-n", "lead@sealdesk", str(msg)],
        check=True,
        capture_output=True,
    )
    theirs = (tmp_path / "msg.sig").read_text()
    decoded = sshsig.verify(sshsig.dearmor(theirs), MESSAGE, "lead@sealdesk")
    assert decoded.public_key == read_public_key(Path(f"{key}.pub")).blob
    ours = sshsig.armor(FileSigner(key).sign(MESSAGE, "lead@sealdesk"))
    assert ours == theirs


def test_verify_refuses_other_namespace_and_altered_message(keygen):
    blob = FileSigner(keygen("adam")).sign(MESSAGE, "adjudicator@sealdesk")
    with pytest.raises(sshsig.SignatureError, match="namespace"):
        sshsig.verify(blob, MESSAGE, "reviewer@sealdesk")
    with pytest.raises(sshsig.SignatureError, match="does not verify"):
        sshsig.verify(blob, MESSAGE + b" ", "adjudicator@sealdesk")


def test_fingerprint_matches_ssh_keygen(keygen):
    key = keygen("rita")
    out = subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert read_public_key(Path(f"{key}.pub")).fingerprint == out


@pytest.fixture
def agent(tmp_path):
    """A real ssh-agent in the foreground, stopped by its pid."""
    require_tool("ssh-agent")
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(200):
        if sock.exists():
            break
        proc.wait(timeout=0.01) if proc.poll() is not None else None
        import time

        time.sleep(0.01)
    yield sock
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=5)


def test_agent_signature_equals_file_signature(tmp_path, keygen, agent):
    key = keygen("lena")
    subprocess.run(
        ["ssh-add", str(key)],
        env={**os.environ, "SSH_AUTH_SOCK": str(agent)},
        check=True,
        capture_output=True,
    )
    pub = read_public_key(Path(f"{key}.pub"))
    via_agent = AgentSigner(pub, AgentClient(str(agent))).sign(MESSAGE, "lead@sealdesk")
    assert via_agent == FileSigner(key).sign(MESSAGE, "lead@sealdesk")
    sig = tmp_path / "agent.sig"
    sig.write_text(sshsig.armor(via_agent))
    allowed = allowed_signers_file(tmp_path, "lena", Path(f"{key}.pub"), "lead@sealdesk")
    assert ssh_keygen_verify(allowed, "lena", "lead@sealdesk", sig, MESSAGE).returncode == 0


def test_agent_without_the_key_is_refused(keygen, agent):
    pub = read_public_key(Path(f"{keygen('stranger')}.pub"))
    with pytest.raises(AgentError, match="does not hold key"):
        AgentSigner(pub, AgentClient(str(agent)))


def test_rsa_private_key_is_refused(keygen):
    with pytest.raises(SigningKeyError, match="ssh-ed25519 only"):
        FileSigner(keygen("old", key_type="rsa"))


def test_passphrase_key_without_passphrase_is_refused(keygen, monkeypatch):
    monkeypatch.delenv("SEALDESK_KEY_PASSPHRASE", raising=False)
    key = keygen("careful", passphrase="correct horse")
    with pytest.raises(SigningKeyError, match="passphrase-protected"):
        FileSigner(key)
    monkeypatch.setenv("SEALDESK_KEY_PASSPHRASE", "correct horse")
    assert FileSigner(key).public_key.fingerprint.startswith("SHA256:")


def test_decide_without_a_key_takes_the_agent_key_enrolled_for_the_queues_role(
    tmp_path, keygen, agent, sealdesk, init_cli
):
    # An agent holding a reviewer's key first and an adjudicator's second must
    # sign an adjudication with the adjudicator's, not refuse.
    from engine.canonical import canonical_json
    from engine.workspace import BacklogItem

    ws = tmp_path / "ws"
    lead = init_cli(ws)
    env = {"SSH_AUTH_SOCK": str(agent)}
    for name, role in (("rita", "reviewer"), ("adam", "adjudicator")):
        key = keygen(name)
        sealdesk(
            "keys",
            "add",
            "--principal",
            name,
            "--role",
            role,
            "--key",
            f"{key}.pub",
            *lead,
            workspace=ws,
            check=True,
        )
        subprocess.run(
            ["ssh-add", "-q", str(key)], env={**os.environ, **env}, check=True, capture_output=True
        )
    items = tmp_path / "items.jsonl"
    items.write_bytes(
        canonical_json(BacklogItem.make("adjudication", "cand-1", "run-1", {"span": "x"}).to_json())
        + b"\n"
    )
    sealdesk("ingest", items, workspace=ws, check=True)
    proc = sealdesk(
        "decide",
        "--queue",
        "adjudication",
        "--item",
        "cand-1",
        "--decision",
        "accept",
        workspace=ws,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "by adam as adjudicator" in proc.stdout


@pytest.mark.parametrize(
    "command",
    [
        ("decide", "--queue", "flagged_pairs", "--item", "item-1", "--decision", "accept"),
        ("keys", "add", "--principal", "rita", "--role", "reviewer", "--key", "{rita}.pub"),
    ],
    ids=["decide", "keys-add"],
)
def test_an_agent_holding_no_enrolled_key_is_refused_naming_its_keys(
    tmp_path, keygen, agent, sealdesk, init_cli, command
):
    from tests.support.backlog import make_items, write_items_file
    from tests.support.refusals import snapshot

    ws = tmp_path / "ws"
    init_cli(ws)
    items = tmp_path / "items.jsonl"
    write_items_file(items, make_items(2))
    sealdesk("ingest", items, workspace=ws, check=True)
    rita, stranger = keygen("rita"), keygen("stranger")
    subprocess.run(
        ["ssh-add", "-q", str(stranger)],
        env={**os.environ, "SSH_AUTH_SOCK": str(agent)},
        check=True,
        capture_output=True,
    )
    before = snapshot(ws)
    proc = sealdesk(
        *[a.format(rita=rita) for a in command], workspace=ws, env={"SSH_AUTH_SOCK": str(agent)}
    )
    fingerprint = read_public_key(Path(f"{stranger}.pub")).fingerprint
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 3 and len(lines) == 1, proc.stderr
    assert (
        f"none of ssh-agent's keys ({fingerprint}) is enrolled in this workspace's "
        "ledger" in lines[0]
    )
    assert snapshot(ws) == before


BLOB = sshsig.encode(
    sshsig.ed25519_public_blob(bytes(range(32))), "reviewer@sealdesk", bytes(range(83))
)
ARMORED = sshsig.armor(BLOB)


def outcome(text: str):
    try:
        return sshsig.dearmor(text)
    except sshsig.SignatureError:
        return "refused"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(ARMORED)),
            st.sampled_from(["\n", "\r", " ", "\t", "=", "*", "A", "-", "\n\n"]),
        ),
        max_size=3,
    )
)
def test_dearmor_of_the_exact_layout_agrees_with_the_general_path(inserts):
    """dearmor takes ssh-keygen's exact layout without stripping; a leading space sends
    the same text the general way, and the two must agree on every variant."""
    text = ARMORED
    for at, what in sorted(inserts, reverse=True):
        text = text[:at] + what + text[at:]
    assert outcome(text) == outcome(" " + text)


def test_dearmor_gives_the_blob_of_its_exact_layout_and_refuses_a_stray_character():
    assert sshsig.dearmor(ARMORED) == BLOB
    lines = ARMORED.split("\n")
    lines[2] = lines[2][:10] + "*" + lines[2][10:]
    with pytest.raises(sshsig.SignatureError, match="base64"):
        sshsig.dearmor("\n".join(lines))
