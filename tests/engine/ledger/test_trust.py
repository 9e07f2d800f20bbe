"""An allowed_signers file means to sealdesk exactly what it means to ``ssh-keygen -Y verify``.

sealdesk reads such a file in two places: the old trust/allowed_signers a
migration signs into the ledger, and the ``--anchor`` file a verifier
brings. Each case writes one allowed_signers line, signs with the real
ssh-keygen in a namespace and asks both ssh-keygen and sealdesk whether the
principal may sign there; they must agree. A line that ssh-keygen reads more
narrowly than sealdesk would let a key act in a role its owner was never
given.

The workspace's own trust/allowed_signers is generated from the ledger's
enrolment records: the tests below check that what it says to ssh-keygen is
what the ledger says, and that editing it grants nothing.
"""

from __future__ import annotations

import base64
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InputError
from engine.ledger import sshsig
from engine.ledger.allowed_signers import AllowedSigners, parse_line
from engine.ledger.signers import read_public_key
from tests.conftest import FOUNDER
from tests.support.ssh import verify_args

# (principals field, options field, principal asked, namespace asked)
CASES = {
    "negated namespace among a wildcard": (
        "lena",
        'namespaces="!lead@sealdesk,*"',
        "lena",
        "lead@sealdesk",
    ),
    "wildcard after a negation still grants others": (
        "lena",
        'namespaces="!lead@sealdesk,*"',
        "lena",
        "reviewer@sealdesk",
    ),
    "brackets are literal in a namespace": (
        "lena",
        'namespaces="[l]ead@sealdesk"',
        "lena",
        "lead@sealdesk",
    ),
    "brackets are literal in a principal": (
        "l[e]na",
        'namespaces="lead@sealdesk"',
        "lena",
        "lead@sealdesk",
    ),
    "question mark matches one character": (
        "len?",
        'namespaces="lead@sealdesk"',
        "lena",
        "lead@sealdesk",
    ),
    "negated principal": ("!lena,*", 'namespaces="lead@sealdesk"', "lena", "lead@sealdesk"),
    "quoted principal list": ('"rita,lena"', 'namespaces="lead@sealdesk"', "lena", "lead@sealdesk"),
    "star namespace pattern": ("lena", 'namespaces="*@sealdesk"', "lena", "lead@sealdesk"),
    "double negation is not a double negative": (
        "lena",
        'namespaces="!!lead@sealdesk,*"',
        "lena",
        "lead@sealdesk",
    ),
}


def ssh_keygen_allows(
    allowed: Path, principal: str, namespace: str, key: Path, tmp_path: Path
) -> bool:
    message = tmp_path / "msg"
    message.write_bytes(b"sealdesk trust check\n")
    sig = tmp_path / "msg.sig"
    sig.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-f", str(key), "-n", namespace, str(message)],
        check=True,
        capture_output=True,
    )
    proc = subprocess.run(
        verify_args(allowed, principal, namespace, sig),
        stdin=open(message, "rb"),
        capture_output=True,
    )
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
        principal, read_public_key(Path(f"{key}.pub")).blob, namespace
    )
    assert ours == theirs, f"ssh-keygen says {theirs}, sealdesk says {ours}"


def test_a_negated_lead_namespace_grants_no_lead_role(keygen, tmp_path):
    key = keygen("lena")
    allowed_path = tmp_path / "allowed_signers"
    allowed_path.write_text(f'lena namespaces="!lead@sealdesk,*" {Path(f"{key}.pub").read_text()}')
    blob = read_public_key(Path(f"{key}.pub")).blob
    assert AllowedSigners.load(allowed_path).roles_for("lena", blob) == ["reviewer", "adjudicator"]


def test_a_carriage_return_inside_a_line_does_not_start_a_new_entry(keygen, tmp_path):
    # ssh-keygen reads lines split at LF only; a CR inside a key comment is
    # part of the comment, never a second line that could enrol another key.
    lena, mallory = keygen("lena"), keygen("mallory")
    mallory_pub = Path(f"{mallory}.pub").read_text().strip()
    allowed_path = tmp_path / "allowed_signers"
    allowed_path.write_text(
        f'lena namespaces="reviewer@sealdesk" '
        f"{Path(f'{lena}.pub').read_text().strip()} x\r"
        f'mallory namespaces="lead@sealdesk" {mallory_pub}\n',
        newline="",
    )
    allowed = AllowedSigners.load(allowed_path)
    mallory_blob = read_public_key(Path(f"{mallory}.pub")).blob
    assert not allowed.authorizes("mallory", mallory_blob, "lead@sealdesk")
    assert not ssh_keygen_allows(allowed_path, "mallory", "lead@sealdesk", mallory, tmp_path)


