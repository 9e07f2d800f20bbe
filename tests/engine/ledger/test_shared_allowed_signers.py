"""An allowed_signers file shared with other tools may hold RSA or ECDSA lines.

sealdesk reads such files in two places: the ``--anchor`` file a verifier
brings, and a workspace's old trust/allowed_signers that ``keys migrate``
signs into the ledger. ssh-keygen accepts such a file; sealdesk skips those
lines (they can never authorise an Ed25519 record), lists them as skipped,
and still refuses a line that is malformed. The workspace's own
trust/allowed_signers is generated from the ledger: lines added to it by
hand are neither read nor kept.
"""

from __future__ import annotations

import json

import pytest

from engine.errors import InputError
from engine.ledger.allowed_signers import AllowedSigners
from engine.signoff.verify import verify_workspace
from tests.conftest import FOUNDER
from tests.support.backlog import make_items
from tests.support.ssh import keygen_verify


def pub_line(key) -> str:
    return (key.parent / f"{key.name}.pub").read_text().strip()


def number_of(path, start: str) -> int:
    """Gives the 1-based number of the line that starts with ``start``."""
    return next(
        n for n, line in enumerate(path.read_text().split("\n"), start=1) if line.startswith(start)
    )


def founder_line(founder_key) -> str:
    """Gives the allowed_signers line an auditor keeps for the workspace's founding lead."""
    return f'{FOUNDER} namespaces="lead@sealdesk" {pub_line(founder_key)}\n'


def exported(sealdesk, workspace, tmp_path) -> list[dict]:
    out = tmp_path / "export.jsonl"
    sealdesk("export", "--out", out, workspace=workspace.root, check=True)
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_rsa_and_ecdsa_lines_in_an_anchor_are_skipped_not_fatal(
    workspace, enrol, keygen, sealdesk, founder_key, tmp_path
):
    rita = enrol("rita", "reviewer")
    rsa, ecdsa = keygen("bob", key_type="rsa"), keygen("eve", key_type="ecdsa")
    anchor = tmp_path / "team_allowed_signers"
    anchor.write_text(
        f"bob {pub_line(rsa)}\n"  # as a team's git-signing file has them
        + founder_line(founder_key)
        + f'eve namespaces="git" {pub_line(ecdsa)}\n'
    )
    workspace.ingest(make_items(1))
    workspace.decide(rita, "flagged_pairs", "item-0", "accept")

    bob_line, eve_line = (number_of(anchor, who) for who in ("bob ", "eve "))
    allowed = AllowedSigners.load(anchor)
    assert [(s.principals, s.key_type, s.line) for s in allowed.skipped] == [
        (("bob",), "ssh-rsa", bob_line),
        (("eve",), "ecdsa-sha2-nistp256", eve_line),
    ]
    assert [e.principals for e in allowed.entries] == [(FOUNDER,)]
    report = verify_workspace(workspace, anchor=anchor)
    assert report.ok and report.signers["rita"] == 1
    assert sealdesk("verify", "--anchor", anchor, workspace=workspace.root).returncode == 0

    # ssh-keygen reads the same anchor and verifies the genesis with it; it verifies
    # rita's decision with the trust/allowed_signers generated from the ledger.
    records = exported(sealdesk, workspace, tmp_path)
    genesis, decision = records[0], records[-1]
    assert genesis["kind"] == "genesis" and decision["kind"] == "decision"
    checked = keygen_verify(
        anchor,
        FOUNDER,
        genesis["namespace"],
        genesis["message"].encode(),
        genesis["signature"],
        tmp_path,
    )
    assert checked.returncode == 0, checked.stderr
    checked = keygen_verify(
        workspace.allowed_signers_path,
        "rita",
        decision["namespace"],
        decision["message"].encode(),
        decision["signature"],
        tmp_path,
    )
    assert checked.returncode == 0, checked.stderr


def test_foreign_lines_added_to_the_generated_file_are_not_read_nor_kept(workspace, enrol, keygen):
    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(1))
    workspace.decide(rita, "flagged_pairs", "item-0", "accept")
    trust = workspace.allowed_signers_path
    rsa = keygen("bob", key_type="rsa")
    with trust.open("a") as f:
        f.write(f"bob {pub_line(rsa)}\n")
        f.write("mallory ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIA==\n")  # malformed, too
    report = verify_workspace(workspace)  # judged by the ledger: the file is never read
    assert report.ok and report.signers["rita"] == 1
    enrol("lena", "lead")  # the next authority record writes the file again, from the ledger
    text = trust.read_text()
    assert "bob " not in text and "mallory" not in text
    assert [e.principals for e in AllowedSigners.load(trust).entries] == [
        (FOUNDER,),
        ("rita",),
        ("lena",),
    ]


