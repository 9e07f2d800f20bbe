"""``sealdesk signoff``, ``sealdesk checkpoint export`` and ``sealdesk prove``.

Thin: each command reads the workspace through ``engine.signoff.summary`` and
``engine.ledger.treehead`` and renders what they give back.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engine.cli_context import GATE_ENV_VAR
from engine.errors import InputError, IntegrityError, NotReadyError
from engine.ledger.witness import Pushed, push_latest
from engine.outputs import InputFile, OutputFile
from engine.signoff.review import review_lines
from engine.signoff.run_status import contamination_words
from engine.signoff.summary import SignoffSummary, lead_signer, sign_off, signoff_summary
from engine.terminal_text import json_text, visible

if TYPE_CHECKING:  # click passes the Ctx object (pass_obj); imported for annotations only
    from engine.cli_context import Ctx
    from engine.ledger.allowed_signers import AllowedSigners
    from engine.ledger.authority import Authority
    from engine.ledger.checkpoint import Checkpoint

_PENDING_LISTED = 20


def _fmt(value: float | int | None, digits: int = 4) -> str:
    if value is None:
        return "unknown"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _produced_by(s: SignoffSummary, sources: tuple[str, ...]) -> list[str]:
    """Gives a line per artifact the numbers above were read from, naming who produced it."""
    return [
        f"  from artifacts/{path}, produced by {s.author_of(path) or 'NO AUTHOR (unsigned run)'}"
        for path in sources
    ]


def summary_lines(s: SignoffSummary) -> list[str]:
    """Gives the sign-off summary as plain text lines (readable on any terminal)."""
    out = [
        f"Sign-off summary for {s.tree.origin}",
        f"Tree head: {s.tree.size} record(s), root {s.tree.root_hex} (base64 {s.tree.root_b64})",
    ]
    last = s.last_signoff
    if last is None:
        out.append("Last sign-off: none yet")
    else:
        extra = f", with {last.exceptions} exception(s)" if last.with_exceptions else ""
        out.append(
            f"Last sign-off: #{last.seq} by {last.principal} at {last.time}, over "
            f"{last.tree.size} record(s){extra}"
        )
    out += [
        "",
        f"  {'queue':<17}{'total':>7}{'accepted':>10}{'rejected':>10}{'skipped':>9}"
        f"{'undecided':>11}",
    ]
    for q in s.queues:
        out.append(
            f"  {q.queue:<17}{q.total:>7}{q.accepted:>10}{q.rejected:>10}{q.skipped:>9}"
            f"{q.undecided:>11}"
        )
    for q in s.queues:
        if q.span():
            out.append(f"  {q.queue}: {q.span()} (re-runs ask a subject again)")
    for q in s.queues:
        if q.carried or q.reopened:
            out.append(
                f"  {q.queue}: {q.carried} decision(s) carried from earlier runs' items "
                f"(counted above); {q.reopened} re-opened by new evidence (undecided)"
            )
    c = s.contamination
    out.append("")
    if c.state == "not run":
        out.append("Contamination: not run")
    else:
        flagged, leakage = contamination_words(c)
        out.append(f"Contamination: {leakage}; {flagged} at the scan")
        for p in c.power:
            out.append(f"  power: {p.name} {_fmt(p.before)} before -> {_fmt(p.after)} after")
        if c.state == "cleaned" and not c.power:
            out.append("  power: consequence not found in the clean-set report")
    out += _produced_by(s, c.sources)
    e = s.exam
    adj = f" (adjudication {e.adjudication})" if e.adjudication else ""
    out.append(f"Exam: {e.state}{adj}")
    out += _produced_by(s, e.sources)
    for g in e.gates:
        verdict = {True: "pass", False: "FAIL", None: "?"}[g.passed]
        out.append(f"  {g.name}: {_fmt(g.value)} {g.threshold or ''} {verdict}".rstrip())
    v = s.coverage
    out.append(f"Coverage: {v.state}")
    for k in v.categories:
        why = f" ({', '.join(k.findings)})" if k.findings else ""
        threats = f"  [{' '.join(k.threats)}]" if k.threats else ""
        out.append(f"  {k.category:<28}{k.eligibility}{why}{threats}")
    if v.attribution:
        out.append(f"  attribution of the reviewed misses: {v.attribution}")
    out += _produced_by(s, v.sources)
    out += ["", f"Who may sign (from the ledger; anchor {' '.join(s.anchor) or 'none'}):"]
    for signer in s.signers:
        out.append(
            f"  {signer.principal:<16}{'/'.join(signer.roles):<28}{signer.key}"
            f"  since #{signer.since}"
        )
    for principal, fps in s.multi_key:
        out.append(f"  note: {principal} signed with {len(fps)} keys: {', '.join(fps)}")
    out += ["", f"Artifacts bound by SHA-256: {len(s.artifacts)}"]
    for a in s.artifacts:
        flag = "" if a.sidecar == "ok" else f"  [sidecar {a.sidecar}]"
        by = s.author_of(a.path) or "NO AUTHOR: no signed run record"
        out.append(f"  {a.path}  {a.sha256[:16]}  by {by}{flag}")
    reviewed = review_lines(s.review)
    if reviewed:
        out += ["", *reviewed]
    if s.pending:
        out += ["", f"Undecided: {len(s.pending)} item(s)"]
        for item in s.pending[:_PENDING_LISTED]:
            out.append(f"  {item.queue}/{item.item_id}  {item.status}  {item.title[:50]}")
        if len(s.pending) > _PENDING_LISTED:
            out.append(
                f"  ... and {len(s.pending) - _PENDING_LISTED} more "
                "(sealdesk items --status undecided)"
            )
    for hold in s.holds:
        out.append(f"NOT READY: {hold}")
    for problem in s.problems:
        out.append(f"PROBLEM: {problem}")
    for warning in s.warnings:
        out.append(f"warning: {warning}")
    return out


@click.command()
@click.option("--yes", "-y", is_flag=True, help="Sign without asking (for scripts).")
@click.option(
    "--with-exceptions",
    is_flag=True,
    help="Sign although items are undecided; the record lists each one.",
)
@click.option("--summary-only", is_flag=True, help="Print the summary and sign nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--key",
    default=None,
    type=InputFile(),
    help="Lead's OpenSSH private key file. Default: the lead's key in ssh-agent.",
)
@click.option("--principal", default=None, help="When the key is enrolled under several names.")
@click.option("--note", default=None, help="Kept in the signed record.")
@click.pass_obj
def signoff(
    ctx: Ctx,
    yes: bool,
    with_exceptions: bool,
    summary_only: bool,
    as_json: bool,
    key: str | None,
    principal: str | None,
    note: str | None,
) -> None:
    """Review the whole state and sign it off as lead (binds a Merkle tree head).

    Prints per-queue counts, contamination leakage before/after and the power
    consequence, exam status with its gates, coverage ELIGIBLE/HOLD per
    category, every artifact's SHA-256 and anything undecided; then asks.
    The sign-off record binds the RFC 9162 tree head over every record so far,
    the artifact hashes and, with --with-exceptions, the undecided items.

    \b
      ssh -A reviewhost sealdesk signoff            # signs with the laptop's agent
      sealdesk signoff --summary-only --json        # for scripts and dashboards
      sealdesk signoff --yes --with-exceptions --note "fp-9 waits for legal"
      sealdesk checkpoint export > checkpoint.txt       # keep it off the box
    """
    with ctx.open(read_only=summary_only) as ws:
        summary = signoff_summary(ws)
        if as_json and (summary_only or not yes):
            click.echo(json_text(summary.to_json(), indent=1))
        elif not as_json:
            # Titles, ids, notes and names in the summary come from data: shown, not obeyed.
            click.echo("\n".join(visible(line) for line in summary_lines(summary)))
        if summary_only:
            return
        if summary.problems:
            raise IntegrityError(f"will not sign off: {summary.problems[0]}")
        if summary.pending and not with_exceptions:
            also = f" ({'; '.join(summary.holds)})" if summary.holds else ""
            raise NotReadyError(
                f"{len(summary.pending)} item(s) are undecided{also}; decide them, "
                "or sign off with --with-exceptions to list them in the record"
            )
        if summary.holds and not with_exceptions:
            raise NotReadyError(
                f"not ready: {'; '.join(summary.holds)}; or sign off with --with-exceptions"
            )
        signer = lead_signer(ws, key)
        who, _role = ws.identify(signer, principal, "lead")
        if not yes:
            extra = f" with {len(summary.pending)} exception(s)" if summary.pending else ""
            try:
                agreed = click.confirm(
                    f"\nSign off {summary.tree.size} record(s) as {who} (lead){extra}?",
                    default=False,
                )
            except click.exceptions.Abort:
                if sys.stdin.isatty():
                    raise  # Ctrl-C or Ctrl-D at the prompt: the person chose to stop
                raise InputError(
                    "standard input ended before a yes to the prompt; nothing "
                    "was signed (pass --yes to sign without asking)"
                ) from None
            if not agreed:
                click.echo("not signed: nothing was written")
                sys.exit(1)
        rec = sign_off(
            ws,
            signer,
            with_exceptions,
            principal=who,
            note=note,
            expected_size=None if yes else summary.tree.size,
        )
        pushed = push_latest(ws)
    tree = rec.body["data"]["tree"]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "seq": rec.seq,
                    "record_hash": rec.record_hash,
                    "principal": rec.body["principal"],
                    "tree": tree,
                    "exceptions": rec.body["data"]["exceptions"],
                },
                indent=1,
            )
        )
        return
    click.echo(
        f"signed off: record #{rec.seq} {rec.record_hash[:16]} by {rec.body['principal']} "
        f"over {tree['size']} record(s), root {tree['root'][:16]}"
    )
    if not _report_pushes(pushed):
        sys.exit(1)
    if not pushed:
        # Every hint must run where it is read: through ssh-gate, only stdout leaves.
        witness = (
            ""
            if os.environ.get(GATE_ENV_VAR) is not None
            else " (or push every sign-off: sealdesk checkpoint witness add DIR)"
        )
        click.echo(
            f"keep a copy off this host: sealdesk checkpoint export > checkpoint.txt{witness}"
        )


def _report_pushes(pushed: list[tuple[Path, Pushed | IntegrityError]]) -> bool:
    """Prints where each witness got the checkpoint; gives False if any reported a fork."""
    ok = True
    for target, outcome in pushed:
        if isinstance(outcome, IntegrityError):
            click.echo(visible(f"WITNESS {target}: {outcome.one_line()}"), err=True)
            ok = False
        else:
            how = " (committed)" if outcome.committed else ""
            click.echo(f"checkpoint pushed to witness {outcome.path}{how}")
    return ok


@click.group()
def checkpoint() -> None:
    """Signed tree heads as small checkpoint files that travel (C2SP style)."""


@checkpoint.command("export")
@click.option(
    "--out",
    default="-",
    show_default=True,
    type=OutputFile(allow_stdout=True),
    help="File to write; '-' writes to stdout.",
)
@click.option(
    "--signoff",
    "signoff_seq",
    type=click.IntRange(min=1),
    default=None,
    help="Seq of the sign-off to export (default: the latest).",
)
@click.pass_obj
def checkpoint_export(ctx: Ctx, out: str, signoff_seq: int | None) -> None:
    """Write the latest signed tree head as a checkpoint file.

    \b
    The file is the note the lead signed (origin, tree size, base64 root),
    a blank line, then the lead's SSHSIG over the note. Check it later with
      sealdesk verify --checkpoint checkpoint.txt
    or without sealdesk:
      awk '/^$/{exit} {print}' checkpoint.txt > note
      sed -n '/^-----BEGIN SSH/,/^-----END SSH/p' checkpoint.txt > note.sig
      ssh-keygen -Y verify -f trust/allowed_signers -I lena -n lead@sealdesk \\
        -s note.sig < note
    """
    from engine.artifacts import atomic_write
    from engine.ledger.treehead import checkpoint_of

    with ctx.open(read_only=True) as ws:
        head, text = checkpoint_of(ws.conn, ws.signers(), signoff_seq)
    if out == "-":
        click.echo(text, nl=False)
        return
    atomic_write(Path(out), text.encode("utf-8"), mode=0o644)
    click.echo(
        f"wrote checkpoint of sign-off #{head.seq} ({head.tree.size} records) to {out}", err=True
    )


@checkpoint.group("witness")
def checkpoint_witness() -> None:
    """Directories (or git repositories) every sign-off's checkpoint is pushed to."""


