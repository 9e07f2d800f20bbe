"""``sealdesk plan``: the lead's signed review plan, its progress, and its disputes."""

from __future__ import annotations

from typing import Any

import click

from engine.cli_context import Ctx, pass_ctx
from engine.outputs import InputFile
from engine.roles import QUEUES
from engine.terminal_text import json_text, visible


def viewer_of(ws, key: str | None) -> str | None:
    """Gives who is reading (the principal of --key, else of the agent's enrolled key), or
    None when no key says: a plan then shows them no one's decisions on unsettled items."""
    from engine.errors import SealdeskError
    from engine.identity import choose_signer

    try:
        signer = choose_signer(key, ws.authority())
        return ws.identify(signer)[0]
    except (SealdeskError, OSError):
        return None


@click.group("plan")
def plan() -> None:
    """A review plan: k independent decisions on a seeded share of a queue.

    The lead signs the plan; the random seed in the signed record draws which items
    are double-reviewed and who is asked first, so anyone can redraw both.
    While a planned item waits for its decisions, nobody's decision on it is
    shown to a participant who has not decided it (the app, items and the
    gate); when the k decisions agree that is the outcome, when they differ
    an adjudicator resolves it (plan disputed lists those, most disputed
    first).

    \b
      sealdesk plan set --queue flagged_pairs --k 2 --share 0.2 --seed 7 \\
          --principal rita --principal sam
      sealdesk plan show
      sealdesk plan disputed
    """


@plan.command("set")
@click.option("--queue", required=True, type=click.Choice(QUEUES), help="The queue planned.")
@click.option("--k", "k", type=int, default=2, show_default=True, help="Decisions per item.")
@click.option(
    "--share",
    type=float,
    default=1.0,
    show_default=True,
    help="The part of the queue double-reviewed (0.2: a fifth, drawn by --seed).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Draws the share.")
@click.option(
    "--principal",
    "principals",
    multiple=True,
    required=True,
    help="Who takes part (repeat: at least k). They decide in the queue's rating role.",
)
@click.option("--note", default=None, help="Why; kept in the signed record.")
@click.option("--key", default=None, type=InputFile(), help="The lead's key (default: agent).")
@pass_ctx
def set_plan(
    ctx: Ctx,
    queue: str,
    k: int,
    share: float,
    seed: int,
    principals: tuple[str, ...],
    note: str | None,
    key: str | None,
) -> None:
    """Sign a plan for one queue (the other queues keep their plan).

    \b
      sealdesk plan set --queue flagged_pairs --k 2 --share 0.2 --seed 7 \\
          --principal rita --principal sam
    """
    from engine.identity import choose_signer
    from engine.roles import SIGNOFF_ROLE

    with ctx.open() as ws:
        current = ws.plan()
        queues: dict[str, Any] = dict(current.queues) if current is not None else {}
        queues[queue] = {"k": k, "share": share, "seed": seed, "principals": list(principals)}
        signer = choose_signer(key, ws.authority(), (SIGNOFF_ROLE,))
        record = ws.set_plan(signer, queues, note=note)
        drawn = ws.plan()
        assert drawn is not None
        drawn.read_keys(queue)
        planned = sum(
            drawn.planned(queue, i)
            for (i,) in ws.conn.execute("SELECT item_id FROM items WHERE queue = ?", (queue,))
        )
    click.echo(
        visible(
            f"plan signed: #{record.body['seq']} by {record.body['principal']}: {queue}, "
            f"{k} decisions on {planned} item(s) ({share:.0%} drawn with seed {seed}), "
            f"by {', '.join(principals)}"
        )
    )


@plan.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the plan and progress as JSON.")
@pass_ctx
def show(ctx: Ctx, as_json: bool) -> None:
    """The signed plan, and per queue how far it got: outcomes and each person's share.

    \b
      sealdesk plan show
      sealdesk plan show --json | jq '.progress.flagged_pairs.outcomes'
    """
    from engine.agreement.plan import progress

    with ctx.open(read_only=True) as ws:
        current = ws.plan()
        done = progress(ws.conn, current) if current is not None else {}
    if as_json:
        click.echo(
            json_text({"plan": current.to_json() if current else None, "progress": done}, indent=1)
        )
        return
    if current is None:
        click.echo("no review plan: one decision settles an item (a lead sets one: plan set)")
        return
    click.echo(visible(f"plan #{current.seq}, signed by {current.principal}"))
    for queue, p in done.items():
        o = p["outcomes"]
        click.echo(
            visible(
                f"{queue}: k={p['k']} on {p['planned_items']} item(s) (share {p['share']:.0%}, "
                f"seed {p['seed']}): {o['unanimous']} unanimous, {o['adjudicated']} "
                f"adjudicated, {o['unresolved']} unresolved, {o['pending']} pending "
                f"({p['missing_decisions']} decision(s) missing)"
            )
        )
        for who, n in p["principals_progress"].items():
            click.echo(
                visible(f"  {who}: {n['rated']}/{n['assigned']} assigned, {n['ratings']} in all")
            )


@plan.command("disputed")
@click.option("--json", "as_json", is_flag=True, help="Print the disputed items as JSON.")
@click.option("--key", default=None, type=InputFile(), help="Who is reading (default: agent).")
@pass_ctx
def disputed(ctx: Ctx, as_json: bool, key: str | None) -> None:
    """Planned items whose decisions disagree, most disputed first: an adjudicator's work.

    Deciding one as adjudicator (or lead) resolves it: the signed decision
    names the ratings it resolves. A rater the plan still waits for on an
    item (who you are: --key or the agent's key) is not shown it.

    \b
      sealdesk plan disputed
    """
    with ctx.open(read_only=True) as ws:
        ws.viewer = viewer_of(ws, key)
        rows: list[dict[str, Any]] = [
            {"queue": d["queue"], "item_id": d["item_id"], "ratings": d["ratings"]}
            for d in ws.disputed()
        ]
    if as_json:
        click.echo(json_text(rows, indent=1))
        return
    for r in rows:
        said = ", ".join(f"{p} {d}" for p, d in r["ratings"].items())
        click.echo(visible(f"{r['queue']}/{r['item_id']}: {said}"))
    click.echo(f"{len(rows)} disputed item(s)")
