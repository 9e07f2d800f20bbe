"""OpenSSH SSHSIG signatures (openssh PROTOCOL.sshsig) over Ed25519 keys.

A signature made here is byte-identical to ``ssh-keygen -Y sign`` with the
same key, namespace and message (Ed25519 is deterministic), and verifies with
``ssh-keygen -Y verify``. Verification checks the namespace itself: a
signature made for one role never counts for another.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from engine.ledger.sshwire import Reader, WireError, pack_string, pack_u32

MAGIC = b"SSHSIG"
SIG_VERSION = 1
HASH_ALGORITHM = "sha512"
ED25519 = "ssh-ed25519"
ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"
_ARMOR_WIDTH = 70
NOT_VERIFIED = "signature does not verify"
_HASHES = {"sha256": hashlib.sha256, "sha512": hashlib.sha512}


class SignatureError(ValueError):
    """A signature is malformed, for another namespace, or does not verify."""


@dataclass(frozen=True)
class Sshsig:
    """The fields of a decoded SSHSIG blob."""

    public_key: bytes
    namespace: str
    reserved: bytes
    hash_algorithm: str
    signature: bytes


def ed25519_public_blob(raw_public: bytes) -> bytes:
    """Gives the SSH wire public-key blob of a raw 32-byte Ed25519 key."""
    return pack_string(ED25519) + pack_string(raw_public)


def ed25519_raw_from_blob(blob: bytes) -> bytes:
    """Gives the raw 32-byte key inside an ``ssh-ed25519`` public-key blob."""
    try:
        reader = Reader(blob)
        key_type = reader.string()
        raw = reader.string()
    except WireError as exc:
        raise SignatureError(f"public key blob: {exc}") from exc
    if key_type != ED25519.encode():
        raise SignatureError(f"key type {key_type.decode(errors='replace')!r} is not {ED25519}")
    if len(raw) != 32 or not reader.at_end():
        raise SignatureError("malformed ssh-ed25519 public key blob")
    return raw


def fingerprint(blob: bytes) -> str:
    """Gives the OpenSSH fingerprint ``SHA256:<base64, unpadded>`` of a key blob."""
    digest = hashlib.sha256(blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def signed_data(namespace: str, message: bytes, hash_algorithm: str = HASH_ALGORITHM) -> bytes:
    """Gives the exact bytes the key signs for a message in a namespace."""
    if not namespace:
        raise SignatureError("namespace must not be empty")
    return _signed_prefix(namespace, hash_algorithm) + _HASHES[hash_algorithm](message).digest()


def _signed_prefix(namespace: str, hash_algorithm: str) -> bytes:
    """Gives the signed data up to the message digest's bytes (their length included)."""
    return (
        MAGIC
        + pack_string(namespace)
        + pack_string(b"")
        + pack_string(hash_algorithm)
        + pack_u32(_HASHES[hash_algorithm]().digest_size)
    )


def encode(
    public_blob: bytes, namespace: str, signature_blob: bytes, hash_algorithm: str = HASH_ALGORITHM
) -> bytes:
    """Gives the binary SSHSIG blob for a signature made over ``signed_data``."""
    return (
        MAGIC
        + pack_u32(SIG_VERSION)
        + pack_string(public_blob)
        + pack_string(namespace)
        + pack_string(b"")
        + pack_string(hash_algorithm)
        + pack_string(signature_blob)
    )


def armor(blob: bytes) -> str:
    """Gives the PEM-style armored text that ``ssh-keygen -Y sign`` writes."""
    text = base64.b64encode(blob).decode()
    lines = [text[i : i + _ARMOR_WIDTH] for i in range(0, len(text), _ARMOR_WIDTH)]
    return "\n".join([ARMOR_BEGIN, *lines, ARMOR_END]) + "\n"


_HEAD = ARMOR_BEGIN + "\n"
_TAIL = "\n" + ARMOR_END + "\n"


