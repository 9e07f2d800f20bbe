"""The design's directions of dependency, checked over the real import graph.

Two kinds of check. At run time: importing the engine leaves Textual unloaded,
and the review command's module stays cheap. Statically: this file builds the
import graph of ``engine/`` and ``reviewer/`` from their source (every
``import`` counts: at module level, inside functions and under
``TYPE_CHECKING``) and holds it to

- no import cycle, module by module;
- the contracts in ``pyproject.toml``'s ``[tool.importlinter]`` section, read
  from there and checked with import-linter's meaning of ``forbidden``,
  ``independence``, ``layers`` and ``acyclic_siblings`` (an indirect import
  counts as much as a direct one), so ``lint-imports`` and this test judge
  the same rules.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
import tomllib
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import engine
from tests.conftest import REPO

ROOTS = ("engine", "reviewer")


def engine_modules() -> list[str]:
    """Gives engine, engine.cli, engine.jobs, engine.item_query and each engine subpackage
    (engine.workspace among them; with its cli module when it has one)."""
    names = ["engine", "engine.cli", "engine.jobs", "engine.item_query"]
    for info in pkgutil.iter_modules(engine.__path__, "engine."):
        if info.ispkg:
            names.append(info.name)
            if (REPO / info.name.replace(".", "/") / "cli.py").exists():
                names.append(f"{info.name}.cli")
    return names


def test_importing_the_engine_leaves_textual_unloaded():
    modules = engine_modules()
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(len(loaded), loaded[:5])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert out.stdout.startswith("0 "), f"engine imported textual: {out.stdout}"


def test_the_review_command_module_defers_textual_until_it_runs():
    # `sealdesk --help` lists `review` by importing reviewer.cli; that must stay cheap.
    code = "import sys, reviewer.cli; print('textual' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert out.stdout.strip() == "False"


# -- the import graph --------------------------------------------------------------


@dataclass(frozen=True)
class Graph:
    """Our modules, and what each imports: our modules by name, others by top package."""

    modules: frozenset[str]
    imports: dict[str, frozenset[str]]

    def expand(self, name: str) -> set[str]:
        """Gives the module and its descendants (an outside package stands for itself)."""
        if name.split(".")[0] not in ROOTS:
            return {name}
        return {m for m in self.modules if m == name or m.startswith(name + ".")}

    def chain(self, starts: set[str], targets: set[str]) -> list[str] | None:
        """Gives the shortest import chain from any start to any target, or None."""
        came: dict[str, str | None] = {s: None for s in sorted(starts)}
        queue = deque(sorted(starts))
        while queue:
            here = queue.popleft()
            for there in sorted(self.imports.get(here, ())):
                if there in came:
                    continue
                came[there] = here
                if there in targets:
                    path = [there]
                    while came[path[-1]] is not None:
                        path.append(came[path[-1]])
                    return path[::-1]
                queue.append(there)
        return None


def _module_names(root: Path) -> dict[str, tuple[Path, bool]]:
    found = {}
    for package in ROOTS:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def build_graph(root: Path = REPO) -> Graph:
    """Gives the import graph of engine/ and reviewer/ as their source files stand."""
    files = _module_names(root)
    modules = frozenset(files)

    def ours(name: str) -> str | None:
        while name:
            if name in modules:
                return name
            name = name.rpartition(".")[0]
        return None

    imports: dict[str, frozenset[str]] = {}
    for module, (path, is_package) in files.items():
        package = module if is_package else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                # ``from pkg import sub`` imports the submodule when there is one.
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            else:
                continue
            for name in names:
                if name.split(".")[0] in ROOTS:
                    target = ours(name)
                    if target is not None and target != module:
                        targets.add(target)
                else:
                    targets.add(name.split(".")[0])
        imports[module] = frozenset(targets)
    return Graph(modules, imports)


def cycles(graph: Graph) -> list[list[str]]:
    """Gives every strongly connected set of two or more of our modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.imports.get(v, ())):
            if w not in graph.modules:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph.modules)))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


# -- the contracts, as import-linter reads them ------------------------------------


