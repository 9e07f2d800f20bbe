"""Snapshots of the sign-off screen at 80x24 and 160x48 (pytest-textual-snapshot).

The workspace's id is pinned and nothing is signed yet, so every hash shown
(tree root, artifacts, run manifest) is the same on every run. Update after a
deliberate change with:
pytest tests/test_review_signoff_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from engine.workspace import Workspace
from reviewer.app import ReviewApp
from reviewer.session import open_session
from reviewer.signoff_screen import SignoffScreen
from tests.review_app_fixtures import settle
from tests.test_review_signoff import WEAK, pair, write_run_artifacts

PINNED_ID = "00000000-0000-4000-8000-00000000cafe"


@pytest.fixture
def lead_desk(tmp_path, keygen):
    """A workspace with a pinned id, four undecided items, run artifacts and lena (lead)."""
    from pathlib import Path

    from engine.ledger.enrol import enrol

    ws = Workspace.init(tmp_path / "ws")
    with ws.conn:
        ws.conn.execute("UPDATE meta SET value=? WHERE key='workspace_id'", (PINNED_ID,))
    ws.close()
    ws = Workspace.open(tmp_path / "ws")
    ws.ingest([pair(0), pair(1), pair(2), WEAK],
              runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    write_run_artifacts(ws)
    lena = keygen("lena")
    enrol(ws.allowed_signers_path, "lena", ["lead"], Path(f"{lena}.pub"))
    yield ws, lena
    ws.close()


def _app(desk) -> ReviewApp:
    ws, lena = desk
    return ReviewApp(ws, open_session(ws, key=str(lena)))


def _open_signoff(*keys: str):
    async def run_before(pilot) -> None:
        await pilot.press("S")
        await settle(pilot, lambda: isinstance(pilot.app.screen, SignoffScreen)
                     and pilot.app.screen.summary is not None)
        if keys:
            await pilot.press(*keys)
        await pilot.pause()
    return run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_signoff_screen(snap_compare, lead_desk, size):
    assert snap_compare(_app(lead_desk), terminal_size=size, run_before=_open_signoff())


def test_signoff_confirmation_with_exceptions_at_80x24(snap_compare, lead_desk):
    assert snap_compare(_app(lead_desk), terminal_size=(80, 24), run_before=_open_signoff("e"))
