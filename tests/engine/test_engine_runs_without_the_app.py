"""The engine's entry points run without the review app: at run time, not only in the source.

The import contracts read import statements; a command loaded by name (a lazy table,
an entry point) is invisible to them. So this runs every engine entry point in a fresh
interpreter (every engine command module imported, the engine's command tree built,
``--help`` of every group in it invoked, every command resolved and the gate's
inventory walked over it) and then looks at what was loaded: no module of the app
(``reviewer``) and none of Textual.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import REPO

ENTRY_POINTS = """
import importlib, json, pkgutil, sys

from click.testing import CliRunner

import engine
import engine.cli
for info in pkgutil.walk_packages(engine.cli.__path__, "engine.cli."):
    if info.name != "engine.cli.__main__":  # runs the program; main() is imported above
        importlib.import_module(info.name)
for info in pkgutil.iter_modules(engine.__path__, "engine."):
    if info.ispkg and importlib.util.find_spec(info.name + ".cli") is not None:
        importlib.import_module(info.name + ".cli")
importlib.import_module("engine.jobs")

from engine.cli.commands import cli
from engine.cli.gate_policy import inventory

import click

def helps(group, path):
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="sealdesk")
    assert result.exit_code == 0, (path, result.output)
    ctx = click.Context(group, info_name=path[-1] if path else "sealdesk")
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if isinstance(sub, click.Group):
            helps(sub, [*path, name])

helps(cli, [])
walked = {" ".join(path) for path, _param, _kind in inventory(cli)}
loaded = sorted(
    m for m in sys.modules
    if m.split(".")[0] in ("reviewer", "textual")
)
print(json.dumps({"walked": sorted(walked), "loaded": loaded}))
"""


def test_no_app_module_loads_from_the_engines_entry_points():
    out = subprocess.run(
        [sys.executable, "-c", ENTRY_POINTS],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    found = json.loads(out.stdout.splitlines()[-1])
    # the walk reached the tree's depths (so a command loaded by name was loaded) ...
    assert {"decide", "keys add", "scan contamination", "bench ledger"} <= set(found["walked"])
    # ... and none of it was the app's
    assert "review" not in found["walked"]
    assert found["loaded"] == []


def test_the_apps_entry_points_declare_the_commands_it_composes():
    from reviewer.main import COMMANDS

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    declared = project["project"]["entry-points"]["sealdesk.commands"]
    assert declared == {path: target for path, (target, _help) in COMMANDS.items()}
    assert project["project"]["scripts"]["sealdesk"] == "reviewer.main:main"


def test_commands_an_installed_package_declares_join_the_engines_tree(monkeypatch):
    import importlib.metadata

    from click.testing import CliRunner

    from engine.cli import commands

    points = importlib.metadata.EntryPoints(
        importlib.metadata.EntryPoint(name, value, commands.ENTRY_POINT_GROUP)
        for name, value in (
            ("review", "reviewer.cli:review"),
            ("bench.review", "reviewer.bench:bench_review"),
        )
    )
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: points if group == commands.ENTRY_POINT_GROUP else (),
    )
    tree = commands.installed_tree()
    top = CliRunner().invoke(tree, ["--help"], prog_name="sealdesk")
    bench = CliRunner().invoke(tree, ["bench", "--help"], prog_name="sealdesk")
    assert top.exit_code == bench.exit_code == 0
    # listed with the first line of each command's own help
    assert "  review " in top.output and "Review the three backlogs" in top.output
    assert "  review " in bench.output and "  ledger " in bench.output
    # the engine's own tree is left as it was
    assert "review" not in commands.cli.lazy and "review" not in commands.bench.lazy
    assert tree.module == commands.cli.module == "engine.cli"


def test_a_command_for_a_group_the_tree_lacks_is_refused():
    from engine.cli.commands import cli, with_commands

    with pytest.raises(ValueError, match="'sealdesk nowhere': no such group"):
        with_commands(cli, {"nowhere.review": "reviewer.cli:review"})
