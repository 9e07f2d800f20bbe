"""A workspace set up through the real CLI: founded, people enrolled, items ingested."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tests.support.backlog import write_items_file


def found_through_cli(
    run: Callable[..., Any],
    ws: Path,
    lead: str,
    lead_key: Path,
    enrolled: Iterable[tuple[str, str, Path]] = (),
    items: list | None = None,
) -> None:
    """Founds ws with ``init --lead``, enrols each (name, role, key) with ``keys add``
    signed by the lead, and ingests the items (written beside ws) when given.

    run is the ``sealdesk`` or ``sealdesk_main`` fixture: a subprocess or in-process CLI.
    """
    run("init", "--lead", lead, "--key", lead_key, workspace=ws, check=True)
    for name, role, key in enrolled:
        run(*enrol_args(name, role, key, lead_key), workspace=ws, check=True)
    if items is not None:
        path = ws.parent / "items.jsonl"
        write_items_file(path, items)
        run("ingest", path, workspace=ws, check=True)


def decide_args(
    key: object,
    *items: object,
    decision: object = "accept",
    queue: object = "flagged_pairs",
    **options: object,
) -> tuple:
    """Gives the arguments of ``decide``: the queue, each item, the decision, the key, and
    each other option given by name (``role="lead"``, ``reason=...``)."""
    argv: list[object] = ["decide", "--queue", queue]
    for item in items:
        argv += ["--item", item]
    argv += ["--decision", decision]
    for name, value in options.items():
        argv += [f"--{name}", value]
    return (*argv, "--key", key)


def enrol_args(
    principal: object, role: object, key: object, lead_key: object, *extra: object
) -> tuple:
    """Gives the arguments of ``keys add``: principal enrolled in role with key's public
    half, signed by lead_key, then any other option."""
    enrolled = ("--principal", principal, "--role", role, "--key", f"{key}.pub")
    return ("keys", "add", *enrolled, "--lead-key", lead_key, *extra)


def revoke_args(principal: object, lead_key: object, *extra: object) -> tuple:
    """Gives the arguments of ``keys revoke``: principal's keys (or a role, in extra)
    revoked, signed by lead_key."""
    return ("keys", "revoke", "--principal", principal, "--lead-key", lead_key, *extra)