def test_a_migration_signs_in_only_the_lines_that_can_sign_a_record(tmp_path, keygen, sealdesk):
    """An old workspace's shared trust/allowed_signers: keys migrate signs its Ed25519
    lines into the genesis and skips the RSA, ECDSA and certificate-authority lines."""
    from engine.workspace import Workspace

    lena, rita = keygen("lena"), keygen("rita")
    with Workspace.init(tmp_path / "old") as ws:
        root, trust = ws.root, ws.allowed_signers_path
    trust.write_text(
        f'lena namespaces="lead@sealdesk" {pub_line(lena)}\n'
        f"bob {pub_line(keygen('bob', key_type='rsa'))}\n"
        f'rita namespaces="reviewer@sealdesk" {pub_line(rita)}\n'
        f'eve namespaces="git" {pub_line(keygen("eve", key_type="ecdsa"))}\n'
        f"ops cert-authority {pub_line(keygen('ca'))}\n"
    )
    proc = sealdesk("keys", "migrate", "--lead-key", lena, workspace=root)
    assert proc.returncode == 0, proc.stderr
    with Workspace.open(root) as ws:
        auth = ws.authority()
        assert [(g.principal, g.roles) for g in auth.in_force()] == [
            ("lena", ("lead",)),
            ("rita", ("reviewer",)),
        ]
        assert verify_workspace(ws).ok


def test_a_malformed_foreign_key_line_in_an_anchor_is_still_refused(
    workspace, sealdesk, founder_key, tmp_path
):
    anchor = tmp_path / "allowed_signers"
    # An ed25519 blob labelled RSA.
    anchor.write_text(founder_line(founder_key) + "bob ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIA==\n")
    proc = sealdesk("verify", "--anchor", anchor, workspace=workspace.root)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1
    assert f"allowed_signers:{number_of(anchor, 'bob ')}: field 'key': malformed ssh-rsa key" in err


def test_a_certificate_authority_line_is_skipped_as_ssh_keygen_ignores_it(
    workspace, keygen, sealdesk, founder_key, tmp_path
):
    """ssh-keygen takes a CA line's key only for certificates, never for a plain-key
    signature such as every sealdesk record: an anchor naming the founding lead's key
    only as a certificate authority vouches for nothing, for ssh-keygen and for verify."""
    genesis = exported(sealdesk, workspace, tmp_path)[0]
    assert genesis["kind"] == "genesis"
    ca_only = tmp_path / "ca_only"
    ca_only.write_text(
        f'{FOUNDER} cert-authority,namespaces="lead@sealdesk" {pub_line(founder_key)}\n'
    )
    assert (
        keygen_verify(
            ca_only,
            FOUNDER,
            genesis["namespace"],
            genesis["message"].encode(),
            genesis["signature"],
            tmp_path,
        ).returncode
        != 0
    )
    assert [(s.principals, s.key_type) for s in AllowedSigners.load(ca_only).skipped] == [
        ((FOUNDER,), "cert-authority ssh-ed25519")
    ]
    refused = sealdesk("verify", "--anchor", ca_only, workspace=workspace.root)
    assert refused.returncode == 1 and "does not trust as lead" in refused.stderr

    anchor = tmp_path / "anchor"
    anchor.write_text(
        founder_line(founder_key)
        + f"ops cert-authority {pub_line(keygen('ca'))}\n"
        + f"git cert-authority {pub_line(keygen('gitca', key_type='rsa'))}\n"
    )
    assert verify_workspace(workspace, anchor=anchor).ok
    assert [(s.principals, s.key_type) for s in AllowedSigners.load(anchor).skipped] == [
        (("ops",), "cert-authority ssh-ed25519"),
        (("git",), "cert-authority ssh-rsa"),
    ]


def test_options_ssh_keygen_refuses_are_refused_not_granted(keygen, founder_key, tmp_path):
    """An unquoted value, a repeated option, a key blob that is only its type's name: each
    is a one-line error naming the line, never a grant."""
    path = tmp_path / "allowed_signers"
    good = founder_line(founder_key)
    key = pub_line(keygen("bob"))
    bad_lines = {
        f"bob namespaces=reviewer@sealdesk {key}": "must be in double quotes",
        f'bob valid-before=20990101,namespaces="reviewer@sealdesk" {key}': (
            "must be in double quotes"
        ),
        f'bob namespaces="lead@sealdesk",namespaces="reviewer@sealdesk" {key}': "given twice",
        "bob ssh-rsa AAAAB3NzaC1yc2E=": "malformed ssh-rsa key",
    }
    for line, reason in bad_lines.items():
        path.write_text(good + line + "\n")
        with pytest.raises(InputError, match=reason) as err:
            AllowedSigners.load(path)
        assert f"allowed_signers:{number_of(path, 'bob ')}" in err.value.one_line()
