"""The suite's storage guard fires on the code path that lost acknowledged records: a
plain read of the database's header by sealdesk code, in the test's process or in a
subprocess the test starts (tests/support/storage_guard.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.support import storage_guard


def test_the_guard_refuses_a_plain_read_of_a_live_database_by_engine_code(workspace):
    with storage_guard.expecting_offences() as caught:
        with pytest.raises(storage_guard.GuardTripped):
            storage_guard.run_old_header_check(workspace.db_path)
    assert len(caught) == 1
    assert f"opened {workspace.db_path} outside SQLite" in caught[0]
    assert "engine.workspace.base" in caught[0]


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_the_guard_covers_the_files_beside_the_database(workspace, suffix):
    with storage_guard.expecting_offences() as caught:
        with pytest.raises(storage_guard.GuardTripped):
            storage_guard.run_old_header_check(f"{workspace.db_path}{suffix}")
    assert len(caught) == 1


def test_a_test_copying_a_database_file_itself_is_not_an_offence(workspace, tmp_path):
    # The guard is about sealdesk's code; a test may read files it set up.
    workspace.close()
    copy = tmp_path / "copy.db"
    copy.write_bytes(workspace.db_path.read_bytes())
    assert copy.stat().st_size > 0


def test_the_guard_fires_in_a_subprocess_the_suite_starts(workspace, tmp_path):
    log = tmp_path / "offences.log"
    script = (
        "import sys\n"
        "from engine.workspace import Workspace\n"
        "from tests.support.storage_guard import run_old_header_check\n"
        "ws = Workspace.open(sys.argv[1])\n"
        "run_old_header_check(ws.db_path)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(workspace.root)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, storage_guard.LOG_ENV: str(log)},
        timeout=120,
    )
    assert proc.returncode != 0
    assert "GuardTripped" in proc.stderr
    (offence,) = log.read_text().splitlines()
    assert f"opened {workspace.db_path} outside SQLite" in offence
