"""trust/allowed_signers means to sealdesk exactly what it means to ``ssh-keygen -Y verify``.

Each case writes one allowed_signers line, signs with the real ssh-keygen in a
namespace and asks both ssh-keygen and sealdesk whether the principal may
sign there; they must agree. A line that ssh-keygen reads more narrowly than
sealdesk would let a key act in a role its owner was never given.
"""

from __future__ import annotations

import base64
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InputError
from engine.ledger import sshsig
from engine.ledger.allowed_signers import AllowedSigners, parse_line
from engine.ledger.signers import read_public_key

# (principals field, options field, principal asked, namespace asked)
CASES = {
    "negated namespace among a wildcard": ("lena", 'namespaces="!lead@sealdesk,*"', "lena",
                                           "lead@sealdesk"),
    "wildcard after a negation still grants others": ("lena", 'namespaces="!lead@sealdesk,*"',
                                                      "lena", "reviewer@sealdesk"),
    "brackets are literal in a namespace": ("lena", 'namespaces="[l]ead@sealdesk"', "lena",
                                            "lead@sealdesk"),
    "brackets are literal in a principal": ("l[e]na", 'namespaces="lead@sealdesk"', "lena",
                                            "lead@sealdesk"),
    "question mark matches one character": ("len?", 'namespaces="lead@sealdesk"', "lena",
                                            "lead@sealdesk"),
    "negated principal": ("!lena,*", 'namespaces="lead@sealdesk"', "lena", "lead@sealdesk"),
    "quoted principal list": ('"rita,lena"', 'namespaces="lead@sealdesk"', "lena",
                              "lead@sealdesk"),
    "star namespace pattern": ("lena", 'namespaces="*@sealdesk"', "lena", "lead@sealdesk"),
    "double negation is not a double negative": ("lena", 'namespaces="!!lead@sealdesk,*"',
                                                 "lena", "lead@sealdesk"),
}


def ssh_keygen_allows(allowed: Path, principal: str, namespace: str, key: Path,
                      tmp_path: Path) -> bool:
    message = tmp_path / "msg"
    message.write_bytes(b"sealdesk trust check\n")
    sig = tmp_path / "msg.sig"
    sig.unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-Y", "sign", "-f", str(key), "-n", namespace, str(message)],
                   check=True, capture_output=True)
    proc = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", principal,
                           "-n", namespace, "-s", str(sig)], stdin=open(message, "rb"),
                          capture_output=True)
    return proc.returncode == 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_sealdesk_and_ssh_keygen_agree_on_who_may_sign_where(case, keygen, tmp_path):
    principals, options, principal, namespace = CASES[case]
    key = keygen("lena")
    pub = Path(f"{key}.pub").read_text().strip()
    allowed_path = tmp_path / "allowed_signers"
    allowed_path.write_text(f"{principals} {options} {pub}\n")
    theirs = ssh_keygen_allows(allowed_path, principal, namespace, key, tmp_path)
    ours = AllowedSigners.load(allowed_path).authorizes(
        principal, read_public_key(Path(f"{key}.pub")).blob, namespace)
    assert ours == theirs, f"ssh-keygen says {theirs}, sealdesk says {ours}"


def test_a_negated_lead_namespace_grants_no_lead_role(keygen, tmp_path):
    key = keygen("lena")
    allowed_path = tmp_path / "allowed_signers"
    allowed_path.write_text(f'lena namespaces="!lead@sealdesk,*" '
                            f'{Path(f"{key}.pub").read_text()}')
    blob = read_public_key(Path(f"{key}.pub")).blob
    assert AllowedSigners.load(allowed_path).roles_for("lena", blob) == ["reviewer",
                                                                         "adjudicator"]


def test_a_carriage_return_inside_a_line_does_not_start_a_new_entry(keygen, tmp_path):
    # ssh-keygen reads lines split at LF only; a CR inside a key comment is
    # part of the comment, never a second line that could enrol another key.
    lena, mallory = keygen("lena"), keygen("mallory")
    mallory_pub = Path(f"{mallory}.pub").read_text().strip()
    allowed_path = tmp_path / "allowed_signers"
    allowed_path.write_text(f'lena namespaces="reviewer@sealdesk" '
                            f'{Path(f"{lena}.pub").read_text().strip()} x\r'
                            f'mallory namespaces="lead@sealdesk" {mallory_pub}\n', newline="")
    allowed = AllowedSigners.load(allowed_path)
    mallory_blob = read_public_key(Path(f"{mallory}.pub")).blob
    assert not allowed.authorizes("mallory", mallory_blob, "lead@sealdesk")
    assert not ssh_keygen_allows(allowed_path, "mallory", "lead@sealdesk", mallory, tmp_path)


