"""``sealdesk init`` and ``sealdesk keys``: the genesis, and who may sign, as signed records."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import click

from engine.cli_context import Ctx, pass_ctx
from engine.outputs import InputFile
from engine.roles import ROLES
from engine.terminal_text import visible

_ROLE = click.Choice(ROLES)
_LEAD_KEY_HELP = (
    "The lead's OpenSSH private key file that signs this. Default: the key "
    "ssh-agent holds for a lead."
)
_LEAD_HELP = "Which lead you sign as, when your key is lead under several names."


@click.command()
@click.option(
    "--lead",
    "lead",
    required=True,
    metavar="NAME",
    help="The founding lead: the name the genesis record gives the key.",
)
@click.option(
    "--key",
    default=None,
    type=InputFile(),
    help="The founding lead's OpenSSH private key file (signs the genesis). "
    "Default: the only Ed25519 key in ssh-agent.",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    type=_ROLE,
    help="A further role the founding lead holds (lead is always held); repeat.",
)
@pass_ctx
def init(ctx: Ctx, lead: str, key: str | None, roles: tuple[str, ...]) -> None:
    """Create a workspace whose ledger starts with a genesis record.

    \b
      sealdesk init --lead lena --key ~/.ssh/id_ed25519
    The genesis names the founding lead's key: the workspace's trust anchor.
    Everyone else is enrolled by a lead with 'sealdesk keys add', each
    enrolment a record the lead signs. Keep your public key where an auditor
    can find it: 'sealdesk verify --anchor FILE' checks the genesis against it.
    """
    from engine.errors import ConflictError
    from engine.identity import founding_signer
    from engine.ledger.authority import check_principal
    from engine.ledger.enrol import found
    from engine.workspace import DB_NAME, Workspace

    check_principal(lead, field="--lead")
    signer = founding_signer(key)
    if (ctx.path / DB_NAME).exists():  # looked at before init writes anything to it
        with Workspace.open(ctx.path, read_only=True) as existing:
            if existing.needs_migration():
                raise ConflictError(
                    f"{ctx.path} already holds records signed under its old "
                    "trust/allowed_signers; sign that file into the ledger "
                    f"with: sealdesk --workspace {ctx.path} keys migrate"
                )
    with Workspace.init(ctx.path) as ws:
        rec = found(ws.db, ws.workspace_id, signer, lead, ("lead", *roles))
        click.echo(visible(f"workspace {ws.root} ready (id {ws.workspace_id})"))
        click.echo(
            visible(
                f"#{rec.seq} genesis: {lead} ({signer.public_key.fingerprint}) is the "
                f"founding lead; record {rec.record_hash[:12]}"
            )
        )
        _write_signers(ws, f"the genesis (#{rec.seq})")
        click.echo(
            f"next: sealdesk --workspace {ws.root} keys add --principal NAME "
            "--role reviewer --key NAME.pub"
        )


@click.group()
def keys() -> None:
    """Who may sign, in which role: every change is a record a lead signs.

    \b
    The ledger is the source of truth; trust/allowed_signers is generated from
    it for ssh-keygen -Y verify and never read back.
    """


def _lead_signer(ws, lead_key: str | None):
    from engine.identity import choose_signer

    return choose_signer(lead_key, ws.authority(), ("lead",))


def _record_time(text: str, option: str) -> str:
    """Gives a user's UTC time as a record-time text, or a one-line error naming the option."""
    from datetime import datetime

    from engine.errors import InputError
    from engine.ledger.records import time_text

    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{text!r} is not a time (YYYY-MM-DDTHH:MM:SSZ)", field=option) from None
    if when.tzinfo is None:
        raise InputError(f"{text!r} names no zone; write it in UTC with Z", field=option)
    return time_text(when.astimezone(UTC))


