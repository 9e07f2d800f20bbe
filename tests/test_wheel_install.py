"""sealdesk as a user installs it: the wheel, in a venv outside the checkout, used from elsewhere;
and the lock that pins, by hash, what it runs on.

The wheel is built from a copy of the checkout without tests/ and sample_data/,
installed with --no-deps into a fresh venv, and every command runs from a
directory outside the checkout with no PYTHONPATH. Third-party packages come
from this interpreter's site-packages through a .pth file (a full install of
torch and the rest would take minutes and GBs); sealdesk's own code, themes and
data come only from the wheel, which one test proves.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import time
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO, require_tool
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args

pytestmark = pytest.mark.xdist_group("wheel_install")

# What a build never needs; left out of the copy so the wheel cannot lean on it.
_NOT_COPIED = {
    ".git",
    ".venv",
    ".venv-lock",
    "build",
    "dist",
    "tests",
    "sample_data",
    "docs",
    ".pytest_cache",
    ".hypothesis",
    "workspace",
    "demo-workspace",
    "demo-workspace-receipts",
}
_POOL_COPY = (
    "Mara packed 14 jars of plum jam into boxes of four and carried the remainder "
    "home on her bicycle before the evening rain started over the valley."
)


@dataclass(frozen=True)
class Installed:
    """A venv holding only the sealdesk wheel, and how to run commands in it."""

    wheel: Path
    venv: Path
    site_packages: Path
    outside: Path  # a directory outside the checkout, the cwd of every command
    env: dict[str, str]

    def run(self, *args: str) -> subprocess.CompletedProcess:
        """Gives the finished process of ``args`` run from outside the checkout."""
        return subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            check=False,
            cwd=self.outside,
            env=self.env,
            timeout=600,
        )

    def sealdesk(self, *args: str) -> subprocess.CompletedProcess:
        """Gives the finished ``sealdesk`` console script of the venv, run with args."""
        return self.run(str(self.venv / "bin" / "sealdesk"), *args)


def _copy_for_build(dest: Path) -> None:
    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n == "__pycache__" or n.endswith(".egg-info")}
        if Path(folder).resolve() == REPO:
            skipped |= _NOT_COPIED & set(names)
        return skipped

    # symlinks=True: reviewer/themes stays the link to themes/ that a clone has.
    shutil.copytree(REPO, dest, symlinks=True, ignore=ignore)


def _locked_pins(lock: Path) -> dict[str, tuple[str, int]]:
    """Gives {canonical name: (pinned version, number of hashes)} of a pip-compile lock."""
    pins: dict[str, tuple[str, int]] = {}
    name = None
    for line in lock.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if text and not text.startswith(("#", "-")) and "==" in text:
            name, version = text.rstrip(" \\").split("==")
            name = canonicalize_name(name)
            pins[name] = (version, 0)
        elif text.startswith("--hash=sha256:") and name is not None:
            pins[name] = (pins[name][0], pins[name][1] + 1)
    return pins


def test_the_lock_pins_every_declared_requirement_by_hash_and_torch_is_the_cpu_build():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    declared = [
        *project["build-system"]["requires"],
        *project["project"]["dependencies"],
        *(r for extra in project["project"]["optional-dependencies"].values() for r in extra),
    ]
    pins = _locked_pins(REPO / "requirements.lock")
    for text in declared:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is declared but not locked: run make lock"
        assert req.specifier.contains(pins[name][0], prereleases=True), (text, pins[name])
    assert [n for n, (_, hashes) in pins.items() if hashes == 0] == []
    # The CPU build pip takes from this machine's disk; a CUDA build drags in nvidia-*.
    assert pins["torch"][0].endswith("+cpu")
    assert [n for n in pins if n.startswith(("nvidia-", "triton"))] == []


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    """Gives the sealdesk wheel built from this checkout, installed in a fresh venv."""
    base = tmp_path_factory.mktemp("wheel")
    assert REPO not in base.resolve().parents, "the test's files must lie outside the checkout"
    src, dist, venv, outside = base / "src", base / "dist", base / "venv", base / "elsewhere"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SEALDESK_WORKSPACE")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    _copy_for_build(src)

    def step(*args: str) -> None:
        proc = subprocess.run(
            list(args), capture_output=True, text=True, check=False, cwd=base, env=env, timeout=600
        )
        assert proc.returncode == 0, f"{' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"

    # No build isolation: the locked setuptools builds it and nothing is fetched.
    step(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--wheel-dir",
        str(dist),
        str(src),
    )
    (wheel,) = dist.glob("sealdesk-*.whl")
    step(sys.executable, "-m", "venv", str(venv))
    step(
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-index",
        str(wheel),
    )
    (site_packages,) = venv.glob("lib/python*/site-packages")
    # Plain path lines: the .pth files there (this checkout's editable install among
    # them) are not run, so only third-party packages are reached through it.
    deps = [p for p in dict.fromkeys(site.getsitepackages()) if Path(p).is_dir()]
    (site_packages / "sealdesk-test-deps.pth").write_text("\n".join(deps) + "\n")
    outside.mkdir()
    return Installed(wheel, venv, site_packages.resolve(), outside, env)


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _founded_workspace(installed: Installed, name: str) -> tuple[Path, Path]:
    """Gives (workspace, lead key) of a workspace the installed `sealdesk init` made."""
    key = installed.outside / f"{name}-lead"
    subprocess.run(
        [
            require_tool("ssh-keygen"),
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "lena@wheel",
            "-f",
            str(key),
        ],
        check=True,
        capture_output=True,
    )
    ws = installed.outside / name
    init = installed.sealdesk("--workspace", str(ws), "init", "--lead", "lena", "--key", str(key))
    assert init.returncode == 0, init.stderr
    assert "genesis: lena" in init.stdout
    return ws, key


def _tiny_scan_inputs(folder: Path) -> tuple[Path, Path]:
    eval_path = _write_jsonl(
        folder / "eval.jsonl",
        [
            {"id": "q-jam", "question": _POOL_COPY},
            {
                "id": "q-kite",
                "question": "How many kites can Tomas build from 9 metres of string "
                "when each kite needs exactly 150 centimetres of it?",
            },
        ],
    )
    pool_path = _write_jsonl(
        folder / "pool.jsonl",
        [
            {"id": "p-forum", "text": "From a cooking forum: " + _POOL_COPY + " Nobody asked."},
            {
                "id": "p-harbour",
                "text": "The harbour lights were repaired in spring after the long storm season.",
            },
        ],
    )
    return eval_path, pool_path


@pytest.mark.slow
def test_the_wheel_carries_every_file_of_the_packages_and_every_theme(installed):
    shipped = set(zipfile.ZipFile(installed.wheel).namelist())
    wanted = {f"reviewer/themes/{p.name}" for p in (REPO / "themes").glob("*.toml")}
    for top in ("engine", "reviewer"):
        for folder, dirs, files in os.walk(REPO / top, followlinks=True):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            rel = Path(folder).relative_to(REPO)
            wanted |= {(rel / f).as_posix() for f in files if not f.endswith(".pyc")}
    assert {
        "reviewer/themes/dark.toml",
        "reviewer/review.tcss",
        "engine/contamination/calibration.jsonl",
    } <= wanted
    assert sorted(wanted - shipped) == []
    assert not [n for n in shipped if n.startswith(("tests/", "sample_data/", "themes/"))]


@pytest.mark.slow
def test_sealdesks_code_themes_and_data_come_only_from_the_installed_wheel(installed):
    # The calibration set is looked up where the scan finds it (package data of
    # engine.contamination), whichever module of the engine holds the constant.
    probe = (
        "import json, sys, engine, reviewer\n"
        "from importlib import resources\n"
        "from reviewer.theming import theme_dirs\n"
        "calibration = resources.files('engine.contamination') / 'calibration.jsonl'\n"
        "print(json.dumps({'engine': engine.__file__, 'reviewer': reviewer.__file__,\n"
        "  'themes': str(theme_dirs()[0]), 'calibration': str(calibration),\n"
        "  'calibration_is_file': calibration.is_file(),\n"
        "  'path': sys.path, 'finders': [type(f).__module__ for f in sys.meta_path]}))\n"
    )
    out = installed.run(str(installed.venv / "bin" / "python"), "-c", probe)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    site_packages = installed.site_packages
    assert seen["calibration_is_file"]
    for name in ("engine", "reviewer", "themes", "calibration"):
        assert site_packages in Path(seen[name]).resolve().parents, (name, seen[name])
    # Only the wheel's copy is reachable: no path entry but the venv's offers the
    # packages, the checkout is not on the path, and no editable-install finder runs.
    for package in ("engine", "reviewer"):
        offering = [
            Path(p).resolve()
            for p in seen["path"]
            if (Path(p or installed.outside) / package / "__init__.py").is_file()
        ]
        assert offering == [site_packages], (package, offering)
    assert not [p for p in seen["path"] if p and Path(p).resolve() == REPO]
    assert not [f for f in seen["finders"] if "editable" in f]


@pytest.mark.slow
def test_the_engines_entry_point_offers_the_apps_commands_the_wheel_declares(installed):
    # `python -m engine.cli` names no app: it finds `review` and `bench review` in the
    # wheel's `sealdesk.commands` entry points.
    python = str(installed.venv / "bin" / "python")
    top = installed.run(python, "-m", "engine.cli", "--help")
    bench = installed.run(python, "-m", "engine.cli", "bench", "--help")
    assert top.returncode == bench.returncode == 0, top.stderr + bench.stderr
    assert "\n  review " in top.stdout
    assert "\n  review " in bench.stdout and "\n  ledger " in bench.stdout


@pytest.mark.slow
@pytest.mark.needs_tmux
def test_help_init_scan_and_the_review_app_work_from_the_installed_wheel(installed, tmux):
    help_ = installed.sealdesk("--help")
    assert help_.returncode == 0, help_.stderr
    assert "review" in help_.stdout and "scan" in help_.stdout

    ws, _key = _founded_workspace(installed, "ws")
    eval_path, pool_path = _tiny_scan_inputs(installed.outside)
    scan = installed.sealdesk(
        "--workspace",
        str(ws),
        *scan_args(
            str(eval_path),
            str(pool_path),
            *SAMPLE_FIELDS,
            "--no-embed",
        ),
    )
    assert scan.returncode == 0, scan.stderr
    items = installed.sealdesk("--workspace", str(ws), "items", "--json")
    assert items.returncode == 0, items.stderr
    flagged = json.loads(items.stdout)
    assert [(i["queue"], i["title"].split(":")[0]) for i in flagged] == [("flagged_pairs", "q-jam")]

    done = installed.outside / "review-exit-code"
    # env -i: the app sees only what a user's shell would give it, no PYTHONPATH. The
    # pane outlives the app so that a crash is still on the screen the test shows.
    command = (
        f"cd {installed.outside} && env -i HOME={os.environ.get('HOME', '/root')} "
        f"PATH={installed.env['PATH']} TERM=xterm-256color LANG=C.UTF-8 "
        f"sealdesk --workspace {ws} review --read-only; echo $? > {done}; sleep 600"
    )
    tmux.new("review", command, width=110, height=30)
    screen = tmux.wait_for("review", "1 shown")
    assert "READ-ONLY" in screen and "q-jam" in screen
    tmux("send-keys", "-t", "review", "q")
    deadline = time.monotonic() + 30
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None,
    reason="the embedding channel needs sealdesk[embed]",
)
def test_an_embedding_scan_calibrates_on_the_set_the_wheel_ships(installed):
    ws, _key = _founded_workspace(installed, "ws-embed")
    folder = installed.outside / "embed-inputs"
    folder.mkdir()
    eval_path, pool_path = _tiny_scan_inputs(folder)
    scan = installed.sealdesk(
        "--workspace",
        str(ws),
        *scan_args(
            str(eval_path),
            str(pool_path),
            *SAMPLE_FIELDS,
        ),
    )
    assert scan.returncode == 0, scan.stderr
    (report_path,) = (ws / "artifacts").glob("contam-*/contamination_report.json")
    calibration = json.loads(report_path.read_text())["embedding"]["calibration"]
    assert installed.site_packages in Path(calibration["file"]).resolve().parents
    packaged = REPO / "engine" / "contamination" / "calibration.jsonl"
    assert calibration["file_sha256"] == hashlib.sha256(packaged.read_bytes()).hexdigest()
