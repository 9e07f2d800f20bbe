"""The exam engine stands alone: no Textual, no other backlog producer."""

from __future__ import annotations

import subprocess
import sys


def test_importing_every_exam_module_pulls_in_no_ui_and_no_other_producer():
    code = (
        "import pkgutil, importlib, sys, engine.exam\n"
        "for m in pkgutil.iter_modules(engine.exam.__path__):\n"
        "    importlib.import_module('engine.exam.' + m.name)\n"
        "bad = sorted(n for n in sys.modules if n == 'textual' or n.startswith('textual.')\n"
        "             or n.startswith(('engine.contamination', 'engine.coverage', 'reviewer')))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