def test_enrolling_a_public_key_whose_comment_hides_a_line_break_keeps_it_out(
    workspace, keygen, tmp_path, sealdesk, founder_key
):
    lena, mallory = keygen("lena"), keygen("mallory")
    mallory_pub = Path(f"{mallory}.pub").read_text().strip()
    crafted = tmp_path / "crafted.pub"
    crafted.write_text(
        f"{Path(f'{lena}.pub').read_text().strip()} lena\r"
        f'mallory namespaces="lead@sealdesk" {mallory_pub}\n',
        newline="",
    )
    sealdesk(
        "keys",
        "add",
        "--principal",
        "lena",
        "--role",
        "reviewer",
        "--key",
        crafted,
        "--lead-key",
        founder_key,
        workspace=workspace.root,
        check=True,
    )
    auth = workspace.authority()
    assert [(g.principal, g.roles) for g in auth.in_force()] == [
        (FOUNDER, ("lead",)),
        ("lena", ("reviewer",)),
    ]
    mallory_blob = read_public_key(Path(f"{mallory}.pub")).blob
    assert auth.principals_for(mallory_blob) == []
    # The generated file ssh-keygen reads holds the same two lines, and no mallory.
    generated = workspace.allowed_signers_path.read_bytes().decode()  # CRs kept as they are
    assert [e.principals for e in AllowedSigners.load(workspace.allowed_signers_path).entries] == [
        (FOUNDER,),
        ("lena",),
    ]
    assert "mallory" not in generated and "\r" not in generated
    assert sshsig.ED25519 in generated
    assert not ssh_keygen_allows(
        workspace.allowed_signers_path, "mallory", "lead@sealdesk", mallory, tmp_path
    )


def test_an_unterminated_quote_names_the_line(tmp_path, keygen):
    key = keygen("lena")
    path = tmp_path / "allowed_signers"
    path.write_text(f'# header\nlena namespaces="lead@sealdesk {Path(f"{key}.pub").read_text()}')
    with pytest.raises(InputError) as err:
        AllowedSigners.load(path)
    assert err.value.line == 2


def test_a_hand_written_allowed_signers_line_grants_nothing(workspace, keygen, founder_key):
    """trust/allowed_signers is generated, never read: a line added by hand signs nothing;
    the same grant as a lead-signed enrolment does, and the file is written from the ledger."""
    from engine.errors import PermissionRefused
    from engine.ledger.enrol import enrol
    from engine.ledger.signers import FileSigner
    from engine.signoff.verify import verify_workspace
    from engine.workspace import BacklogItem

    key = keygen("rita")
    rita = FileSigner(key)
    with workspace.allowed_signers_path.open("a") as f:
        f.write(f'rita namespaces="reviewer@sealdesk" {Path(f"{key}.pub").read_text()}')
    workspace.ingest([BacklogItem.make("flagged_pairs", "fp-1", "run-1", {"x": 1})])
    records = workspace.head()[0]
    with pytest.raises(PermissionRefused, match="not enrolled"):
        workspace.decide(rita, "flagged_pairs", "fp-1", "accept")
    assert workspace.head()[0] == records
    assert verify_workspace(workspace).ok
    enrol(
        workspace.db,
        workspace.workspace_id,
        FileSigner(founder_key),
        "rita",
        ("reviewer",),
        rita.public_key,
    )
    workspace.write_allowed_signers()
    decided = workspace.decide(rita, "flagged_pairs", "fp-1", "accept")
    report = verify_workspace(workspace)
    assert report.ok and report.signers["rita"] == 1 and report.records == decided.seq
    rita_lines = [
        line
        for line in workspace.allowed_signers_path.read_text().splitlines()
        if line.startswith("rita ")
    ]
    assert len(rita_lines) == 1 and "valid-after=" in rita_lines[0]  # from her enrolment on


@pytest.mark.parametrize(
    "window",
    [
        {"valid_before": "2020-01-01T00:00:00.000000Z"},
        {"valid_after": "2999-01-01T00:00:00.000000Z"},
    ],
)
def test_a_key_outside_its_validity_window_signs_nothing(workspace, keygen, founder_key, window):
    # verify checks validity at the record's time; signing must check it at the
    # same moment, or the append-only ledger holds a record that never verifies.
    from engine.errors import PermissionRefused
    from engine.ledger.enrol import enrol
    from engine.ledger.signers import FileSigner
    from engine.signoff.verify import verify_workspace
    from engine.workspace import BacklogItem

    key = keygen("rita")
    enrol(
        workspace.db,
        workspace.workspace_id,
        FileSigner(founder_key),
        "rita",
        ("reviewer",),
        read_public_key(Path(f"{key}.pub")),
        **window,
    )
    workspace.write_allowed_signers()
    workspace.ingest([BacklogItem.make("flagged_pairs", "fp-1", "run-1", {"x": 1})])
    records = workspace.head()[0]
    with pytest.raises(PermissionRefused, match="may not sign in any role now"):
        workspace.decide(FileSigner(key), "flagged_pairs", "fp-1", "accept")
    assert workspace.head()[0] == records
    assert verify_workspace(workspace).ok
    # The generated file carries the window, so ssh-keygen refuses the key now as well.
    bound = (
        'valid-before="20200101000000Z"'
        if "valid_before" in window
        else ('valid-after="29990101000000Z"')
    )
    line = next(
        ln
        for ln in workspace.allowed_signers_path.read_text().splitlines()
        if ln.startswith("rita ")
    )
    assert bound in line


