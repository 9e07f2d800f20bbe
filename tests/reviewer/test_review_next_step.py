"""Each role's next step, driven by keys: the adjudicator reads the rubric, is told when
the queue is done, resolves the exam as a background job and sees COMPLETE."""

from __future__ import annotations

import pytest

from engine.exam.protocol import RUBRIC_ID, RUBRIC_TEXT, rubric_sha256
from engine.signoff.summary import signoff_summary
from reviewer.app import ReviewApp
from reviewer.jobs_screen import JobsScreen
from reviewer.session import open_session
from tests.support.exam_builders import split_exam_run
from tests.support.review_app import notices, records, settle, text_of

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


@pytest.fixture
def exam_desk(workspace, enrol, tmp_path):
    """Gives (app for adam the adjudicator, {span: item id}) on a PENDING exam run ex1."""
    items = split_exam_run(tmp_path / "exam", workspace)
    adam = enrol("adam", "adjudicator")
    return ReviewApp(workspace, open_session(workspace, key=str(adam.path))), items


def jobs_body(app) -> str:
    return " ".join(text_of(app.screen.query_one("#jobs-body")).split())


async def test_the_adjudication_pane_shows_the_frozen_rubric_with_its_hash(exam_desk):
    app, _ = exam_desk
    async with app.run_test(size=SIZE):
        detail = text_of(app.review.query_one("#detail"))
    assert f"rubric {RUBRIC_ID}" in detail and f"sha256 {rubric_sha256()}" in detail
    flat = " ".join(detail.split())
    for line in RUBRIC_TEXT.splitlines():
        assert " ".join(line.split()) in flat
    assert f"judged against rubric {RUBRIC_ID}, at the end of this pane" in flat


async def test_deciding_the_last_candidate_offers_resolve_and_the_job_says_complete(
    exam_desk, workspace
):
    app, _ = exam_desk
    assert signoff_summary(workspace).holds  # the lead's sign-off waits for the exam
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a")
        assert "Adjudication done" not in str([n.title for n in app._notifications])
        await pilot.press("x")
        assert "R offers exam resolve as a background job" in notices(app)
        assert "adjudication done: R resolves the exam" in text_of(
            app.review.query_one("#status-bar")
        )
        await pilot.press("R")
        assert isinstance(app.screen, JobsScreen)
        assert app.screen.query_one("#job-command").value == "exam resolve --run-id ex1"
        await pilot.press("enter")
        await settle(
            pilot,
            lambda: "COMPLETE: applied 2 adjudicator decision(s)" in jobs_body(app),
            timeout=90,
        )
        body = jobs_body(app)
        await pilot.press("escape")
        await settle(
            pilot, lambda: "done: COMPLETE" in text_of(app.review.query_one("#jobs-strip"))
        )
    # Both lines the run printed: the outcome and where it wrote the resolved artifact.
    assert "│ COMPLETE: applied 2 adjudicator decision(s); 0 undecided, 0 skipped" in body
    assert "│ wrote " in body and "exam-adjudication.json (sha256" in body
    assert [r[3] for r in records(workspace)] == ["accept", "reject"]
    resolved = signoff_summary(workspace)
    assert resolved.exam.adjudication == "COMPLETE" and resolved.holds == []


async def test_resolve_is_refused_while_a_candidate_is_undecided(exam_desk):
    app, _ = exam_desk
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a", "R")
        assert app.screen is app.review
        assert (
            "run ex1 has 1 adjudication item(s) not accepted or rejected; resolving it now "
            "would leave the exam PENDING_ADJUDICATION" in notices(app)
        )
