"""``sealdesk receipts``: where your receipts are kept, and keeping those a gated host printed."""

from __future__ import annotations

import sys

import click

from engine.outputs import InputFile


@click.group("receipts", invoke_without_command=True)
@click.pass_context
def receipts(cctx: click.Context) -> None:
    """Your receipts: where they are kept, how many per workspace.

    Every decision or undo sealdesk acknowledges leaves you a receipt (seq,
    record hash, tree size, root) in your own state directory, one file per
    workspace id: $SEALDESK_RECEIPTS, else $XDG_STATE_HOME/sealdesk/receipts,
    else ~/.local/state/sealdesk/receipts. Plain `sealdesk verify` compares
    yours for its workspace; a rollback or a fork that lost a receipted
    record fails, naming it.

    \b
    Behind ssh-gate the host keeps its copy where its insiders can reach it.
    The gate prints each whole receipt to you as one JSON line (on stderr);
    keep them on your own machine, then check the host against them:
      ssh -A reviewhost sealdesk decide --queue flagged_pairs --item X \\
          --decision accept 2>&1 | sealdesk receipts keep
      ssh reviewhost sealdesk verify --receipts - \\
          < ~/.local/state/sealdesk/receipts/WORKSPACE_ID.jsonl
    Without sealdesk on your machine, keep the lines with grep:
      ssh -A reviewhost sealdesk decide ... 2>&1 | tee /dev/stderr \\
          | grep '^{"' >> ~/sealdesk-receipts.jsonl
    and on a copy of the workspace (sealdesk backup, scp):
      sealdesk --workspace COPY verify --receipts ~/sealdesk-receipts.jsonl
    """
    if cctx.invoked_subcommand is not None:
        return
    from engine.ledger.receipts import default_dir, held

    directory = default_dir()
    kept = held(directory)
    click.echo(f"receipts are kept in {directory}")
    if not kept:
        click.echo("none kept yet")
    for workspace, count in kept:
        click.echo(f"{workspace}  {count} receipt{'' if count == 1 else 's'}")


@receipts.command("keep")
@click.argument("source", default="-", type=InputFile(allow_dash=True))
def keep(source: str) -> None:
    """Keep the receipts found in a gated host's output (default: stdin).

    Every line that is not a receipt is passed on to stdout; each receipt
    line is appended to your state directory's file for its workspace.
    """
    from engine.errors import InputError
    from engine.ledger.receipts import keep as keep_receipts
    from engine.ledger.receipts import pick

    if source == "-":
        text, where = sys.stdin.read(), "<stdin>"
    else:
        try:
            with open(source, encoding="utf-8") as handle:
                text, where = handle.read(), source
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read ({exc})", path=source) from exc
    found, rest = pick(text, where)
    for line in rest:
        click.echo(line)
    if not found:
        click.echo("receipts: none in the input; nothing kept", err=True)
        return
    path = keep_receipts(found)
    click.echo(f"receipts: {len(found)} kept in {path}", err=True)