def test_enrolling_a_public_key_whose_comment_hides_a_line_break_keeps_it_out(
        workspace, keygen, tmp_path, sealdesk):
    lena, mallory = keygen("lena"), keygen("mallory")
    mallory_pub = Path(f"{mallory}.pub").read_text().strip()
    crafted = tmp_path / "crafted.pub"
    crafted.write_text(f'{Path(f"{lena}.pub").read_text().strip()} lena\r'
                       f'mallory namespaces="lead@sealdesk" {mallory_pub}\n', newline="")
    sealdesk("keys", "add", "--principal", "lena", "--role", "reviewer", "--key", crafted,
             workspace=workspace.root, check=True)
    allowed = workspace.allowed_signers()
    assert [e.principals for e in allowed.entries] == [("lena",)]
    assert "mallory" not in workspace.allowed_signers_path.read_text()
    assert sshsig.ED25519 in workspace.allowed_signers_path.read_text()


def test_an_unterminated_quote_names_the_line(tmp_path, keygen):
    key = keygen("lena")
    path = tmp_path / "allowed_signers"
    path.write_text(f'# header\nlena namespaces="lead@sealdesk {Path(f"{key}.pub").read_text()}')
    with pytest.raises(InputError) as err:
        AllowedSigners.load(path)
    assert err.value.line == 2


@pytest.mark.parametrize("window", ['valid-before="20200101"', 'valid-after="29990101"'])
def test_a_key_outside_its_validity_window_signs_nothing(workspace, keygen, window):
    # verify checks validity at the record's time; signing must check it at the
    # same moment, or the append-only ledger holds a record that never verifies.
    from engine.errors import PermissionRefused
    from engine.ledger.audit import verify_workspace
    from engine.ledger.signers import FileSigner
    from engine.workspace import BacklogItem

    key = keygen("rita")
    workspace.allowed_signers_path.write_text(
        f'rita {window},namespaces="reviewer@sealdesk" {Path(f"{key}.pub").read_text()}')
    workspace.ingest([BacklogItem.make("flagged_pairs", "fp-1", "run-1", {"x": 1})])
    with pytest.raises(PermissionRefused):
        workspace.decide(FileSigner(key), "flagged_pairs", "fp-1", "accept")
    assert workspace.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 0
    assert verify_workspace(workspace).ok


def test_an_exported_record_of_a_since_expired_key_verifies_with_ssh_keygen_at_its_time(
        workspace, keygen, tmp_path):
    # sealdesk checks a key's validity at the record's signed time; ssh-keygen
    # checks it now unless told the time. The export says which time to give.
    import json

    from engine.canonical import canonical_json
    from engine.ledger.audit import export_records, verify_workspace
    from engine.ledger.records import make_body, encode_body
    from engine.ledger.signers import FileSigner
    from engine.workspace import BacklogItem

    key = keygen("rita")
    workspace.allowed_signers_path.write_text(
        f'rita valid-before="20200101",namespaces="reviewer@sealdesk" '
        f'{Path(f"{key}.pub").read_text()}')
    workspace.ingest([BacklogItem.make("flagged_pairs", "fp-1", "run-1", {"x": 1})])
    binding = workspace._item_binding(workspace.conn, "flagged_pairs", "fp-1")
    rita = FileSigner(key)
    body = make_body(workspace=workspace.workspace_id, seq=1, prev="0" * 64, kind="decision",
                     principal="rita", role="reviewer", key=rita.public_key.fingerprint,
                     time="2019-06-01T12:30:45.000000Z", queue="flagged_pairs", item_id="fp-1",
                     decision="accept", **binding)
    message, record_hash = encode_body(body)
    workspace.conn.execute(
        "INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (1, record_hash, "0" * 64, "decision", "flagged_pairs", "fp-1", body["item_sha256"],
         "accept", "rita", "reviewer", None, body["time"], message.decode(),
         sshsig.armor(rita.sign(message, "reviewer@sealdesk"))))
    assert canonical_json(body) == message and verify_workspace(workspace).ok
    out = tmp_path / "records.jsonl"
    export_records(workspace, out)
    line = json.loads(out.read_text())
    assert line["verify_time"] == "20190601123045Z"
    (tmp_path / "msg").write_text(line["message"])
    (tmp_path / "msg.sig").write_text(line["signature"])

    def ssh_keygen(*extra: str) -> int:
        return subprocess.run(
            ["ssh-keygen", "-Y", "verify", "-f", str(workspace.allowed_signers_path), "-I",
             line["principal"], "-n", line["namespace"], "-s", str(tmp_path / "msg.sig"),
             *extra], stdin=open(tmp_path / "msg", "rb"), capture_output=True).returncode

    assert ssh_keygen() != 0  # expired now
    assert ssh_keygen(f"-Overify-time={line['verify_time']}") == 0


