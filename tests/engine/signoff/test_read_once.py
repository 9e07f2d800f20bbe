"""A sign-off reads each artifact once, without following links.

The attack: the sign-off hashed an artifact in one read and parsed the
numbers it shows and binds in another, so swapping the file between the two
(by ``rename``, in a loop) bound the genuine hash with the forged numbers.
Here the swap is made deterministically, from an audit hook, at the moment a
second open of the artifact would happen. And a symbolic link (or a pipe)
put in an artifact's place is refused by name at sign-off, and named by
``verify`` when it replaces an artifact a sign-off bound.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from engine.artifacts import write_json_artifact
from engine.canonical import sha256_hex
from engine.signoff.run_status import run_status
from engine.signoff.summary import sign_off
from tests.engine.signoff.test_artifacts import (
    assert_refused,
    exam_scored,
    records,
    signoff,
)

SCORE = "exam-score.json"


@pytest.fixture
def lena(enrol):
    return enrol("lena", "lead", "reviewer")


_WATCH: dict[str, object] = {}  # the one audit hook's state; empty when no test watches


def _on_open(event: str, args: tuple) -> None:
    """Counts opens of the watched artifact; at the second, swaps the forged bytes in
    first, as the racing rename did."""
    if event != "open" or not _WATCH or not str(args[0]).endswith(SCORE):
        return
    opened = _WATCH["opened"]
    assert isinstance(opened, list)
    opened.append(args[0])
    if len(opened) == 2:
        forged = _WATCH["forged"]
        assert isinstance(forged, Path)
        os.replace(forged, forged.with_name(SCORE))


sys.addaudithook(_on_open)  # audit hooks cannot be removed: _WATCH switches it off


def test_the_numbers_bound_come_from_the_bytes_whose_hash_is_bound(
    sealdesk, workspace, lena, tmp_path
):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    genuine = path.read_bytes()
    forged = json.loads(genuine)
    forged["status"] = "FAIL"
    forged["gates"] = [{**g, "value": 0.99, "pass": False} for g in forged["gates"]]
    write_json_artifact(path.with_name(".forged"), forged)
    path.with_name(".forged.sha256").unlink()
    opened: list[object] = []
    _WATCH.update(opened=opened, forged=path.with_name(".forged"))
    try:
        record = sign_off(workspace, lena)
    finally:
        _WATCH.clear()
    assert len(opened) == 1, opened  # one open of the artifact for the whole sign-off
    data = record.body["data"]
    assert data["artifacts"][f"ex/{SCORE}"] == sha256_hex(genuine)
    assert data["status"]["exam"]["state"] == json.loads(genuine)["status"] == "PASS"
    shown = {g["name"]: g["value"] for g in data["status"]["exam"]["gates"]}
    assert shown == {g["metric"]: g["value"] for g in json.loads(genuine)["gates"]}
    assert 0.99 not in shown.values()


def test_an_artifact_replaced_by_a_symlink_is_refused_at_signoff_by_name(
    sealdesk, workspace, lena, tmp_path
):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    # The link points at the very same bytes: only the link itself is refused.
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)
    before = records(workspace)
    done = signoff(sealdesk, workspace, lena)
    assert_refused(done, workspace, before, f"artifacts/ex/{SCORE}")
    assert f"artifacts/ex/{SCORE}: is a symbolic link" in done.stderr


def test_a_pipe_in_an_artifacts_place_is_refused_without_waiting_for_a_writer(
    sealdesk, workspace, lena, tmp_path
):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    path.unlink()
    os.mkfifo(path)
    before = records(workspace)
    done = signoff(sealdesk, workspace, lena)
    assert_refused(done, workspace, before, f"artifacts/ex/{SCORE}")
    assert f"artifacts/ex/{SCORE}: is a pipe, not a regular file" in done.stderr


def test_a_linked_run_directory_is_refused_at_signoff(sealdesk, workspace, lena, tmp_path):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    moved = tmp_path / "moved-run"
    path.parent.rename(moved)
    path.parent.symlink_to(moved, target_is_directory=True)
    assert "artifacts/ex: is a symbolic link" in " ".join(
        run_status(workspace.artifacts_dir).refused
    )
    before = records(workspace)
    done = signoff(sealdesk, workspace, lena)
    assert_refused(done, workspace, before, "artifacts/ex")


def test_verify_names_a_signed_off_artifact_replaced_by_a_symlink(
    sealdesk, workspace, lena, tmp_path
):
    path = exam_scored(sealdesk, workspace, tmp_path, lena.path)
    assert signoff(sealdesk, workspace, lena).returncode == 0
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)
    done = sealdesk("verify", workspace=workspace.root)
    assert done.returncode == 1
    assert done.stderr.startswith(f"FAIL: artifacts/ex/{SCORE}: ")
    assert "is a symbolic link, not a regular file" in done.stderr
    assert "outside artifacts/" not in done.stderr
