"""The key table of ``review --help`` and of the docs comes from the binding registry."""

from __future__ import annotations

import subprocess
import sys

from reviewer.actions import ACTIONS, key_label, key_table_markdown
from tests.conftest import REPO, SEALDESK

PAGE = REPO / "docs" / "guide" / "review-app.md"
SCRIPT = REPO / ".ci" / "key_table.py"
BEGIN = "<!-- BEGIN GENERATED: binding table"
END = "<!-- END GENERATED: binding table -->"


def docs_table() -> str:
    """Gives the Markdown table between the page's generated-table markers."""
    text = PAGE.read_text(encoding="utf-8")
    inside = text[text.index(BEGIN) : text.index(END)]
    return "\n".join(line for line in inside.splitlines() if line.startswith("|")) + "\n"


def test_the_docs_key_table_is_the_registrys():
    assert docs_table() == key_table_markdown()


def test_the_docs_check_fails_on_a_hand_edited_table(tmp_path):
    page = tmp_path / "review-app.md"
    text = PAGE.read_text(encoding="utf-8")
    page.write_text(text.replace("| `review.accept` |", "| `review.agree` |"), encoding="utf-8")
    run = [sys.executable, str(SCRIPT), "--check", str(page)]
    out = subprocess.run(run, capture_output=True, text=True)
    assert out.returncode == 1 and "the key table differs" in out.stdout
    assert subprocess.run(run[:2] + [str(page)]).returncode == 0  # rewritten from the registry
    assert subprocess.run(run).returncode == 0 and "`review.accept`" in page.read_text()


def test_review_help_lists_every_keyed_action_with_its_key_and_id():
    out = subprocess.run([*SEALDESK, "review", "--help"], capture_output=True, text=True, cwd=REPO)
    lines = out.stdout.splitlines()
    for action in ACTIONS:
        if action.key is None:
            continue
        keys = " ".join(key_label(k) for k in action.key.split(","))
        assert any(
            line.split()[-1:] == [action.id] and line.strip().startswith(keys + " ")
            for line in lines
        ), f"{action.id} ({keys}) is not in review --help"
