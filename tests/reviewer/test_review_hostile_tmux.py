"""Hostile titles, texts, ids, notes and job output, ingested, scanned, signed and
written where the app reads them, shown by the real `sealdesk review` in real tmux:
nothing from data reaches the terminal as control.

tmux is set to accept OSC 52 into its paste buffers (``set-clipboard on``) and lets
programs set the pane title, and a raw OSC 52 printed in another pane is shown to land
in the buffer first: the checks below could fail. Every screen the walk passes through
(each item's list row and detail pane, the history, the note dialog, the bulk dialog,
the jobs panel) is captured with its attributes and checked; every wait polls the
screen.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from engine.workspace import BacklogItem
from tests.conftest import FOUNDER, REPO
from tests.support.cli_workspace import found_through_cli
from tests.support.hostile_text import (
    CLIPBOARD_PAYLOAD,
    FAKE_STATUS,
    HOSTILE,
    HOSTILE_IDS,
    OSC52,
    WINDOW_TITLE,
    unsafe_characters,
)

pytestmark = [pytest.mark.needs_tmux, pytest.mark.slow]

# capture-pane -e writes colours and attributes as SGR (ESC [ ... m) and nothing else:
# any other escape in a capture was drawn by the pane's program as a character.
_ESCAPE = re.compile(r"\x1b(\[[0-9;:]*m)?")
# What another reviewer wrote as the note of her decision.
NOTE = f"see {OSC52} \u202eton\u202c [bold]really[/bold]"
# A job's files, as a run (or anyone who can write the workspace's jobs directory) left them.
JOB_STDOUT = f"flagged {OSC52} \x1b[2J{FAKE_STATUS}\nwrote \u2066report\u2069"
JOB_STDERR = f"sealdesk: error: cannot read \x1b]0;{WINDOW_TITLE}\x07 [link=https://evil.example]x"


def _items() -> list[BacklogItem]:
    """One flagged pair per hostile string (title, eval text and match text; the first
    holds every one in its eval text), then one per hostile item id."""
    everything = "\n".join(HOSTILE.values())
    made = [
        BacklogItem.make(
            "flagged_pairs",
            f"fp-{name}",
            "run-hostile",
            {
                "summary": {"title": text, "score": 1.99 - n / 100},  # above the scan's
                "eval": {"id": name, "index": n, "text": everything if n == 0 else text},
                # A pool match sharing the first characters: the pane highlights a span.
                "matches": [
                    {
                        "kind": "pool",
                        "id": f"web-{name}",
                        "index": n,
                        "text": text,
                        "channels": ["ngram"],
                        "scores": {"exact_jaccard": 0.5},
                        "shared_spans": [{"eval": [0, 8], "match": [0, 8]}],
                    }
                ],
            },
        )
        for n, (name, text) in enumerate(HOSTILE.items())
    ]
    made += [
        BacklogItem.make(
            "flagged_pairs",
            item_id,
            "run-hostile",
            {"summary": {"title": f"id {name}", "score": 1.5}, "eval": {"id": item_id}},
        )
        for name, item_id in HOSTILE_IDS.items()
    ]
    return made


def _plant_job(ws: Path, job_id: str, returncode: int) -> None:
    """Leaves a finished job's files with hostile argv, stage, output and error."""
    path = ws / "jobs" / job_id
    path.mkdir(parents=True)
    spec = {"argv": ["ingest", f"pool {OSC52}.jsonl"], "workspace": str(ws), "started": job_id}
    (path / "job.json").write_text(json.dumps(spec), encoding="utf-8")
    stage = {"stage": f"reading \x1b[5;1H{job_id}", "done": 1, "total": 1, "finished": True}
    (path / "progress.jsonl").write_text(json.dumps(stage) + "\n", encoding="utf-8")
    (path / "stdout.log").write_text(JOB_STDOUT + "\n", encoding="utf-8")
    (path / "stderr.log").write_text(JOB_STDERR + "\n", encoding="utf-8")
    (path / "result.json").write_text(json.dumps({"returncode": returncode}), encoding="utf-8")


