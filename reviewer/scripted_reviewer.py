"""A scripted reviewer working a realistic queue by key presses: the throughput half of
``sealdesk bench review --throughput``.

The queue is what a contamination run hands a reviewer: flagged pairs with long texts
and several matches each, a quarter of them members of duplicate clusters scattered
through the score order, and some already decided by a colleague (the top row among
them, so the app opens on a decided item). The script knows the right verdict of every
item (a cluster's members share one) and reads nothing: reading time is left out, what
is timed is the app between keys. It works the queue twice from the same start:

- **one at a time**: the key sequence the app had before bulk decisions, one decision
  key per item, ``j`` over decided rows, starting on row 1;
- **with bulk**: on a cluster member, ``c`` then the verdict decides the whole cluster
  (one signed record per member); every other item as before.

Each run counts keys pressed (navigation included) and decisions signed, and checks at
the end that the ledger holds exactly the scripted verdict on every item it decided.

With reasons (``measure_reasons``), every decision also gives one of the queue's reason
codes, scripted per item, on a copy of the queue none of which is decided before:

- **as a note** (the way before reasons): ``n``, the code typed, Enter (a signed note
  record), then the decision key;
- **picked**: ``A`` or ``X`` then the reason's digit, one signed decision carrying it.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import SealdeskError
from engine.roles import FLAGGED_PAIRS

PRINCIPAL, COLLEAGUE = "bench", "colleague"
QUEUE = FLAGGED_PAIRS
_VOCAB = (
    "the a of to in and that is for on with as by it from at was be this which are "
    "natalia sold clips friends april may half many altogether weng earns hour babysitting "
    "yesterday minutes betty saving money wallet costs parents grandparents twice much "
    "julie reading book pages today tomorrow remaining james writes letter friends week "
    "mark garden flowers colors yellow purple green percent albert pizza slices large "
    "small ken box shipping brownies jelly beans gummy worms weight pounds alexis budget "
    "clothes shirt pants coat socks belt shoes receipt tina hourly wage overtime shift"
).split()


@dataclass(frozen=True)
class Queue:
    """The bench queue: its items, each item's right verdict, and its cluster (if any)."""

    items: list  # BacklogItem, built lazily so importing this module stays cheap
    verdicts: dict[str, str]  # item id -> accept | reject
    cluster_of: dict[str, int]  # item id -> cluster number, for members only
    colleague: list[str]  # item ids the colleague decided before the session


@dataclass(frozen=True)
class Run:
    """What one way of working the queue cost."""

    mode: str
    keys: int
    navigation: int  # of those keys, the ones that decided nothing (j, c)
    decisions: int
    seconds: float
    correct: bool  # the ledger holds exactly the scripted verdicts

    @property
    def keys_per_decision(self) -> float:
        return self.keys / self.decisions if self.decisions else float("nan")

    @property
    def per_minute(self) -> float:
        return 60 * self.decisions / self.seconds if self.seconds else float("nan")


def _words(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(_VOCAB) for _ in range(n)).capitalize() + "."


def _matches(rnd: random.Random, text: str, n: int, start: int) -> list[dict]:
    out = []
    for k in range(n):
        shared = text[: rnd.randint(40, min(400, len(text)))]
        pool_text = _words(rnd, rnd.randint(60, 250)) + " " + shared + " " + _words(rnd, 80)
        at = pool_text.index(shared)
        channels = sorted(rnd.sample(["ngram", "containment", "embedding"], rnd.randint(1, 3)))
        out.append(
            {
                "kind": "pool",
                "id": f"pool-{start + k}",
                "index": start + k,
                "text": pool_text,
                "channels": channels,
                "scores": {
                    "exact_jaccard": round(rnd.uniform(0.2, 0.95), 4),
                    "containment": round(rnd.uniform(0.3, 1.0), 4),
                    "cosine": round(rnd.uniform(0.8, 0.99), 4),
                },
                "shared_spans": [
                    {"eval": [0, len(shared)], "match": [at, at + len(shared)]},
                ],
                "numbers_differ": rnd.random() < 0.1,
            }
        )
    return out


