"""Snapshots of the bulk-decision confirmation at 80x24 and 160x48 (pytest-textual-snapshot).

The workspace's id is pinned and lena's key comes from a fixed seed, her genesis dated
at a fixed time, so nothing shown changes from run to run. Update after a deliberate
change with: pytest tests/reviewer/test_review_bulk_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from engine.ledger.signers import FileSigner
from engine.workspace import Workspace
from reviewer.app import ReviewApp
from reviewer.bulk_screen import BulkScreen
from reviewer.session import open_session
from tests.support.pinned_ledger import found_at, seeded_key
from tests.support.review_app import settle
from tests.support.review_payloads import clustered_pairs

PINNED_ID = "00000000-0000-4000-8000-00000000b01c"
FOUNDED_AT = "2026-01-05T09:00:00.000000Z"


@pytest.fixture
def desk(tmp_path, monkeypatch):
    """A workspace with a pinned id founded by lena (lead and reviewer) holding a duplicate
    cluster of three flagged pairs among four single ones."""
    # Opened by a relative path: the banner names the workspace as it was given.
    monkeypatch.chdir(tmp_path)
    ws = Workspace.init("ws")
    with ws.conn:
        ws.conn.execute("UPDATE meta SET value=? WHERE key='workspace_id'", (PINNED_ID,))
    ws.close()
    ws = Workspace.open("ws")
    lena = seeded_key(tmp_path / "lena")
    found_at(ws, tmp_path / "scratch", FileSigner(lena), "lena", FOUNDED_AT, ("lead", "reviewer"))
    ws.ingest(clustered_pairs(), runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    yield ws, lena
    ws.close()


def _app(desk) -> ReviewApp:
    ws, lena = desk
    return ReviewApp(ws, open_session(ws, key=str(lena)))


def _open(*keys: str):
    async def run_before(pilot) -> None:
        await pilot.press(*keys)
        await settle(pilot, lambda: isinstance(pilot.app.screen, BulkScreen))
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_cluster_confirmation(snap_compare, desk, size):
    assert snap_compare(_app(desk), terminal_size=size, run_before=_open("c"))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_marked_selection_confirmation(snap_compare, desk, size):
    # fp-q-1, then fp-s1 (m moves down, j skips fp-s0), then fp-s2.
    assert snap_compare(_app(desk), terminal_size=size, run_before=_open("m", "j", "m", "m", "D"))


def test_cluster_confirmation_without_colour(snap_compare, desk, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(_app(desk), terminal_size=(80, 24), run_before=_open("c"))
