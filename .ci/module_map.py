"""Writes the module map and the house, floor by floor, into docs/architecture.md from the code.

The module map: every module and sub-package of ``engine/`` and ``reviewer/``
gets one line, its path and the first sentence of its docstring. The house: a
room is a sub-package or a module directly under ``engine/`` (a package is
one room, whatever it holds) and ``reviewer/`` is one room; a room imports
another when one of its modules imports one of the other's when it runs
(imports inside functions count, those under ``if TYPE_CHECKING:`` do not) or
names one to load later as ``"engine.x.y:name"`` (the lazy command table); a
room stands one floor above the highest
room it imports, and the ground floor imports no other room. Both are read
with ``ast``; nothing is imported.

Each is written between the page's ``BEGIN GENERATED: <name>`` and ``END
GENERATED: <name>`` markers; with ``--check`` nothing is written and the exit
status says whether the page is current, so a module added, moved,
re-described or importing another room without the page following fails
``make lint``. A module without a docstring fails both ways (the map would
have a hole), and so do rooms that import each other in a circle (a circle has
no floors).

    python .ci/module_map.py [--check] [PAGE]
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
PACKAGES = ("engine", "reviewer")
NOTES = {
    "module map": (
        "from each module's\n     docstring (make docs); edit the docstring, not this map"
    ),
    "house": "from the modules'\n     imports (make docs); change the imports, not this drawing",
}
WHAT = {
    "module map": "the module map differs from the packages",
    "house": "the house differs from the imports",
}
WIDTH = 44  # the path column
ROOM_WIDTH = 26  # the house's room column


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


def room_of(module: str) -> str | None:
    """Gives the room a dotted module name stands in (None: outside the house)."""
    parts = module.split(".")
    if parts[0] == "reviewer":
        return "reviewer/"
    if parts[0] != "engine" or len(parts) < 2 or parts[1] == "__init__":
        return None  # outside, or engine/__init__.py: the package's face
    child = ROOT / "engine" / parts[1]
    if child.is_dir():
        return f"engine/{parts[1]}/"
    return f"engine/{parts[1]}.py" if child.with_suffix(".py").is_file() else None


LAZY = re.compile(r"^((?:engine|reviewer)(?:\.\w+)+):\w+$")  # "engine.x.y:name", loaded later


def _runs(tree: ast.AST) -> list[ast.AST]:
    """Gives every node that runs: all but the body of ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def imported(path: Path) -> set[str]:
    """Gives the dotted names a module imports when it runs (relative imports made
    absolute; for ``from X import Y``, both X and X.Y, since Y may be a module), and the
    modules it names to load later as ``"package.module:name"`` (a lazy command table)."""
    package = list(path.relative_to(ROOT).with_suffix("").parts)[:-1]  # the module's package
    names: set[str] = set()
    for node in _runs(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            lazy = LAZY.match(node.value)
            if lazy:
                names.add(lazy.group(1))
    return names


def rooms() -> dict[str, set[str]]:
    """Gives each room and the other rooms it imports."""
    out: dict[str, set[str]] = {}
    for name in PACKAGES:
        for path in sorted((ROOT / name).rglob("*.py")):
            room = room_of(".".join(path.relative_to(ROOT).with_suffix("").parts))
            if room is None:
                continue
            found = {room_of(n) for n in imported(path)} - {None, room}
            out[room] = out.get(room, set()) | found  # type: ignore[operator]
    return out


def floors(house: dict[str, set[str]]) -> dict[str, int]:
    """Gives each room's floor; refuses a circle, naming its rooms."""
    floor: dict[str, int] = {}

    def stand(room: str, path: tuple[str, ...]) -> int:
        if room in path:
            circle = " -> ".join(path[path.index(room) :] + (room,))
            raise SystemExit(f"the house has a circle, so no floors: {circle}")
        if room not in floor:
            below = [stand(other, (*path, room)) for other in house[room]]
            floor[room] = 1 + max(below, default=0)
        return floor[room]

    for room in house:
        stand(room, ())
    return floor


def house_drawing() -> str:
    """Gives the house from the top floor down: each room and the rooms it imports."""
    house = rooms()
    floor = floors(house)
    lines = []
    for room in sorted(house, key=lambda r: (-floor[r], r)):
        head = f"floor {floor[room]:>2}  {room:<{ROOM_WIDTH}}  -> "
        below = sorted(house[room], key=lambda r: (-floor[r], r)) or ["(the ground: none)"]
        pieces = [f"{name}," for name in below[:-1]] + below[-1:]
        text = head
        for piece in pieces:
            if len(text) + len(piece) > 100 and text != head:
                lines.append(text.rstrip())
                text = " " * len(head)
            text += piece + " "
        lines.append(text.rstrip())
    return "```text\n" + "\n".join(lines) + "\n```"


def with_block(text: str, name: str, body: str) -> str:
    """Gives the page's text with the named block between its markers replaced."""
    begin, end = f"<!-- BEGIN GENERATED: {name}", f"<!-- END GENERATED: {name} -->"
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise SystemExit(f"{PAGE}: the {name} markers are missing")
    note = f"{begin}. Written by .ci/module_map.py {NOTES[name]}. -->\n"
    return f"{text[:start]}{note}\n{body}\n\n{text[stop:]}"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    page = Path(paths[0]) if paths else PAGE
    text = page.read_text(encoding="utf-8")
    blocks = {"module map": module_map(), "house": house_drawing()}
    wanted = text
    for name, body in blocks.items():
        wanted = with_block(wanted, name, body)
    if wanted == text:
        return 0
    if check:
        behind = [WHAT[n] for n, b in blocks.items() if with_block(text, n, b) != text]
        print(f"{page}: {' and '.join(behind)}; run make docs")
        return 1
    page.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