def test_an_exported_record_of_a_since_expired_key_verifies_with_ssh_keygen_at_its_time(
    workspace, keygen, founder_key, tmp_path
):
    # sealdesk checks a key's validity at the record's signed time; ssh-keygen
    # checks it now unless told the time. The export says which time to give.
    import json
    import time

    from engine.ledger.audit import export_records
    from engine.ledger.enrol import enrol
    from engine.ledger.records import time_text
    from engine.ledger.signers import FileSigner
    from engine.signoff.verify import verify_workspace
    from engine.workspace import BacklogItem

    key = keygen("rita")
    rita = FileSigner(key)
    # The grant ends a few whole seconds from now (ssh-keygen's bounds are whole seconds).
    ends = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    enrol(
        workspace.db,
        workspace.workspace_id,
        FileSigner(founder_key),
        "rita",
        ("reviewer",),
        rita.public_key,
        valid_before=time_text(ends),
    )
    workspace.write_allowed_signers()
    workspace.ingest([BacklogItem.make("flagged_pairs", "fp-1", "run-1", {"x": 1})])
    decided = workspace.decide(rita, "flagged_pairs", "fp-1", "accept")
    while datetime.now(UTC) <= ends + timedelta(seconds=1):
        time.sleep(0.2)
    assert verify_workspace(workspace).ok  # judged at the record's time, inside the window
    out = tmp_path / "records.jsonl"
    export_records(workspace, out)
    line = [json.loads(text) for text in out.read_text().splitlines()][-1]
    assert line["seq"] == decided.seq and line["principal"] == "rita"
    assert line["verify_time"] == datetime.strptime(
        decided.body["time"], "%Y-%m-%dT%H:%M:%S.%fZ"
    ).strftime("%Y%m%d%H%M%SZ")
    (tmp_path / "msg").write_text(line["message"])
    (tmp_path / "msg.sig").write_text(line["signature"])

    def ssh_keygen(*extra: str) -> int:
        return subprocess.run(
            [
                "ssh-keygen",
                "-Y",
                "verify",
                "-f",
                str(workspace.allowed_signers_path),
                "-I",
                line["principal"],
                "-n",
                line["namespace"],
                "-s",
                str(tmp_path / "msg.sig"),
                *extra,
            ],
            stdin=open(tmp_path / "msg", "rb"),
            capture_output=True,
        ).returncode

    assert ssh_keygen() != 0  # expired now
    assert ssh_keygen(f"-Overify-time={line['verify_time']}") == 0


ENROL_MANY = """
import sys
from pathlib import Path
from engine.ledger.enrol import enrol
from engine.ledger.signers import FileSigner, read_public_key
from engine.workspace import Workspace
root, lead, worker, keys = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
ws = Workspace.open(root)
signer = FileSigner(lead)
Path(root, f"ready-{worker}").touch()
while not Path(root, "go").exists():
    pass
for n, key in enumerate(keys):
    enrol(ws.db, ws.workspace_id, signer, f"p{worker}-{n}", ("reviewer",),
          read_public_key(Path(key)))
    ws.write_allowed_signers()
"""


def test_concurrent_enrolments_all_land_in_allowed_signers(workspace, founder_key, tmp_path):
    """Four processes enrolling at once: every enrolment is a record, and the file
    generated after the last one names them all (none is lost to a stale rewrite)."""
    import sys
    import time

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from engine.signoff.verify import verify_workspace

    keys = []
    for i in range(4 * 15):
        pub = (
            Ed25519PrivateKey.generate()
            .public_key()
            .public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
        )
        key = tmp_path / f"k{i}.pub"
        key.write_bytes(pub + b"\n")
        keys.append(str(key))
    root = workspace.root
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ENROL_MANY, str(root), str(founder_key), str(w), *keys[w::4]]
        )
        for w in range(4)
    ]
    deadline = time.monotonic() + 60
    while not all((root / f"ready-{w}").exists() for w in range(4)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.02)
    (root / "go").touch()
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    expected = {(f"p{w}-{n}",) for w in range(4) for n in range(15)}
    assert {(g.principal,) for g in workspace.authority().in_force()} == expected | {(FOUNDER,)}
    principals = {e.principals for e in AllowedSigners.load(workspace.allowed_signers_path).entries}
    assert principals == expected | {(FOUNDER,)}
    report = verify_workspace(workspace)
    assert report.ok and report.records == 1 + 60


