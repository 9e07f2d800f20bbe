"""Writes the module map into docs/architecture.md from the packages' own docstrings.

Every module and sub-package of ``engine/`` and ``reviewer/`` gets one line:
its path and the first sentence of its docstring (read with ``ast``, nothing
is imported). The map between the page's ``BEGIN GENERATED: module map`` and
``END GENERATED: module map`` markers is replaced; with ``--check`` nothing is
written and the exit status says whether the page is current, so a module
added, moved or re-described without the page following fails ``make lint``.
A module without a docstring fails both ways: the map would have a hole.

    python .ci/module_map.py [--check] [PAGE]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
PACKAGES = ("engine", "reviewer")
BEGIN = "<!-- BEGIN GENERATED: module map"
END = "<!-- END GENERATED: module map -->"
NOTE = (
    "<!-- BEGIN GENERATED: module map. Written by .ci/module_map.py from each module's\n"
    "     docstring (make docs); edit the docstring, not this map. -->\n"
)
WIDTH = 44  # the path column


def summary(path: Path) -> str:
    """Gives the first sentence of a module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        raise SystemExit(f"{path.relative_to(ROOT)}: no module docstring for the module map")
    first = " ".join(doc.split("\n\n")[0].split())
    end = first.find(". ")
    return first if end < 0 else first[: end + 1]


def entries(package: Path) -> list[tuple[str, str]]:
    """Gives (path, summary) for a package and everything under it, depth first, sorted."""
    out = [(f"{package.relative_to(ROOT)}/", summary(package / "__init__.py"))]
    for child in sorted(package.iterdir()):
        if child.is_dir() and (child / "__init__.py").is_file():
            out.extend(entries(child))
        elif child.suffix == ".py" and child.name != "__init__.py":
            out.append((str(child.relative_to(ROOT)), summary(child)))
    return out


def module_map() -> str:
    """Gives the map as a fenced text block."""
    lines = []
    for name in PACKAGES:
        for path, text in entries(ROOT / name):
            is_package = path.endswith("/")
            plain = path.rstrip("/")
            shown = "  " * plain.count("/") + Path(plain).name + ("/" if is_package else "")
            lines.append(f"{shown:<{WIDTH}} {text}" if len(shown) < WIDTH else f"{shown}  {text}")
    return "```text\n" + "\n".join(lines) + "\n```"


def with_map(text: str, table: str) -> str:
    """Gives the page's text with the map between the markers replaced."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{PAGE}: the module-map markers are missing")
    return f"{text[:start]}{NOTE}\n{table}\n\n{text[end:]}"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    page = Path(paths[0]) if paths else PAGE
    text = page.read_text(encoding="utf-8")
    wanted = with_map(text, module_map())
    if wanted == text:
        return 0
    if check:
        print(f"{page}: the module map differs from the packages; run make docs")
        return 1
    page.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
