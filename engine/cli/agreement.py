"""``sealdesk agreement``: how far reviewers agree, from the signed decisions."""

from __future__ import annotations

from typing import Any

import click

from engine.cli_context import Ctx, pass_ctx
from engine.roles import QUEUES
from engine.terminal_text import json_text, visible


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _rows(title: str, figures: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    from engine.agreement.stats import NAMES, STATISTICS

    rows = []
    for name in STATISTICS:
        e = figures["statistics"][name]
        if e["value"] is None and name == "cohen_kappa" and len(figures["raters"]) != 2:
            continue  # two raters only: not a missing figure
        interval = "" if e["low"] is None else f"{_number(e['low'])}–{_number(e['high'])}"
        rows.append((title, NAMES[name], _number(e["value"]), interval, str(e["items"])))
        title = ""
    return rows


@click.command("agreement")
@click.option("--queue", type=click.Choice(QUEUES), help="One queue only. Default: every queue.")
@click.option("--json", "as_json", is_flag=True, help="Print the exact figures as JSON.")
@pass_ctx
def agreement(ctx: Ctx, queue: str | None, as_json: bool) -> None:
    """How far reviewers agree: per queue, per pair, and against the outcome.

    From the signed decision records only: each principal's standing accept
    or reject on an item, in the queue's reviewing role (a skip is no rating).
    Per queue, over the items at least two people decided: raw agreement,
    Cohen's kappa (two raters), Fleiss' kappa, Krippendorff's alpha and
    Gwet's AC1, each with a 95% percentile bootstrap interval over items
    (1000 resamples, seed stated in --json) and the number of items. The
    same per pair of reviewers over the items both decided, and per
    reviewer against the outcome where an adjudicator or a lead settled
    the item.

    \b
      sealdesk agreement --queue flagged_pairs
      sealdesk agreement --json | jq '.queues[].all.statistics.gwet_ac1'
    """
    from engine.agreement.ledger import workspace_agreement

    with ctx.open(read_only=True) as ws:
        report = workspace_agreement(ws.conn, queue)
    if as_json:
        click.echo(json_text(report, indent=1))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    method = report["method"]
    if not report["queues"]:
        click.echo("no ratings yet: nobody has accepted or rejected an item")
    for q in report["queues"]:
        click.echo(
            visible(
                f"{q['queue']}: {q['rated_items']} item(s) rated as {q['rating_role']}, "
                f"{q['all']['items']} by two or more"
            )
        )
        table = Table("raters", "statistic", "value", "95% CI", "items", box=None)
        sections = [(", ".join(q["all"]["raters"]) or "all", q["all"])]
        if len(q["all"]["raters"]) > 2:  # with two, their one pair is the queue's figure
            sections += [(" / ".join(p["raters"]), p) for p in q["pairs"]]
        sections += [(f"{a['principal']} / outcome", a) for a in q["against_outcome"]]
        for title, figures in sections:
            for row in _rows(visible(title), figures):
                # Text, not markup: a "[" in a principal's name is shown as typed.
                table.add_row(*(Text(cell) for cell in row))
        Console().print(table)
    click.echo(
        f"intervals: {method['interval']}, {method['resamples']} resamples, seed {method['seed']}"
    )