WRITE_FILE = """
import sys
from pathlib import Path
from engine.workspace import Workspace
ws = Workspace.open(sys.argv[1])
Path(sys.argv[2]).touch()
ws.write_allowed_signers()
"""


def test_the_file_is_never_written_from_a_replay_older_than_an_enrolment_it_missed(
    workspace, founder_key, keygen, tmp_path
):
    """A writer regenerating trust/allowed_signers while another lead's enrolment is being
    appended must not write (possibly last) a file that lacks that enrolment."""
    import sys
    import time

    from engine.ledger import store
    from engine.ledger.authority import enrol_data, signer_entry
    from engine.ledger.signers import FileSigner

    late = read_public_key(Path(f"{keygen('late')}.pub"))
    marker = tmp_path / "about-to-write"
    writer: list[subprocess.Popen] = []

    def while_appending(conn):
        # Inside the enrolment's write transaction: another process regenerates the file.
        writer.append(
            subprocess.Popen([sys.executable, "-c", WRITE_FILE, str(workspace.root), str(marker)])
        )
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert writer[0].poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        try:  # time for a writer that does not wait for the ledger's lock to finish
            writer[0].wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        return {"data": enrol_data(signer_entry("late", ("reviewer",), late))}

    store.append(
        workspace.db,
        FileSigner(founder_key),
        workspace_id=workspace.workspace_id,
        principal=FOUNDER,
        role="lead",
        kind="enrol",
        check=while_appending,
    )
    assert writer[0].wait(timeout=120) == 0
    assert ("late",) in {
        e.principals for e in AllowedSigners.load(workspace.allowed_signers_path).entries
    }


# -- verify's windows over a legacy file: text comparison must agree with its datetimes --

_BOUND = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 30)).flatmap(
        lambda d: st.sampled_from(
            [
                d.strftime("%Y%m%d"),
                d.strftime("%Y%m%d%H%M"),
                d.strftime("%Y%m%d%H%M%S"),
                d.strftime("%Y%m%d%H%M%SZ"),
            ]
        )
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(_BOUND, _BOUND), min_size=1, max_size=3),
    st.lists(
        st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 30)),
        min_size=1,
        max_size=8,
    ),
)
def test_verify_time_windows_agree_with_allowed_signers(bounds, times):
    """A ledger not yet migrated is verified against its old allowed_signers file (the
    migration signs in exactly what that check allowed): its record-time text windows
    must say what the file's datetimes say."""
    from engine.ledger.authority import LegacySigners
    from engine.ledger.records import parse_time, time_text

    blob = sshsig.ed25519_public_blob(bytes(range(32)))
    b64 = base64.b64encode(blob).decode()
    lines = []
    for after, before in bounds:
        options = [
            f'valid-after="{after}"' if after else "",
            f'valid-before="{before}"' if before else "",
            'namespaces="reviewer@sealdesk"',
        ]
        lines.append(f"rita {','.join(o for o in options if o)} ssh-ed25519 {b64}")
    allowed = AllowedSigners(
        [parse_line(line, path="allowed_signers", line=n) for n, line in enumerate(lines, 1)]
    )
    policy = LegacySigners(allowed, records=1)  # what verify checks each record against
    # every bound itself and a microsecond either side: where a text order could slip
    edges = [
        bound + timedelta(microseconds=step)
        for e in allowed.entries
        for bound in (e.valid_after, e.valid_before)
        if bound
        for step in (-1, 0, 1)
    ]
    for when in [t.replace(tzinfo=UTC) for t in times] + edges:
        text = time_text(when)
        at = parse_time(text)  # ssh-keygen's rule, on datetimes
        expected = any(
            (e.valid_after is None or e.valid_after <= at)
            and (e.valid_before is None or at < e.valid_before)
            for e in allowed.entries
        )
        assert allowed.authorizes("rita", blob, "reviewer@sealdesk", at) == expected
        assert policy.allows("rita", blob, "reviewer", 1, text) == expected, (lines, text)
        # another principal or role is never allowed, in any window
        assert not policy.allows("eve", blob, "reviewer", 1, text)
        assert not policy.allows("rita", blob, "lead", 1, text)
