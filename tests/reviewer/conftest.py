"""Fixtures of the review app's tests (tests/conftest.py holds the shared ones: the
workspace, keys, the real CLI, and the ssh/tmux harness)."""

from __future__ import annotations

import pytest

from tests.support.review_app import Desk, populate


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path, monkeypatch):
    """Gives each test its own user state directory (where the app remembers filters,
    sort and theme), so no test reads another's, nor the real user's."""
    config = tmp_path / "user-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.delenv("SEALDESK_CONFIG", raising=False)
    return config / "sealdesk" / "state"


@pytest.fixture
def desk(workspace, enrol) -> Desk:
    """Gives the workspace with demo items and 30 numbered pairs, and its people: rita
    (reviewer), adam (adjudicator), lena (lead and reviewer)."""
    return populate(workspace, enrol)
