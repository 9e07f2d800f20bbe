"""Tree heads over the ledger: the leaves, the signed heads, inclusion proofs.

Leaf ``i`` of the ledger's Merkle tree is the record with seq ``i + 1``, and
its data is exactly that record's signed message bytes (RFC 9162 leaf hash
``SHA-256(0x00 || message)``). A sign-off record made by
``engine.signoff.summary.sign_off`` carries, in its signed ``data``, the
tree head over every record before it and the lead's checkpoint signature.
"""

from __future__ import annotations

import base64
import sqlite3
from dataclasses import dataclass
from typing import Any

from engine.canonical import strict_loads
from engine.errors import InputError, IntegrityError
from engine.ledger import merkle
from engine.ledger.checkpoint import (
    Checkpoint,
    check_signature,
    format_checkpoint,
    parse_checkpoint,
)

SIGNOFF_TYPE = "sealdesk.signoff/v1"
HASHING = (
    "RFC 9162: leaf = SHA-256(0x00 || record message bytes), node = SHA-256(0x01 || left || right)"
)


@dataclass(frozen=True)
class TreeHead:
    """A tree size and its root hash, named by the log's origin."""

    origin: str
    size: int
    root: bytes

    @property
    def root_hex(self) -> str:
        return self.root.hex()

    @property
    def root_b64(self) -> str:
        return base64.b64encode(self.root).decode()


@dataclass(frozen=True)
class SignedHead:
    """A tree head as a sign-off record signed it."""

    seq: int
    record_hash: str
    principal: str
    key: str
    time: str
    tree: TreeHead
    note: str | None  # the checkpoint note body the lead signed
    note_signature: str | None  # its armored SSHSIG
    with_exceptions: bool
    exceptions: int


@dataclass(frozen=True)
class InclusionProof:
    """That one record is leaf ``index`` of a signed tree head, with the audit path."""

    seq: int
    record_hash: str
    message: bytes
    leaf_hash: bytes
    index: int
    head: TreeHead
    path: tuple[bytes, ...]
    signed_by: SignedHead | None  # the sign-off record, when proven against one
    checkpoint: Checkpoint | None  # the checkpoint, when proven against one

    def to_json(self) -> dict[str, Any]:
        """Gives the machine-checkable form (hex hashes, the exact message text)."""
        out: dict[str, Any] = {
            "hashing": HASHING,
            "record": {
                "seq": self.seq,
                "record_hash": self.record_hash,
                "message": self.message.decode("utf-8"),
            },
            "leaf_index": self.index,
            "leaf_hash": self.leaf_hash.hex(),
            "tree_size": self.head.size,
            "root": self.head.root_hex,
            "root_base64": self.head.root_b64,
            "origin": self.head.origin,
            "inclusion_path": [p.hex() for p in self.path],
        }
        if self.signed_by is not None:
            s = self.signed_by
            out["signed_tree_head"] = {
                "signoff_seq": s.seq,
                "signoff_record_hash": s.record_hash,
                "principal": s.principal,
                "key": s.key,
                "time": s.time,
                "checkpoint_note": s.note,
                "checkpoint_signature": s.note_signature,
            }
        if self.checkpoint is not None:
            c = self.checkpoint
            out["checkpoint"] = {
                "principal": c.principal,
                "key": c.fingerprint,
                "note": c.body.decode("utf-8"),
                "signature": c.signature,
            }
        return out


def leaf_hashes(conn: sqlite3.Connection, upto: int | None = None) -> list[bytes]:
    """Gives the leaf hash of every record (seq order), up to seq ``upto`` when given."""
    sql = "SELECT seq, message FROM records"
    args: tuple = ()
    if upto is not None:
        sql += " WHERE seq <= ?"
        args = (upto,)
    leaves = []
    for position, (seq, message) in enumerate(conn.execute(sql + " ORDER BY seq", args), 1):
        if seq != position:
            raise IntegrityError(
                f"the ledger has no record {position} (next is {seq}); run sealdesk verify",
                seq=position,
            )
        if not isinstance(message, str):
            raise IntegrityError("the record's message is not text; run sealdesk verify", seq=seq)
        leaves.append(merkle.leaf_hash(message.encode("utf-8")))
    return leaves


def head_of(origin: str, leaves: list[bytes]) -> TreeHead:
    """Gives the tree head over all given leaves."""
    return TreeHead(origin, len(leaves), merkle.root_of(leaves))


