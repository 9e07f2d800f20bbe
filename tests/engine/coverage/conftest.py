"""Fixtures of the coverage tests (tests/conftest.py holds the shared ones; the data they
build on is tests/support/coverage.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.coverage import Authority


@pytest.fixture
def auth(tmp_path: Path) -> Authority:
    """Gives the holdout, scope and benchmark authorities (real Ed25519 keys) under tmp_path."""
    return Authority(tmp_path)