@checkpoint_witness.command("add")
@click.argument("directory", type=click.Path(file_okay=False))
@click.pass_obj
def witness_add(ctx: Ctx, directory: str) -> None:
    """Push every later sign-off's checkpoint to DIRECTORY (and push the latest now).

    A witness that already holds a checkpoint of this workspace that its
    ledger does not extend (a copy that forked) is reported as a fork.
    """
    from engine.ledger.witness import add_witness

    Path(directory).mkdir(parents=True, exist_ok=True)
    with ctx.open() as ws:
        held = add_witness(ws.conn, Path(directory))
        pushed = push_latest(ws)
    click.echo(f"witnesses: {', '.join(map(str, held))}")
    if not _report_pushes(pushed):
        sys.exit(1)


@checkpoint_witness.command("list")
@click.pass_obj
def witness_list(ctx: Ctx) -> None:
    """Show where checkpoints are pushed."""
    from engine.ledger.witness import witnesses

    with ctx.open(read_only=True) as ws:
        held = witnesses(ws.conn)
    click.echo(
        "\n".join(map(str, held)) if held else "no witness (sealdesk checkpoint witness add DIR)"
    )


@checkpoint.command("push")
@click.pass_obj
def checkpoint_push(ctx: Ctx) -> None:
    """Push the latest sign-off's checkpoint to every witness now."""
    with ctx.open(read_only=True) as ws:
        pushed = push_latest(ws)
    if not pushed:
        click.echo("no witness (sealdesk checkpoint witness add DIR)")
    if not _report_pushes(pushed):
        sys.exit(1)


