"""The architecture page's module map is written from the modules' own docstrings, and
``make lint`` fails when it falls behind them."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

PAGE = REPO / "docs" / "architecture.md"
SCRIPT = REPO / ".ci" / "module_map.py"


def test_the_map_names_every_module_with_its_docstring():
    text = PAGE.read_text(encoding="utf-8")
    modules = sorted(
        p.relative_to(REPO) for pkg in ("engine", "reviewer") for p in (REPO / pkg).rglob("*.py")
    )
    assert modules
    for module in modules:
        name = module.parent.name + "/" if module.name == "__init__.py" else module.name
        assert f" {name} " in text or f"\n{name} " in text, f"{module} is not in the map"
    start = text.index("<!-- BEGIN GENERATED: module map")
    block = text[text.index("```text", start) : text.index("<!-- END GENERATED: module map")]
    assert len(block.strip("`\n").splitlines()) - 1 == len(modules)  # one line each
    assert "engine/signoff/run_status.py" in text and "engine/run_status.py" not in text


def test_the_check_fails_on_a_map_behind_the_modules(tmp_path):
    page = tmp_path / "architecture.md"
    text = PAGE.read_text(encoding="utf-8")
    # a module re-described in its docstring but not in the map
    stale = text.replace("Choosing who signs: an explicit key file", "Who signs", 1)
    assert stale != text
    page.write_text(stale, encoding="utf-8")
    run = [sys.executable, str(SCRIPT), "--check", str(page)]
    out = subprocess.run(run, capture_output=True, text=True)
    assert out.returncode == 1 and "the module map differs from the packages" in out.stdout
    assert subprocess.run([sys.executable, str(SCRIPT), str(page)]).returncode == 0
    assert page.read_text(encoding="utf-8") == text
    assert subprocess.run(run).returncode == 0
