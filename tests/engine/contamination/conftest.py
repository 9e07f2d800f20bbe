"""Fixtures of the contamination tests (tests/conftest.py holds the shared ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """Gives the root of a new workspace made by ``Workspace.init`` (its ledger not founded)."""
    root = tmp_path / "ws"
    Workspace.init(root).close()
    return root