def _hostile_workspace(tmp_path: Path, sealdesk, founder_key, rita: Path, nora: Path) -> Path:
    """Gives a workspace fed through ``ingest`` (the hostile items), ``scan contamination``
    (hostile eval ids and texts) and ``decide --note`` (nora's hostile note), with two
    finished jobs' hostile files."""
    ws = tmp_path / "ws"
    people = [("rita", "reviewer", rita), ("nora", "reviewer", nora)]
    found_through_cli(sealdesk, ws, FOUNDER, founder_key, people, _items())
    shared = "Natalia sold clips to 48 of her friends in April and then half as many in May"
    evals = tmp_path / "eval.jsonl"
    evals.write_text(
        "".join(
            json.dumps({"id": f"scan-{name} {OSC52}", "text": f"{shared} {text}"}) + "\n"
            for name, text in list(HOSTILE.items())[:6]
        ),
        encoding="utf-8",
    )
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"id": "web-1", "text": shared}) + "\n", encoding="utf-8")
    scan = ("scan", "contamination", "--eval", evals, "--pool", pool, "--no-embed")
    sealdesk(*scan, workspace=ws, check=True)
    decide = ("decide", "--queue", "flagged_pairs", "--item", "fp-osc52-clipboard")
    sealdesk(*decide, "--decision", "skip", "--note", NOTE, "--key", nora, workspace=ws, check=True)
    _plant_job(ws, "20260101T000000-aaaaaa", 0)
    _plant_job(ws, "20260101T000001-bbbbbb", 1)
    return ws


def _shown_item(screen: str) -> str | None:
    """Gives the id of the item the detail pane shows (its header line names it)."""
    found = re.search(r"flagged_pairs/(\S+)  run ", screen)
    return found.group(1) if found else None


class Watch:
    """The review pane under test: keys in, and every screen it showed checked."""

    def __init__(self, tmux, name: str) -> None:
        self.tmux, self.name = tmux, name
        self.problems: set[str] = set()
        self.seen: list[str] = []  # the plain text of every screen checked

    def screen(self) -> str:
        return self.tmux.screen(self.name)

    def wait(self, until: str) -> bool:
        """Waits until ``until`` shows; gives whether it did within a minute (a screen
        broken by what it drew is a problem to report with the rest, not a stop)."""
        return self.press(until=until)

    def press(self, *keys: str, until: str | None = None, gone: str | None = None) -> bool:
        """Presses keys, then waits until ``until`` shows (or ``gone`` no longer does, or,
        given neither, the screen changes); gives whether it did. The wait is on the
        screen's state; the minute is only how long a screen that never comes is
        waited for (the full suite beside a benchmark has taken over 10 s to draw)."""
        before = self.screen()
        if keys:
            self.tmux("send-keys", "-t", self.name, *keys)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = self.screen()
            if until is not None and until in now:
                return True
            if gone is not None and gone not in now:
                return True
            if until is None and gone is None and now != before:
                return True
            time.sleep(0.05)
        self.problems.add(f"after {keys}: {until or gone or 'a change'} never came")
        return False

    def next_item(self, shown: str | None) -> str | None:
        """Presses Down and waits until the detail pane names another item than ``shown``
        (the list's cursor moves before the pane is drawn again); gives its id."""
        self.tmux("send-keys", "-t", self.name, "Down")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = _shown_item(self.screen())
            if now is not None and now != shown:
                return now
            time.sleep(0.05)
        self.problems.add(f"after Down from {shown!r}: no other item's pane came")
        return shown

    def check(self, where: str) -> None:
        """Checks the pane as it is now: only SGR escapes, no character a terminal would
        act on, the tmux buffers empty."""
        captured = self.tmux("capture-pane", "-e", "-p", "-t", self.name)
        for m in _ESCAPE.finditer(captured):
            if not m.group(1):
                sample = captured[m.start() : m.start() + 12]
                self.problems.add(f"{where}: a non-SGR escape was drawn: {sample!r}")
        unsafe = unsafe_characters(_ESCAPE.sub("", captured))
        if unsafe:
            self.problems.add(f"{where}: drawn raw: {', '.join(unsafe)}")
        if self.tmux("list-buffers"):
            self.problems.add(f"{where}: a buffer was written: {self.tmux('show-buffer')!r}")
        self.seen.append(self.screen())


