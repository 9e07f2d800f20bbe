"""Evidence first: what decides a flagged pair is on its first screen, and keys reach
each match, the history, the top and the end of the detail.

Items shaped as `scan contamination` writes them (tests/support/review_payloads.py,
``evidence_items``), in a read-only session: moving about needs no key of anyone's.
Update the snapshots after a deliberate change with --snapshot-update.
"""

from __future__ import annotations

import pytest

from engine.workspace import Workspace
from reviewer.app import ReviewApp
from reviewer.session import read_only_session
from tests.support.review_app import detail_on_screen, screen_lines, settle
from tests.support.review_payloads import evidence_items

# In the queue's default order: the ten-match item (a containment copy scores 1.0)
# comes before the one the embeddings alone caught (cosine 0.852).
TEN, EMBEDDED = "fp-ten", "fp-embedded"

# The key-press tests run on asyncio through anyio's pytest plugin.
pytestmark = pytest.mark.anyio


@pytest.fixture
def evidence(tmp_path):
    # No genesis: nothing on screen then depends on a fresh key or the time of signing.
    ws = Workspace.init(tmp_path / "ws")
    ws.ingest(evidence_items())
    yield ws
    ws.close()


def _app(ws) -> ReviewApp:
    return ReviewApp(ws, read_only_session("evidence"))


async def _on(pilot, item_id: str) -> None:
    """Moves the cursor to the item by key presses, as a person does."""
    app = pilot.app
    await settle(pilot, lambda: app.review.queue_list.current is not None)
    if item_id == EMBEDDED:
        await pilot.press("j")
    await settle(pilot, lambda: app.review.queue_list.current.item_id == item_id)


def _seen(app) -> str:
    return "\n".join(detail_on_screen(app.review))


def _first_line(app) -> str:
    return next(line for line in detail_on_screen(app.review) if line.strip())


async def test_the_first_screen_at_80x24_shows_what_decides_an_embedding_only_match(evidence):
    app = _app(evidence)
    async with app.run_test(size=(80, 24)) as pilot:
        await _on(pilot, EMBEDDED)
        seen = _seen(app)
        await pilot.press("w")
        await settle(pilot, lambda: "numbers       this item 50, 4, 2" in _seen(app))
        whole = _seen(app)
    for fact in (
        "triage        likely leak · kept 3/3 numbers",
        "channels      embed",
        # every score against the threshold it is flagged at: only the cosine flags it
        "flagged by    cosine 0.852 ≥ 0.797",
        "not by        Jaccard 0.000 < 0.800,",
        "              containment 0.000 < 0.500",
        # the pair as one word diff, first word to last: the whole pair on one screen
        "[-There were-] {+The server room began the",
        "{+week closes?+}",
    ):
        assert fact in seen, f"{fact!r} is not on the first screen:\n{seen}"
    for fact in (
        "exact Jaccard 0.000 < 0.800",
        "containment   0.000 < 0.500",
        "cosine        0.852 ≥ 0.797 flags",
        "numbers       this item 50, 4, 2",
        "pool 50, 4, four days, 2",
        "kept          3/3 numbers",
        "differ in     words, not only numbers",
        "There were 50 computers in the server",
    ):
        assert fact in whole, f"{fact!r} is not on the first screen of the whole texts:\n{whole}"


async def test_w_shows_the_texts_whole_and_again_as_one_word_diff(evidence):
    app = _app(evidence)
    async with app.run_test(size=(80, 24)) as pilot:
        await _on(pilot, EMBEDDED)
        assert "[-There were-]" in _seen(app) and "╭─ eval" not in _seen(app)
        await pilot.press("w")
        await settle(pilot, lambda: "╭─ eval q-computers" in _seen(app))
        assert app.review.message == "texts shown whole"
        # the choice holds for the next item until switched back
        await pilot.press("k")
        await settle(pilot, lambda: app.review.queue_list.current.item_id == TEN)
        assert "╭─ eval q-computers" in _seen(app)
        await pilot.press("w")
        await settle(pilot, lambda: "╭─ eval" not in _seen(app))
        assert app.review.message == "texts shown as one word diff"


async def test_from_100_columns_the_two_texts_stand_side_by_side(evidence):
    app = _app(evidence)
    async with app.run_test(size=(100, 32)) as pilot:
        await _on(pilot, EMBEDDED)
        await pilot.press("w")
        await settle(pilot, lambda: any("╭─ eval" in line for line in detail_on_screen(app.review)))
        lines = detail_on_screen(app.review)
    both = [line for line in lines if "eval q-computers" in line and "pool doc-016" in line]
    assert both, "\n".join(lines)
    assert any("There were 50" in line and "The server room" in line for line in lines)


