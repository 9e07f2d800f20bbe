"""Who signs: an OpenSSH private key file, or a key held by ssh-agent.

Both give the same SSHSIG bytes for the same key, so the review host never
needs the private key: the agent (forwarded from a laptop) is enough.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from engine.errors import AgentError, SigningKeyError
from engine.ledger import sshsig
from engine.ledger.agent import AgentClient
from engine.ledger.sshwire import pack_string


@dataclass(frozen=True)
class PublicKey:
    """An Ed25519 public key as OpenSSH writes it on one line."""

    blob: bytes
    comment: str = ""

    @property
    def fingerprint(self) -> str:
        """Gives ``SHA256:...`` as ``ssh-keygen -l`` prints it."""
        return sshsig.fingerprint(self.blob)

    def openssh(self) -> str:
        """Gives ``ssh-ed25519 <base64>`` (no comment)."""
        return f"{sshsig.ED25519} {base64.b64encode(self.blob).decode()}"


def parse_public_key(text: str, *, source: str = "key") -> PublicKey:
    """Gives the key on an OpenSSH public key line; only ssh-ed25519 is accepted."""
    parts = text.strip().split(None, 2)
    if len(parts) < 2:
        raise SigningKeyError(f"{source}: not an OpenSSH public key line ('ssh-ed25519 AAAA...')")
    key_type, b64 = parts[0], parts[1]
    if key_type != sshsig.ED25519:
        raise SigningKeyError(
            f"{source}: key type {key_type!r} is not supported; sealdesk signs with "
            "ssh-ed25519 only (make one with: ssh-keygen -t ed25519)"
        )
    try:
        blob = base64.b64decode(b64, validate=True)
        sshsig.ed25519_raw_from_blob(blob)
    except (binascii.Error, sshsig.SignatureError) as exc:
        raise SigningKeyError(f"{source}: malformed ssh-ed25519 key: {exc}") from exc
    return PublicKey(blob=blob, comment=parts[2] if len(parts) > 2 else "")


KEY_FILE_LIMIT = 64 * 1024  # an OpenSSH key file is well under 1 KiB


def read_public_key(path: Path) -> PublicKey:
    """Gives the public key in an OpenSSH ``.pub`` file, which must hold exactly one."""
    from engine.artifacts import read_capped

    try:
        text = read_capped(path, KEY_FILE_LIMIT).decode("utf-8")
    except OSError as exc:
        raise SigningKeyError(f"{path}: cannot read public key: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SigningKeyError(f"{path}: cannot read public key: not UTF-8 ({exc.reason})") from exc
    # Lines end at LF only, as ssh-keygen reads them: a CR stays inside its line.
    lines = [line for line in text.split("\n") if line.strip() and not line.startswith("#")]
    if len(lines) > 1:
        raise SigningKeyError(
            f"{path}: holds {len(lines)} key lines; give a file with "
            "exactly one key (one person, one key)"
        )
    return parse_public_key(lines[0] if lines else "", source=str(path))


class Signer(Protocol):
    """Anything that can make an SSHSIG with one Ed25519 key."""

    public_key: PublicKey

    def sign(self, message: bytes, namespace: str) -> bytes:
        """Gives the binary SSHSIG blob over message in namespace."""
        ...


class FileSigner:
    """Signs with an OpenSSH private key file (``ssh-keygen -t ed25519``)."""

    def __init__(self, path: Path, passphrase: bytes | None = None) -> None:
        from engine.artifacts import read_capped

        path = Path(path)
        try:
            data = read_capped(path, KEY_FILE_LIMIT)
        except OSError as exc:
            raise SigningKeyError(f"{path}: cannot read private key: {exc.strerror}") from exc
        if passphrase is None:
            env = os.environ.get("SEALDESK_KEY_PASSPHRASE")
            passphrase = env.encode() if env else None
        key = _load_private(path, data, passphrase)
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError(
                f"{path}: key type {type(key).__name__} is not supported; sealdesk signs "
                "with ssh-ed25519 only"
            )
        self._key = key
        raw = key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.public_key = PublicKey(blob=sshsig.ed25519_public_blob(raw), comment=str(path))
        self.path = path

    def sign(self, message: bytes, namespace: str) -> bytes:
        """Gives the binary SSHSIG blob over message in namespace."""
        raw_sig = self._key.sign(sshsig.signed_data(namespace, message))
        sig_blob = pack_string(sshsig.ED25519) + pack_string(raw_sig)
        return sshsig.encode(self.public_key.blob, namespace, sig_blob)


def _load_private(path: Path, data: bytes, passphrase: bytes | None):
    if b"BEGIN OPENSSH PRIVATE KEY" not in data:
        raise SigningKeyError(
            f"{path}: not an OpenSSH private key (expected '-----BEGIN OPENSSH PRIVATE KEY-----')"
        )
    try:
        return serialization.load_ssh_private_key(data, password=passphrase)
    except TypeError as exc:
        # Encrypted and no passphrase yet: ask, but only where someone can answer.
        if passphrase is None and sys.stdin.isatty():
            typed = getpass.getpass(f"Passphrase for {path}: ").encode()
            return _load_private(path, data, typed)
        raise SigningKeyError(
            f"{path}: key is passphrase-protected; load it into ssh-agent (ssh-add) "
            "or set SEALDESK_KEY_PASSPHRASE"
        ) from exc
    except (ValueError, Exception) as exc:  # cryptography raises several types
        raise SigningKeyError(f"{path}: cannot load private key: {exc}") from exc


class AgentSigner:
    """Signs through ssh-agent; the private key never reaches this process."""

    def __init__(self, public_key: PublicKey, client: AgentClient | None = None) -> None:
        self.client = client or AgentClient()
        self.public_key = public_key
        held = {ident.public_blob for ident in self.client.identities()}
        if public_key.blob not in held:
            raise AgentError(
                f"ssh-agent does not hold key {public_key.fingerprint} (ssh-add it first)"
            )

    def sign(self, message: bytes, namespace: str) -> bytes:
        """Gives the binary SSHSIG blob over message in namespace."""
        data = sshsig.signed_data(namespace, message)
        sig_blob = self.client.sign(self.public_key.blob, data)
        blob = sshsig.encode(self.public_key.blob, namespace, sig_blob)
        # An agent may hold a differently-typed key under the same blob only by
        # bug or malice; verify before anything is written with it.
        try:
            sshsig.verify(blob, message, namespace)
        except sshsig.SignatureError as exc:
            raise AgentError(f"ssh-agent returned a signature that does not verify: {exc}") from exc
        return blob


def agent_ed25519_keys(client: AgentClient | None = None) -> list[PublicKey]:
    """Gives the Ed25519 keys the agent holds, in the agent's order."""
    client = client or AgentClient()
    keys = []
    for ident in client.identities():
        try:
            sshsig.ed25519_raw_from_blob(ident.public_blob)
        except sshsig.SignatureError:
            continue
        keys.append(PublicKey(blob=ident.public_blob, comment=ident.comment))
    return keys


def write_new_key(path: Path, comment: str = "sealdesk") -> Ed25519PrivateKey:
    """Gives a new Ed25519 key after writing it as an OpenSSH key pair (path, path.pub).

    For benchmarks and throwaway workspaces; people make their keys with
    ``ssh-keygen -t ed25519``.
    """
    key = Ed25519PrivateKey.generate()
    path = Path(path)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)
    pub = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    path.with_name(path.name + ".pub").write_bytes(pub + f" {comment}\n".encode())
    return key
