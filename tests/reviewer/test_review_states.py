"""States that never mislead, driven by keys: what the screen says about the review's
state (what comes next, who is deciding, which way a number moved, how the list is
ordered) is what holds."""

from __future__ import annotations

import pytest

from engine.workspace import BacklogItem
from reviewer.app import ReviewApp
from reviewer.session import open_session
from tests.support.review_app import detail_on_screen, records, text_of
from tests.support.review_payloads import coverage_producer_category, numbered_pairs

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


def status(app: ReviewApp) -> str:
    return text_of(app.screen.query_one("#status-bar"))


def regression(previous: float, current: float) -> BacklogItem:
    """A weak category as the coverage engine writes one: its recall fell from previous
    to current, and the finding's delta is the drop (previous - current)."""
    payload = coverage_producer_category()
    payload["findings"] = [
        {
            "category": payload["category"],
            "issue": "recall_regression",
            "previous": previous,
            "current": current,
            "delta": previous - current,
            "threshold": 0.05,
        }
    ]
    return BacklogItem.make("weak_categories", "weak-regressed", "run-cov", payload)


async def test_a_recall_that_fell_shows_a_negative_delta(workspace, enrol):
    workspace.ingest([regression(1.0, 0.8)])
    lena = enrol("lena", "lead")
    app = ReviewApp(workspace, open_session(workspace, key=str(lena.path)))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        shown = "\n".join(detail_on_screen(app.review))
    (row,) = [line for line in shown.splitlines() if line.startswith("  recall_regression")]
    assert row.split() == ["recall_regression", "0.800", "1.000", "-0.200", "0.050"], row


async def test_started_as_lead_the_status_bar_and_the_records_say_lead_where_lead_decides(
    desk,
):
    # What `sealdesk review --role lead` opens: lena's key holds lead and reviewer.
    app = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.lena), role="lead"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        assert "lena as lead ·" in status(app)
        await pilot.press("a")
        assert "lena as lead ·" in status(app)
        await pilot.press("1")  # pairs admit the reviewer role only
        assert "lena as reviewer ·" in status(app)
    assert [r[1:6] for r in records(desk.ws)] == [
        ("weak_categories", "weak-obfuscation", "accept", "lena", "lead")
    ]


async def test_started_without_a_role_a_lead_decides_weak_categories_as_reviewer(desk):
    app = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.lena)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        assert "lena as reviewer ·" in status(app)


async def test_a_decision_key_after_skipping_the_last_item_decides_it(desk):
    app = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.rita)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("G")  # the last item
        last = app.review.queue_list.current.item_id
        await pilot.press("space")
        said = status(app)
        assert f"skip {last} · last item, still open: a or x decides it" in said, said
        await pilot.press("x")
        assert app.review.queue_list.current.item_id == last
        assert f"reject {last}" in status(app)
        await pilot.press("a")  # decided now: the queue is at its end for the keys
        assert "end of queue" in status(app)
    assert [r[2:4] for r in records(desk.ws)] == [(last, "skip"), (last, "reject")]


def filter_line(app: ReviewApp) -> str:
    """Gives the filter line as drawn (wrapped, never cut), its lines joined."""
    from textual.geometry import Region

    line = app.review.query_one("#filter-line")
    drawn = line.render_lines(Region(0, 0, line.size.width, line.size.height))
    return " ".join(" ".join(strip.text for strip in drawn).split())


async def test_the_sort_label_says_triage_ranks_before_the_score(workspace, enrol):
    pairs = numbered_pairs(3)  # scores 0.75, 0.5, 0.25
    leak = numbered_pairs(1, prefix="fp-leak")[0].payload
    leak["summary"] = {"title": "a likely leak", "score": 0.1, "tags": ["ngram", "likely_leak"]}
    workspace.ingest([*pairs, BacklogItem.make("flagged_pairs", "fp-leak", "run-test", leak)])
    rita = enrol("rita", "reviewer")
    app = ReviewApp(workspace, open_session(workspace, key=str(rita.path)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("g")
        # The likely leak (score 0.1) heads the list: the label says why.
        assert app.review.queue_list.current.item_id == "fp-leak"
        assert "sort triage, then score ↓" in filter_line(app)
        await pilot.press("o")  # score ascending: triage still ranks first
        assert "sort triage, then score ↑" in filter_line(app)
        await pilot.press("o")  # by id: no triage in it
        assert "sort id ↑" in filter_line(app) and "triage" not in filter_line(app)


async def test_without_triage_tags_the_sort_label_is_the_score_alone(workspace, enrol):
    workspace.ingest(numbered_pairs(3))
    rita = enrol("rita", "reviewer")
    app = ReviewApp(workspace, open_session(workspace, key=str(rita.path)))
    async with app.run_test(size=(80, 24)):
        assert "sort score ↓" in filter_line(app) and "triage" not in filter_line(app)
