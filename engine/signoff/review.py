"""What a sign-off binds about how the items were reviewed: the plan, how far it got, and
how far the reviewers agreed; and verify's check that those figures are the ledger's.

Bound in the sign-off record's ``data.review`` whenever a review plan stands or two
people rated some item of one queue:

- ``plan``: the plan record's hash (None without a plan);
- ``progress``: per planned queue, the planned items, their outcomes (unanimous,
  adjudicated, unresolved, pending), the decisions still missing and each
  principal's share (``engine.agreement.plan.progress``);
- ``agreement``: ``engine.agreement.ledger.workspace_agreement``, the figures with
  their bootstrap intervals and how they were drawn.

Every figure is computed from the signed records before the sign-off alone, so
``review_faults`` recomputes each sign-off's and reports one that differs.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from engine.agreement.gold import accuracy, waiting
from engine.agreement.ledger import workspace_agreement
from engine.agreement.plan import current, progress
from engine.canonical import strict_loads
from engine.errors import SealdeskError
from engine.ledger.verify import Fault


def review_data(conn: sqlite3.Connection, *, before: int | None = None) -> dict[str, Any] | None:
    """Gives what a sign-off appended at ``before`` (or now) binds about the review, or
    None when there is nothing to bind (no plan, and nobody's rating beside another's)."""
    plan = current(conn, before)
    agreement = workspace_agreement(conn, before=before)
    rated_twice = any(q["pairs"] for q in agreement["queues"])
    gold = {"accuracy": accuracy(conn, before), "waiting": waiting(conn, before)}
    if plan is None and not rated_twice and not (gold["accuracy"] or gold["waiting"]):
        return None
    return {
        "plan": plan.record_hash if plan is not None else None,
        "progress": progress(conn, plan, before=before) if plan is not None else {},
        "agreement": agreement,
        "gold": gold,
    }


def review_holds(review: dict[str, Any] | None) -> list[str]:
    """Gives what keeps a plain sign-off from being ready in how the items were reviewed:
    planned decisions still missing, and disagreements nobody resolved."""
    if review is None:
        return []
    out = [
        f"gold committed in record {w['seq']} ({w['count']} on {w['queue']}) is not revealed: "
        "reveal it after the review (sealdesk gold reveal)"
        for w in review["gold"]["waiting"]
    ]
    for queue, p in review["progress"].items():
        missing, disputed = p["missing_decisions"], p["outcomes"]["unresolved"]
        if missing:
            out.append(f"{queue}: {missing} planned decision(s) missing (sealdesk plan show)")
        if disputed:
            out.append(
                f"{queue}: {disputed} disagreement(s) unresolved: an adjudicator decides them "
                "(sealdesk plan disputed)"
            )
    return out


def review_faults(conn: sqlite3.Connection) -> list[Fault]:
    """Gives a fault for each sign-off whose bound review figures are not those its
    ledger gives when recomputed from the signed records before it."""
    faults = []
    for seq, message in conn.execute(
        "SELECT seq, message FROM records WHERE kind = 'signoff' ORDER BY seq"
    ):
        try:
            body = strict_loads(message)
        except (ValueError, TypeError, SealdeskError):
            continue  # not a record body: the audit of the records reports it
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict) or "review" not in data:
            continue
        bound, again = data["review"], review_data(conn, before=seq)
        if bound != again:
            parts = ("plan", "progress", "agreement")
            which = [
                k
                for k in parts
                if not isinstance(bound, dict) or bound.get(k) != (again or {}).get(k)
            ]
            faults.append(
                Fault(
                    seq,
                    f"the sign-off's review figures ({', '.join(which) or 'gold'}) are not "
                    "those the signed decisions before it give",
                )
            )
    return faults


def _figure(estimate: dict[str, Any]) -> str:
    if estimate["value"] is None:
        return "–"
    if estimate["low"] is None:
        return f"{estimate['value']:.3f}"
    return f"{estimate['value']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"


def review_lines(review: dict[str, Any] | None) -> list[str]:
    """Gives the review part of a sign-off summary as plain text lines: the plan's
    progress per queue, then per queue the agreement over every rater (each statistic
    with its 95% interval), per pair of raters, and each rater against the outcome."""
    from engine.agreement.stats import NAMES, STATISTICS

    if review is None:
        return []
    out = []
    if review["plan"] is not None:
        out.append(f"Review plan: record {review['plan'][:16]}")
    for queue, p in review["progress"].items():
        o = p["outcomes"]
        out.append(
            f"  {queue}: k={p['k']} on {p['planned_items']} item(s) ({p['share']:.0%}, seed "
            f"{p['seed']}): {o['unanimous']} unanimous, {o['adjudicated']} adjudicated, "
            f"{o['unresolved']} unresolved, {o['pending']} pending"
        )
    for q in review["agreement"]["queues"]:
        figures = q["all"]
        if not figures["items"]:
            continue
        out.append(
            f"Agreement on {q['queue']} ({figures['items']} item(s) rated by 2+, "
            f"{len(figures['raters'])} rater(s), 95% bootstrap intervals):"
        )
        for name in STATISTICS:
            e = figures["statistics"][name]
            if e["value"] is None and name == "cohen_kappa":
                continue  # two raters only
            out.append(f"  {NAMES[name]:<22}{_figure(e)}")
        for pair in q["pairs"]:
            e = pair["statistics"]["raw"]
            out.append(f"  {' vs '.join(pair['raters'])}: agree {_figure(e)} over {e['items']}")
        for rater in q["against_outcome"]:
            e = rater["statistics"]["raw"]
            out.append(
                f"  {rater['principal']} vs the adjudicated outcome: agree {_figure(e)} "
                f"over {e['items']}"
            )
    found, left = review["gold"]["accuracy"], review["gold"]["waiting"]
    if found or left:
        out += accuracy_lines(found, left)
    return out


def accuracy_lines(found: dict[str, Any], left: list[dict[str, Any]]) -> list[str]:
    """Gives the accuracy on gold as text lines (also the sign-off summary's)."""
    out = []
    for queue, per in found.items():
        out.append(f"Gold on {queue}: {per['gold_items']} item(s) with a revealed answer")
        for who, n in sorted(per["principals"].items()):
            out.append(f"  {who}: {n['correct']}/{n['decided']} decided as the answer")
    for w in left:
        out.append(f"Gold committed, not revealed: #{w['seq']}, {w['count']} on {w['queue']}")
    return out or ["no gold items"]
