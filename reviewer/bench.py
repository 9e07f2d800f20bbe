"""``sealdesk bench review``: the review app's speed beside the reference approaches.

Two questions, each answered against a reference in the same run:

1. Launch to first usable screen, with N items in the workspace: a fresh
   process imports the app, opens the workspace and the signing key, draws
   the queue and the first item's detail (headless, 80x24). Reference: a
   fresh process that loads the same rows into Textual's built-in DataTable
   until it is drawn.
2. Keypress to durably appended record: a key event is injected where a
   terminal's key would arrive (the driver), and the clock stops when a
   *separate* SQLite connection sees the signed record committed. Reference
   (the floor): ``ws.decide`` called directly on the same workspace, one call
   after each keypress, so that both are timed under the same load.
"""

from __future__ import annotations

import asyncio
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import click

from engine.roles import FLAGGED_PAIRS

GOAL_FIRST_SCREEN_S = 1.5
GOAL_DECISION_MS = 30.0
GOAL_KEYS_PER_DECISION = 1.2
GOAL_KEYS_WITH_REASON = 2.0
_WORDS = (
    "natalia sold clips to her friends in april and then half as many in may how "
    "many did she sell altogether weng earns an hour for babysitting yesterday she "
    "did minutes of babysitting betty is saving money for a new wallet"
).split()


def _payload(i: int, rnd: random.Random) -> dict:
    text = " ".join(rnd.choice(_WORDS) for _ in range(40)).capitalize() + "."
    score = round(rnd.random(), 4)
    return {
        "eval": {"id": f"eval-{i}", "index": i, "text": text},
        "matches": [
            {
                "kind": "pool",
                "id": f"pool-{i}",
                "index": i,
                "text": text,
                "channels": [rnd.choice(["ngram", "embedding", "probe"])],
                "scores": {"exact_jaccard": score},
                "shared_spans": [{"eval": [0, 20], "match": [0, 20]}],
            }
        ],
        "summary": {
            "title": text[:60],
            "score": score,
            "tags": [rnd.choice(["ngram", "embedding", "probe"])],
        },
    }


def build_workspace(root: Path, n_items: int, extra: int) -> tuple[Path, str]:
    """Gives (key path, principal) after filling a workspace with n_items flagged pairs."""
    from engine.ledger.enrol import found
    from engine.ledger.signers import FileSigner, write_new_key
    from engine.progress import reporter
    from engine.workspace import BacklogItem, Workspace

    ws = Workspace.init(root / "ws")
    rnd = random.Random(20261130)
    total = n_items + extra
    with ws, reporter() as rep:
        stage = rep.stage("building bench workspace", total=total, unit="items")
        batch = []
        for i in range(total):
            batch.append(
                BacklogItem.make(FLAGGED_PAIRS, f"fp-{i:07d}", "bench-run", _payload(i, rnd))
            )
            if len(batch) == 10_000 or i == total - 1:
                ws.ingest(
                    batch,
                    runs={
                        "bench-run": {"kind": "bench", "artifacts": {}, "inputs": {"items": total}}
                    },
                )
                stage.advance(len(batch))
                batch = []
        stage.finish()
        path = root / "bench_key"
        write_new_key(path, "bench")
        found(ws.db, ws.workspace_id, FileSigner(path), "bench", ("reviewer", "lead"))
    return path, "bench"


# -- first screen (run in a fresh process, so imports count) ---------------------------

