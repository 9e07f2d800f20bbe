"""Checkpoints: a signed tree head as a small text file that travels off the box.

The format follows C2SP's signed-note and tlog-checkpoint: a note body of
three lines (origin, tree size in decimal, base64 root hash), then, for a
ledger with a genesis record, one extension line ``anchor SHA256:...``
naming the founding lead key(s) the ledger grew from, a blank line, then
the signature. The signature is an OpenSSH SSHSIG of exactly the body
bytes, made by the lead at sign-off in the lead's namespace, so that

    awk '/^$/{exit} {print}' checkpoint.txt > body
    sed -n '/^-----BEGIN SSH SIGNATURE-----$/,/^-----END SSH SIGNATURE-----$/p' \\
        checkpoint.txt > body.sig
    ssh-keygen -Y verify -f allowed_signers -I lena -n lead@sealdesk -s body.sig < body

checks it without sealdesk. The line before the armor names the signer as
``— <principal> <namespace> <key fingerprint>`` (C2SP signature lines start
with an em dash). A note body can never be taken for a ledger record: a
record's signed bytes are canonical JSON and start with ``{``.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from pathlib import Path

from engine.errors import InputError
from engine.ledger import sshsig
from engine.roles import SIGNOFF_ROLE, namespace_for

SIGNATURE_MARK = "\u2014 "  # C2SP signed-note: a signature line starts with an em dash and a space
_SIZE = re.compile(r"^(0|[1-9][0-9]{0,19})\Z")
_FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}\Z")


def origin_for(workspace_id: str) -> str:
    """Gives the checkpoint origin (the log's name) of a workspace."""
    return f"sealdesk/{workspace_id}"


ANCHOR_MARK = "anchor "


def note_body(origin: str, size: int, root: bytes, anchor: tuple[str, ...] = ()) -> bytes:
    """Gives the exact note bytes the lead signs: origin, size, base64 root and, for an
    anchored ledger, the anchor line, each ending in LF."""
    if not origin or "\n" in origin or origin != origin.strip():
        raise InputError(
            f"origin {origin!r} must be one line without surrounding spaces", field="origin"
        )
    extension = f"{ANCHOR_MARK}{' '.join(anchor)}\n" if anchor else ""
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n{extension}".encode()


def sign_note(signer, body: bytes) -> str:
    """Gives the armored SSHSIG of a note body in the lead's namespace."""
    return sshsig.armor(signer.sign(body, namespace_for(SIGNOFF_ROLE)))


@dataclass(frozen=True)
class Checkpoint:
    """A parsed checkpoint file: the signed tree head and who signed it."""

    origin: str
    size: int
    root: bytes
    principal: str
    namespace: str
    fingerprint: str
    signature: str  # armored SSHSIG over ``body``
    body: bytes
    anchor: tuple[str, ...] = ()  # fingerprints of the founding lead key(s), when named

    @property
    def root_b64(self) -> str:
        return base64.b64encode(self.root).decode()


def format_checkpoint(body: bytes, principal: str, fingerprint: str, signature: str) -> str:
    """Gives the checkpoint file text: note body, blank line, signer line, armored SSHSIG."""
    namespace = namespace_for(SIGNOFF_ROLE)
    return (
        body.decode("utf-8")
        + "\n"
        + f"{SIGNATURE_MARK}{principal} {namespace} {fingerprint}\n"
        + signature.strip("\n")
        + "\n"
    )


def parse_checkpoint(text: str, *, path: str | Path = "checkpoint") -> Checkpoint:
    """Gives the checkpoint in a file's text; any deviation is an error naming line and field."""
    path = str(path)

    def bad(message: str, line: int, field: str) -> InputError:
        return InputError(message, path=path, line=line, field=field)

    if not text.endswith("\n"):
        raise bad("a checkpoint ends with a newline", text.count("\n") + 1, "signature")
    lines = text[:-1].split("\n")
    if len(lines) < 6:
        raise bad(
            "too short: expected origin, size, root, a blank line and a signature",
            len(lines),
            "signature",
        )
    origin, size_text, root_text = lines[0], lines[1], lines[2]
    if not origin or origin != origin.strip():
        raise bad("origin must be a non-empty line without surrounding spaces", 1, "origin")
    if not _SIZE.match(size_text):
        raise bad(f"tree size {size_text!r} is not a decimal number", 2, "size")
    try:
        root = base64.b64decode(root_text, validate=True)
    except binascii.Error as exc:
        raise bad(f"root hash is not base64: {exc}", 3, "root") from exc
    if len(root) != 32:
        raise bad(f"root hash is {len(root)} bytes, not 32", 3, "root")
    anchor: tuple[str, ...] = ()
    at = 3  # index of the blank line that ends the note body
    if lines[3].startswith(ANCHOR_MARK):
        anchor = tuple(lines[3][len(ANCHOR_MARK) :].split(" "))
        if not all(_FINGERPRINT.match(fp) for fp in anchor):
            raise bad("anchor line must be: anchor SHA256:<43 base64> [SHA256:...]", 4, "anchor")
        at = 4
    if len(lines) < at + 3:
        raise bad(
            "too short: expected a blank line and a signature after the note",
            len(lines),
            "signature",
        )
    if lines[at] != "":
        raise bad(
            "expected a blank line after the root hash (the only extension line "
            "sealdesk writes is 'anchor ...')",
            at + 1,
            "root",
        )
    header = lines[at + 1]
    if not header.startswith(SIGNATURE_MARK):
        raise bad("signature line must start with an em dash and a space", at + 2, "signature")
    parts = header[len(SIGNATURE_MARK) :].split(" ")
    if len(parts) != 3:
        raise bad(
            "signature line must be: \u2014 PRINCIPAL NAMESPACE SHA256:FINGERPRINT",
            at + 2,
            "signature",
        )
    principal, namespace, fingerprint = parts
    if not _FINGERPRINT.match(fingerprint):
        raise bad(f"key fingerprint {fingerprint!r} is not SHA256:<43 base64>", at + 2, "signature")
    armored = lines[at + 2 :]
    if armored[0] != sshsig.ARMOR_BEGIN or armored[-1] != sshsig.ARMOR_END:
        raise bad(
            "expected an armored SSH signature (BEGIN/END SSH SIGNATURE) to the end",
            at + 3,
            "signature",
        )
    signature = "\n".join(armored) + "\n"
    try:
        sshsig.decode(sshsig.dearmor(signature))
    except sshsig.SignatureError as exc:
        raise bad(f"malformed SSH signature: {exc}", at + 3, "signature") from exc
    body = "\n".join(lines[:at]).encode("utf-8") + b"\n"
    return Checkpoint(
        origin, int(size_text), root, principal, namespace, fingerprint, signature, body, anchor
    )


def read_checkpoint(path: str | Path, stdin_text: str | None = None) -> Checkpoint:
    """Gives the checkpoint in a file (``-`` reads the text given as stdin_text)."""
    if str(path) == "-":
        return parse_checkpoint(stdin_text or "", path="<stdin>")
    from engine.artifacts import read_capped

    try:
        text = read_capped(path, 1 << 20).decode("utf-8")  # a checkpoint is a few hundred bytes
    except OSError as exc:
        raise InputError(f"cannot read checkpoint: {exc.strerror}", path=path) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"checkpoint is not UTF-8 ({exc.reason})", path=path) from exc
    return parse_checkpoint(text, path=path)


def check_signature(cp: Checkpoint, allowed) -> None:
    """Checks the checkpoint's SSHSIG: lead namespace, named key, enrolled as lead; raises."""
    lead_ns = namespace_for(SIGNOFF_ROLE)
    if cp.namespace != lead_ns:
        raise sshsig.SignatureError(
            f"signed in namespace {cp.namespace!r}; a checkpoint is "
            f"signed by the {SIGNOFF_ROLE} in {lead_ns!r}"
        )
    sig = sshsig.verify(sshsig.dearmor(cp.signature), cp.body, lead_ns)
    if sshsig.fingerprint(sig.public_key) != cp.fingerprint:
        raise sshsig.SignatureError(
            f"made with key {sshsig.fingerprint(sig.public_key)}, not the named {cp.fingerprint}"
        )
    if not allowed.authorizes(cp.principal, sig.public_key, lead_ns):
        # The ledger's authority has no file; only a legacy allowed_signers has a path.
        where = getattr(allowed, "path", None) or "this workspace's ledger"
        raise sshsig.SignatureError(
            f"{cp.principal} with key {cp.fingerprint} may not sign as {SIGNOFF_ROLE} in {where}"
        )
