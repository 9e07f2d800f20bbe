"""Writes the review app's key table into docs/guide/review-app.md from reviewer.actions.

The table between the page's ``BEGIN GENERATED: binding table`` and ``END
GENERATED: binding table`` markers is replaced by ``key_table_markdown()``;
with ``--check`` nothing is written and the exit status says whether the page
is current. ``make docs`` runs it before building the site.

    python .ci/key_table.py [--check] [PAGE]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviewer.actions import key_table_markdown  # noqa: E402 - needs the checkout on sys.path

PAGE = ROOT / "docs" / "guide" / "review-app.md"
BEGIN = "<!-- BEGIN GENERATED: binding table"
END = "<!-- END GENERATED: binding table -->"
NOTE = (
    "<!-- BEGIN GENERATED: binding table. Written by .ci/key_table.py from\n"
    "     reviewer/actions.py (make docs); edit the registry there, not this table. -->\n"
)


def with_table(text: str, table: str) -> str:
    """Gives the page's text with the table between the markers replaced."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{PAGE}: the generated-table markers are missing")
    return f"{text[:start]}{NOTE}\n{table}\n{text[end:]}"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    page = Path(paths[0]) if paths else PAGE
    text = page.read_text(encoding="utf-8")
    wanted = with_table(text, key_table_markdown())
    if wanted == text:
        return 0
    if check:
        print(f"{page}: the key table differs from reviewer/actions.py; run make docs")
        return 1
    page.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