@keys.command("add")
@click.option("--principal", required=True, help="Name recorded in every record they sign.")
@click.option(
    "--role",
    "roles",
    required=True,
    multiple=True,
    type=_ROLE,
    help="Role to grant; repeat for several. Added to the roles already held.",
)
@click.option(
    "--key",
    "key_path",
    required=True,
    type=InputFile(),
    help="The person's OpenSSH public key (ssh-ed25519 ... .pub).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Set exactly these roles (a role change that may take some away).",
)
@click.option(
    "--valid-before",
    default=None,
    metavar="TIME",
    help="The key signs nothing at or after this UTC time (YYYY-MM-DDTHH:MM:SSZ).",
)
@click.option("--lead-key", default=None, type=InputFile(), help=_LEAD_KEY_HELP)
@click.option("--lead", "lead_principal", default=None, help=_LEAD_HELP)
@pass_ctx
def keys_add(
    ctx: Ctx,
    principal: str,
    roles: tuple[str, ...],
    key_path: str,
    replace: bool,
    valid_before: str | None,
    lead_key: str | None,
    lead_principal: str | None,
) -> None:
    """Enrol a public key for some roles: a record a lead signs.

    \b
      sealdesk keys add --principal rita --role reviewer --key rita.pub
      sealdesk keys add --principal rita --role lead --key rita.pub   # a role change
    Each role is a signature namespace (reviewer@sealdesk, ...); the generated
    trust/allowed_signers writes it as namespaces="..." so that ssh-keygen
    -Y verify enforces it too.
    """
    from engine.ledger.enrol import enrol
    from engine.ledger.signers import read_public_key

    key = read_public_key(Path(key_path))
    before = _record_time(valid_before, "--valid-before") if valid_before else None
    with ctx.open() as ws:
        held = ws.authority().grant_of(principal, key.blob)
        rec = enrol(
            ws.db,
            ws.workspace_id,
            _lead_signer(ws, lead_key),
            principal,
            roles,
            key,
            lead_principal=lead_principal,
            replace=replace,
            valid_before=before,
        )
        now = rec.body["data"]["signer"]["roles"]
        change = f"{'/'.join(held.roles)} -> {'/'.join(now)}" if held else "/".join(now)
        click.echo(
            visible(
                f"#{rec.seq} enrol {principal} as {change} with {key.fingerprint}; signed by "
                f"{rec.body['principal']} (lead)"
            )
        )
        _write_signers(ws, f"the enrolment (#{rec.seq})")


@keys.command("revoke")
@click.option("--principal", required=True, help="Whose key to revoke.")
@click.option(
    "--key",
    "key_path",
    default=None,
    type=InputFile(),
    help="The public key to revoke (needed when they hold several).",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    type=_ROLE,
    help="Take away only these roles (the key keeps the rest); repeat.",
)
@click.option("--reason", default=None, help="Why; kept in the signed record.")
@click.option("--lead-key", default=None, type=InputFile(), help=_LEAD_KEY_HELP)
@click.option("--lead", "lead_principal", default=None, help=_LEAD_HELP)
@pass_ctx
def keys_revoke(
    ctx: Ctx,
    principal: str,
    key_path: str | None,
    roles: tuple[str, ...],
    reason: str | None,
    lead_key: str | None,
    lead_principal: str | None,
) -> None:
    """Revoke a key (it signs nothing after this record), or take roles from it.

    Records signed before the revocation stay valid. The revocation binds the
    record from which the key is invalid, so no later record can claim an
    earlier time; a revoked key is never enrolled again.
    """
    from engine.errors import InputError
    from engine.ledger.enrol import enrol, revoke_resetting_clock
    from engine.ledger.signers import read_public_key

    with ctx.open() as ws:
        held = [g for g in ws.authority().in_force() if g.principal == principal]
        if key_path:
            key = read_public_key(Path(key_path))
            held = [g for g in held if g.key.blob == key.blob]
        if not held:
            with_key = " with that key" if key_path else ""
            raise InputError(
                f"{principal} holds no enrolment{with_key} (see: sealdesk keys list)",
                field="principal",
            )
        if len(held) > 1:
            raise InputError(
                f"{principal} holds {len(held)} keys; name one with --key", field="key"
            )
        grant = held[0]
        if roles and not set(roles) & set(grant.roles):
            raise InputError(
                f"{principal} does not hold {', '.join(roles)} (holds {', '.join(grant.roles)})",
                field="role",
            )
        keep = tuple(r for r in grant.roles if r not in roles) if roles else ()
        signer = _lead_signer(ws, lead_key)
        if keep:
            rec = enrol(
                ws.db,
                ws.workspace_id,
                signer,
                principal,
                keep,
                grant.key,
                lead_principal=lead_principal,
                replace=True,
            )
            what = f"{principal} now holds {'/'.join(keep)} (took {'/'.join(roles)})"
        else:
            reset, rec = revoke_resetting_clock(
                ws.db,
                ws.workspace_id,
                signer,
                principal,
                grant.key,
                lead_principal=lead_principal,
                reason=reason,
            )
            if reset is not None:
                click.echo(_reset_line(reset))
            what = f"revoked {principal}'s key {grant.key.fingerprint}"
        click.echo(visible(f"#{rec.seq} {what}; signed by {rec.body['principal']} (lead)"))
        _write_signers(ws, f"the {'enrolment' if keep else 'revocation'} (#{rec.seq})")


