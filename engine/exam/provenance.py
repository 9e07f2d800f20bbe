"""Where the running sealdesk came from: its git commit and tree, and its lock file.

A sealed artifact binds these beside the hashes of the exam's own source
files. Run from a git checkout of sealdesk, it records the commit, the tree
and whether tracked files had uncommitted changes; run from anywhere else, it
says that it was not run from a checkout. The dependency lock is looked for
by one list of names at the top of the source tree and recorded by SHA-256,
or recorded as none found.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from engine.canonical import sha256_hex

# Lock files at the top of a source tree, in the order they are looked for;
# every one present is bound.
LOCK_FILES = (
    "uv.lock",
    "pylock.toml",
    "poetry.lock",
    "requirements.lock",
    "requirements-lock.txt",
    "requirements.txt",
    "requirements/*.txt",
    "requirements/*.lock",
)
NOT_A_CHECKOUT = "not run from a git checkout of sealdesk"


def source_root() -> Path:
    """Gives the directory holding the ``engine`` package that is running."""
    return Path(__file__).resolve().parent.parent.parent


def _git(root: Path, *args: str) -> str:
    # The caller's GIT_DIR or GIT_WORK_TREE must not make another repository
    # answer for this one, and a repository's own config must not start a
    # file-system monitor program here.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        ["git", "-C", str(root), "-c", "core.fsmonitor=false", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return proc.stdout.strip()


def _unrecorded(reason: str) -> dict[str, Any]:
    return {"commit": None, "tree": None, "dirty": None, "reason": reason}


def checkout(root: Path) -> dict[str, Any]:
    """Gives the commit, tree and dirtiness of the checkout at ``root``, or why there are none."""
    try:
        top = _git(root, "rev-parse", "--show-toplevel")
    except FileNotFoundError:
        return _unrecorded("git is not installed; the commit and tree are not recorded")
    except subprocess.CalledProcessError as exc:
        if "not a git repository" in (exc.stderr or ""):
            return _unrecorded(NOT_A_CHECKOUT)
        first = (exc.stderr or "").strip().splitlines()
        return _unrecorded(f"git failed: {first[0] if first else exc}")
    except subprocess.TimeoutExpired:
        return _unrecorded("git did not answer; the commit and tree are not recorded")
    # An installed copy inside some other repository (a venv in a project) is
    # not a checkout of sealdesk: the package must sit at the repository's top.
    if Path(top).resolve() != root.resolve():
        return _unrecorded(NOT_A_CHECKOUT)
    try:
        commit = _git(root, "rev-parse", "--verify", "HEAD^{commit}")
        tree = _git(root, "rev-parse", "--verify", "HEAD^{tree}")
        dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    except subprocess.CalledProcessError:
        return _unrecorded("the checkout has no commit yet")
    except subprocess.TimeoutExpired:
        return _unrecorded("git did not answer; the commit and tree are not recorded")
    return {"commit": commit, "tree": tree, "dirty": dirty, "reason": None}


def lock_files(root: Path) -> dict[str, Any]:
    """Gives the SHA-256 of each dependency lock file at the top of ``root``, or why none."""
    if not (root / "pyproject.toml").is_file():
        return {"files": {}, "reason": "none found: not run from a source tree"}
    found = {}
    for pattern in LOCK_FILES:
        for path in sorted(root.glob(pattern)):
            if path.is_file():
                found[path.relative_to(root).as_posix()] = sha256_hex(path.read_bytes())
    if not found:
        return {"files": {}, "reason": f"none found (looked for {', '.join(LOCK_FILES)})"}
    return {"files": dict(sorted(found.items())), "reason": None}
