"""The architecture page's module map is written from the modules' own docstrings, its
house (rooms on floors) from their imports, and ``make lint`` fails when either falls
behind them or when rooms import each other in a circle."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

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


def _script():
    spec = importlib.util.spec_from_file_location("module_map", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_house_stands_every_room_above_the_rooms_it_imports():
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("<!-- BEGIN GENERATED: house")
    block = text[text.index("```text", start) + 8 : text.index("<!-- END GENERATED: house")]
    floor, arrows, room = {}, {}, ""
    for line in block.strip("`\n").splitlines():
        head, _, rest = line.partition("->") if "->" in line else ("", "", line)
        if line.startswith("floor"):
            _, number, room = head.split()
            floor[room], arrows[room] = int(number), []
        arrows[room].extend(r.strip(",") for r in rest.split() if r.endswith(("/", ".py", ",")))
    assert floor["reviewer/"] == max(floor.values())
    assert floor["engine/errors.py"] == 1 and arrows["engine/errors.py"] == []
    assert "engine/workspace/" in arrows["engine/cli/"]
    for room, below in arrows.items():
        assert all(floor[other] < floor[room] for other in below), room
    # every module of the engine stands in a room of the drawing
    for path in (REPO / "engine").iterdir():
        if path.name != "__init__.py" and (path.suffix == ".py" or (path / "__init__.py").exists()):
            assert f"engine/{path.name}{'/' if path.is_dir() else ''}" in floor, path


def test_the_check_fails_on_a_house_behind_the_imports(tmp_path):
    page = tmp_path / "architecture.md"
    text = PAGE.read_text(encoding="utf-8")
    # an import the drawing does not show: jobs no longer drawn importing the command tree
    stale = re.sub(r"(engine/jobs\.py +-> )engine/cli/, ", r"\1", text, count=1)
    assert stale != text
    page.write_text(stale, encoding="utf-8")
    run = [sys.executable, str(SCRIPT), "--check", str(page)]
    out = subprocess.run(run, capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout.endswith(
        ": the house differs from the imports; run make docs\n"
    )
    assert subprocess.run([sys.executable, str(SCRIPT), str(page)]).returncode == 0
    assert page.read_text(encoding="utf-8") == text


def test_rooms_that_import_each_other_have_no_floors_and_are_named():
    script = _script()
    house = {"a/": {"b.py"}, "b.py": {"c/"}, "c/": {"a/"}, "d.py": set()}
    with pytest.raises(
        SystemExit, match="the house has a circle, so no floors: a/ -> b.py -> c/ -> a/"
    ):
        script.floors(house)
    assert script.floors({"a/": {"b.py"}, "b.py": set()}) == {"a/": 2, "b.py": 1}


def test_the_house_counts_imports_that_run_and_lazy_names_not_type_checking_ones(
    tmp_path, monkeypatch
):
    script = _script()
    monkeypatch.setattr(script, "ROOT", tmp_path)
    module = tmp_path / "engine" / "cli" / "table.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from engine.ledger import store\n"
        "else:\n"
        "    from ..workspace import Workspace\n"
        "TABLE = {'exam': ('engine.exam.cli:exam', 'Blind two-lane exam.')}\n"
        "def later():\n"
        "    from . import keys\n",
        encoding="utf-8",
    )
    names = script.imported(module)
    assert {"engine.exam.cli", "engine.workspace", "engine.cli.keys"} <= names
    assert not any(name.startswith("engine.ledger") for name in names)
