"""Fixtures of the review app's tests (tests/conftest.py holds the shared ones: the
workspace, keys, the real CLI, and the ssh/tmux harness)."""

from __future__ import annotations

import pytest

from tests.support.review_app import Desk, populate


@pytest.fixture
def desk(workspace, enrol) -> Desk:
    """Gives the workspace with demo items and 30 numbered pairs, and its people: rita
    (reviewer), adam (adjudicator), lena (lead and reviewer)."""
    return populate(workspace, enrol)
