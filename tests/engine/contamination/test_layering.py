"""engine/contamination stays a library: no textual, no other backlog producer."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "engine" / "contamination"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_module_imports_textual_the_app_or_another_backlog_producer():
    for path in PACKAGE.rglob("*.py"):
        for name in imported_modules(path):
            assert not name.startswith(("textual", "reviewer", "engine.exam", "engine.coverage")), (
                f"{path.name} imports {name}"
            )


def test_importing_the_scan_pulls_in_neither_textual_nor_torch():
    code = (
        "import sys, engine.contamination.scan, engine.contamination.cli; "
        "print('textual' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