@click.command()
@click.argument("record", required=False)
@click.option(
    "--checkpoint",
    "checkpoint_path",
    default=None,
    help="Prove RECORD against this checkpoint file instead ('-' reads stdin).",
)
@click.option(
    "--consistency",
    "from_checkpoint",
    default=None,
    metavar="CHECKPOINT",
    help="Instead of a record: prove that this checkpoint's tree is a prefix of "
    "the latest signed tree head ('-' reads stdin).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-checkable JSON.")
@click.pass_obj
def prove(
    ctx: Ctx,
    record: str | None,
    checkpoint_path: str | None,
    from_checkpoint: str | None,
    as_json: bool,
) -> None:
    """Print an inclusion proof of a record, or a consistency proof of a checkpoint.

    RECORD is a seq (12 or #12) or a record hash (8+ hex). The proof is the
    RFC 9162 audit path from the record's leaf to the signed root; --json
    gives the exact record message, leaf index, tree size, root and path so
    any RFC 9162 verifier can check it. With --consistency, the proof is the
    RFC 9162 consistency path from an older checkpoint's root to the latest
    signed tree head: the ledger only grew since that checkpoint.

    \b
      sealdesk prove 12
      sealdesk prove 3f9a1c0d --json > proof.json
      sealdesk prove 12 --checkpoint checkpoint.txt
      sealdesk prove --consistency - < checkpoint.txt     # also through ssh-gate
    """
    from engine.ledger.treehead import prove_consistency, prove_inclusion

    if (record is None) == (from_checkpoint is None):
        raise InputError(
            "give a RECORD to prove, or --consistency CHECKPOINT (one of them)", field="record"
        )
    if from_checkpoint is not None and checkpoint_path is not None:
        raise InputError(
            "--checkpoint goes with a RECORD; --consistency names its own checkpoint",
            field="--checkpoint",
        )
    with ctx.open(read_only=True) as ws:
        if from_checkpoint is not None:
            old = _signed_checkpoint(from_checkpoint, ws.signers())
            consistency = prove_consistency(ws.conn, old, ws.signers())
        elif record is not None:  # one of the two, as checked above
            cp = (
                None
                if checkpoint_path is None
                else _signed_checkpoint(checkpoint_path, ws.signers())
            )
            proof = prove_inclusion(ws.conn, record, ws.signers(), cp)
    if from_checkpoint is not None:
        _print_consistency(consistency, as_json)
        return
    if as_json:
        click.echo(json.dumps(proof.to_json(), ensure_ascii=False, indent=1))
        return
    head = proof.head
    if proof.signed_by is not None:
        s = proof.signed_by
        against = f"sign-off #{s.seq} by {s.principal} at {s.time}"
    else:
        assert proof.checkpoint is not None  # a proof not against a sign-off is against one
        against = f"checkpoint signed by {proof.checkpoint.principal}"
    click.echo(
        f"record #{proof.seq} ({proof.record_hash[:16]}) is leaf {proof.index} of the "
        f"tree of size {head.size} signed in {against}"
    )
    click.echo(f"  origin     {head.origin}")
    click.echo(f"  leaf hash  {proof.leaf_hash.hex()}")
    click.echo(f"  root       {head.root_hex}")
    click.echo(f"  audit path ({len(proof.path)} node(s), leaf to root):")
    for number, node in enumerate(proof.path, 1):
        click.echo(f"    {number:>2}. {node.hex()}")
    click.echo("ok: the path leads from the record's leaf to the signed root")


