"""A ledger whose every hash repeats from run to run, for snapshots: a key made from a
fixed seed and a genesis record dated at a fixed time."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from engine.ledger import sshsig
from engine.ledger.enrol import found
from engine.ledger.records import INDEXED_FIELDS, encode_body
from engine.ledger.signers import FileSigner
from engine.roles import namespace_for
from engine.sqlitedb import write_transaction
from engine.workspace import Workspace


def seeded_key(path: Path) -> Path:
    """Gives the path of an OpenSSH Ed25519 key made from a fixed seed (Ed25519 signatures
    are deterministic, so its signature over a given message is the same on every run)."""
    key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)
    Path(f"{path}.pub").write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        + b" lena@test\n"
    )
    return path


def found_at(
    ws: Workspace,
    scratch: Path,
    signer: FileSigner,
    principal: str,
    time: str,
    roles: tuple[str, ...] = ("lead",),
) -> None:
    """Appends to ws's empty ledger the genesis ``found`` writes, dated ``time`` instead of
    now: ``found`` makes it in a scratch ledger, only the time is changed and it is signed
    again, so what the screen shows is the record sealdesk writes, with a time that repeats."""
    with Workspace.init(scratch) as other:
        genesis = found(other.db, ws.workspace_id, signer, principal, roles).body
    body = {**genesis, "time": time}
    message, record_hash = encode_body(body)
    row = {name: body[name] for name in INDEXED_FIELDS}
    row.update(
        record_hash=record_hash,
        prev_hash=body["prev"],
        message=message.decode(),
        signature=sshsig.armor(signer.sign(message, namespace_for(body["role"]))),
    )
    with write_transaction(ws.conn):
        ws.db["records"].insert(row)
    ws.write_allowed_signers()