_CHILD = r"""
import asyncio, json, sys, time
kind, ws_path, key, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

async def sealdesk_app():
    from engine.workspace import Workspace
    from reviewer.app import ReviewApp
    from reviewer.session import open_session
    ws = Workspace.open(ws_path)
    app = ReviewApp(ws, open_session(ws, key=key))
    async with app.run_test(size=(80, 24)) as pilot:
        while app.review.first_ready is None:
            await pilot.pause(0.001)
        await pilot.pause()
        ready = time.time()
        ok = app.review.queue_list.total == n and app.review.queue_list.current is not None
    return ready, ok

async def datatable_app():
    import sqlite3
    from textual.app import App
    from textual.widgets import DataTable

    class Table(App):
        def compose(self):
            yield DataTable(id="t")
        def on_mount(self):
            conn = sqlite3.connect(f"{ws_path}/sealdesk.db")
            rows = conn.execute("SELECT item_id, title, score, tags FROM items "
                                "ORDER BY score DESC, item_id DESC").fetchall()
            table = self.query_one(DataTable)
            table.add_columns("item", "title", "score", "tags")
            table.add_rows(rows)
            table.focus()

    app = Table()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one("#t")
        while table.row_count < n:
            await pilot.pause(0.001)
        await pilot.pause()
        ready = time.time()
        ok = table.row_count == n
    return ready, ok

ready, ok = asyncio.run(sealdesk_app() if kind == "sealdesk" else datatable_app())
print(json.dumps({"ready": ready, "ok": ok}))
"""


def first_screen(kind: str, ws_path: Path, key: Path, n: int, timeout: float) -> float:
    """Gives seconds from process start to a drawn, usable first screen."""
    repo = str(Path(__file__).resolve().parent.parent)
    start = time.time()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(ws_path), str(key), str(n)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=repo,
        env={**_env(), "PYTHONPATH": repo},
    )
    if out.returncode != 0:
        raise click.ClickException(f"{kind} first-screen run failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["ok"]:
        raise click.ClickException(f"{kind} first screen did not show all {n} items")
    return result["ready"] - start


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "SEALDESK_PROGRESS_FILE"}


# -- decision latency -----------------------------------------------------------------


async def _decisions(ws_path: Path, key: Path, count: int) -> tuple[list[float], list[float]]:
    """Gives (app latencies, direct latencies), timed in alternation so that both meet the
    same machine load: one keypress in the app, then one direct ws.decide, and so on."""
    from textual import events

    from engine.ledger.signers import FileSigner
    from engine.sqlitedb import connect
    from engine.workspace import Workspace
    from reviewer.app import ReviewApp
    from reviewer.session import open_session

    ws = Workspace.open(ws_path)
    direct_ws = ws.another()
    signer = FileSigner(key)
    watcher = connect(ws.db_path, read_only=True)
    # The app decides from the top of the score order; the direct calls take
    # items from the bottom, so the two never meet.
    tail = [
        r[0]
        for r in watcher.execute(
            "SELECT item_id FROM items WHERE queue = ? ORDER BY score ASC, item_id ASC LIMIT ?",
            (FLAGGED_PAIRS, count),
        )
    ]
    app = ReviewApp(ws, open_session(ws, key=str(key)))
    app_lat, direct_lat = [], []
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        driver = app._driver
        assert driver is not None  # run_test started the app's (headless) driver
        for n in range(count):
            before = watcher.execute("SELECT COALESCE(MAX(seq), 0) FROM records").fetchone()[0]
            key_event = events.Key("a", "a")
            key_event.set_sender(app)
            t0 = time.perf_counter()
            driver.send_message(key_event)
            while (
                watcher.execute("SELECT COALESCE(MAX(seq), 0) FROM records").fetchone()[0] == before
            ):
                await asyncio.sleep(0)
            app_lat.append(time.perf_counter() - t0)
            await pilot.pause()  # let the screen settle before the next key (not timed)
            t0 = time.perf_counter()
            direct_ws.decide(signer, FLAGGED_PAIRS, tail[n], "accept")
            direct_lat.append(time.perf_counter() - t0)
    watcher.close()
    direct_ws.close()
    ws.close()
    return app_lat, direct_lat


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _whole(
    flag: str, default: int, help: str, minimum: int = 1, name: str | None = None
) -> Callable[..., Any]:
    """Gives a whole-number option of at least minimum, its default shown in the help."""
    names = (flag,) if name is None else (flag, name)
    kind = click.IntRange(min=minimum)
    return click.option(*names, default=default, show_default=True, type=kind, help=help)


