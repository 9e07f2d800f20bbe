"""An allowed_signers file shared with other tools may hold RSA or ECDSA lines.

ssh-keygen accepts such a file; sealdesk skips those lines (they can never
authorise an Ed25519 record), lists them as skipped, keeps them when it
enrols someone, and still refuses a line that is malformed.
"""

from __future__ import annotations

import json

import pytest

from engine.errors import InputError
from engine.ledger.audit import verify_workspace
from tests.ledger_fixtures import make_items
from tests.ssh_fixtures import keygen_verify


def pub_line(key) -> str:
    return (key.parent / f"{key.name}.pub").read_text().strip()


def number_of(path, start: str) -> int:
    """Gives the 1-based number of the line that starts with ``start``."""
    return next(n for n, line in enumerate(path.read_text().split("\n"), start=1)
                if line.startswith(start))


def test_rsa_and_ecdsa_lines_are_skipped_not_fatal(workspace, enrol, keygen, sealdesk,
                                                    tmp_path):
    rita = enrol("rita", "reviewer")
    rsa, ecdsa = keygen("bob", key_type="rsa"), keygen("eve", key_type="ecdsa")
    trust = workspace.allowed_signers_path
    with trust.open("a") as f:  # as a team's git-signing file would have them
        f.write(f"bob {pub_line(rsa)}\n")
        f.write(f'eve namespaces="git" {pub_line(ecdsa)}\n')
    workspace.ingest(make_items(1))
    workspace.decide(rita, "flagged_pairs", "item-0", "accept")

    bob_line, eve_line = (number_of(trust, who) for who in ("bob ", "eve "))

    report = verify_workspace(workspace)
    assert report.ok and report.signers == {"rita": 1}
    allowed = workspace.allowed_signers()
    assert [(s.principals, s.key_type, s.line) for s in allowed.skipped] == [
        (("bob",), "ssh-rsa", bob_line), (("eve",), "ecdsa-sha2-nistp256", eve_line)]

    listing = sealdesk("keys", "list", workspace=workspace.root, check=True).stdout
    assert f"skipped: ssh-rsa key (line {bob_line})" in listing
    assert f"skipped: ecdsa-sha2-nistp256 key (line {eve_line})" in listing
    assert "rita" in listing

    # ssh-keygen reads the same file and verifies the exported record with it.
    out = tmp_path / "export.jsonl"
    sealdesk("export", "--out", out, workspace=workspace.root, check=True)
    record = json.loads(out.read_text().splitlines()[0])
    checked = keygen_verify(trust, "rita", record["namespace"], record["message"].encode(),
                            record["signature"], tmp_path)
    assert checked.returncode == 0, checked.stderr

    # Enrolling someone else keeps the skipped lines as they were.
    enrol("lena", "lead")
    text = trust.read_text()
    assert f"bob {pub_line(rsa)}\n" in text and f'eve namespaces="git" {pub_line(ecdsa)}\n' in text


def test_a_malformed_foreign_key_line_is_still_refused(workspace, enrol, sealdesk):
    enrol("rita", "reviewer")
    trust = workspace.allowed_signers_path
    with trust.open("a") as f:
        f.write("bob ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIA==\n")  # an ed25519 blob labelled RSA
    proc = sealdesk("verify", workspace=workspace.root)
    assert proc.returncode != 0
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1
    assert f"allowed_signers:{number_of(trust, 'bob ')}: field 'key': malformed ssh-rsa key" in err


def test_a_certificate_authority_line_is_skipped_as_ssh_keygen_ignores_it(workspace, enrol,
                                                                          keygen, sealdesk,
                                                                          tmp_path):
    """ssh-keygen takes a CA line's key only for certificates, never for a plain-key
    signature such as every sealdesk record: verify with the CA key alone must fail."""
    rita = enrol("rita", "reviewer")
    trust = workspace.allowed_signers_path
    workspace.ingest(make_items(1))
    workspace.decide(rita, "flagged_pairs", "item-0", "accept")
    out = tmp_path / "export.jsonl"
    sealdesk("export", "--out", out, workspace=workspace.root, check=True)
    record = json.loads(out.read_text().splitlines()[0])
    ca_only = tmp_path / "ca_only"
    ca_only.write_text(f'rita cert-authority,namespaces="reviewer@sealdesk" {pub_line(rita.path)}\n')
    assert keygen_verify(ca_only, "rita", record["namespace"], record["message"].encode(),
                         record["signature"], tmp_path).returncode != 0

    with trust.open("a") as f:
        f.write(f"ops cert-authority {pub_line(keygen('ca'))}\n")
        f.write(f"git cert-authority {pub_line(keygen('gitca', key_type='rsa'))}\n")
    assert verify_workspace(workspace).ok
    assert [(s.principals, s.key_type) for s in workspace.allowed_signers().skipped] == [
        (("ops",), "cert-authority ssh-ed25519"), (("git",), "cert-authority ssh-rsa")]
    listing = sealdesk("keys", "list", workspace=workspace.root, check=True).stdout
    assert "certificate authorities sign no sealdesk record" in listing


def test_options_ssh_keygen_refuses_are_refused_not_granted(workspace, enrol, keygen):
    """An unquoted value, a repeated option, a key blob that is only its type's name: each
    is a one-line error naming the line, never a grant."""
    enrol("rita", "reviewer")
    trust = workspace.allowed_signers_path
    good = trust.read_text()
    key = pub_line(keygen("bob"))
    bad_lines = {
        f"bob namespaces=reviewer@sealdesk {key}": "must be in double quotes",
        f'bob valid-before=20990101,namespaces="reviewer@sealdesk" {key}':
            "must be in double quotes",
        f'bob namespaces="lead@sealdesk",namespaces="reviewer@sealdesk" {key}': "given twice",
        "bob ssh-rsa AAAAB3NzaC1yc2E=": "malformed ssh-rsa key",
    }
    for line, reason in bad_lines.items():
        trust.write_text(good + line + "\n")
        with pytest.raises(InputError, match=reason) as err:
            workspace.allowed_signers()
        assert f"allowed_signers:{number_of(trust, 'bob ')}" in err.value.one_line()