async def test_keys_step_through_the_matches_of_an_item(evidence):
    app = _app(evidence)
    async with app.run_test(size=(80, 24)) as pilot:
        await _on(pilot, TEN)
        assert "match 1 of 10: pool doc-016 (#16)" in _seen(app)
        await pilot.press("full_stop")
        await settle(pilot, lambda: _first_line(app).startswith("match 2 of 10: pool forum-001"))
        assert app.review.message == "fp-ten: match 2 of 10"
        await pilot.press("full_stop", "full_stop")
        await settle(pilot, lambda: _first_line(app).startswith("match 4 of 10: pool forum-003"))
        assert "containment 1.000 ≥ 0.500" in " ".join(_seen(app).split())
        await pilot.press("comma")
        await settle(pilot, lambda: _first_line(app).startswith("match 3 of 10: pool forum-002"))
        # back from the second match is the top: the item's header and first facts
        await pilot.press("comma", "comma")
        await settle(pilot, lambda: app.review.query_one("#detail-pane").scroll_y == 0)
        assert _first_line(app).startswith("q-computers: There were 50")
        await pilot.press("comma")
        await settle(
            pilot, lambda: app.review.message == "fp-ten: no match before this one (10 in all)"
        )


async def test_the_last_match_and_the_history_are_one_key_away(evidence):
    app = _app(evidence)
    async with app.run_test(size=(80, 24)) as pilot:
        await _on(pilot, TEN)
        pane = app.review.query_one("#detail-pane")
        await pilot.press("h")
        # the history closes the detail: it comes into view at the bottom of the pane
        await settle(pilot, lambda: "history" in detail_on_screen(app.review))
        assert "no records yet" in _seen(app)
        assert app.review.message == "fp-ten: history"
        await pilot.press("less_than_sign")
        await settle(pilot, lambda: pane.scroll_y == 0)
        for _ in range(9):
            await pilot.press("full_stop")
        await settle(pilot, lambda: _first_line(app).startswith("match 10 of 10: pool doc-044"))
        assert "triage        template sibling · kept 0/3" in _seen(app)
        await pilot.press("full_stop")
        await settle(
            pilot, lambda: app.review.message == "fp-ten: no match after this one (10 in all)"
        )
        assert _first_line(app).startswith("match 10 of 10")
        await pilot.press("greater_than_sign")
        await settle(pilot, lambda: pane.scroll_y == pane.max_scroll_y > 0)
        assert "no records yet" in _seen(app)


async def test_a_new_item_opens_at_its_top(evidence):
    app = _app(evidence)
    async with app.run_test(size=(80, 24)) as pilot:
        await _on(pilot, TEN)
        await pilot.press("h")
        await settle(pilot, lambda: "history" in detail_on_screen(app.review))
        await pilot.press("j")
        await settle(pilot, lambda: app.review.queue_list.current.item_id == EMBEDDED)
        await settle(pilot, lambda: app.review.query_one("#detail-pane").scroll_y == 0)
        assert "flagged by    cosine 0.852 ≥ 0.797" in _seen(app)


def _press(*keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot, lambda: pilot.app.review.queue_list.current is not None)
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_first_screen_of_a_ten_match_item(snap_compare, evidence, size):
    assert snap_compare(_app(evidence), terminal_size=size, run_before=_press())


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_embedding_only_match(snap_compare, evidence, size):
    assert snap_compare(_app(evidence), terminal_size=size, run_before=_press("j"))


def test_snapshot_after_next_match_at_80x24(snap_compare, evidence):
    assert snap_compare(
        _app(evidence), terminal_size=(80, 24), run_before=_press("full_stop", "full_stop")
    )


def test_the_numbers_of_a_duplicate_inside_the_eval_set_are_labelled_by_side():
    from reviewer.panes.flagged import facts
    from tests.support.review_payloads import THRESHOLDS, _sibling_match

    twin = {**_sibling_match(), "kind": "eval", "id": "q-computers-copy"}
    shown = facts(twin, THRESHOLDS).plain
    assert "numbers       this item 50, 4, 2" in shown
    assert "other eval 36, 3, 5" in shown
    assert "pool 36, 3, 5" in facts(_sibling_match(), THRESHOLDS).plain


async def test_the_read_only_banner_is_read_whole_at_80_columns(evidence):
    from tests.support.review_app import screen_lines

    reason = "the workspace is on a read-only mount (opened by another user's ssh-gate)"
    app = ReviewApp(evidence, read_only_session(reason))
    async with app.run_test(size=(80, 24)) as pilot:
        await _on(pilot, TEN)
        top = " ".join(" ".join(line.split()) for line in screen_lines(app)[:3])
    assert f"READ-ONLY: {reason}. Browsing works; decisions are refused." in top, top


async def test_z_zooms_the_detail_and_the_list_still_moves_by_j(evidence):
    app = _app(evidence)
    async with app.run_test(size=(80, 24)) as pilot:
        await _on(pilot, TEN)
        pane = app.review.query_one("#detail-pane")
        narrow = pane.region.width
        await pilot.press("z")
        await settle(pilot, lambda: pane.region.width > narrow)
        assert app.review.message == "detail zoomed"
        # the list keeps each row's status and score at the left edge, and the focus
        rows = [line[:9] for line in screen_lines(app)[1:4]]
        assert rows == [" ·  1.000", " ·  0.852", "         "], rows
        assert pane.region.width >= 64 > narrow
        await pilot.press("j")
        await settle(pilot, lambda: app.review.queue_list.current.item_id == EMBEDDED)
        # the pair of the embedded match, whole, on the zoomed first screen
        assert "{+week closes?+}" in _seen(app)
        await pilot.press("z")
        await settle(pilot, lambda: pane.region.width == narrow)
        assert app.review.message == "list back"