@click.command("review")
@_whole("--items", 100_000, "Items in the bench workspace.", name="n_items")
@_whole("--decisions", 200, "Decisions timed, in the app and directly.")
@click.option(
    "--reference-rows",
    default=None,
    type=click.IntRange(min=1),
    help="Rows loaded into the DataTable reference. Default: all --items.",
)
@click.option(
    "--reference-timeout",
    default=600.0,
    show_default=True,
    help="Seconds the DataTable reference may take before it is called off.",
)
@_whole("--runs", 3, "First-screen runs (median kept).")
@click.option(
    "--throughput",
    is_flag=True,
    help="Also work a realistic queue with a scripted reviewer: keys per decision and "
    "decisions per minute, one at a time (before bulk) and with bulk.",
)
@_whole("--queue-items", 300, "Items of the --throughput queue.", minimum=20)
@click.option(
    "--reading",
    is_flag=True,
    help="With --throughput: also read every pair of a near-duplicate queue to the end "
    "of its texts at 80x24 before deciding it (scrolling counted), whole and as one word "
    "diff.",
)
@click.option(
    "--reasons",
    is_flag=True,
    help="With --throughput: also give every decision a reason, as a note before it (the "
    "way before reasons: n, the reason typed, Enter, the decision key) and picked in the "
    "decision (X or A, then its digit), on the same queue.",
)
@_whole("--reading-items", 200, "Pairs of the --reading queue.")
@click.option(
    "--reading-from",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Read a seeded sample of this workspace's flagged pairs instead of the made "
    "queue (one item per subject; its database is only read).",
)
def bench_review(
    n_items: int,
    decisions: int,
    reference_rows: int | None,
    reference_timeout: float,
    runs: int,
    throughput: bool,
    queue_items: int,
    reading: bool,
    reasons: bool,
    reading_items: int,
    reading_from: Path | None,
) -> None:
    """Time the review app against the reference approaches; print ratios.

    \b
    Builds a temporary workspace of --items flagged pairs, then measures:
      first usable screen   sealdesk app vs DataTable loaded with the rows
      decision latency      keypress -> record durable in SQLite (separate
                            connection), vs a direct ws.decide call
    Goals: first screen < 1.5 s, median decision < 30 ms.

    \b
    With --throughput, a scripted reviewer then works a realistic queue
    (duplicate clusters, long texts, several matches, some items decided by a
    colleague) by key presses, reading time left out: once one item at a time
    from row 1 (the key sequence before bulk decisions), once deciding each
    cluster at once. Goal: at most 1.2 keys per decision, navigation included.

    With --reasons too, the scripted reviewer works the same queue (none of it
    decided before) twice more, giving every decision one of the queue's reason
    codes: as a note typed before it, then picked inside the decision. Goal: at
    most 2.0 keys per decision with a reason.

    With --reading too, the scripted reviewer reads each pair of a queue of
    near-duplicates (new numbers, paraphrases, copies inside longer documents,
    template siblings) at 80x24 to the end of its texts before deciding it,
    each Ctrl+D counted: with the texts whole (the reference), as one word diff,
    each with the detail zoomed (z) or not. Goal: at most 1.2 keys per decision
    for the best way of reading.

    \b
      sealdesk bench review                    # 100,000 items, 200 decisions
      sealdesk bench review --items 10000 --runs 1
      sealdesk bench review --throughput       # and the 300-item queue
      sealdesk bench review --items 1000 --throughput --reasons
      sealdesk bench review --items 1000 --throughput --reading
      sealdesk bench review --items 1000 --throughput --reading \\
          --reading-from my-workspace --reading-items 400
    """
    ref_rows = n_items if reference_rows is None else min(reference_rows, n_items)
    with tempfile.TemporaryDirectory(prefix="sealdesk-bench-review-") as tmp:
        root = Path(tmp)
        click.echo(f"building a workspace of {n_items:,} items (not timed)…", err=True)
        key, _ = build_workspace(root, n_items, extra=0)
        ws_path = root / "ws"

        click.echo("timing the first usable screen…", err=True)
        ours = statistics.median(
            first_screen("sealdesk", ws_path, key, n_items, 120) for _ in range(runs)
        )
        if ref_rows == n_items:
            ref_ws = ws_path
        else:
            build_workspace(root / "ref", ref_rows, extra=0)
            ref_ws = root / "ref" / "ws"
        click.echo(f"timing the DataTable reference with {ref_rows:,} rows…", err=True)
        try:
            reference = first_screen("datatable", ref_ws, key, ref_rows, reference_timeout)
        except subprocess.TimeoutExpired:
            reference = None

        click.echo(f"timing {decisions} decisions in the app and directly…", err=True)
        app_lat, direct_lat = asyncio.run(_decisions(ws_path, key, decisions))

        worked = None
        if throughput:
            from reviewer.scripted_reviewer import measure

            click.echo(f"working a {queue_items}-item queue twice by script…", err=True)
            worked = measure(root / "throughput", queue_items)
        given = None
        if throughput and reasons:
            from reviewer.scripted_reviewer import measure_reasons

            click.echo(f"giving reasons on a {queue_items}-item queue twice by script…", err=True)
            given = measure_reasons(root / "reasons", queue_items)
        read = None
        if throughput and reading:
            from reviewer.scripted_reviewer import READING_RUNS, measure_reading

            click.echo(
                f"reading {reading_items} pairs at 80x24, {len(READING_RUNS)} ways, by script…",
                err=True,
            )
            read = measure_reading(root / "reading", reading_items, source=reading_from)

    import textual

    med_app, p95_app = statistics.median(app_lat) * 1000, _p95(app_lat) * 1000
    med_dir, p95_dir = statistics.median(direct_lat) * 1000, _p95(direct_lat) * 1000
    click.echo(
        f"sealdesk bench review · {date.today()} · {platform.machine()} · "
        f"python {platform.python_version()} · textual {textual.__version__}"
    )
    click.echo(f"workspace: {n_items:,} flagged pairs; first screen median of {runs} run(s)")
    click.echo("")
    click.echo(f"first usable screen   sealdesk app            {ours:8.2f} s")
    if reference is None:
        click.echo(
            f"                      DataTable {ref_rows:>9,} rows  > {reference_timeout:.0f} s "
            "(called off)"
        )
        click.echo(
            f"                      ratio                   > {reference_timeout / ours:.0f}x "
            "faster"
        )
    else:
        click.echo(f"                      DataTable {ref_rows:>9,} rows {reference:8.2f} s")
        if ref_rows == n_items:
            click.echo(
                f"                      ratio                   {reference / ours:8.1f}x faster"
            )
        else:
            click.echo(
                "                      ratio                   not computed: the "
                "reference held fewer rows"
            )
    click.echo(
        f"decision latency      app keypress->durable   median {med_app:6.1f} ms  "
        f"p95 {p95_app:6.1f} ms  (n={len(app_lat)})"
    )
    click.echo(
        f"                      direct ws.decide        median {med_dir:6.1f} ms  "
        f"p95 {p95_dir:6.1f} ms  (n={len(direct_lat)})"
    )
    click.echo(
        f"                      ratio app/direct        median {med_app / med_dir:6.2f}x  "
        f"p95 {p95_app / p95_dir:6.2f}x"
    )
    goals = [
        f"first screen < {GOAL_FIRST_SCREEN_S} s: {_verdict(ours < GOAL_FIRST_SCREEN_S)}",
        f"median decision < {GOAL_DECISION_MS:.0f} ms: {_verdict(med_app < GOAL_DECISION_MS)}",
    ]
    if worked is not None:
        goals.append(_echo_throughput(*worked))
    if given is not None:
        goals.append(_echo_reasons(*given))
    if read is not None:
        goals.append(_echo_reading(*read, reading_from))
    click.echo("")
    click.echo("goals: " + "; ".join(goals))