def signed_head_from(seq: int, record_hash: str, body: dict[str, Any]) -> SignedHead | None:
    """Gives the signed head a sign-off record's body carries, or None if it carries none."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or data.get("type") != SIGNOFF_TYPE:
        return None
    tree = data.get("tree")
    if not isinstance(tree, dict):
        return None
    try:
        head = TreeHead(str(tree["origin"]), int(tree["size"]), bytes.fromhex(tree["root"]))
    except (KeyError, TypeError, ValueError):
        return None
    checkpoint = data.get("checkpoint")
    if not isinstance(checkpoint, dict):
        checkpoint = {}
    exceptions = data.get("exceptions")
    if not isinstance(exceptions, list):
        exceptions = []
    note, signature = checkpoint.get("note"), checkpoint.get("signature")
    return SignedHead(
        seq,
        record_hash,
        str(body.get("principal", "")),
        str(body.get("key", "")),
        str(body.get("time", "")),
        head,
        note if isinstance(note, str) else None,
        signature if isinstance(signature, str) else None,
        bool(data.get("with_exceptions")),
        len(exceptions),
    )


def signed_heads(conn: sqlite3.Connection) -> list[SignedHead]:
    """Gives every sign-off's signed tree head, oldest first."""
    heads = []
    for seq, record_hash, message in conn.execute(
        "SELECT seq, record_hash, message FROM records WHERE kind='signoff' ORDER BY seq"
    ):
        try:
            body = strict_loads(message)
        except (TypeError, ValueError):  # mangled: verify names it; it signs no head
            continue
        head = signed_head_from(seq, record_hash, body)
        if head is not None:
            heads.append(head)
    return heads


def latest_signed_head(conn: sqlite3.Connection) -> SignedHead | None:
    """Gives the newest sign-off's signed tree head, or None before the first sign-off."""
    heads = signed_heads(conn)
    return heads[-1] if heads else None


def checkpoint_of(
    conn: sqlite3.Connection, allowed, signoff_seq: int | None = None
) -> tuple[SignedHead, str]:
    """Gives a sign-off's signed head and its checkpoint file text (latest by default).

    The text is checked to verify before it is handed out.
    """
    heads = signed_heads(conn)
    if signoff_seq is not None:
        heads = [h for h in heads if h.seq == signoff_seq]
    if not heads:
        where = f"at record {signoff_seq}" if signoff_seq is not None else "yet"
        raise InputError(
            f"no sign-off with a tree head {where}; the lead signs one with sealdesk signoff",
            field="signoff",
        )
    head = heads[-1]
    if head.note is None or head.note_signature is None:
        raise IntegrityError(f"sign-off #{head.seq} carries no checkpoint signature", seq=head.seq)
    text = format_checkpoint(
        head.note.encode("utf-8"), head.principal, head.key, head.note_signature
    )
    try:
        check_signature(parse_checkpoint(text, path=f"sign-off #{head.seq}"), allowed)
    except ValueError as exc:  # sshsig.SignatureError
        raise IntegrityError(
            f"sign-off #{head.seq}: checkpoint signature: {exc}", seq=head.seq
        ) from exc
    return head, text


def _find_record(conn: sqlite3.Connection, ref: str) -> tuple[int, str, bytes]:
    """Gives (seq, hash, message) of a record named by seq or by hash (8+ hex prefix)."""
    text = ref.strip().lstrip("#")
    row = None
    digits = text.isascii() and text.isdigit()  # str.isdigit alone passes '²' and '١'
    if digits and int(text) < 2**63:  # a seq is an SQLite integer; a longer run may be a hash
        row = conn.execute(
            "SELECT seq, record_hash, message FROM records WHERE seq=?", (int(text),)
        ).fetchone()
    is_hex = len(text) >= 8 and all(c in "0123456789abcdef" for c in text.lower())
    if row is None and is_hex:  # an all-digit hash prefix is tried once no seq matched
        rows = conn.execute(
            "SELECT seq, record_hash, message FROM records WHERE record_hash LIKE ? LIMIT 2",
            (text.lower() + "%",),
        ).fetchall()
        if len(rows) > 1:
            raise InputError(
                f"record hash prefix {text!r} names more than one record; give more hex",
                field="record",
            )
        row = rows[0] if rows else None
    elif not digits:
        raise InputError(
            f"{ref!r} is neither a record seq nor a record hash (8+ hex)", field="record"
        )
    if row is None:
        raise InputError(f"no record {ref!r} in this workspace", field="record")
    return row[0], row[1], row[2].encode("utf-8")