def test_hostile_data_in_the_review_app_reaches_tmux_as_text_only(
    tmux, sealdesk, keygen, founder_key, tmp_path
):
    rita, nora = keygen("rita"), keygen("nora")
    ws = _hostile_workspace(tmp_path, sealdesk, founder_key, rita, nora)
    listed = sealdesk("items", "--json", "--queue", "flagged_pairs", workspace=ws, check=True)
    total = len(json.loads(listed.stdout))
    tmux.new("shell", "cat", width=160, height=50)
    tmux("set-option", "-s", "set-clipboard", "on")
    # The checks can fail: an OSC 52 and an OSC 2 printed raw (cat writes back the line)
    # land in tmux's buffer and pane title.
    tmux("send-keys", "-t", "shell", "-l", f"{OSC52}\x1b]2;{WINDOW_TITLE}\x1b\\\r")
    deadline = time.monotonic() + 10
    while "buffer" not in tmux("list-buffers") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert CLIPBOARD_PAYLOAD in tmux("show-buffer"), "tmux here does not take OSC 52"
    assert WINDOW_TITLE in tmux("display-message", "-p", "-t", "shell", "#{pane_title}")
    tmux("delete-buffer")
    assert tmux("list-buffers") == ""

    done = tmp_path / "exit-code"
    command = (
        f"cd {REPO} && env TERM=screen LANG=C.UTF-8 PYTHONPATH={REPO} "
        f"{sys.executable} -m reviewer --workspace {ws} review --key {rita}; "
        f"echo $? > {done}"
    )
    tmux.new("review", command, width=160, height=50)
    title_before = tmux("display-message", "-p", "-t", "review", "#{pane_title}")
    app = Watch(tmux, "review")
    tmux.wait_for("review", "rita as reviewer")
    app.wait("match 1 of")  # the first item's pane is drawn
    # The app opens on the list's first row, so g (first) may change nothing on the screen:
    # the wait is for the first item's pane, not for a change (which a settled screen
    # never makes).
    app.press("g", until="match 1 of")
    app.check("the first item")

    # Every row: the cursor moves, the list and the detail pane are drawn again (a repaint
    # must not replay anything), each item's own pane shows its strings.
    shown = _shown_item(app.screen())
    visited = {shown}
    for n in range(total - 1):
        shown = app.next_item(shown)
        visited.add(shown)
        app.check(f"item {n + 1} ({shown!r})")
        if shown == "fp-osc52-clipboard":
            # The pane's "history" heading and its "skip by nora (reviewer)" line show
            # before the jump; nora's record in the history is what the jump brings in.
            app.press("h", until="nora (reviewer) skip")
            app.check("nora's note in the history")
        elif shown is not None and "evil" in shown:
            app.press("n", until="Note on")
            app.check("the note dialog on a hostile id")
            app.press("Escape", gone="Note on")

    if "fp-osc52-clipboard" not in visited:
        app.problems.add(f"the walk never showed fp-osc52-clipboard: {sorted(map(str, visited))}")

    # The bulk dialog lists every title shown; cancelled, nothing is signed.
    app.press("M", until="marked")
    app.press("D", until="will be signed")
    app.check("the bulk dialog")
    app.press("Escape", until="bulk decision cancelled")
    # The jobs panel reads each job's files: argv, stage, output, error.
    app.press("b", until="Engine runs")
    app.wait("FAILED")  # drawn once the panel has read the jobs
    app.check("the jobs panel")
    app.press("Escape", gone="Engine runs")

    title_after = tmux("display-message", "-p", "-t", "review", "#{pane_title}")
    if title_after != title_before:
        app.problems.add(f"the pane title changed: {title_before!r} -> {title_after!r}")
    lines = app.screen().splitlines()
    # The status line is the app's own, in place; the fake one is only quoted data.
    if not lines[-2].startswith(" rita as reviewer · 0 decided this session"):
        app.problems.add(f"the status line is not the app's: {lines[-2]!r}")
    if any(line.startswith(FAKE_STATUS) for line in app.seen for line in line.splitlines()):
        app.problems.add("a line of the screen starts with the fake status")
    seen = "\n".join(app.seen)
    for quoted in (
        "clip ␛]52;c;",  # the list row, the header, the texts
        "clear ␛[2J␛[HFAKE",
        "invoice_⟨U+202E⟩exe.txt",
        "c1 ⟨U+009B⟩2J",
        "ad⟨U+200B⟩min",
        "iso ⟨U+2066⟩left⟨U+2069⟩",
        "[bold red]RED[/bold red] [link=https://evil.example]click[/link]",
        "scan-osc52-clipboard ␛]52;c;",  # an eval id from the scan
        "“see ␛]52;c;",  # nora's note
        "⟨U+202E⟩ton⟨U+202C⟩",
        "[bold]really[/bold]",
        "Note on flagged_pairs/fp-⟨U+202E⟩evil",
        "ingest 'pool ␛]52;c;",  # the job's command, its stage, output and error
        "reading ␛[5;1H",
        "flagged ␛]52;c;",
        "cannot read ␛]0;PWNED-WINDOW-TITLE␇ [link=https://evil.example]x",
    ):
        if quoted not in seen:
            app.problems.add(f"never shown: {quoted!r}")
    assert not app.problems, "\n".join(sorted(app.problems))

    tmux("send-keys", "-t", "review", "q")
    deadline = time.monotonic() + 30
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"