def _signed_checkpoint(named: str, allowed: Authority | AllowedSigners) -> Checkpoint:
    """Gives the checkpoint read from ``named`` ('-': stdin) once its signature is checked."""
    from engine.ledger.checkpoint import check_signature, read_checkpoint

    stdin_text = sys.stdin.read() if named == "-" else None
    cp = read_checkpoint(named, stdin_text)
    try:
        check_signature(cp, allowed)
    except ValueError as exc:
        raise IntegrityError(f"checkpoint {named}: signature: {exc}") from exc
    return cp


def _print_consistency(proof, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(proof.to_json(), ensure_ascii=False, indent=1))
        return
    s = proof.signed_by
    click.echo(
        f"the checkpoint's tree of size {proof.old.size} is a prefix of the tree of size "
        f"{proof.new.size} signed in sign-off #{s.seq} by {s.principal} at {s.time}"
    )
    click.echo(f"  origin      {proof.new.origin}")
    click.echo(f"  first root  {proof.old.root_hex}")
    click.echo(f"  second root {proof.new.root_hex}")
    click.echo(f"  consistency path ({len(proof.path)} node(s)):")
    for number, node in enumerate(proof.path, 1):
        click.echo(f"    {number:>2}. {node.hex()}")
    click.echo("ok: the path leads from the checkpoint's root to the signed root")


