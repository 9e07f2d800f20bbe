"""The ``claim`` command: take the next undecided items (or named ones) for a while, so
that people working one queue at once, from scripts or over SSH, are not given the
same item; ``--release`` gives them back. The review app claims the item it shows.
"""

from __future__ import annotations

from typing import Any

import click

from engine import claims as claim_store
from engine.cli.plan import viewer_of
from engine.cli_context import Ctx, pass_ctx
from engine.outputs import InputFile
from engine.roles import QUEUES
from engine.terminal_text import json_text, visible


@click.command("claim")
@click.option("--queue", type=click.Choice(QUEUES), help="The queue (required unless --release).")
@click.option(
    "--next",
    "count",
    type=click.IntRange(1, claim_store.MAX_HELD),
    default=None,
    help="Claim this many of the next undecided items nobody else holds (listing order).",
)
@click.option("--item", "item_ids", multiple=True, help="Claim this item (repeat for more).")
@click.option(
    "--minutes",
    type=click.IntRange(1, claim_store.MAX_MINUTES),
    default=claim_store.DEFAULT_MINUTES,
    show_default=True,
    help="How long the claims last unless claimed again.",
)
@click.option(
    "--release", is_flag=True, help="Give back your claims (of --queue/--item, else all)."
)
@click.option(
    "--of",
    "holder",
    default=None,
    help="With --release: end this person's claims instead (a lead only; the key signs).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the claims taken as JSON.")
@click.option("--key", default=None, type=InputFile(), help="Who is claiming (default: agent).")
@pass_ctx
def claim(
    ctx: Ctx,
    queue: str | None,
    count: int | None,
    item_ids: tuple[str, ...],
    minutes: int,
    release: bool,
    holder: str | None,
    as_json: bool,
    key: str | None,
) -> None:
    """Claim undecided items for a while, so that nobody else is given them.

    Two people (or scripts) asking at the same moment get different items:
    claims are taken one request at a time. The review app claims the item it
    shows, skips items someone else holds when it looks for the next
    undecided one, and says who holds an item you open anyway. A claim is
    advice, not a decision: it is not signed, it ends when its time runs out
    (claim again to keep it), and it never stops a decision. Items a review
    plan samples are not claimed; the plan says who decides them. One person
    holds at most as many claims at once as --next takes; a lead may end anyone's.

    \b
      sealdesk claim --queue flagged_pairs --next 20
      sealdesk claim --queue flagged_pairs --item fp-3a9c --minutes 60
          (refused, claiming nothing, if someone else holds it)
      sealdesk claim --release
      sealdesk claim --release --of rita      (a lead: rita's claims end)
      sealdesk items --queue flagged_pairs --json | jq '.[] | select(.claim) | .item_id'
    """
    from engine.errors import InputError

    if holder is not None and not release:
        raise InputError("--of names whose claims --release ends", field="of")
    if release:
        if count is not None:
            raise InputError("--release gives claims back: it takes no --next", field="next")
    elif queue is None:
        raise InputError("--queue is required to claim", field="queue")
    elif (count is None) == (not item_ids):
        raise InputError("say what to claim: --next N or --item ID (not both)", field="next")
    with ctx.open() as ws:
        if holder is not None:
            from engine.identity import choose_signer

            lead, ended = ws.end_claims_of(
                choose_signer(key, ws.authority()), holder, queue, item_ids or None
            )
            click.echo(visible(f"released {ended} claim(s) of {holder}, ended by {lead} (lead)"))
            return
        ws.viewer = viewer_of(ws, key)
        if release:
            ended = ws.release_claims(queue, item_ids or None)
            click.echo(visible(f"released {ended} claim(s) of {ws.viewer}"))
            return
        assert queue is not None
        seconds = minutes * 60
        full = False
        if count is not None:
            mine, full = ws.claim_next(queue, count, seconds=seconds)
        else:
            mine = ws.claim(queue, item_ids, seconds=seconds)
        who = ws.viewer
    if full:
        click.echo(
            visible(
                f"{who} holds {claim_store.MAX_HELD} claims, the most one person may hold at "
                "once: items new to them were passed over (give some back: sealdesk claim "
                "--release)"
            ),
            err=True,
        )
    if as_json:
        rows: list[dict[str, Any]] = [
            {"queue": c.queue, "item_id": c.item_id, **c.as_dict()} for c in mine
        ]
        click.echo(json_text(rows, indent=1))
        return
    for c in mine:
        click.echo(visible(f"{c.queue}/{c.item_id}"))
    until = f" until {mine[0].as_dict()['until']}" if mine else ""
    click.echo(visible(f"claimed {len(mine)} item(s) for {who}{until}"))
