"""The ledger's own audit and export, with progress for long ledgers.

``audit_records`` checks every record (hash, link, signature, signer, role,
enrolment, as replayed from the genesis) and the tree heads the sign-offs
signed; ``audit_outside`` checks the ledger against what was kept off the
workspace (a checkpoint, receipts, witnesses). Both see records only as
signed bytes and hashes: whether the artifacts a sign-off bound are still
on disk is ``engine.signoff``'s check, and ``engine.signoff.verify`` runs
all of them in order for ``sealdesk verify``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from engine.artifacts import atomic_write
from engine.canonical import strict_loads
from engine.errors import InputError, IntegrityError
from engine.ledger import store
from engine.ledger.allowed_signers import AllowedSigners
from engine.ledger.authority import check_anchor, signer_policy
from engine.ledger.records import parse_time
from engine.ledger.verify import Fault, Report, StandingElsewhere, load_context, verify_ledger
from engine.roles import namespace_for


def audit_records(
    ws,
    *,
    processes: int | None = None,
    show_progress: bool = False,
    anchor: Path | None = None,
    elsewhere: StandingElsewhere | None = None,
) -> Report:
    """Gives the report of every record's checks and of the sign-offs' signed tree heads.

    Who may sign each record is replayed from the ledger's genesis and
    enrolment records; with ``anchor`` (an allowed_signers file the verifier
    brings), the genesis must also be signed by a lead key it trusts.
    ``elsewhere`` says what stands on an item besides its own decisions, for
    the replay of who replaced whose decision.
    """
    policy = signer_policy(ws.conn, ws.allowed_signers_path)
    anchor_faults = []
    if anchor is not None:
        if not Path(anchor).is_file():
            raise InputError(
                "no such file (the anchor is an allowed_signers file holding "
                "the lead key(s) you trust)",
                path=anchor,
                field="--anchor",
            )
        anchor_faults = [
            Fault(seq, why)
            for seq, why in check_anchor(policy, AllowedSigners.load(anchor), str(anchor))
        ]
    ctx = load_context(ws.conn, ws.db_path, ws.workspace_id, policy)
    # The bar's total: MAX(seq) is an index lookup, where COUNT(*) reads the table.
    total = (
        ws.conn.execute("SELECT MAX(seq) FROM records").fetchone()[0] or 0 if show_progress else 0
    )
    if total > 20000:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("verifying records", total=total)
            report = verify_ledger(
                ws.conn,
                ctx,
                processes=processes,
                progress=lambda n: bar.update(task, completed=n),
                elsewhere=elsewhere,
            )
    else:
        report = verify_ledger(ws.conn, ctx, processes=processes, elsewhere=elsewhere)
    from engine.ledger.checkpoint_verify import verify_signoff_heads

    report.faults.extend(anchor_faults)
    report.authority = policy
    verify_signoff_heads(ws, report)
    return report


def audit_outside(
    ws,
    report: Report,
    *,
    checkpoint: Path | None = None,
    receipts: Path | None = None,
    witnesses: tuple[Path, ...] = (),
    own_receipts: bool = False,
    stdin_text: str | None = None,
) -> None:
    """Adds a Fault to the report wherever the ledger departs from what was kept off it:
    a signed checkpoint, the receipts named (and with ``own_receipts`` those the
    current user keeps for this workspace), the checkpoints at witnesses; and a line
    to ``report.compared`` saying how many of each were compared. ``stdin_text`` is
    what ``--receipts -`` reads."""
    if checkpoint is not None:
        from engine.ledger.checkpoint_verify import verify_against_checkpoint

        verify_against_checkpoint(ws, checkpoint, report)
    if own_receipts or receipts is not None:
        _audit_receipts(ws, report, receipts, own_receipts, stdin_text)
    if witnesses:
        from engine.ledger.treehead import leaf_hashes
        from engine.ledger.witness import compare

        leaves = leaf_hashes(ws.conn)
        for witness in witnesses:
            count, faults = compare(leaves, ws.workspace_id, witness)
            report.compared.append(f"{_count(count, 'checkpoint')} compared (witness {witness})")
            report.faults.extend(Fault(seq, why) for seq, why in faults)


def _audit_receipts(
    ws, report: Report, named: Path | None, own_receipts: bool, stdin_text: str | None
) -> None:
    """Compares the current user's own receipts of this workspace (none is fine: they
    may never have signed here), then the receipts named (none compared fails)."""
    from engine.ledger import receipts

    own = receipts.kept_file(ws.workspace_id)
    if named is not None and str(named) != "-" and _same_dir(named, own.parent):
        # The user's own state directory, named: only this workspace's file in it is
        # compared (the others are other workspaces'), and comparing none fails.
        _compare_own(ws, report, own, require_some=True)
        return
    if own_receipts:
        _compare_own(ws, report, own, require_some=False)
    if named is None:
        return
    source = "<stdin>" if str(named) == "-" else str(named)
    count, faults = receipts.compare(
        ws.conn,
        ws.workspace_id,
        receipts.read_receipts(named, stdin_text),
        source,
        require_some=True,
    )
    report.compared.append(f"{_count(count, 'receipt')} compared ({source})")
    report.faults.extend(Fault(seq, why) for seq, why in faults)


def _compare_own(ws, report: Report, own: Path, *, require_some: bool) -> None:
    from engine.ledger import receipts

    count, faults = receipts.compare(
        ws.conn,
        ws.workspace_id,
        receipts.read_own(ws.workspace_id),
        str(own),
        require_some=require_some,
    )
    report.compared.append(f"{_count(count, 'receipt')} compared (yours, {own})")
    report.faults.extend(Fault(seq, why) for seq, why in faults)


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def export_records(ws, out: Path, tags: Callable[[dict], dict] | None = None) -> int:
    """Writes one JSON line per record (exact message, armored SSHSIG); gives the count.

    ``tags(body)`` gives fields a line carries beside the record (unsigned: what the
    records say together, such as a planned item's outcome); the ledger names none.

    Each line also names the enrolment that let its signer sign it
    (``granted_by``: the seq of the genesis or enrol record, itself exported)
    and that enrolment's allowed_signers line, so an auditor can check every
    record with ssh-keygen alone, and check each line against the signed
    enrolment it came from.
    """
    from engine.ledger.authority import allowed_signers_line, grant_for, load_authority
    from engine.ledger.sshsig import dearmor, decode

    auth = load_authority(ws.conn)
    lines = []
    for row in store.iter_records(ws.conn):
        seq, record_hash, _prev, message, signature = row[:5]
        try:
            body = strict_loads(message)
            namespace = namespace_for(body["role"])
            principal, kind = body["principal"], body["kind"]
            # ssh-keygen checks a key's validity now unless told when; sealdesk
            # checks it at the signed time: give the auditor that time.
            verify_time = parse_time(body["time"]).strftime("%Y%m%d%H%M%SZ")
        except (TypeError, ValueError, KeyError) as exc:
            raise IntegrityError(
                f"cannot export: the message is not a readable record "
                f"({type(exc).__name__}); run sealdesk verify",
                seq=seq,
            ) from exc
        line = {
            "seq": seq,
            "record_hash": record_hash,
            "message": message,
            "signature": signature,
            "principal": principal,
            "role": body["role"],
            "namespace": namespace,
            "kind": kind,
            "verify_time": verify_time,
        }
        try:
            grant = grant_for(
                auth,
                principal,
                decode(dearmor(signature)).public_key,
                body["role"],
                seq,
                body["time"],
            )
        except ValueError:  # a signature that does not decode: verify says why
            grant = None
        if grant is not None:
            line["granted_by"] = grant.granted_by
            line["allowed_signers"] = allowed_signers_line(auth, grant)
        if tags is not None:
            line.update({k: v for k, v in tags(body).items() if k not in line})
        lines.append(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")
    atomic_write(out, "".join(lines).encode("utf-8"), mode=0o644)
    return len(lines)