def dearmor(text: str) -> bytes:
    """Gives the binary SSHSIG blob inside armored text."""
    if text.startswith(_HEAD) and text.endswith(_TAIL) and len(text) >= len(_HEAD) + len(_TAIL):
        # The exact layout ssh-keygen and ``armor`` write: lines of base64 between the
        # marker lines. Should the lines hold anything else, the general path decides.
        try:
            return binascii.a2b_base64(
                text[len(_HEAD) : -len(_TAIL)].replace("\n", ""), strict_mode=True
            )
        except (binascii.Error, ValueError):
            pass
    body = text.strip()
    if not body.startswith(ARMOR_BEGIN) or not body.endswith(ARMOR_END):
        raise SignatureError("signature is not armored SSHSIG text")
    inner = body[len(ARMOR_BEGIN) : -len(ARMOR_END)]
    try:
        # strict_mode refuses any byte outside the alphabet and misplaced padding,
        # without b64decode's per-call regex (verify dearmors every record).
        return binascii.a2b_base64("".join(inner.split()), strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise SignatureError(f"signature base64: {exc}") from exc


def decode(blob: bytes) -> Sshsig:
    """Gives the fields of a binary SSHSIG blob, refusing any malformation."""
    if blob[:6] != MAGIC:
        raise SignatureError("missing SSHSIG magic preamble")
    if len(blob) < 10 or int.from_bytes(blob[6:10], "big") != SIG_VERSION:
        raise SignatureError("unsupported SSHSIG version")
    fields, pos, end = [], 10, len(blob)
    for _ in range(5):
        if pos + 4 > end:
            raise SignatureError("malformed SSHSIG: truncated")
        size = int.from_bytes(blob[pos : pos + 4], "big")
        pos += 4
        if pos + size > end:
            raise SignatureError("malformed SSHSIG: truncated")
        fields.append(blob[pos : pos + size])
        pos += size
    if pos != end:
        raise SignatureError("trailing bytes after SSHSIG")
    try:
        return Sshsig(
            public_key=fields[0],
            namespace=fields[1].decode("utf-8"),
            reserved=fields[2],
            hash_algorithm=fields[3].decode("ascii"),
            signature=fields[4],
        )
    except UnicodeDecodeError as exc:
        raise SignatureError(f"malformed SSHSIG: {exc}") from exc


@lru_cache(maxsize=4096)
def _public_key(raw: bytes) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(raw)


def verify(blob: bytes, message: bytes, namespace: str) -> Sshsig:
    """Gives the decoded signature after checking it over message in namespace.

    The caller still decides whether the embedded public key is one it trusts
    for that namespace (see ``allowed_signers``).
    """
    sig = decode(blob)
    if sig.namespace != namespace:
        raise SignatureError(f"signature namespace {sig.namespace!r}, expected {namespace!r}")
    if sig.hash_algorithm not in _HASHES:
        raise SignatureError(f"unsupported hash algorithm {sig.hash_algorithm!r}")
    raw = ed25519_raw_from_blob(sig.public_key)
    try:
        reader = Reader(sig.signature)
        sig_type = reader.string()
        sig_bytes = reader.string()
    except WireError as exc:
        raise SignatureError(f"signature blob: {exc}") from exc
    if sig_type != ED25519.encode() or len(sig_bytes) != 64 or not reader.at_end():
        raise SignatureError("signature blob is not a 64-byte ssh-ed25519 signature")
    try:
        _public_key(raw).verify(sig_bytes, signed_data(namespace, message, sig.hash_algorithm))
    except InvalidSignature as exc:
        raise SignatureError(NOT_VERIFIED) from exc
    return sig


@dataclass(frozen=True)
class _Head:
    """What a checked SSHSIG prefix (everything before the 64 signature bytes) holds."""

    namespace: str
    public_blob: bytes
    key: Ed25519PublicKey
    fingerprint: str
    signed_prefix: bytes  # signed_data up to the message digest's bytes (length included)
    hasher: Callable[[bytes], hashlib._Hash]


# (public key, 64 signature bytes, signed data): an Ed25519 check not yet run.
Deferred = tuple[Ed25519PublicKey, bytes, bytes]


class Verifier:
    """Verifies many SSHSIGs, parsing each distinct signer/namespace prefix once.

    In a ledger every signature by one key in one role shares the same bytes
    up to the final 64 signature bytes. The first such signature is decoded
    and checked in full; later ones with an identical prefix are, by
    construction, well-formed the same way, so only their 64 bytes and the
    message digest differ. The Ed25519 check itself runs for every one.
    """

    def __init__(self) -> None:
        self._heads: dict[bytes, _Head] = {}

    def prepare(
        self, blob: bytes, message: bytes, namespace: str, *, sha512_digest: bytes | None = None
    ) -> tuple[bytes, str, Deferred | None]:
        """Gives (public key blob, fingerprint, deferred Ed25519 check) for blob over message.

        Everything but the Ed25519 arithmetic is checked here (a fault raises
        SignatureError). The deferred check is for ``run_deferred``; it is None
        when this call already ran it: a signer's first signature is checked
        in full. ``sha512_digest``, the message's SHA-512 if the caller has it,
        is used when the signature hashes with SHA-512.
        """
        head = self._heads.get(blob[:-64])
        if head is None:
            sig = verify(blob, message, namespace)  # full decode and check, raises on fault
            hash_algorithm = sig.hash_algorithm
            head = self._heads[blob[:-64]] = _Head(
                sig.namespace,
                sig.public_key,
                _public_key(ed25519_raw_from_blob(sig.public_key)),
                fingerprint(sig.public_key),
                _signed_prefix(sig.namespace, hash_algorithm),
                _HASHES[hash_algorithm],
            )
            return head.public_blob, head.fingerprint, None
        if head.namespace != namespace:
            raise SignatureError(f"signature namespace {head.namespace!r}, expected {namespace!r}")
        if sha512_digest is not None and head.hasher is hashlib.sha512:
            digest = sha512_digest
        else:
            digest = head.hasher(message).digest()
        return (
            head.public_blob,
            head.fingerprint,
            (head.key, blob[-64:], head.signed_prefix + digest),
        )


def run_deferred(checks: list[Deferred]) -> list[int]:
    """Gives the positions of the deferred checks whose signature does not verify.

    Verify runs a batch of records' Ed25519 checks back to back, after the
    parsing of the batch, rather than one between the parsing of each record.
    """
    failed = []
    for position, (key, signature, data) in enumerate(checks):
        try:
            key.verify(signature, data)
        except InvalidSignature:
            failed.append(position)
    return failed