def _write_signers(ws, recorded: str) -> None:
    """Rewrites trust/allowed_signers after ``recorded`` landed in the ledger.

    The file is written whole or not at all (temporary file, fsync, rename), so
    ssh-keygen reads either the old file or the new one. When it cannot be
    written the record still stands: DerivedFileNotWritten says so, and which
    command writes the file again, so that no one takes the failure for a
    refusal (a revoked key the old file still trusts).
    """
    from engine.errors import DerivedFileNotWritten, InputError, SealdeskError

    try:
        ws.write_allowed_signers()
    except (SealdeskError, OSError) as exc:
        why = exc.reason if isinstance(exc, InputError) else getattr(exc, "strerror", None)
        raise DerivedFileNotWritten(
            f"{recorded} is in the ledger, but {ws.allowed_signers_path} was not rewritten "
            f"({why or exc}), so ssh-keygen -Y verify still reads the old one; write it "
            f"again with: sealdesk --workspace {ws.root} keys export-signers"
        ) from exc


def _reset_line(rec) -> str:
    """Gives what a clock record did, as the CLI says it."""
    return visible(
        f"#{rec.seq} clock: the ledger's time steps back from {rec.body['data']['resets']} "
        f"to {rec.body['time']}; signed by {rec.body['principal']} (lead)"
    )


@keys.command("export-signers")
@pass_ctx
def keys_export_signers(ctx: Ctx) -> None:
    """Write trust/allowed_signers again from the ledger.

    Every keys add, keys revoke and init writes it by itself; run this when
    one of them said the record is in the ledger but the file was not
    rewritten (a full disk, a read-only trust/), or to check what the file
    should say. The file is replaced whole (temporary file, fsync, rename).
    """
    from engine.ledger.authority import allowed_signers_lines, authority_mark

    with ctx.open() as ws:
        ws.write_allowed_signers()
        lines = len(allowed_signers_lines(ws.authority()))
        mark = authority_mark(ws.conn)[1]
        path = ws.allowed_signers_path
    click.echo(
        visible(f"{path} written from the ledger: {lines} key line(s), through record #{mark}")
    )


@keys.command("reset-clock")
@click.option("--reason", default=None, help="Why; kept in the signed record.")
@click.option("--lead-key", default=None, type=InputFile(), help=_LEAD_KEY_HELP)
@click.option("--lead", "lead_principal", default=None, help=_LEAD_HELP)
@pass_ctx
def keys_reset_clock(
    ctx: Ctx, reason: str | None, lead_key: str | None, lead_principal: str | None
) -> None:
    """Reset the ledger's time when its last record is dated ahead of this host's clock.

    A record's time never goes back along the chain, so a record dated far
    ahead (a signer's clock set to 2099) would stop every later append. When
    the last record is more than 300 s ahead of this host's clock, a lead
    signs a clock record: it names the time it steps back from and is dated
    now; verify reports it and the records it stepped back over. Refused when
    the last record is not that far ahead. keys revoke does it by itself.
    """
    from engine.ledger.enrol import reset_clock

    with ctx.open() as ws:
        rec = reset_clock(
            ws.db,
            ws.workspace_id,
            _lead_signer(ws, lead_key),
            lead_principal=lead_principal,
            reason=reason,
        )
    click.echo(_reset_line(rec))


