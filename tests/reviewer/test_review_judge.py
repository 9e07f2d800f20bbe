"""The judge's suggestion in the flagged-pair pane: beside the pair, marked a suggestion,
its endpoint's text shown rather than obeyed, reached by key presses.

Items shaped as `scan contamination --judge-config` writes them
(tests/support/review_payloads.py, ``judged_pair``), in a read-only session.
"""

from __future__ import annotations

import pytest

from engine.workspace import BacklogItem, Workspace
from reviewer.app import ReviewApp
from reviewer.session import read_only_session
from tests.support.review_app import detail_on_screen, settle
from tests.support.review_payloads import evidence_pair, judged_pair

pytestmark = pytest.mark.anyio

JUDGED = "fp-judged"


@pytest.fixture
def judged(tmp_path):
    ws = Workspace.init(tmp_path / "ws")
    ws.ingest(
        [
            BacklogItem.make("flagged_pairs", "fp-embedded", "run-test", evidence_pair()),
            BacklogItem.make("flagged_pairs", JUDGED, "run-test", judged_pair()),
        ]
    )
    yield ws
    ws.close()


def _seen(app) -> str:
    return "\n".join(detail_on_screen(app.review))


async def test_the_pane_shows_what_the_judge_suggests_beside_the_pair_as_a_suggestion(judged):
    app = ReviewApp(judged, read_only_session("judge"))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, lambda: app.review.queue_list.current is not None)
        # the likely leak comes first; the unclear item is one key down
        await pilot.press("j")
        await settle(pilot, lambda: app.review.queue_list.current.item_id == JUDGED)
        await settle(pilot, lambda: "suggests" in _seen(app))
        seen = _seen(app)
        assert "triage        unclear" in seen
        assert "judge         suggests: same problem" in seen
        assert "              — same trays and rolls⟨U+202E⟩, reworded ␛[31monly" in seen
        assert "              a suggestion from judge-model-2025-01, not a decision" in seen
        assert "\u202e" not in seen and "\x1b" not in seen
        # the next match: the judge gave no answer, and says why
        await pilot.press("full_stop")
        await settle(pilot, lambda: app.review.message == f"{JUDGED}: match 2 of 2")
        assert (
            "judge         no suggestion: timeout (2 attempt(s) to judge-model-2025-01)"
            in _seen(app)
        )
        # a suggestion decides nothing: the item is still open, its label the triage's
        assert app.review.queue_list.current.item_id == JUDGED
