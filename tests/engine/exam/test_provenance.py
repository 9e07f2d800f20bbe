"""The sealed artifact binds the git commit and tree it was made from, and the lock file.

Each case runs the real CLI from a copy of this checkout's ``engine`` package
placed somewhere else: a git checkout of its own, a plain directory, and a
directory inside another repository.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from engine.canonical import sha256_hex
from tests.conftest import REPO
from tests.support.exam_builders import claim, write_exam

LOCK = "click==8.1.7 \\\n    --hash=sha256:" + "ab" * 32 + "\n"


def _git(where, *args) -> str:
    return subprocess.run(
        ["git", "-C", str(where), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _source_tree(root, *, lock: bool):
    root.mkdir(parents=True)
    shutil.copytree(REPO / "engine", root / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    if lock:
        (root / "requirements.lock").write_text(LOCK)
    return root


@pytest.fixture
def exam(tmp_path):
    lane = {"c1": [claim("The API is live.")]}
    return write_exam(tmp_path / "in", {"c1": "The API is live."}, lane, lane)


def _code_of(sealdesk, tmp_path, exam, source, run_id):
    """Gives the artifact's code identity, after checking the CLI said the same."""
    from engine.workspace import Workspace

    ws = tmp_path / f"ws-{run_id}"
    Workspace.init(ws).close()
    proc = sealdesk(
        "exam",
        "adjudicate",
        "--run-id",
        run_id,
        *exam.cli_inputs(),
        workspace=ws,
        env={"PYTHONPATH": str(source)},
        check=True,
    )
    code = json.loads((ws / "artifacts" / run_id / "exam-adjudication.json").read_bytes())["code"]
    held = code["checkout"]
    where = f"commit {held['commit']} tree {held['tree']}" if held["commit"] else held["reason"]
    assert f"code: {where}" in proc.stdout
    assert f"; lock: {', '.join(code['lock']['files']) or code['lock']['reason']}" in proc.stdout
    return code


def test_from_a_checkout_the_artifact_binds_its_commit_tree_and_lock(sealdesk, tmp_path, exam):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = _source_tree(tmp_path / "checkout", lock=True)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a sealdesk tree")
    code = _code_of(sealdesk, tmp_path, exam, repo, "clean")
    assert code["checkout"] == {
        "commit": _git(repo, "rev-parse", "HEAD"),
        "tree": _git(repo, "rev-parse", "HEAD^{tree}"),
        "dirty": False,
        "reason": None,
    }
    assert code["lock"] == {
        "files": {"requirements.lock": sha256_hex(LOCK.encode())},
        "reason": None,
    }
    # A tracked file changed after the commit: the commit no longer describes the code.
    with open(repo / "pyproject.toml", "a") as f:
        f.write("\n# edited\n")
    assert _code_of(sealdesk, tmp_path, exam, repo, "edited")["checkout"]["dirty"] is True


def test_outside_a_checkout_the_artifact_says_so_and_finds_no_lock(sealdesk, tmp_path, exam):
    plain = _source_tree(tmp_path / "plain", lock=False)
    code = _code_of(sealdesk, tmp_path, exam, plain, "plain")
    assert code["checkout"] == {
        "commit": None,
        "tree": None,
        "dirty": None,
        "reason": "not run from a git checkout of sealdesk",
    }
    assert code["lock"]["files"] == {}
    assert code["lock"]["reason"].startswith("none found (looked for uv.lock, ")
    assert "requirements.lock" in code["lock"]["reason"]


def test_a_copy_inside_another_repository_is_not_that_repositorys_checkout(
    sealdesk, tmp_path, exam
):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    outer = tmp_path / "project"
    vendored = _source_tree(outer / "vendor" / "sealdesk", lock=True)
    _git(outer, "init", "-q")
    _git(outer, "add", "-A")
    _git(outer, "commit", "-qm", "a project that vendors sealdesk")
    code = _code_of(sealdesk, tmp_path, exam, vendored, "vendored")
    assert code["checkout"]["commit"] is None
    assert code["checkout"]["reason"] == "not run from a git checkout of sealdesk"
    assert code["lock"]["files"] == {"requirements.lock": sha256_hex(LOCK.encode())}