def _echo_throughput(queue, before, bulk) -> str:
    """Prints the two scripted runs side by side; gives the keys-per-decision verdict."""
    clusters = len(set(queue.cluster_of.values()))
    click.echo(
        f"throughput            {len(queue.verdicts)} flagged pairs, {len(queue.cluster_of)} in "
        f"{clusters} duplicate clusters, {len(queue.colleague)} decided by a colleague; "
        "reading time left out"
    )
    for run in (before, bulk):
        click.echo(
            f"                      {run.mode:<16}  {run.keys_per_decision:5.2f} keys/decision "
            f"({run.keys} keys, {run.navigation} deciding nothing, {run.decisions} decisions)  "
            f"{run.per_minute:6.0f} decisions/min  "
            f"{'every verdict as scripted' if run.correct else 'WRONG VERDICTS SIGNED'}"
        )
    click.echo(
        f"                      ratio bulk/before     keys/decision "
        f"{bulk.keys_per_decision / before.keys_per_decision:5.2f}x  decisions/min "
        f"{bulk.per_minute / before.per_minute:5.2f}x"
    )
    if not (before.correct and bulk.correct):
        raise click.ClickException("a scripted run signed a verdict it was not given")
    ok = bulk.keys_per_decision <= GOAL_KEYS_PER_DECISION
    return f"keys per decision <= {GOAL_KEYS_PER_DECISION}: {_verdict(ok)}"