def prove_inclusion(
    conn: sqlite3.Connection, ref: str, allowed, checkpoint: Checkpoint | None = None
) -> InclusionProof:
    """Gives a verified inclusion proof of a record against the latest signed tree head.

    The head counts only if an enrolled lead signed its checkpoint note and the
    note says exactly that head (the rest of the sign-off record is what a SQL
    writer could forge). With a checkpoint, the proof is against the
    checkpoint's head instead; the caller checks the checkpoint's signature first.
    """
    seq, record_hash, message = _find_record(conn, ref)
    signed = None
    if checkpoint is not None:
        target = TreeHead(checkpoint.origin, checkpoint.size, checkpoint.root)
        where = f"the checkpoint (size {checkpoint.size})"
    else:
        signed = latest_verified_head(conn, allowed)
        target, where = signed.tree, f"the latest signed tree head (sign-off #{signed.seq})"
    if seq > target.size:
        raise InputError(
            f"record {seq} is newer than {where}, which covers records "
            f"1..{target.size}; it is proven after the next sign-off",
            field="record",
        )
    leaves = leaf_hashes(conn, upto=target.size)
    if len(leaves) < target.size:
        raise IntegrityError(
            f"{where} covers {target.size} records but the ledger holds "
            f"{len(leaves)}: records were removed",
            seq=len(leaves) + 1,
        )
    path = merkle.inclusion_proof(leaves, seq - 1, target.size)
    leaf = merkle.leaf_hash(message)
    # A proof is only printed once it verifies against the signed root, not the recomputed one.
    merkle.verify_inclusion(leaf, seq - 1, target.size, path, target.root)
    return InclusionProof(
        seq, record_hash, message, leaf, seq - 1, target, tuple(path), signed, checkpoint
    )


def latest_verified_head(conn: sqlite3.Connection, allowed) -> SignedHead:
    """Gives the newest sign-off's tree head once an enrolled lead's signature on its
    checkpoint note is checked and the note says exactly that head."""
    signed = latest_signed_head(conn)
    if signed is None:
        raise InputError(
            "there is no signed tree head yet: the lead signs one with sealdesk signoff",
            field="record",
        )
    _, text = checkpoint_of(conn, allowed, signed.seq)  # the lead's signature, checked
    note = parse_checkpoint(text, path=f"sign-off #{signed.seq}")
    if (note.origin, note.size, note.root) != (
        signed.tree.origin,
        signed.tree.size,
        signed.tree.root,
    ):
        raise IntegrityError(
            f"sign-off #{signed.seq}: its tree head is not the one its checkpoint note signs",
            seq=signed.seq,
        )
    return signed


@dataclass(frozen=True)
class ConsistencyProof:
    """That a checkpoint's tree is a prefix of a later signed tree head (RFC 9162 2.1.4)."""

    old: TreeHead
    new: TreeHead
    path: tuple[bytes, ...]
    signed_by: SignedHead

    def to_json(self) -> dict[str, Any]:
        """Gives the machine-checkable form (hex hashes)."""
        s = self.signed_by
        return {
            "hashing": HASHING,
            "origin": self.new.origin,
            "first": {"tree_size": self.old.size, "root": self.old.root_hex},
            "second": {
                "tree_size": self.new.size,
                "root": self.new.root_hex,
                "signoff_seq": s.seq,
                "signoff_record_hash": s.record_hash,
                "principal": s.principal,
                "key": s.key,
                "time": s.time,
            },
            "consistency_path": [p.hex() for p in self.path],
        }


def prove_consistency(
    conn: sqlite3.Connection, checkpoint: Checkpoint, allowed
) -> ConsistencyProof:
    """Gives a verified RFC 9162 consistency proof from a checkpoint's tree to the latest
    signed tree head. The caller checks the checkpoint's own signature first."""
    signed = latest_verified_head(conn, allowed)
    new = signed.tree
    if checkpoint.origin != new.origin:
        raise InputError(
            f"the checkpoint is for log {checkpoint.origin!r}, this workspace is {new.origin!r}",
            field="checkpoint",
        )
    if checkpoint.size > new.size:
        raise IntegrityError(
            f"the checkpoint covers {checkpoint.size} records, more than the "
            f"latest signed tree head ({new.size}, sign-off #{signed.seq}): "
            "this ledger was rolled back, or the checkpoint is from a copy "
            "that went further"
        )
    leaves = leaf_hashes(conn, upto=new.size)
    if len(leaves) < new.size:
        raise IntegrityError(
            f"the latest signed tree head covers {new.size} records but the "
            f"ledger holds {len(leaves)}: records were removed",
            seq=len(leaves) + 1,
        )
    path = merkle.consistency_proof(leaves, checkpoint.size, new.size)
    try:
        # Printed only once it verifies against both signed roots.
        merkle.verify_consistency(checkpoint.size, new.size, checkpoint.root, new.root, path)
    except merkle.ProofError as exc:
        raise IntegrityError(
            f"records 1..{checkpoint.size} are not the ones the checkpoint "
            f"signs: no consistency proof leads from its root to sign-off "
            f"#{signed.seq}'s ({exc.reason})",
            seq=checkpoint.size,
        ) from exc
    old = TreeHead(checkpoint.origin, checkpoint.size, checkpoint.root)
    return ConsistencyProof(old, new, tuple(path), signed)
