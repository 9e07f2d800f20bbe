"""Snapshots of every detail pane at 80x24 and 160x48 (pytest-textual-snapshot).

Read-only sessions on a workspace with an empty ledger, so nothing on screen depends on a
random key, a time or a path.
Update after a deliberate change with: pytest tests/test_review_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from engine.workspace import Workspace
from reviewer.app import ReviewApp
from reviewer.session import read_only_session
from tests.support.review_payloads import demo_items

PANES = {
    # name: (queue key, item id)
    "flagged_pair": ("1", "fp-pair"),
    "duplicate_cluster": ("1", "fp-cluster"),
    "unknown_payload_as_json": ("1", "fp-unknown"),
    "bad_payload": ("1", "fp-bad"),
    "adjudication": ("2", "cand-7-1"),
    "weak_category": ("3", "weak-obfuscation"),
}


@pytest.fixture
def shown(tmp_path):
    # No genesis: its hash (a fresh key, the time of signing) would show in the status bar.
    # Browsing needs no authority record, and a ledger with no records is not un-migrated.
    ws = Workspace.init(tmp_path / "ws")
    ws.ingest(demo_items())
    yield ws
    ws.close()


def _app(ws, **kw) -> ReviewApp:
    return ReviewApp(ws, read_only_session("snapshot"), **kw)


def _goto(queue_key: str, item_id: str):
    async def run_before(pilot) -> None:
        await pilot.press(queue_key)
        review = pilot.app.review
        review.queue_list.cursor = review.ws.position(
            review.queue, item_id, review.view.filters, review.view.sort
        )
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("pane", sorted(PANES))
def test_detail_pane(snap_compare, shown, pane, size):
    assert snap_compare(_app(shown), terminal_size=size, run_before=_goto(*PANES[pane]))


def test_high_contrast_theme_at_80x24(snap_compare, shown):
    assert snap_compare(
        _app(shown, theme="sealdesk-high-contrast"),
        terminal_size=(80, 24),
        run_before=_goto(*PANES["flagged_pair"]),
    )


def test_no_color_still_marks_shared_spans(snap_compare, shown, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(
        _app(shown), terminal_size=(80, 24), run_before=_goto(*PANES["flagged_pair"])
    )


def _keys(*keys: str):
    async def run_before(pilot) -> None:
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_filter_dialog(snap_compare, shown, size):
    assert snap_compare(_app(shown), terminal_size=size, run_before=_keys("f"))


def test_filter_dialog_with_its_status_list_open_at_80x24(snap_compare, shown):
    assert snap_compare(_app(shown), terminal_size=(80, 24), run_before=_keys("f", "space"))


def test_filter_dialog_in_high_contrast_without_colour_at_80x24(snap_compare, shown, monkeypatch):
    # The 16-colour theme with NO_COLOR: the field being edited is marked by attribute.
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(
        _app(shown, theme="sealdesk-high-contrast"),
        terminal_size=(80, 24),
        run_before=_keys("f", "tab"),
    )


def test_high_contrast_without_colour_at_80x24(snap_compare, shown, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(
        _app(shown, theme="sealdesk-high-contrast"),
        terminal_size=(80, 24),
        run_before=_goto(*PANES["flagged_pair"]),
    )
