"""Verification against signed tree heads: the sign-offs inside, checkpoints outside.

The chain of record hashes and the per-record signatures catch a careless
edit, but not someone who holds a reviewer's key and the database file: they
can drop the triggers, rewrite or remove a decision, re-chain every later
record and re-sign it, and delete the lead's sign-offs that would no longer
verify. What they cannot forge is the lead's signature over a tree head.
So:

* ``verify_signoff_heads`` recomputes, for every sign-off in the ledger, the
  RFC 9162 root over the records before it and checks the root, size and
  checkpoint signature the lead signed;
* ``verify_against_checkpoint`` takes a checkpoint kept off the box, checks
  the lead's signature on it, then proves with a consistency proof that the
  workspace's first ``size`` records are still exactly those the lead signed,
  and that the sign-off which made the checkpoint is still there.
"""

from __future__ import annotations

import sys
from pathlib import Path

from engine.canonical import strict_loads
from engine.errors import IntegrityError
from engine.ledger import merkle, sshsig
from engine.ledger.checkpoint import check_signature, note_body, origin_for, read_checkpoint
from engine.ledger.treehead import leaf_hashes, signed_head_from
from engine.ledger.verify import Fault, Report
from engine.roles import SIGNOFF_ROLE, namespace_for


def _check_head(
    ws_origin: str, seq: int, body: dict, builder: merkle.TreeBuilder, anchor: tuple[str, ...] = ()
) -> str | None:
    """Gives why a sign-off's signed tree head is wrong, or None when it is right."""
    head = signed_head_from(seq, "", body)
    if head is None:
        data = body.get("data") if isinstance(body, dict) else None
        if isinstance(data, dict) and "tree" in data:
            return "sign-off's tree head is malformed"
        return None  # a sign-off that binds no tree head claims nothing to check here
    if head.tree.origin != ws_origin:
        return f"sign-off's tree head names origin {head.tree.origin!r}, not {ws_origin!r}"
    if head.tree.size != builder.size:
        return (
            f"sign-off binds a tree of {head.tree.size} records but {builder.size} "
            "records precede it"
        )
    if head.tree.root != builder.root():
        return (
            f"records 1..{builder.size} no longer hash to the root the lead signed off "
            "(a record before the sign-off was rewritten, removed or reordered)"
        )
    if head.note is None or head.note_signature is None:
        return "sign-off's checkpoint note or signature is missing"
    if head.note.encode("utf-8") != note_body(
        head.tree.origin, head.tree.size, head.tree.root, anchor
    ):
        return "sign-off's checkpoint note differs from its tree head" + (
            f" and anchor ({' '.join(anchor)})" if anchor else ""
        )
    lead_ns = namespace_for(SIGNOFF_ROLE)
    try:
        sig = sshsig.verify(sshsig.dearmor(head.note_signature), head.note.encode("utf-8"), lead_ns)
    except sshsig.SignatureError as exc:
        return f"sign-off's checkpoint signature: {exc}"
    if sshsig.fingerprint(sig.public_key) != body.get("key"):
        return "sign-off's checkpoint was signed with another key than the sign-off"
    return None


def verify_signoff_heads(ws, report: Report) -> None:
    """Adds a Fault for every sign-off whose signed tree head the ledger no longer matches."""
    last = report.last_signoff
    if last is None:
        return  # no tree head was signed: nothing to re-derive
    origin = origin_for(ws.workspace_id)
    genesis = getattr(report.authority, "genesis", None)
    anchor = tuple(key.fingerprint for _, key in genesis.founders) if genesis else ()
    builder = merkle.TreeBuilder()
    expected = 1
    for seq, kind, message in ws.conn.execute(
        "SELECT seq, kind, message FROM records WHERE seq <= ? ORDER BY seq", (last,)
    ):
        if seq != expected or not isinstance(message, str):
            return  # the per-record walk has reported it; leaf positions are lost
        if kind == "signoff":
            try:
                # A sign-off after the genesis names its anchor; one before it (a ledger
                # migrated later) could not.
                named = anchor if genesis is not None and seq > genesis.seq else ()
                reason = _check_head(origin, seq, strict_loads(message), builder, named)
            except ValueError:
                reason = None  # not JSON: the per-record check reports it
            if reason is not None:
                report.faults.append(Fault(seq, reason))
        builder.append(merkle.leaf_hash(message.encode("utf-8")))
        expected += 1


