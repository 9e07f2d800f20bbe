"""Fixtures of the engine's tests that several areas below share (tests/conftest.py holds
the ones the reviewer's tests use too)."""

from __future__ import annotations

import pytest

from tests.conftest import FOUNDER
from tests.support.backlog import make_items
from tests.support.cli_workspace import found_through_cli


@pytest.fixture
def cli_ws(tmp_path, sealdesk_main, keygen, founder_key):
    """Gives a workspace founded through the CLI (genesis, then rita's enrolment as
    reviewer) holding three items, and the private keys by name ("founder" is the lead
    whose key signs enrolments; "adam" is enrolled in nothing).

    The three commands run in this process (``sealdesk_main``): they only set the stage;
    each test runs the commands it is about as its subject needs.
    """
    ws = tmp_path / "ws"
    keys = {name: keygen(name) for name in ("rita", "adam")}
    found_through_cli(
        sealdesk_main, ws, FOUNDER, founder_key, [("rita", "reviewer", keys["rita"])], make_items(3)
    )
    return ws, {**keys, "founder": founder_key}


@pytest.fixture
def two_reviewers_ws(tmp_path, sealdesk_main, keygen, founder_key):
    """Gives a workspace founded through the CLI with two reviewers (rita, ben) and eight
    items, and their private keys by name."""
    ws = tmp_path / "ws"
    keys = {name: keygen(name) for name in ("rita", "ben")}
    found_through_cli(
        sealdesk_main,
        ws,
        FOUNDER,
        founder_key,
        [("rita", "reviewer", keys["rita"]), ("ben", "reviewer", keys["ben"])],
        make_items(8),
    )
    return ws, keys
