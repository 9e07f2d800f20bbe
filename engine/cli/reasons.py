"""The ``sealdesk reasons`` and ``sealdesk guidelines`` commands: a queue's reason codes
and guidelines, listed by anyone and set by a lead (``engine.reasons``)."""

from __future__ import annotations

from pathlib import Path

import click

from engine.cli_context import Ctx, pass_ctx
from engine.outputs import InputFile
from engine.roles import QUEUES
from engine.terminal_text import visible

_QUEUE = click.Choice(QUEUES)
_LEAD_KEY_HELP = (
    "A lead's OpenSSH private key file (setting is the lead's). Default: a lead key in ssh-agent."
)
_LEAD_HELP = "The lead's name, when the key is enrolled under several."


def _lead(ws, lead_key: str | None):
    from engine.identity import choose_signer

    return choose_signer(lead_key, ws.authority(), ("lead",))


def _print_reasons(found) -> None:
    for number, reason in enumerate(found, start=1):
        click.echo(visible(f"{number}  {reason.code:<20} {reason.label}"))


@click.group()
def reasons() -> None:
    """Reason codes a decision may give, per queue: list them; a lead sets them.

    \b
    A file of reasons lists one a line, the code then its label:
      exact-copy   Exact copy of a training item
    """


@reasons.command("list")
@click.option("--queue", required=True, type=_QUEUE)
@pass_ctx
def reasons_list(ctx: Ctx, queue: str) -> None:
    """List a queue's reason codes, numbered as the review app's keys pick them.

    \b
      sealdesk reasons list --queue flagged_pairs
    """
    with ctx.open(read_only=True) as ws:
        found = ws.reasons(queue)
    _print_reasons(found)


@reasons.command("set")
@click.option("--queue", required=True, type=_QUEUE)
@click.argument("file", type=InputFile())
@click.option("--lead-key", default=None, type=InputFile(), help=_LEAD_KEY_HELP)
@click.option("--lead", "lead_principal", default=None, help=_LEAD_HELP)
@pass_ctx
def reasons_set(
    ctx: Ctx, queue: str, file: str, lead_key: str | None, lead_principal: str | None
) -> None:
    """Set a queue's reason codes from FILE (copied into the workspace; lead only).

    A file with anything wrong is refused whole, naming its line and field.
    """
    with ctx.open() as ws:
        found = ws.set_reasons(_lead(ws, lead_key), queue, Path(file), principal=lead_principal)
    click.echo(f"{queue}: {len(found)} reason(s) set")
    _print_reasons(found)


@reasons.command("reset")
@click.option("--queue", required=True, type=_QUEUE)
@click.option("--lead-key", default=None, type=InputFile(), help=_LEAD_KEY_HELP)
@click.option("--lead", "lead_principal", default=None, help=_LEAD_HELP)
@pass_ctx
def reasons_reset(ctx: Ctx, queue: str, lead_key: str | None, lead_principal: str | None) -> None:
    """Go back to the queue's default reason codes (lead only)."""
    with ctx.open() as ws:
        found = ws.set_reasons(_lead(ws, lead_key), queue, None, principal=lead_principal)
    click.echo(f"{queue}: back to the {len(found)} default reason(s)")


@click.group()
def guidelines() -> None:
    """Guidelines per queue: shown beside each item, their SHA-256 signed in each decision."""


@guidelines.command("show")
@click.option("--queue", required=True, type=_QUEUE)
@pass_ctx
def guidelines_show(ctx: Ctx, queue: str) -> None:
    """Print a queue's guidelines and their SHA-256.

    \b
      sealdesk guidelines show --queue flagged_pairs
    """
    with ctx.open(read_only=True) as ws:
        found = ws.guidelines(queue)
    if found is None:
        click.echo(f"{queue}: no guidelines set")
        return
    click.echo(f"{queue}: guidelines sha256 {found.sha256}")
    click.echo(visible(found.text, multiline=True).rstrip("\n"))


@guidelines.command("set")
@click.option("--queue", required=True, type=_QUEUE)
@click.argument("file", type=InputFile())
@click.option("--lead-key", default=None, type=InputFile(), help=_LEAD_KEY_HELP)
@click.option("--lead", "lead_principal", default=None, help=_LEAD_HELP)
@pass_ctx
def guidelines_set(
    ctx: Ctx, queue: str, file: str, lead_key: str | None, lead_principal: str | None
) -> None:
    """Set a queue's guidelines from FILE, UTF-8 text (copied into the workspace; lead only).

    Every decision on the queue from then on carries their SHA-256.
    """
    with ctx.open() as ws:
        found = ws.set_guidelines(_lead(ws, lead_key), queue, Path(file), principal=lead_principal)
    assert found is not None
    click.echo(f"{queue}: guidelines set, sha256 {found.sha256}")


@guidelines.command("clear")
@click.option("--queue", required=True, type=_QUEUE)
@click.option("--lead-key", default=None, type=InputFile(), help=_LEAD_KEY_HELP)
@click.option("--lead", "lead_principal", default=None, help=_LEAD_HELP)
@pass_ctx
def guidelines_clear(
    ctx: Ctx, queue: str, lead_key: str | None, lead_principal: str | None
) -> None:
    """Remove a queue's guidelines (lead only)."""
    with ctx.open() as ws:
        ws.set_guidelines(_lead(ws, lead_key), queue, None, principal=lead_principal)
    click.echo(f"{queue}: no guidelines set")
