"""Snapshots of the calibration view at 80x24 and 160x48, and without colour.

A read-only session on a workspace with an empty ledger and a hand-placed run (fixed run
id and scores), so nothing on screen depends on a key, a time or a path.
Update after a deliberate change with:
pytest tests/reviewer/test_review_calibration_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from engine.workspace import Workspace
from reviewer.app import ReviewApp
from reviewer.calibration_screen import CalibrationScreen, RatesScreen
from reviewer.session import read_only_session
from tests.support.calibration import place_run, placed_report


@pytest.fixture
def placed(tmp_path):
    ws = Workspace.init(tmp_path / "ws")
    place_run(ws)
    yield ws
    ws.close()


@pytest.fixture
def report(tmp_path):
    ws = Workspace.init(tmp_path / "ws")
    placed_report(ws)
    yield ws
    ws.close()


def _loaded(screen) -> bool:
    if isinstance(screen, CalibrationScreen):
        return screen.dist is not None
    return isinstance(screen, RatesScreen) and screen.rates is not None


def _calibration(*keys: str, queue: str = "1"):
    async def run_before(pilot) -> None:
        await pilot.press(queue, "C")
        for _ in range(200):
            await pilot.pause(0.05)
            if _loaded(pilot.app.screen):
                break
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_calibration_view(snap_compare, placed, size):
    app = ReviewApp(placed, read_only_session("snapshot"))
    assert snap_compare(app, terminal_size=size, run_before=_calibration("j"))


def test_calibration_view_without_colour(snap_compare, placed, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = ReviewApp(placed, read_only_session("snapshot"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=_calibration("plus"))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_category_rates(snap_compare, report, size):
    app = ReviewApp(report, read_only_session("snapshot"))
    assert snap_compare(app, terminal_size=size, run_before=_calibration(queue="3"))


def test_category_rates_without_colour(snap_compare, report, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = ReviewApp(report, read_only_session("snapshot"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=_calibration(queue="3"))
