"""The engine never imports Textual: it must run headless, in jobs and on servers."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import engine
from tests.conftest import REPO


def engine_modules() -> list[str]:
    """Gives engine, engine.cli, engine.workspace, engine.jobs and each engine subpackage
    (with its cli module when it has one)."""
    names = ["engine", "engine.cli", "engine.workspace", "engine.jobs", "engine.item_query"]
    for info in pkgutil.iter_modules(engine.__path__, "engine."):
        if info.ispkg:
            names.append(info.name)
            if (REPO / info.name.replace(".", "/") / "cli.py").exists():
                names.append(f"{info.name}.cli")
    return names


def test_importing_the_engine_leaves_textual_unloaded():
    modules = engine_modules()
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "loaded = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
            "print(len(loaded), loaded[:5])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True)
    assert out.stdout.startswith("0 "), f"engine imported textual: {out.stdout}"


def test_the_review_command_module_defers_textual_until_it_runs():
    # `sealdesk --help` lists `review` by importing reviewer.cli; that must stay cheap.
    code = "import sys, reviewer.cli; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True)
    assert out.stdout.strip() == "False"
