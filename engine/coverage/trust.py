"""The coverage trust root: one Ed25519 key per role, in a directory the operator names.

``<dir>/<role>.pub`` holds the role's raw 32-byte public key; a signature is
the raw 64 bytes of Ed25519 over the document's exact bytes. The roles are
separate authorities: ``holdout`` seals the evaluation population, ``scope``
says what is measured against what, ``benchmark`` is the evidence service
that signs measurements. There is no default directory: keys baked into
code, or supplied by the candidate, would let it vouch for itself.

Private keys (PKCS#8 PEM, mode 0600) are made by ``generate`` for whoever
holds a role; sealdesk never needs them to verify.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from engine.canonical import parse_canonical
from engine.errors import InputError, IntegrityError, SigningKeyError

ROLES = ("scope", "holdout", "benchmark")
SIGNATURE_BYTES = 64
PUBLIC_KEY_BYTES = 32


def _role(role: str) -> str:
    if role not in ROLES:
        raise InputError(f"unknown trust role {role!r} (expected {', '.join(ROLES)})", field="role")
    return role


@dataclass(frozen=True)
class TrustRoot:
    """A directory of role public keys that signatures are checked against."""

    directory: Path

    @classmethod
    def at(cls, directory: str | Path) -> TrustRoot:
        """Gives the trust root in an existing directory."""
        path = Path(directory)
        if not path.is_dir():
            raise InputError("trust root is not a directory", path=path)
        return cls(path)

    def public_key(self, role: str) -> Ed25519PublicKey:
        """Gives the role's public key, refusing anything but 32 raw bytes."""
        path = self.directory / f"{_role(role)}.pub"
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise InputError(f"trust root has no {role} key: {exc.strerror}", path=path) from exc
        if len(raw) != PUBLIC_KEY_BYTES:
            raise InputError(
                f"a {role} public key is {PUBLIC_KEY_BYTES} raw bytes, this file holds {len(raw)}",
                path=path,
            )
        return Ed25519PublicKey.from_public_bytes(raw)

    def check_private_key(self, role: str, key: Ed25519PrivateKey, *, what: str) -> None:
        """Returns only if ``key`` is the private half of the role's public key."""

        def raw(public: Ed25519PublicKey) -> bytes:
            return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

        if raw(key.public_key()) != raw(self.public_key(role)):
            raise SigningKeyError(
                f"{what}: not the {role} authority's key (its public half "
                f"is not {self.directory / (role + '.pub')})"
            )

    def verify(self, role: str, raw: bytes, signature: bytes, *, what: str) -> None:
        """Returns only if ``signature`` is the role key's Ed25519 signature of ``raw``."""
        if not isinstance(raw, bytes) or not isinstance(signature, bytes):
            raise InputError(f"{what}: signed document input must be bytes")
        if len(signature) != SIGNATURE_BYTES:
            raise IntegrityError(
                f"{what}: an Ed25519 signature is {SIGNATURE_BYTES} bytes, got {len(signature)}"
            )
        try:
            self.public_key(role).verify(signature, raw)
        except InvalidSignature:
            raise IntegrityError(
                f"{what}: signature is not the {role} authority's "
                f"({self.directory / (role + '.pub')}) signature of these "
                "bytes (forged, altered, or signed by another key)"
            ) from None

    def verify_document(
        self, role: str, raw: bytes, signature: bytes, *, what: str
    ) -> dict[str, Any]:
        """Gives the canonical JSON object a role signed, after checking the signature."""
        self.verify(role, raw, signature, what=what)
        value = parse_canonical(raw, path=what)
        if not isinstance(value, dict):
            raise InputError("signed document must be a JSON object", path=what)
        return value


def generate(trust_dir: Path, keys_dir: Path, roles: tuple[str, ...] = ROLES) -> list[Path]:
    """Gives the private key paths after making a key pair per role.

    Public keys go to ``trust_dir/<role>.pub`` (raw), private keys to
    ``keys_dir/<role>.key`` (PEM, 0600). Existing files are never replaced.
    """
    trust_dir, keys_dir = Path(trust_dir), Path(keys_dir)
    twice = sorted({r for r in roles if roles.count(r) > 1})
    if twice:
        raise InputError(f"role {twice[0]!r} is given twice", field="role")
    for role in roles:
        _role(role)
        for path in (trust_dir / f"{role}.pub", keys_dir / f"{role}.key"):
            if path.exists():
                raise InputError("already exists; a trust root key is never replaced", path=path)
    trust_dir.mkdir(parents=True, exist_ok=True)
    keys_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    made = []
    for role in roles:
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        private_path = keys_dir / f"{role}.key"
        fd = os.open(private_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
        public = key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        fd = os.open(trust_dir / f"{role}.pub", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(public)
        made.append(private_path)
    return made


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    """Gives the Ed25519 private key of a PKCS#8 PEM file."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SigningKeyError(f"{path}: cannot read key: {exc.strerror}") from exc
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(f"{path}: not an unencrypted PKCS#8 PEM private key") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path}: not an Ed25519 key")
    return key


def sign(key: Ed25519PrivateKey, raw: bytes) -> bytes:
    """Gives the raw 64-byte Ed25519 signature of the bytes."""
    return key.sign(raw)


def read_signed(path: str | Path, signature_path: str | Path | None = None) -> tuple[bytes, bytes]:
    """Gives a document's bytes and its detached signature (default ``PATH.sig``)."""
    sig_path = signature_path or f"{path}.sig"
    try:
        return Path(path).read_bytes(), Path(sig_path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=exc.filename) from exc
