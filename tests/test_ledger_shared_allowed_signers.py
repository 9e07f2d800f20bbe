"""An allowed_signers file shared with other tools may hold RSA or ECDSA lines.

ssh-keygen accepts such a file; sealdesk skips those lines (they can never
authorise an Ed25519 record), lists them as skipped, keeps them when it
enrols someone, and still refuses a line that is malformed.
"""

from __future__ import annotations

import json

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
