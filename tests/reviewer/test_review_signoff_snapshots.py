"""Snapshots of the sign-off screen at 80x24 and 160x48 (pytest-textual-snapshot).

The workspace's id is pinned, lena's key comes from a fixed seed and the one
record, her genesis, is dated at a fixed time, so every hash shown (tree root,
ledger head, artifacts, run manifest) is the same on every run. Update after
a deliberate change with:
pytest tests/reviewer/test_review_signoff_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from engine.ledger.signers import FileSigner
from engine.signoff.verify import verify_workspace
from engine.workspace import Workspace
from reviewer.app import ReviewApp
from reviewer.session import open_session
from reviewer.signoff_screen import SignoffScreen
from tests.support.pinned_ledger import found_at, seeded_key
from tests.support.review_app import settle
from tests.support.signoff import WEAK, pair, write_run_artifacts

PINNED_ID = "00000000-0000-4000-8000-00000000cafe"
FOUNDED_AT = "2026-01-05T09:00:00.000000Z"
RUNS_SIGNED_AT = "2026-01-05T09:00:01.000000Z"


@pytest.fixture
def lead_desk(tmp_path, monkeypatch):
    """A workspace with a pinned id founded by lena (lead), four undecided items and run
    artifacts whose run records lena signed at a pinned time (one second after the
    genesis), so that the tree head shown repeats from run to run."""
    import engine.ledger.store

    monkeypatch.setattr(engine.ledger.store, "utc_now", lambda: RUNS_SIGNED_AT)
    ws = Workspace.init(tmp_path / "ws")
    with ws.conn:
        ws.conn.execute("UPDATE meta SET value=? WHERE key='workspace_id'", (PINNED_ID,))
    ws.close()
    ws = Workspace.open(tmp_path / "ws")
    lena = seeded_key(tmp_path / "lena")
    found_at(ws, tmp_path / "scratch", FileSigner(lena), "lena", FOUNDED_AT)
    report = verify_workspace(ws)  # the hand-dated genesis is a record verify accepts
    assert report.ok and ws.authority().genesis.time == FOUNDED_AT, report.faults
    ws.ingest(
        [pair(0), pair(1), pair(2), WEAK],
        runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}},
    )
    write_run_artifacts(ws, FileSigner(lena))
    yield ws, lena
    ws.close()


def _app(desk) -> ReviewApp:
    ws, lena = desk
    return ReviewApp(ws, open_session(ws, key=str(lena)))


def _open_signoff(*keys: str):
    async def run_before(pilot) -> None:
        await pilot.press("S")
        await settle(
            pilot,
            lambda: (
                isinstance(pilot.app.screen, SignoffScreen) and pilot.app.screen.summary is not None
            ),
        )
        if keys:
            await pilot.press(*keys)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_signoff_screen(snap_compare, lead_desk, size):
    assert snap_compare(_app(lead_desk), terminal_size=size, run_before=_open_signoff())


def test_signoff_confirmation_with_exceptions_at_80x24(snap_compare, lead_desk):
    assert snap_compare(_app(lead_desk), terminal_size=(80, 24), run_before=_open_signoff("e"))
