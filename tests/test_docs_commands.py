"""Every shell command in README.md, docs/getting-started.md and docs/guide/*.md runs as
written from the directory ``make demo`` leaves, and prints what the page says it prints.

What counts as a command, in a fenced block:

- a ``sh`` (``bash``, ``shell``) block: each line that is not blank or a ``#`` comment,
  a line ending in ``\\`` continued by the next;
- a ``text`` block: each line starting with ``$ ``; the lines after it, up to the next
  ``$ `` line or the block's end, are its output as the page shows it.

How they run: each page in a copy of the directory ``make demo`` leaves (the demo
workspace and its receipts made by ``.ci/demo`` from ``sample_data/``, built once per
session; ``.venv/bin/sealdesk`` runs this checkout, and ``.venv/bin`` is on ``PATH`` as
the README says to put it), in page order, in ``bash`` with ``pipefail``, a ``HOME`` of
its own and no ``SEALDESK_*`` variable. Shell state (exported
variables, the working directory) carries from one command of a page to the next, as in a
terminal. A command must exit 0. Output a page shows must appear, line by line in that
order, in what the command printed (stdout and stderr): an ``…`` stands for any text (a
line of only ``…`` for lines left out), and hashes, ids, key fingerprints, base64, dates
and times match any value of their shape, since they differ on every run.

A comment on the line before a block changes it:

- ``<!-- not run: REASON -->``: its commands are not run (the interactive app, another
  host, the whole suite); the reason is required. Each ``sealdesk`` command line in it
  must still parse: click resolves its subcommand and options.
- ``<!-- exit N -->``: its commands exit N, not 0.
- ``<!-- output of: COMMAND -->`` before a block of output: the block is COMMAND's output;
  only ``make demo`` is known (the session's demo build is that run).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from tests.conftest import REPO, require_tool
from tests.support import storage_guard

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docs_commands")]

PAGES = (
    "README.md",
    "docs/getting-started.md",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs" / "guide").glob("*.md")),
)
SHELL_LANGS = {"sh", "bash", "shell"}
MARKER = re.compile(r"^<!--\s*(not run|exit|output of)\s*:?\s*(.*?)\s*-->$")
KNOWN_OUTPUTS = {"make demo"}


@dataclass
class Command:
    page: str
    line: int
    text: str
    expected: list[str] = field(default_factory=list)  # output lines the page shows
    not_run: str | None = None
    exit_code: int = 0

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class Output:
    """A block the page says is a known command's output."""

    page: str
    line: int
    of: str
    lines: list[str]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks(page: str) -> Iterator[tuple[int, str, list[str], str | None]]:
    """Gives each fenced block: (line of its first content line, language, lines, the
    marker comment on the line before its fence)."""
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = before if MARKER.match(before) else None
        body, j = [], i + 1
        while j < len(lines) and lines[j].strip() != "```":
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        yield i + 2, lang, body, marker
        i = j + 1


def _joined(body: list[str], start: int) -> Iterator[tuple[int, str]]:
    """Gives (line number, text) of each line, a line ending in a backslash joined to the
    next as the shell does."""
    k = 0
    while k < len(body):
        first, text = k, body[k]
        while text.rstrip().endswith("\\") and k + 1 < len(body):
            k += 1
            text = text + "\n" + body[k]
        yield start + first, text
        k += 1


def collect(page: str) -> tuple[list[Command], list[Output]]:
    commands: list[Command] = []
    outputs: list[Output] = []
    for start, lang, body, marker in _blocks(page):
        kind, arg = MARKER.match(marker).groups() if marker else (None, "")
        if kind == "output of":
            outputs.append(Output(page, start, arg, body))
            continue
        found: list[Command] = []
        if lang in SHELL_LANGS:
            for line, text in _joined(body, start):
                if text.strip() and not text.lstrip().startswith("#"):
                    found.append(Command(page, line, text))
        elif lang == "text":
            for line, text in _joined(body, start):
                if text.startswith("$ "):
                    found.append(Command(page, line, text[2:]))
                elif found:
                    found[-1].expected.extend(text.splitlines())
        for c in found:
            if kind == "not run":
                c.not_run = arg
            elif kind == "exit":
                c.exit_code = int(arg)
        commands += found
    return commands, outputs


COLLECTED = {page: collect(page) for page in PAGES}
COMMANDS = [c for page in PAGES for c in COLLECTED[page][0]]
OUTPUTS = [o for page in PAGES for o in COLLECTED[page][1]]