def verify_against_checkpoint(ws, checkpoint_path: Path | str, report: Report) -> None:
    """Adds Faults to the report where the workspace departs from a signed checkpoint.

    ``-`` reads the checkpoint from stdin (``ssh host sealdesk verify
    --checkpoint - < checkpoint.txt``). A checkpoint that does not parse is an
    InputError naming its line and field.
    """
    stdin_text = sys.stdin.read() if str(checkpoint_path) == "-" else None
    cp = read_checkpoint(checkpoint_path, stdin_text)
    name = "<stdin>" if stdin_text is not None else str(checkpoint_path)
    n = cp.size

    def fault(seq: int, reason: str) -> None:
        report.faults.append(Fault(seq, f"checkpoint {name}: {reason}"))

    origin = origin_for(ws.workspace_id)
    if cp.origin != origin:
        fault(max(n, 1), f"is for log {cp.origin!r}, this workspace is {origin!r}")
        return
    genesis = getattr(report.authority, "genesis", None)
    ours = tuple(key.fingerprint for _, key in genesis.founders) if genesis else ()
    if cp.anchor and cp.anchor != ours:
        fault(
            max(n, 1),
            f"is anchored to the lead key(s) {' '.join(cp.anchor)}, but this "
            f"workspace's genesis names {' '.join(ours) or 'none'}: it is not the "
            "ledger the checkpoint's lead founded",
        )
        return
    try:
        check_signature(cp, ws.signers())
    except sshsig.SignatureError as exc:
        fault(max(n, 1), f"signature: {exc}")
        return
    try:
        leaves = leaf_hashes(ws.conn)
    except IntegrityError as exc:
        fault(exc.seq or 1, f"cannot rebuild the tree: {exc.reason}")
        return
    m = len(leaves)
    if m < n:
        fault(
            m + 1,
            f"the ledger was truncated: the checkpoint covers {n} records, the workspace holds {m}",
        )
        return
    # The RFC 9162 consistency proof from the checkpoint's tree to this ledger's whole
    # tree, made from the leaves at hand and checked against the checkpoint's signed root,
    # as a verifier holding only the two heads and the proof would check it.
    try:
        merkle.verify_consistency(
            n, m, cp.root, merkle.root_of(leaves), merkle.consistency_proof(leaves, n, m)
        )
    except merkle.ProofError:
        fault(
            max(n, 1),
            f"records 1..{n} are not the ones the lead signed: no consistency "
            "proof leads from the checkpoint's root to this ledger's (rewritten, "
            "or a copy of this workspace that forked)",
        )
        return
    _check_signoff_record(ws, cp, m, fault)


def _check_signoff_record(ws, cp, held: int, fault) -> None:
    """Checks that the sign-off that made the checkpoint follows its last covered record."""
    seq = cp.size + 1
    if held < seq:
        fault(
            seq,
            f"the sign-off that made this checkpoint (record {seq}) is missing: the "
            "ledger was cut back to the checkpoint",
        )
        return
    row = ws.conn.execute("SELECT kind, message FROM records WHERE seq=?", (seq,)).fetchone()
    signed = _signed_checkpoint(row[1]) if row[0] == "signoff" else None
    if (
        signed is None
        or signed.get("note") != cp.body.decode("utf-8")
        or not isinstance(signed.get("signature"), str)
        or signed["signature"].strip() != cp.signature.strip()
    ):
        fault(
            seq,
            f"record {seq} is not the sign-off that made this checkpoint (it was "
            "replaced or removed)",
        )


def _signed_checkpoint(message: object) -> dict | None:
    """Gives the checkpoint object a sign-off message carries, or None if it carries none."""
    try:
        body = strict_loads(message) if isinstance(message, str) else None
    except ValueError:
        return None
    data = body.get("data") if isinstance(body, dict) else None
    signed = data.get("checkpoint") if isinstance(data, dict) else None
    return signed if isinstance(signed, dict) else None