def _echo_reasons(queue, note, picked) -> str:
    """Prints the two ways of giving each decision a reason side by side; gives the
    keys-per-decision verdict of the picked one."""
    click.echo(
        f"reasons               {len(queue.verdicts)} flagged pairs, none decided before, "
        "each decision with its scripted reason; reading time left out"
    )
    for run in (note, picked):
        click.echo(
            f"                      {run.mode:<19}  {run.keys_per_decision:5.2f} keys/decision "
            f"({run.keys} keys, {run.decisions} decisions)  {run.per_minute:6.0f} decisions/min  "
            f"{'every verdict and reason as scripted' if run.correct else 'WRONG RECORDS SIGNED'}"
        )
    click.echo(
        f"                      ratio picked/note      keys/decision "
        f"{picked.keys_per_decision / note.keys_per_decision:5.2f}x  decisions/min "
        f"{picked.per_minute / note.per_minute:5.2f}x"
    )
    if not (note.correct and picked.correct):
        raise click.ClickException("a scripted run signed a verdict or reason it was not given")
    ok = picked.keys_per_decision <= GOAL_KEYS_WITH_REASON
    return f"keys per decision with a reason <= {GOAL_KEYS_WITH_REASON}: {_verdict(ok)}"


def _echo_reading(queue, runs, source: Path | None) -> str:
    """Prints the reading runs against the first (texts whole); gives the verdict of the
    best one."""
    made = "made near-duplicates" if source is None else f"flagged pairs of {source}"
    click.echo(
        f"reading at 80x24      {len(queue.verdicts)} {made}, each read to the end of its "
        "texts (Ctrl+D counted) before its verdict"
    )
    reference = runs[0]
    click.echo(
        f"                      ratio: keys per decision of the {reference.mode} run over "
        "this run's"
    )
    for run in runs:
        fewer = reference.keys_per_decision / run.keys_per_decision
        click.echo(
            f"                      {run.mode:<19}  {run.keys_per_decision:5.2f} keys/decision "
            f"({run.navigation} deciding nothing)  ratio {fewer:5.2f}x  "
            f"{'every verdict as scripted' if run.correct else 'WRONG VERDICTS SIGNED'}"
        )
    if not all(run.correct for run in runs):
        raise click.ClickException("a scripted run signed a verdict it was not given")
    best = min(runs, key=lambda run: run.keys_per_decision)
    ok = best.keys_per_decision <= GOAL_KEYS_PER_DECISION
    return f"reading keys per decision <= {GOAL_KEYS_PER_DECISION} ({best.mode}): {_verdict(ok)}"


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"