def realistic_queue(n_items: int = 300, seed: int = 20261201) -> Queue:
    """Gives a queue of ``n_items`` flagged pairs: about a quarter in duplicate clusters of
    2 to 10 members, eval texts of 80 to 400 words, 1 to 6 matches each, and a tenth of
    the single items (the top-scored among them) decided by a colleague."""
    from engine.workspace import BacklogItem

    rnd = random.Random(seed)
    sizes: list[int] = []
    while sum(sizes) < n_items // 4:
        sizes.append(rnd.randint(2, 10))
    sizes[-1] -= max(0, sum(sizes) - n_items // 4)
    sizes = [s for s in sizes if s >= 2]
    payloads: list[tuple[str, dict[str, Any], str, int | None]] = []
    index = 0
    for number, size in enumerate(sizes):
        base = _words(rnd, rnd.randint(80, 400))
        verdict = "accept" if rnd.random() < 0.6 else "reject"
        texts = [f"{base} ({m + 1})" for m in range(size)]
        members = [
            {"id": f"eval-{index + m}", "index": index + m, "text": texts[m]} for m in range(size)
        ]
        for m in range(size):
            payload: dict[str, Any] = {
                "eval": members[m],
                "matches": _matches(rnd, texts[m], rnd.randint(1, 3), 10 * (index + m)),
                "cluster": {"size": size, "members": members},
            }
            payloads.append((f"fp-{index + m:04d}", payload, verdict, number))
        index += size
    while len(payloads) < n_items:
        text = _words(rnd, rnd.randint(80, 400))
        ev = {"id": f"eval-{index}", "index": index, "text": text}
        payload = {"eval": ev, "matches": _matches(rnd, text, rnd.randint(1, 6), 10 * index)}
        payloads.append((f"fp-{index:04d}", payload, rnd.choice(("accept", "reject")), None))
        index += 1
    scores = [round(rnd.uniform(0.3, 0.98), 4) for _ in payloads]
    singles = [n for n, p in enumerate(payloads) if p[3] is None]
    colleague = rnd.sample(singles, max(1, len(singles) // 10))
    scores[colleague[0]] = 0.999  # row 1 is decided: the app opens on a decided item
    items, verdicts, cluster_of = [], {}, {}
    for n, (item_id, payload, verdict, cluster) in enumerate(payloads):
        payload["summary"] = {
            "title": str(payload["eval"]["text"])[:70],
            "score": scores[n],
            "tags": sorted({c for m in payload["matches"] for c in m["channels"]}),
        }
        items.append(BacklogItem.make(QUEUE, item_id, "bench-throughput", payload))
        verdicts[item_id] = verdict
        if cluster is not None:
            cluster_of[item_id] = cluster
    return Queue(items, verdicts, cluster_of, [payloads[n][0] for n in colleague])


def reading_queue(n_items: int = 100, source: Path | None = None) -> Queue:
    """Gives the reading bench's queue, none decided before the session: near-duplicate
    pairs made here (``reviewer.reading_queue``), or, from a ``source`` workspace, a
    seeded sample of its flagged pairs (the verdict scripted from each first match's
    triage: a likely leak accepted, anything else rejected)."""
    from engine.workspace import BacklogItem
    from reviewer.reading_queue import pairs

    made = pairs(n_items) if source is None else _sampled_pairs(source, n_items)
    items = [BacklogItem.make(QUEUE, i, "bench-throughput", p) for i, p, _ in made]
    return Queue(items, {i: v for i, _, v in made}, {}, [])


def _sampled_pairs(source: Path, n_items: int) -> list[tuple[str, dict[str, Any], str]]:
    import json

    from engine.workspace import Workspace

    with Workspace.open(source, read_only=True) as ws:
        rows = ws.conn.execute(
            "SELECT item_id, payload FROM items WHERE queue = ? ORDER BY item_id", (QUEUE,)
        ).fetchall()
    # one item per subject: several runs' items of one eval item would fold into one row
    # and share its decision
    by_subject: dict[str, tuple[str, dict[str, Any]]] = {}
    for item_id, raw in rows:
        payload = json.loads(raw)
        by_subject.setdefault(json.dumps(payload.get("subject", item_id)), (item_id, payload))
    if not by_subject:
        raise SealdeskError(f"{source}: no flagged pairs to read")
    kept = list(by_subject.values())
    picked = random.Random(20261206).sample(kept, min(n_items, len(kept)))
    out = []
    for item_id, payload in picked:
        first = (payload.get("matches") or [{}])[0]
        label = (first.get("triage") or {}).get("label")
        out.append((item_id, payload, "accept" if label == "likely_leak" else "reject"))
    return out


def build(root: Path, queue: Queue) -> tuple[Path, Path]:
    """Gives (workspace, the scripted reviewer's key) after founding a workspace, enrolling
    a colleague and recording the colleague's decisions."""
    from engine.ledger.enrol import enrol, found
    from engine.ledger.signers import FileSigner, read_public_key, write_new_key
    from engine.workspace import Workspace

    root.mkdir(parents=True, exist_ok=True)
    ws_root = root / "ws"
    key, other = root / "bench_key", root / "colleague_key"
    write_new_key(key, PRINCIPAL)
    write_new_key(other, COLLEAGUE)
    with Workspace.init(ws_root) as ws:
        ws.ingest(
            queue.items,
            runs={"bench-throughput": {"kind": "bench", "artifacts": {}, "inputs": {}}},
        )
        lead = FileSigner(key)
        found(ws.db, ws.workspace_id, lead, PRINCIPAL, ("lead", "reviewer"))
        enrol(
            ws.db,
            ws.workspace_id,
            lead,
            COLLEAGUE,
            ("reviewer",),
            read_public_key(Path(f"{other}.pub")),
        )
        ws.write_allowed_signers()
        colleague = FileSigner(other)
        for item_id in queue.colleague:
            ws.decide(colleague, QUEUE, item_id, queue.verdicts[item_id])
    return ws_root, key


def _own_reasons(conn: sqlite3.Connection, how: str) -> dict[str, str]:
    """Gives each item's reason as the ledger holds it: the note's text, or the code in
    the decision's signed data."""
    if how == "note":
        sql = (
            "SELECT item_id, json_extract(message, '$.note') FROM records "
            "WHERE kind = 'note' AND principal = ?"
        )
    else:
        sql = (
            "SELECT item_id, json_extract(message, '$.data.reason') FROM records "
            "WHERE kind = 'decision' AND principal = ?"
        )
    return dict(conn.execute(sql, (PRINCIPAL,)))


def _own_decisions(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(
        conn.execute(
            "SELECT item_id, decision FROM records WHERE kind = 'decision' AND principal = ?",
            (PRINCIPAL,),
        )
    )


async def _until(predicate, timeout: float = 60.0) -> None:
    # A 1 ms poll: the time between keys is what is measured, so little pads it, and the
    # app's worker threads are not starved of the interpreter by a spinning loop.
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SealdeskError("the scripted reviewer waited too long for the app")
        await asyncio.sleep(0.001)


def _press(app, key: str, character: str | None = None) -> None:
    """Puts a key event where a terminal's key arrives (the driver), as a person's would."""
    from textual import events

    event = events.Key(key, character if character is not None else key if len(key) == 1 else None)
    event.set_sender(app)
    app._driver.send_message(event)


def _type(app, text: str) -> int:
    """Types ``text`` one key a character, as a person would; gives the keys pressed."""
    from textual.keys import _character_to_key

    for character in text:
        _press(app, _character_to_key(character), character)
    return len(text)


def scripted_reason(item_id: str, codes: tuple[str, ...]) -> int:
    """Gives the index of the reason the script gives an item (fixed by its id)."""
    import zlib

    return zlib.crc32(item_id.encode()) % len(codes)


_ALL = "the whole detail"


async def _read(app, review, pilot) -> int:
    """Scrolls the detail (Ctrl+D, half a pane a key) until the line after the current
    pair's texts is on screen, as a person reading both to the end would; gives the
    keys pressed."""
    from rich.console import Group
    from textual.containers import VerticalScroll
    from textual.widgets import Static

    from reviewer.panes.anchors import TEXTS_END, Anchor, anchor_lines

    pane = review.query_one("#detail-pane", VerticalScroll)
    detail = review.query_one("#detail", Static)
    await pilot.pause()  # the item just drawn is laid out before its height is read
    drawn = detail.content
    lines = anchor_lines(Group(drawn, Anchor(_ALL)), detail.content_size.width)
    end = lines.get(f"{TEXTS_END}1")
    if end is None:
        raise SealdeskError("the pair's texts are not in the detail pane")
    # laid out: the pane is as tall as the item drawn, so it scrolls as far as it reaches
    await _until(lambda: detail.content is drawn and detail.content_size.height == lines[_ALL])
    pressed = 0
    while end > pane.scroll_y + pane.scrollable_content_region.height:
        at = pane.scroll_y
        _press(app, "ctrl+d")
        pressed += 1
        await _until(lambda at=at: pane.scroll_y > at)
    return pressed


async def work(
    ws_root: Path,
    key: Path,
    queue: Queue,
    bulk: bool,
    *,
    size: tuple[int, int] = (120, 36),
    reading: bool = False,
    whole: bool = False,
    zoom: bool = False,
    reasons: str | None = None,
) -> Run:
    """Gives what working the whole queue cost, pressing keys the way ``bulk`` says.
    With ``reading``, each pair's texts are read to their end before its verdict (the
    scrolling counted), shown as one word diff, or whole with ``whole``; with ``zoom``
    the detail is zoomed first (one key for the session). With ``reasons`` each decision
    gives its scripted reason: ``"note"`` as a note before it, ``"picked"`` in it."""
    from textual.widgets import Input, OptionList

    from engine.sqlitedb import connect
    from engine.workspace import Workspace
    from reviewer.app import ReviewApp
    from reviewer.bulk_screen import BulkScreen
    from reviewer.modals import NoteScreen, ReasonScreen
    from reviewer.session import open_session

    todo = len(queue.verdicts) - len(queue.colleague)
    ws = Workspace.open(ws_root)
    watcher = connect(ws.db_path, read_only=True)

    def signed() -> int:
        return watcher.execute(
            "SELECT COUNT(*) FROM records WHERE kind = 'decision' AND principal = ?",
            (PRINCIPAL,),
        ).fetchone()[0]

    def notes() -> int:
        return watcher.execute(
            "SELECT COUNT(*) FROM records WHERE kind = 'note' AND principal = ?", (PRINCIPAL,)
        ).fetchone()[0]

    codes = tuple(r.code for r in ws.reasons(QUEUE))
    app = ReviewApp(ws, open_session(ws, key=str(key)))
    keys = navigation = 0
    async with app.run_test(size=size) as pilot:
        review = app.review
        listed = review.queue_list
        await _until(lambda: review.first_ready is not None)
        await pilot.pause()
        start = time.perf_counter()
        if whole:
            _press(app, "w")
            keys, navigation = keys + 1, navigation + 1
            await _until(lambda: review.full_texts)
        if zoom:
            _press(app, "z")
            keys, navigation = keys + 1, navigation + 1
            await _until(lambda: review.has_class("zoomed"))
        while signed() < todo:
            row = listed.current
            if row is None:
                raise SealdeskError("the queue ran out before every item was decided")
            if row.status != "undecided":
                at = listed.cursor
                _press(app, "j")
                keys, navigation = keys + 1, navigation + 1
                await _until(lambda at=at: listed.cursor == at + 1)
                continue
            verdict_key = "a" if queue.verdicts[row.item_id] == "accept" else "x"
            if reading:
                await _until(lambda row=row: review.view.item_id == row.item_id)
                scrolled = await _read(app, review, pilot)
                keys, navigation = keys + scrolled, navigation + scrolled
            before = signed()
            if bulk and row.item_id in queue.cluster_of:
                _press(app, "c")
                await _until(
                    lambda: (
                        isinstance(app.screen, BulkScreen) and isinstance(app.focused, OptionList)
                    )
                )
                screen = app.screen
                assert isinstance(screen, BulkScreen)
                count = len(screen.plan.signable)
                _press(app, verdict_key)
                keys, navigation = keys + 2, navigation + 1
                await _until(
                    lambda want=before + count: (
                        signed() == want and app.screen is review and not review.bulk_signing
                    )
                )
            elif reasons == "picked":
                _press(app, verdict_key.upper())
                await _until(lambda: isinstance(app.screen, ReasonScreen))
                _press(app, str(scripted_reason(row.item_id, codes) + 1))
                keys += 2
                await _until(lambda want=before + 1: signed() == want and app.screen is review)
            else:
                if reasons == "note":
                    noted = notes()
                    _press(app, "n")
                    await _until(
                        lambda: (
                            isinstance(app.screen, NoteScreen) and isinstance(app.focused, Input)
                        )
                    )
                    typed = _type(app, codes[scripted_reason(row.item_id, codes)])
                    _press(app, "enter")
                    keys += typed + 2
                    await _until(lambda want=noted + 1: notes() == want and app.screen is review)
                _press(app, verdict_key)
                keys += 1
                # The record is durable before the handler moves the cursor, in one go.
                await _until(lambda want=before + 1: signed() == want)
        seconds = time.perf_counter() - start
    decided = _own_decisions(watcher)
    expected = {i: v for i, v in queue.verdicts.items() if i not in set(queue.colleague)}
    if reasons is not None:
        given = _own_reasons(watcher, reasons)
        wanted = {i: codes[scripted_reason(i, codes)] for i in expected}
        if given != wanted:
            decided = {}  # a reason other than the scripted one is a wrong record
    watcher.close()
    ws.close()
    mode = "with bulk" if bulk else "one at a time"
    if reasons is not None:
        mode = {"note": "note, then decision", "picked": "reason picked"}[reasons]
    if reading:
        mode = ("whole texts" if whole else "word diff") + (", zoomed" if zoom else "")
    return Run(
        mode,
        keys,
        navigation,
        len(decided),
        seconds,
        decided == expected,
    )


def _on_copy(root: Path, name: str, ws_root: Path, run):
    """Runs ``run(copy)`` on a fresh copy of the built workspace. The app keeps each
    record's receipt in the signer's state directory: the bench's go to the copy's own,
    not the person's running it (every copy shares a workspace id)."""
    from engine.backup import backup_workspace
    from engine.workspace import Workspace

    copy = root / name
    with Workspace.open(ws_root, read_only=True) as built:
        backup_workspace(built, copy)  # a database is copied only through SQLite
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(root / f"state-{name}")
    try:
        return run(copy)
    finally:
        if saved is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = saved


# The reading runs: (copy's name, texts whole, detail zoomed). The first is the
# reference: how a pair was read before the word diff.
READING_RUNS = (
    ("whole", True, False),
    ("whole-zoomed", True, True),
    ("diff", False, False),
    ("diff-zoomed", False, True),
)


def measure_reading(
    root: Path, n_items: int, size: tuple[int, int] = (80, 24), source: Path | None = None
) -> tuple[Queue, list[Run]]:
    """Gives the reading queue (``reading_queue``) and its runs at ``size``
    (``READING_RUNS``), each reading every pair's texts to their end before deciding it."""
    queue = reading_queue(n_items, source)
    ws_root, key = build(root / "built", queue)
    runs = [
        _on_copy(
            root,
            name,
            ws_root,
            lambda copy, whole=whole, zoom=zoom: asyncio.run(
                work(copy, key, queue, False, size=size, reading=True, whole=whole, zoom=zoom)
            ),
        )
        for name, whole, zoom in READING_RUNS
    ]
    return queue, runs


def measure(root: Path, n_items: int) -> tuple[Queue, Run, Run]:
    """Gives the queue and its two runs (one at a time, then with bulk), each on its own
    copy of the same workspace."""
    queue = realistic_queue(n_items)
    ws_root, key = build(root / "built", queue)
    one, bulk = (
        _on_copy(
            root,
            name,
            ws_root,
            lambda copy, bulk=bulk: asyncio.run(work(copy, key, queue, bulk)),
        )
        for name, bulk in (("one", False), ("bulk", True))
    )
    return queue, one, bulk


def measure_reasons(root: Path, n_items: int) -> tuple[Queue, Run, Run]:
    """Gives the queue (``realistic_queue``'s, none decided before) and its two runs giving
    every decision a reason: as a note before it (the way before reasons), then picked
    in the decision, each on its own copy of the same workspace."""
    full = realistic_queue(n_items)
    queue = Queue(full.items, full.verdicts, {}, [])
    ws_root, key = build(root / "built", queue)
    note, picked = (
        _on_copy(
            root,
            name,
            ws_root,
            lambda copy, how=how: asyncio.run(work(copy, key, queue, False, reasons=how)),
        )
        for name, how in (("note", "note"), ("picked", "picked"))
    )
    return queue, note, picked