def contracts(root: Path = REPO) -> list[dict]:
    """Gives the import contracts of pyproject.toml's [tool.importlinter] section."""
    with open(root / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["tool"]["importlinter"]["contracts"]


def _layer(text: str, container: str | None) -> list[str]:
    names = [n.strip() for n in text.replace(":", "|").split("|")]
    return [f"{container}.{n}" if container else n for n in names]


def broken(graph: Graph, contract: dict) -> list[str]:
    """Gives each import chain that breaks the contract (empty when it is kept)."""
    kind, out = contract["type"], []
    if kind == "forbidden":
        targets = set().union(*(graph.expand(m) for m in contract["forbidden_modules"]))
        ignored = {
            tuple(part.strip() for part in pair.split("->"))
            for pair in contract.get("ignore_imports", [])
        }
        for source in contract["source_modules"]:
            for module in sorted(graph.expand(source)):
                if contract.get("allow_indirect_imports"):
                    # only a direct import breaks it, unless the contract names it
                    out += [
                        f"{module} -> {there}"
                        for there in sorted(graph.imports.get(module, ()))
                        if there in targets and (module, there) not in ignored
                    ]
                    continue
                chain = graph.chain({module}, targets)
                if chain:
                    out.append(" -> ".join(chain))
    elif kind == "independence":
        for a in contract["modules"]:
            for b in contract["modules"]:
                chain = a != b and graph.chain(graph.expand(a), graph.expand(b))
                if chain:
                    out.append(" -> ".join(chain))
    elif kind == "layers":
        for container in contract.get("containers", [None]):
            layers = [_layer(text, container) for text in contract["layers"]]
            for high, upper in enumerate(layers):
                above = set().union(*(graph.expand(m) for m in upper))
                for lower in layers[high + 1 :]:
                    for name in lower:
                        chain = graph.chain(graph.expand(name), above)
                        if chain:
                            out.append(" -> ".join(chain))
                independent = "|" in contract["layers"][high]
                for a in upper if independent else ():
                    for b in upper:
                        chain = a != b and graph.chain(graph.expand(a), graph.expand(b))
                        if chain:
                            out.append(" -> ".join(chain))
    elif kind == "acyclic_siblings":
        for ancestor in contract["ancestors"]:
            for package in sorted(graph.expand(ancestor)):
                out += _sibling_cycles(graph, package)
    else:
        raise AssertionError(f"contract {contract['id']}: no check here for type {kind!r}")
    return out


def _sibling_cycles(graph: Graph, package: str) -> list[str]:
    """Gives a cycle among the children of one package, imports squashed to those children."""
    depth = package.count(".") + 1

    def child(module: str) -> str | None:
        if not module.startswith(package + ".") or module.count(".") < depth:
            return None
        return ".".join(module.split(".")[: depth + 1])

    squashed: dict[str, set[str]] = {}
    for module in graph.modules:
        here = child(module)
        for target in graph.imports[module]:
            there = child(target) if target in graph.modules else None
            if here and there and here != there:
                squashed.setdefault(here, set()).add(there)
    part = cycles(
        Graph(
            frozenset(squashed) | frozenset().union(*squashed.values(), set()),
            {k: frozenset(v) for k, v in squashed.items()},
        )
    )
    return [" <-> ".join(p) for p in part]


def test_the_source_holds_no_import_cycle():
    found = cycles(build_graph())
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_lazy_command_tables_close_no_cycle():
    # The tables load subcommands by name (importlib), which no import statement shows.
    # Counted as imports of engine.cli.commands, they close no loop: the gate's policy is
    # handed the tree it judges, so nothing the tree loads leads back to it. The app's
    # commands join the tree from the outside (reviewer.main), never by name from here.
    from engine.cli.commands import BENCH_LAZY, SCAN_LAZY, TOP_LEVEL_LAZY
    from reviewer.main import COMMANDS

    graph = build_graph()
    lazy = {
        target.partition(":")[0]
        for table in (TOP_LEVEL_LAZY, SCAN_LAZY, BENCH_LAZY)
        for target, _help in table.values()
    }
    assert lazy <= graph.modules, f"lazy targets that are not modules: {lazy - graph.modules}"
    assert all(name.startswith("engine.") for name in lazy)
    app = {target.partition(":")[0] for target, _help in COMMANDS.values()}
    assert app <= graph.modules, f"app commands that are not modules: {app - graph.modules}"
    imports = dict(graph.imports)
    imports["engine.cli.commands"] = imports["engine.cli.commands"] | lazy
    imports["reviewer.main"] = imports["reviewer.main"] | app
    found = cycles(Graph(graph.modules, imports))
    assert found == [], "cycles through the lazy tables:\n" + "\n".join(map(str, found))
    back = [m for m in graph.modules if "engine.cli.commands" in graph.imports[m]]
    assert sorted(back) == ["engine.cli.main", "engine.jobs", "reviewer.main"]


def test_every_contract_names_modules_that_exist():
    graph = build_graph()
    for contract in contracts():
        named = [
            *contract.get("source_modules", ()),
            *contract.get("forbidden_modules", ()),
            *contract.get("modules", ()),
            *contract.get("ancestors", ()),
        ]
        for container in contract.get("containers", [None]):
            for text in contract.get("layers", ()):
                named += _layer(text, container)
        stale = [n for n in named if n.split(".")[0] in ROOTS and not graph.expand(n)]
        assert stale == [], f"contract {contract['id']} names no module: {stale}"


def test_every_import_contract_in_pyproject_is_kept():
    graph = build_graph()
    found = {c["id"]: broken(graph, c) for c in contracts()}
    assert {cid: chains for cid, chains in found.items() if chains} == {}


def test_the_contracts_state_the_designs_rules():
    # The design's directions of dependency, each a contract: dropping one from
    # pyproject.toml is a visible change, not a silent one.
    by_id = {c["id"]: c for c in contracts()}
    assert by_id["engine-headless"]["forbidden_modules"] == ["reviewer", "textual"]
    assert by_id["producers-independent"]["modules"] == [
        "engine.contamination",
        "engine.exam",
        "engine.coverage",
    ]
    assert {
        "engine.contamination",
        "engine.exam",
        "engine.coverage",
        "engine.signoff",
        "engine.workspace",
        "click",
        "textual",
    } <= set(by_id["ledger-blind"]["forbidden_modules"])
    assert {"click", "engine.workspace"} <= set(by_id["core-io"]["forbidden_modules"])
    assert "engine.artifacts" in by_id["core-io"]["source_modules"]
    assert by_id["no-cycles"]["type"] == "acyclic_siblings"
    assert by_id["app-through-the-desk"]["forbidden_modules"] == [
        "engine.ledger",
        "engine.sqlitedb",
    ]
    assert {pair.split(" -> ")[0] for pair in by_id["app-through-the-desk"]["ignore_imports"]} == {
        "reviewer.bench",
        "reviewer.scripted_reviewer",
    }