# -- matching a page's output against what was printed

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_VOLATILE = [
    (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "uuid"),
    (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z", "time"),
    (r"\d{8}T\d{6,12}Z", "time"),
    (r"\d{4}-\d{2}-\d{2}", "date"),
    (r"SHA256:[A-Za-z0-9+/]{43}", "fingerprint"),
    (r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{40,}={0,2}", "base64"),
    (r"(?<![0-9a-z])(?=[0-9a-f]*[0-9])[0-9a-f]{6,}(?![0-9a-z])", "hex"),
]
_TOKEN = re.compile("|".join(f"({p})" for p, _ in _VOLATILE) + "|(…)")


def line_pattern(expected: str) -> re.Pattern[str]:
    """Gives the regex an output line the page shows stands for."""
    out, pos = [], 0
    for m in _TOKEN.finditer(expected):
        out.append(re.escape(expected[pos : m.start()]))
        kind = next(i for i, g in enumerate(m.groups()) if g is not None)
        if kind == len(_VOLATILE):  # …
            out.append(".*?")
        else:
            out.append(_VOLATILE[kind][0].replace("(?=[0-9a-f]*[0-9])", ""))
        pos = m.end()
    out.append(re.escape(expected[pos:]))
    return re.compile("".join(out))


def missing_lines(expected: list[str], printed: str) -> list[str]:
    """Gives the lines a page shows that the printed text lacks, in order: each shown line
    must match a printed line after the previous one's match."""
    actual = [ANSI.sub("", line).rstrip() for line in printed.splitlines()]
    at, missing = 0, []
    for shown in expected:
        shown = shown.rstrip()
        if shown.strip() in ("", "…"):
            continue
        pattern = line_pattern(shown)
        k = next((k for k in range(at, len(actual)) if pattern.fullmatch(actual[k])), None)
        if k is None:
            missing.append(shown)
        else:
            at = k + 1
    return missing


# -- the directory make demo leaves, built once


def _base_env(home: Path, bin_dir: Path | None = None) -> dict[str, str]:
    path = ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin"]
    env = {
        "PATH": os.pathsep.join(([str(bin_dir)] if bin_dir else []) + path),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        storage_guard.LOG_ENV: os.environ[storage_guard.LOG_ENV],
    }
    # the worker's share of the cores for torch's threads (tests/conftest.py)
    if "OMP_NUM_THREADS" in os.environ:
        env["OMP_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
    return env


@dataclass(frozen=True)
class DemoDir:
    root: Path
    output: str  # what .ci/demo printed


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> DemoDir:
    """Gives the directory ``make demo`` leaves: sample_data/, .venv/bin/sealdesk (this
    checkout), demo-workspace/ and demo-workspace-receipts/ made by .ci/demo."""
    for tool in ("ssh-keygen", "ssh-agent", "jq"):  # what .ci/demo and the pages call
        require_tool(tool)
    root = tmp_path_factory.mktemp("demo-dir")
    shutil.copytree(REPO / "sample_data", root / "sample_data")
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    wrapper = bin_dir / "sealdesk"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH={shlex.quote(os.environ['PYTHONPATH'])}; export PYTHONPATH\n"
        f'exec {shlex.quote(sys.executable)} -m reviewer "$@"\n'
    )
    wrapper.chmod(0o755)
    for name in ("python", "python3"):
        (bin_dir / name).symlink_to(sys.executable)
    home = tmp_path_factory.mktemp("demo-home")
    proc = subprocess.run(
        ["sh", str(REPO / ".ci" / "demo"), "demo-workspace", ".venv/bin"],
        cwd=root,
        env=_base_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f".ci/demo failed ({proc.returncode}):\n{proc.stdout[-4000:]}"
    return DemoDir(root, proc.stdout)


class Page:
    """One page's copy of the demo directory and its shell's state between commands."""

    def __init__(self, page: str, demo: DemoDir, base: Path):
        self.dir = base / "cwd"
        shutil.copytree(demo.root, self.dir, symlinks=True)
        self.home = base / "home"
        self.home.mkdir()
        self.state = base / "state.sh"
        self.state.write_text("")
        self.cwd = base / "cwd.txt"
        self.cwd.write_text(str(self.dir))
        self.commands = [c for c in COLLECTED[page][0] if c.not_run is None]
        self.ran: dict[str, subprocess.CompletedProcess] = {}

    def run(self, command: Command) -> subprocess.CompletedProcess:
        """Runs the page's commands up to this one (each once), and gives this one's result."""
        for c in self.commands:
            if c.id not in self.ran:
                self.ran[c.id] = self._run(c)
                before = self.ran[c.id]
                if c is not command and before.returncode != c.exit_code:
                    pytest.fail(f"an earlier command of the page failed: {c.id}", pytrace=False)
            if c is command:
                return self.ran[c.id]
        raise AssertionError(f"{command.id} is not a command of its page")

    def _run(self, command: Command) -> subprocess.CompletedProcess:
        state, cwd = shlex.quote(str(self.state)), shlex.quote(str(self.cwd))
        script = (
            f'. {state} 2>/dev/null; cd "$(cat {cwd})"\n'
            "set -o pipefail\n"
            f"eval {shlex.quote(command.text)}\n"
            "rc=$?\n"
            f"export -p > {state}; pwd > {cwd}\n"
            "exit $rc\n"
        )
        return subprocess.run(
            ["bash", "-c", script],
            cwd=self.dir,
            env=_base_env(self.home, self.dir / ".venv" / "bin"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
        )

    def close(self) -> None:
        """Stops an ssh-agent a page's commands started (by its pid)."""
        m = re.search(r"SSH_AGENT_PID=\"?(\d+)", self.state.read_text())
        if m:
            subprocess.run(["kill", m.group(1)], check=False)


@pytest.fixture(scope="module")
def pages(demo_dir, tmp_path_factory) -> Iterator[dict[str, Page]]:
    made: dict[str, Page] = {}

    class Pages(dict):
        def __missing__(self, page: str) -> Page:
            made[page] = Page(page, demo_dir, tmp_path_factory.mktemp("page"))
            self[page] = made[page]
            return made[page]

    yield Pages()
    for p in made.values():
        p.close()


# -- the tests


def sealdesk_argv(text: str) -> list[list[str]]:
    """Gives the arguments after each ``sealdesk`` word of a shell command line."""
    words = shlex.split(text.replace("\\\n", " "), comments=True)
    found, current = [], None
    for w in words:
        if w in ("|", "&&", "||", ";", ">", "<") or w.startswith((">", "<", "2>")):
            if current is not None:
                found.append(current)
            current = None
            if w in (">", "<") or w.startswith(("2>",)):
                continue
        elif w == "sealdesk" or w.endswith("/sealdesk"):
            if current is not None:
                found.append(current)
            current = []
        elif current is not None:
            current.append(w)
    if current is not None:
        found.append(current)
    return found


def parses(argv: list[str]) -> None:
    """Resolves a sealdesk command line with click's own parser, calling nothing and
    converting no value (a file may be on another host): an unknown command or option, an
    option without its value, or a word left over raises a click error."""
    from reviewer.main import tree

    cmd: click.Command = tree()
    ctx = click.Context(cmd, info_name="sealdesk")
    words = list(argv)
    while True:
        _, rest, _ = cmd.make_parser(ctx).parse_args(args=words)
        if not isinstance(cmd, click.Group):
            if rest:
                raise click.UsageError(f"unexpected extra argument(s) {rest}", ctx)
            return
        default = getattr(cmd, "default_cmd_name", None)
        if rest and cmd.get_command(ctx, rest[0]) is None and default:
            rest.insert(0, default)
        if not rest:
            raise click.UsageError(f"{ctx.command_path}: no command given", ctx)
        sub = cmd.get_command(ctx, rest[0])
        if sub is None:
            raise click.UsageError(f"{ctx.command_path}: no command {rest[0]!r}", ctx)
        ctx = click.Context(sub, info_name=rest[0], parent=ctx)
        cmd, words = sub, rest[1:]


@pytest.mark.parametrize("command", COMMANDS, ids=[c.id for c in COMMANDS])
def test_command_runs_as_written(command: Command, pages) -> None:
    if command.not_run is not None:
        assert command.not_run.strip(), f"{command.id}: a 'not run' marker needs its reason"
        for argv in sealdesk_argv(command.text):
            try:
                parses(argv)
            except click.ClickException as exc:
                pytest.fail(f"{command.id}: sealdesk {shlex.join(argv)}: {exc.format_message()}")
        return
    proc = pages[command.page].run(command)
    assert proc.returncode == command.exit_code, (
        f"{command.id}: `{command.text}` exited {proc.returncode}, the page expects "
        f"{command.exit_code}:\n{proc.stdout[-3000:]}"
    )
    missing = missing_lines(command.expected, proc.stdout)
    assert not missing, (
        f"{command.id}: `{command.text}` did not print what the page shows; missing:\n"
        + "\n".join(missing)
        + f"\n--- printed:\n{proc.stdout[-3000:]}"
    )


@pytest.mark.parametrize("output", OUTPUTS, ids=[o.id for o in OUTPUTS])
def test_shown_output_is_what_the_command_printed(output: Output, demo_dir) -> None:
    assert output.of in KNOWN_OUTPUTS, f"{output.id}: no run of {output.of!r} to compare with"
    missing = missing_lines(output.lines, demo_dir.output)
    assert not missing, f"{output.id}: {output.of} did not print:\n" + "\n".join(missing)


def test_pages_have_commands() -> None:
    """The extraction finds each page's commands (an empty list would pass everything)."""
    for page in PAGES:
        assert COLLECTED[page][0], f"no command found in {page}"


def test_shown_output_matches_only_what_was_printed() -> None:
    """Volatile values match any value of their shape; everything else must be as shown,
    in order."""
    printed = (
        "#39 accept flagged_pairs/fp-1edd3a7ee37c92fb by rita as reviewer 7884e6632ab6\n"
        "receipt: #39 tree 39 root 14ab073cde27ef14 (1 kept in /h/r/b102bda7-61.jsonl)\n"
    )
    shown = [
        "#39 accept flagged_pairs/fp-0123456789abcdef by rita as reviewer 0123456789ab",
        "…",
        "receipt: #39 tree 39 root 0123456789abcdef (1 kept in …)",
    ]
    assert missing_lines(shown, printed) == []
    assert missing_lines(["#40 accept flagged_pairs/fp-1edd3a7ee37c92fb …"], printed)
    assert missing_lines(["… as adjudicator …"], printed)
    assert missing_lines(list(reversed(shown)), printed)  # order counts