def _enrol_many(path: str, keys: list[str], start, worker: int) -> None:
    from engine.ledger.enrol import enrol

    start.wait()
    for n, key in enumerate(keys):
        enrol(Path(path), f"p{worker}-{n}", ["reviewer"], Path(key))


def test_concurrent_enrolments_all_land_in_allowed_signers(tmp_path):
    """Four processes enrolling at once: no read-modify-write overwrites another."""
    import multiprocessing

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    keys = []
    for i in range(4 * 15):
        pub = Ed25519PrivateKey.generate().public_key().public_bytes(
            Encoding.OpenSSH, PublicFormat.OpenSSH)
        key = tmp_path / f"k{i}.pub"
        key.write_bytes(pub + b"\n")
        keys.append(str(key))
    path = tmp_path / "allowed_signers"
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(4)
    procs = [ctx.Process(target=_enrol_many, args=(str(path), keys[w::4], start, w))
             for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    principals = {e.principals for e in AllowedSigners.load(path).entries}
    assert principals == {(f"p{w}-{n}",) for w in range(4) for n in range(15)}


# -- verify's windows: text comparison must agree with allowed_signers' datetimes --

_BOUND = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 30)).flatmap(
        lambda d: st.sampled_from([d.strftime("%Y%m%d"), d.strftime("%Y%m%d%H%M"),
                                   d.strftime("%Y%m%d%H%M%S"), d.strftime("%Y%m%d%H%M%SZ")])),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_BOUND, _BOUND), min_size=1, max_size=3),
       st.lists(st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 30)),
                min_size=1, max_size=8))
def test_verify_time_windows_agree_with_allowed_signers(bounds, times):
    from engine.ledger.records import parse_time, time_text
    from engine.ledger.verify import Context, RecordChecker

    blob = sshsig.ed25519_public_blob(bytes(range(32)))
    b64 = base64.b64encode(blob).decode()
    lines = []
    for after, before in bounds:
        options = [f'valid-after="{after}"' if after else "",
                   f'valid-before="{before}"' if before else "", 'namespaces="reviewer@sealdesk"']
        lines.append(f"rita {','.join(o for o in options if o)} ssh-ed25519 {b64}")
    allowed = AllowedSigners([parse_line(line, path='allowed_signers', line=n) for n, line in enumerate(lines, 1)])
    checker = RecordChecker(Context("unused.db", "ws", allowed, {}))
    # every bound itself and a microsecond either side: where a text order could slip
    edges = [bound + timedelta(microseconds=step) for e in allowed.entries
             for bound in (e.valid_after, e.valid_before) if bound for step in (-1, 0, 1)]
    for when in [t.replace(tzinfo=timezone.utc) for t in times] + edges:
        text = time_text(when)
        at = parse_time(text)  # ssh-keygen's rule, on datetimes
        expected = any((e.valid_after is None or e.valid_after <= at)
                       and (e.valid_before is None or at < e.valid_before)
                       for e in allowed.entries)
        assert allowed.authorizes("rita", blob, "reviewer@sealdesk", at) == expected
        assert checker.authorized("rita", blob, "reviewer@sealdesk", text) == expected, (
            lines, text)
        # another principal or namespace is never allowed, in any window
        assert not checker.authorized("eve", blob, "reviewer@sealdesk", text)
        assert not checker.authorized("rita", blob, "lead@sealdesk", text)
