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
        run(
            "keys",
            "add",
            "--principal",
            name,
            "--role",
            role,
            "--key",
            f"{key}.pub",
            "--lead-key",
            lead_key,
            workspace=ws,
            check=True,
        )
    if items is not None:
        path = ws.parent / "items.jsonl"
        write_items_file(path, items)
        run("ingest", path, workspace=ws, check=True)