@click.group()
def runs() -> None:
    """Producer runs and who signed them: the author of every number a lead signs off."""


@runs.command("list")
@click.pass_obj
def runs_list(ctx: Ctx) -> None:
    """List each run that recorded files, and who signed it (or that nobody did)."""
    from engine.run_records import recorded_artifacts, run_authors

    with ctx.open(read_only=True) as ws:
        authors = {a.run_id: a for found in run_authors(ws.conn).values() for _, a in found}
        recorded = recorded_artifacts(ws.conn).by_path.values()
        kinds = dict(ws.conn.execute("SELECT run_id, kind FROM runs"))
    # A run that recorded no file has nothing a sign-off binds.
    for run_id in sorted({r.run_id for found in recorded for r in found}):
        kind = kinds.get(run_id, "?")
        a = authors.get(run_id)
        who = f"signed by {a.principal} ({a.role}), record #{a.seq}" if a else "UNSIGNED"
        click.echo(f"{run_id}\t{kind}\t{who}")


@runs.command("sign")
@click.argument("run_ids", nargs=-1, required=True)
@click.option(
    "--key",
    default=None,
    type=InputFile(),
    help="Your OpenSSH private key. Default: your enrolled key in ssh-agent.",
)
@click.option("--principal", default=None, help="When the key is enrolled under several names.")
@click.pass_obj
def runs_sign(ctx: Ctx, run_ids: tuple[str, ...], key: str | None, principal: str | None) -> None:
    """Sign the run record of runs you ran: you vouch for their files as they are now.

    A producer given --key (or run with your key in ssh-agent) signs its run
    itself; this is for a run made without one. Each run record binds the
    run's manifest hash and the SHA-256 of every file it wrote, checked on
    disk first; the sign-off names you as the author of those numbers.

    \b
      sealdesk runs list
      sealdesk runs sign exam-demo --key ~/.ssh/id_ed25519
    """
    from engine.identity import choose_signer
    from engine.run_records import sign_runs

    with ctx.open() as ws:
        signer = choose_signer(key, ws.signers())
        made = sign_runs(ws, signer, list(run_ids), principal=principal)
    for rec in made:
        data = rec.body["data"]
        click.echo(
            f"signed run {data['run_id']} ({data['producer']}, {len(data['artifacts'])} "
            f"file(s)): record #{rec.seq} by {rec.body['principal']} ({rec.body['role']})"
        )
    if not made:
        click.echo("nothing to sign: each run already has a run record or recorded no file")
