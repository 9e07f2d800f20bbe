"""The calibration view, driven by keys: histograms of a run's scores, its bands one key
away from their items in the flagged-pairs queue."""

from __future__ import annotations

import pytest

from reviewer.app import ReviewApp
from reviewer.calibration_screen import CalibrationScreen, RatesScreen
from reviewer.session import open_session
from tests.support.calibration import (
    in_band,
    payloads,
    place_run,
    scan_sample,
    stored_benchmark,
)
from tests.support.review_app import notices, records, settle, text_of

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


def listed(app: ReviewApp) -> list[str]:
    lst = app.review.queue_list
    return sorted(lst.row(i).item_id for i in range(lst.total))


async def open_calibration(pilot, app: ReviewApp) -> CalibrationScreen:
    await pilot.press("C")
    await settle(pilot, lambda: isinstance(app.screen, CalibrationScreen) and app.screen.dist)
    return app.screen


async def test_enter_shows_the_band_of_a_real_scan_and_its_items_are_decidable(
    workspace, enrol, sealdesk
):
    rita = enrol("rita", "reviewer")
    run_id = scan_sample(sealdesk, workspace.root, "--containment", "0.6")
    expected = in_band(payloads(workspace, run_id), "containment", 0.55, 0.65)
    assert len(expected) == 3  # the sample's pairs at containment 0.61 and 0.63
    app = ReviewApp(workspace, open_session(workspace, key=str(rita.path)))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_calibration(pilot, app)
        shown = text_of(screen.query_one("#calibration"))
        assert "containment ≥ 0.60" in shown and "band 0.55..0.65: 3 items" in shown
        await pilot.press("j", "enter")
        assert app.screen is app.review
        assert listed(app) == expected
        assert "band containment 0.55..0.65" in text_of(app.review.query_one("#filter-line"))
        first = app.review.queue_list.current.item_id
        await pilot.press("a")
    assert [r[2:4] for r in records(workspace)] == [(first, "accept")]


async def test_plus_widens_the_band_before_enter(workspace, enrol):
    rita = enrol("rita", "reviewer")
    items = place_run(workspace)
    app = ReviewApp(workspace, open_session(workspace, key=str(rita.path)))
    async with app.run_test(size=SIZE) as pilot:
        await open_calibration(pilot, app)
        await pilot.press("j", *["plus"] * 5, "enter")
        assert listed(app) == in_band(items, "containment", 0.4, 0.6)
        assert len(listed(app)) == 8


async def test_esc_leaves_the_queue_as_it_was(workspace, enrol):
    rita = enrol("rita", "reviewer")
    place_run(workspace)
    app = ReviewApp(workspace, open_session(workspace, key=str(rita.path)))
    async with app.run_test(size=SIZE) as pilot:
        await open_calibration(pilot, app)
        await pilot.press("j", "escape")
        assert app.screen is app.review
        assert app.review.queue_list.total == 27


async def test_a_channel_the_run_did_not_use_has_no_band(workspace, enrol, sealdesk):
    rita = enrol("rita", "reviewer")
    scan_sample(sealdesk, workspace.root)  # --no-embed
    app = ReviewApp(workspace, open_session(workspace, key=str(rita.path)))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_calibration(pilot, app)
        assert "embed cosine · 0 pairs · no threshold" in text_of(screen.query_one("#calibration"))
        await pilot.press("j", "j", "enter")
        assert app.screen is screen
        assert "embed has no threshold in this run" in notices(app)


async def test_a_report_edited_after_the_scan_draws_no_line(workspace, enrol):
    rita = enrol("rita", "reviewer")
    place_run(workspace)
    report = workspace.artifacts_dir / "contam-placed" / "contamination_report.json"
    report.write_text('{"thresholds":{"containment_flag":0.9}}')
    app = ReviewApp(workspace, open_session(workspace, key=str(rita.path)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("C")
        screen = app.screen
        assert isinstance(screen, CalibrationScreen)
        area = screen.query_one("#calibration")
        await settle(pilot, lambda: "could not read" in text_of(area))
        assert "sidecar" in text_of(area) or "sha256" in text_of(area)
        await pilot.press("enter")
        assert app.screen is screen  # nothing read, nothing to filter by


# -- the lead's rates ------------------------------------------------------------------


async def test_c_on_a_weak_category_draws_each_category_against_the_policy(
    workspace, enrol, tmp_path
):
    lena = enrol("lena", "lead")
    source, document = stored_benchmark(workspace, tmp_path / "benchmark")
    app = ReviewApp(workspace, open_session(workspace, key=str(lena.path)))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3", "C")
        screen = app.screen
        assert isinstance(screen, RatesScreen)
        area = screen.query_one("#calibration")
        await settle(pilot, lambda: screen.rates is not None)
        lines = text_of(area).splitlines()
        assert f"benchmark {source.sha256[:16]}…" in lines[0]
        issues = {f["category"]: f["issue"] for f in document["weak_categories"]}
        for row in document["stratified_report"]:
            recall = row["detection_recall"]
            value = recall if recall is not None else row["false_positive_rate"]
            (line,) = [x for x in lines if x.startswith(f" {row['category']} ")]
            assert f"{value:.2f}" in line
            assert line.endswith(
                f"✗ {issues[row['category']]}" if row["category"] in issues else "✓"
            )
        await pilot.press("escape")
        assert app.screen is app.review


async def test_c_on_an_item_that_names_no_report_is_refused(desk):
    app = ReviewApp(desk.ws, open_session(desk.ws, key=str(desk.lena)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "g", "C")  # the demo weak item has no source digest
        assert app.screen is app.review
        assert "names no coverage report or benchmark" in notices(app)


async def test_the_threshold_in_a_channels_title_is_shown_to_its_last_digit(workspace, enrol):
    rita = enrol("rita", "reviewer")
    place_run(workspace, {"jaccard_flag": 0.8, "containment_flag": 0.7972, "cosine_flag": 0.9})
    app = ReviewApp(workspace, open_session(workspace, key=str(rita.path)))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_calibration(pilot, app)
        shown = text_of(screen.query_one("#calibration"))
    assert "containment ≥ 0.7972 ·" in shown, shown
    assert "≥ 0.80 " in shown and "≥ 0.90 " in shown  # jaccard and cosine, as recorded