@keys.command("list")
@click.option("--history", is_flag=True, help="Also show ended enrolments (revoked, changed).")
@pass_ctx
def keys_list(ctx: Ctx, history: bool) -> None:
    """Show who may sign now, in which roles, since which record (read from the ledger)."""
    with ctx.open(read_only=True) as ws:
        auth = ws.authority()
        legacy = ws.legacy_signers() if auth.genesis is None and ws.needs_migration() else None
    if legacy is not None:
        click.echo(
            "this workspace predates enrolment in the ledger; its unsigned "
            "trust/allowed_signers says (sign it in with: sealdesk keys migrate):"
        )
        for entry in legacy.entries:
            # An unsigned file anyone with the account could have written: shown, not obeyed.
            click.echo(
                visible(
                    f"{','.join(entry.principals):20} {','.join(entry.roles) or '-':28} "
                    f"{entry.key.fingerprint}"
                )
            )
        for line in legacy.skipped:
            click.echo(
                visible(
                    f"{','.join(line.principals):20} {'-':28} skipped: {line.key_type} key "
                    f"(line {line.line}); {line.why}"
                )
            )
        return
    if auth.genesis is None:
        click.echo("no one is enrolled yet (sealdesk init --lead NAME writes the genesis)")
        return
    founders = ", ".join(f"{p} {k.fingerprint}" for p, k in auth.genesis.founders)
    click.echo(visible(f"genesis: record {auth.genesis.seq}; founding lead(s): {founders}"))
    for g in auth.grants:
        if g.open:
            status = f"since #{g.granted_by}"
        elif history:
            status = f"#{g.granted_by}..#{g.ended_by} {g.ended_how}"
        else:
            continue
        window = f" until {g.valid_before}" if g.valid_before != "~" else ""
        click.echo(
            visible(f"{g.principal:20} {'/'.join(g.roles):28} {g.key.fingerprint} {status}{window}")
        )
    for principal, fps in sorted(auth.multi_key_principals().items()):
        click.echo(visible(f"note: {principal} signs with {len(fps)} keys: {', '.join(fps)}"))


@keys.command("migrate")
@click.option(
    "--lead-key",
    default=None,
    type=InputFile(),
    help="The private key of a lead the old trust/allowed_signers names. Default: "
    "the key ssh-agent holds for one.",
)
@click.option("--lead", "lead_principal", default=None, help=_LEAD_HELP)
@pass_ctx
def keys_migrate(ctx: Ctx, lead_key: str | None, lead_principal: str | None) -> None:
    """Sign a workspace's old trust/allowed_signers into its ledger, once.

    Workspaces made before enrolment was recorded kept who may sign in that
    unsigned file. This checks every record against it, then appends a
    genesis record, signed by a lead the file names, that lists each signer
    with its roles and validity window and adopts the records before it.
    From then on only the ledger says who may sign.
    """
    from engine.errors import ConflictError, IntegrityError
    from engine.identity import choose_signer
    from engine.ledger import store
    from engine.ledger.authority import NOT_MIGRATED
    from engine.ledger.enrol import migrate, migration_plan
    from engine.signoff.verify import verify_workspace

    with ctx.open(unmigrated=True) as ws:
        if ws.authority().verdicts:
            raise ConflictError("this ledger already has authority records; nothing to migrate")
        legacy = ws.legacy_signers()
        signer = choose_signer(lead_key, legacy, ("lead",))
        plan = migration_plan(legacy, signer, lead_principal)
        report = verify_workspace(ws)
        faults = [f for f in report.faults if f.reason != NOT_MIGRATED]
        if faults:
            first = min(faults, key=lambda f: f.seq)
            raise IntegrityError(
                f"the ledger does not verify under trust/allowed_signers "
                f"({first.where}); nothing was migrated (a genesis would "
                "vouch for it)",
                seq=first.seq or None,
            )
        rec = migrate(ws.db, ws.workspace_id, signer, plan)
        store.add_missing_indexes(ws.conn)
        _write_signers(ws, f"the genesis (#{rec.seq})")
    signers = rec.body["data"]["signers"]
    click.echo(
        f"#{rec.seq} genesis: signed {len(signers)} signer(s) of trust/allowed_signers "
        f"into the ledger, adopting its {report.records} record(s); signed by "
        f"{rec.body['principal']} (lead)"
    )
    for entry in signers:
        click.echo(visible(f"  {entry['principal']:20} {'/'.join(entry['roles'])}"))
    click.echo("trust/allowed_signers is now generated from the ledger and never read")


@keys.command("anchor")
@pass_ctx
def keys_anchor(ctx: Ctx) -> None:
    """Print the genesis's founding lead key(s) as allowed_signers lines.

    Keep a copy off this host (the lead's laptop): 'sealdesk verify --anchor
    FILE' then proves the ledger grew from those keys and no others.
    """
    from engine.errors import NotReadyError

    with ctx.open(read_only=True) as ws:
        genesis = ws.authority().genesis
    if genesis is None:
        raise NotReadyError("this workspace has no genesis record yet")
    for principal, key in genesis.founders:
        click.echo(f'{principal} namespaces="lead@sealdesk" {key.openssh()}')
