"""A history checker in the spirit of Jepsen: several processes write one workspace at
once, each logging every acknowledgement it was given; afterwards the ledger is held to
every one of them.

An acknowledgement is what a person or a script was told a record is: ``sealdesk
decide`` printed ``#<seq> ... <hash>`` and kept a receipt; ``Workspace.decide`` returned
a record; the review app kept a receipt, or showed ``SIGNED OFF: record #<seq>`` and the
record's hash. The promise checked (docs/reliability.md):

- every acknowledged record is in the ledger at its seq with the same hash (else it is
  *lost* when the ledger no longer reaches that seq, *forked* when another record sits
  there);
- no seq was acknowledged to two different records;
- ``PRAGMA integrity_check`` says ok;
- ``sealdesk verify`` passes, and ``sealdesk verify --receipts DIR`` for every signer.

The workers run as processes of their own (``python -m tests.support.history <kind>
...``) and log one JSON object a line: ``{"worker", "seq", "record_hash", "what"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.sqlitedb import open_read_only
from engine.workspace import BacklogItem

SEALDESK = [sys.executable, "-m", "reviewer"]
QUEUE = "flagged_pairs"
# A line ``sealdesk decide`` prints for each record it appended (engine/cli/commands.py).
_DECIDED = re.compile(r"^#(\d+) (\S+) (\S+) by (\S+) as (\S+) ([0-9a-f]{12})\b", re.M)
_SHORTEST_HASH = 10  # the fewest hex digits of a record hash any acknowledgement shows


@dataclass(frozen=True)
class Ack:
    """One acknowledgement: who was told that record ``seq`` has hash ``record_hash``
    (all of it, or the prefix a screen showed)."""

    worker: str
    seq: int
    record_hash: str
    what: str = ""

    def to_json(self) -> str:
        """Gives the log line."""
        return json.dumps(
            {
                "worker": self.worker,
                "seq": self.seq,
                "record_hash": self.record_hash,
                "what": self.what,
            },
            sort_keys=True,
        )


def log_ack(path: Path, ack: Ack) -> None:
    """Appends an acknowledgement to a worker's log, flushed before it returns: what was
    acknowledged is on disk before the worker does anything else."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(ack.to_json() + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_log(path: Path) -> list[Ack]:
    """Gives the acknowledgements logged in a file (none when it was never written)."""
    if not path.exists():
        return []
    acks = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            obj = json.loads(line)
            acks.append(Ack(obj["worker"], obj["seq"], obj["record_hash"], obj.get("what", "")))
    return acks


def receipt_acks(directory: Path, worker: str) -> list[Ack]:
    """Gives an acknowledgement per receipt kept under a signer's receipt directory."""
    acks = []
    for path in sorted(Path(directory).rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                acks.append(Ack(worker, r["seq"], r["record_hash"], "receipt"))
    return acks


def count_lines(paths: Iterable[Path]) -> int:
    """Gives how many lines the files hold together (a missing file holds none)."""
    total = 0
    for path in paths:
        if path.exists():
            total += len(path.read_text(encoding="utf-8").splitlines())
    return total


# -- the verdict --------------------------------------------------------------------------


@dataclass
class Verdict:
    """What the ledger did with the acknowledgements: the figures and every fault found."""

    acknowledged: int
    lost: list[str] = field(default_factory=list)
    forked: list[str] = field(default_factory=list)
    twice: list[str] = field(default_factory=list)
    integrity: str = "ok"
    verify: list[str] = field(default_factory=list)
    records: int = 0

    @property
    def ok(self) -> bool:
        """Gives whether every promise held."""
        return not (self.lost or self.forked or self.twice or self.verify) and (
            self.integrity == "ok"
        )

    def figures(self) -> str:
        """Gives the one line of counts (acknowledged / lost / forked)."""
        return (
            f"acknowledged {self.acknowledged} / lost {len(self.lost)} / "
            f"forked {len(self.forked)} / seq acknowledged twice {len(self.twice)}; "
            f"ledger {self.records} record(s); integrity_check {self.integrity}; "
            f"verify {'ok' if not self.verify else 'FAILED'}"
        )

    def report(self) -> str:
        """Gives the figures and then every fault, one a line."""
        lines = [self.figures()]
        lines += [f"lost: {x}" for x in self.lost]
        lines += [f"forked: {x}" for x in self.forked]
        lines += [f"twice: {x}" for x in self.twice]
        lines += [f"verify: {x}" for x in self.verify]
        return "\n".join(lines)


def _same(told: str, held: str) -> bool:
    return len(told) >= _SHORTEST_HASH and held.startswith(told)


def judge(
    acks: Sequence[Ack],
    held: dict[int, str],
    integrity: str = "ok",
    verify_failures: Sequence[str] = (),
) -> Verdict:
    """Gives the verdict on acknowledgements against the ledger's (seq -> record hash).

    An ack whose seq the ledger does not reach is lost; one whose seq holds another
    record is forked. A seq told to two records (neither hash a prefix of the
    other) is counted once under ``twice``, whatever the ledger holds.
    """
    verdict = Verdict(len(acks), integrity=integrity, verify=list(verify_failures))
    verdict.records = len(held)
    for ack in acks:
        where = f"{ack.worker} was told #{ack.seq} {ack.record_hash[:16]} ({ack.what})"
        now = held.get(ack.seq)
        if now is None:
            verdict.lost.append(f"{where}; the ledger holds {len(held)} record(s)")
        elif not _same(ack.record_hash, now):
            verdict.forked.append(f"{where}; the ledger holds {now[:16]} there")
    by_seq: dict[int, list[Ack]] = {}
    for ack in acks:
        by_seq.setdefault(ack.seq, []).append(ack)
    for seq, told in sorted(by_seq.items()):
        first = told[0]
        other = [
            a
            for a in told[1:]
            if not (
                a.record_hash.startswith(first.record_hash)
                or first.record_hash.startswith(a.record_hash)
            )
        ]
        if other:
            names = ", ".join(f"{a.worker} {a.record_hash[:12]}" for a in [first, *other])
            verdict.twice.append(f"#{seq} was acknowledged to different records: {names}")
    return verdict


def ledger_state(db_path: Path) -> tuple[dict[int, str], str]:
    """Gives the ledger's (seq -> record hash) and what ``PRAGMA integrity_check`` says,
    read through a read-only SQLite connection once every writer is gone; a database
    SQLite cannot read gives no records and the error as its integrity."""
    conn = None
    try:
        conn = open_read_only(db_path)
        integrity = "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check"))
        held = dict(conn.execute("SELECT seq, record_hash FROM records"))
    except sqlite3.Error as exc:
        return {}, f"unreadable ({exc})"
    finally:
        if conn is not None:
            conn.close()
    return held, integrity


def verify_failures(root: Path, receipts: Path) -> list[str]:
    """Gives one line per failed ``sealdesk verify`` run (none when both pass): once on
    its own, once with ``--receipts`` over the directory holding every signer's receipt
    directory (verify reads every receipt file below it, naming the file of a fault)."""
    failures = []
    for extra in ([], ["--receipts", str(receipts)]):
        cmd = [*SEALDESK, "--workspace", str(root), "verify", "--quiet", "--jobs", "1", *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            failures.append(f"verify {' '.join(extra)}: {' | '.join(said[-3:])}")
    return failures


def check_history(root: Path, acks: Sequence[Ack], receipts: Path) -> Verdict:
    """Gives the verdict on a finished history: the ledger at root held to every ack,
    and to every receipt below ``receipts``."""
    held, integrity = ledger_state(root / "sealdesk.db")
    return judge(acks, held, integrity, verify_failures(root, receipts))


# -- the workspace's items ----------------------------------------------------------------


def worker_items(worker: str, n: int) -> list[BacklogItem]:
    """Gives a worker's own flagged pairs, scored below any the app's run holds, so that
    no two workers decide the same item (that would need an overrule) and the app,
    working from the top of the queue, never reaches them."""
    return [
        BacklogItem.make(
            QUEUE,
            f"{worker}-{i}",
            f"history-{worker}",
            {
                "summary": {"title": f"{worker} item {i}", "score": 0.001 * i / n, "tags": []},
                "text": f"{worker} text {i}",
            },
        )
        for i in range(n)
    ]


def visit(items: int, i: int) -> tuple[int, str]:
    """Gives the item index and the decision of a worker's i-th decision: each visit to
    an item says the other decision, so every call appends a record."""
    return i % items, ("accept", "reject")[i // items % 2]


# -- the workers (each a process of its own) ----------------------------------------------


def hold_file(log: Path) -> Path:
    """Gives the file whose presence asks every writer to pause between decisions (the
    app's driver makes it while a sign-off needs a ledger that stands still)."""
    return log.parent / "hold"


def wait_while_held(log: Path, timeout: float = 60.0) -> None:
    """Returns once no pause is asked for, or after timeout."""
    deadline = time.monotonic() + timeout
    while hold_file(log).exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def cli_writer(root: Path, key: Path, worker: str, items: int, n: int, log: Path) -> None:
    """Decides n times through the real ``sealdesk decide``, a process per decision;
    logs each acknowledgement: the printed seq with the full hash its receipt kept."""
    receipts = Path(os.environ["SEALDESK_RECEIPTS"])
    for i in range(n):
        wait_while_held(log)
        index, decision = visit(items, i)
        item = f"{worker}-{index}"
        cmd = [*SEALDESK, "--workspace", str(root), "decide", "--queue", QUEUE]
        cmd += ["--item", item, "--decision", decision, "--key", str(key)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        said = _DECIDED.search(proc.stdout)
        if proc.returncode != 0 or said is None:
            print(f"{worker}: decide {item} -> {proc.returncode}: {proc.stderr.strip()}")
            continue
        seq, short = int(said.group(1)), said.group(6)
        kept = [a for a in receipt_acks(receipts, worker) if a.seq == seq]
        full = kept[-1].record_hash if kept and kept[-1].record_hash.startswith(short) else short
        log_ack(log, Ack(worker, seq, full, f"sealdesk decide {item} {decision}"))
    finished(log).touch()


def finished(log: Path) -> Path:
    """Gives the file a worker creates beside its log once it has made every decision."""
    return log.with_name(log.name + ".done")


def reopener(
    root: Path, key: Path, worker: str, items: int, n: int, log: Path, others: list[Path]
) -> None:
    """Holds one workspace open and decides n times through it; before each decision
    it opens the same workspace again and closes it, as the review app's searches,
    calibration, bulk and sign-off screens do while its own connection is live.

    Each decision waits (bounded) until the other writers' logs grew, so that theirs
    and its own interleave whatever the machine's load.
    """
    from engine.errors import SealdeskError
    from engine.ledger.receipts import keep
    from engine.ledger.signers import FileSigner
    from engine.workspace import Workspace

    signer = FileSigner(key)
    receipts = Path(os.environ["SEALDESK_RECEIPTS"])
    ws = Workspace.open(root)
    seen = count_lines(others)
    try:
        for i in range(n):
            deadline = time.monotonic() + 30
            while (
                count_lines(others) <= seen
                and not all(finished(o).exists() for o in others)
                and time.monotonic() < deadline
            ):
                time.sleep(0.05)
            seen = count_lines(others)
            wait_while_held(log)
            index, decision = visit(items, i)
            item = f"{worker}-{index}"
            try:
                with Workspace.open(root) as again:
                    again.head()
                record = ws.decide(signer, QUEUE, item, decision, note=f"{worker}#{i}")
                keep([ws.receipt(record)], receipts)
            except (SealdeskError, sqlite3.Error) as exc:
                print(f"{worker}: decide {item} failed: {exc}")
                continue
            log_ack(log, Ack(worker, record.seq, record.record_hash, f"Workspace.decide {item}"))
    finally:
        ws.close()
        finished(log).touch()


def spawn(kind: str, *args: object, receipts: Path, out: Path) -> subprocess.Popen:
    """Starts a worker process (``cli`` or ``reopen``) with its own receipt directory;
    what it prints goes to ``out``."""
    env = {**os.environ, "SEALDESK_RECEIPTS": str(receipts)}
    handle = open(out, "w", encoding="utf-8")  # noqa: SIM115  (the child holds it)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.history", kind, *map(str, args)],
        env=env,
        stdout=handle,
        stderr=subprocess.STDOUT,
    )


def main(argv: list[str] | None = None) -> None:
    """Runs one worker: ``cli ROOT KEY WORKER ITEMS N LOG`` or
    ``reopen ROOT KEY WORKER ITEMS N LOG OTHER_LOG...``."""
    parser = argparse.ArgumentParser(prog="tests.support.history")
    parser.add_argument("kind", choices=["cli", "reopen"])
    parser.add_argument("root", type=Path)
    parser.add_argument("key", type=Path)
    parser.add_argument("worker")
    parser.add_argument("items", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("log", type=Path)
    parser.add_argument("others", type=Path, nargs="*")
    a = parser.parse_args(argv)
    if a.kind == "cli":
        cli_writer(a.root, a.key, a.worker, a.items, a.n, a.log)
    else:
        reopener(a.root, a.key, a.worker, a.items, a.n, a.log, a.others)


# -- the real app, by key presses under tmux ------------------------------------------------

APP_ACTIONS = ("decide", "search", "calibration", "bulk", "signoff")


def app_plan(seed: int, rounds: int) -> list[str]:
    """Gives the app's seeded order of actions: each kind ``rounds`` times (decisions
    twice as often), shuffled."""
    plan = [a for a in APP_ACTIONS for _ in range(rounds)] + ["decide"] * rounds
    random.Random(seed).shuffle(plan)
    return plan


_SESSION = re.compile(r"(\d+) decided this session")
_SIGNED = re.compile(r"SIGNED OFF: record #(\d+)")
_HASH = re.compile(r"hash\s+([0-9a-f]{64})")
_SEARCH_FIELD = "search text, Enter applies"  # the empty search field's placeholder
_REVIEW_FOOTER = "a accept"  # the review screen's key bar, shown by no other screen
_WIDE_FOOTER = "t theme"  # the key bar's end, shown only when the screen is wide enough


def _status(shown: str) -> str:
    """Gives the status bar's line of a screen (empty when none shows)."""
    return next((line for line in shown.splitlines() if _SESSION.search(line)), "")


class AppDriver:
    """Drives ``sealdesk review`` in a tmux session as a person would, waiting on what
    the screen and the app's receipts show; a sign-off the screen shows is logged as an
    acknowledgement (the app keeps receipts of decisions only)."""

    SIGNOFF_TRIES = 5

    def __init__(
        self,
        tmux,
        name: str,
        receipts: Path,
        log: Path,
        done: Path,
        timeout: float = 60.0,
    ) -> None:
        self.tmux, self.name, self.receipts, self.log, self.done = tmux, name, receipts, log, done
        self.timeout = timeout
        self.signoffs = 0  # sign-offs the screen showed signed
        self.timings: list[str] = []  # each action done, and how long it took

    def screen(self) -> str:
        """Gives what the pane shows now."""
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def wait(self, what: str, ready: Callable[[str], bool], timeout: float | None = None) -> str:
        """Gives the screen once ready(screen) holds; raises naming what never came,
        at once when the app has exited."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            shown = self.screen()
            if ready(shown):
                return shown
            if self.done.exists():
                raise AssertionError(f"the app exited while waiting for {what}:\n{shown}")
            if time.monotonic() > deadline:
                size = self.tmux(
                    "display-message", "-p", "-t", self.name, "#{pane_width}x#{pane_height}"
                )
                raise AssertionError(
                    f"{what} never came; the screen ({size.strip()}) was:\n{shown}"
                )
            time.sleep(0.1)

    def decided(self, shown: str) -> int:
        """Gives the status bar's count of decisions this session."""
        found = _SESSION.search(shown)
        return int(found.group(1)) if found else -1

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def text(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def _decide_and_wait(self, key: str) -> None:
        shown = self.screen()
        if "end of queue" in _status(shown):
            # The last decision ended the queue: decision keys sign nothing until the
            # cursor moves, as a person would move it.
            self.keys("k")
        shown = self.screen()
        n, before = self.decided(shown), _status(shown)

        def settled(s: str) -> bool:
            # Appended (the count grows), or told why not in a new status message.
            now = _status(s)
            said = now != before and ("refused" in now or "nothing signed" in now)
            return self.decided(s) > n or said

        self.keys(key)
        self.wait(f"the app's decision {key!r} (after {n} decided)", settled)

    def decide(self, rng: random.Random) -> None:
        """One decision key on the highlighted item."""
        self._decide_and_wait(rng.choice("ax"))

    def search(self, rng: random.Random) -> None:
        """``/`` and a search (the app opens the workspace again to count it), a decision
        under it, then Esc."""
        term = f"question {rng.randrange(1, 3)}"
        self.keys("/")
        # Typed only into the search field: on the list its letters are bindings (q quits).
        self.wait("the search field", lambda s: _SEARCH_FIELD in s)
        self.text(term)
        self.keys("Enter")
        self.wait(f"the search for {term!r}", lambda s: re.search(rf"\d+ shown .*/{term}", s))
        self._decide_and_wait(rng.choice("ax"))
        self.keys("Escape")
        self.wait("the search cleared", lambda s: f"/{term}" not in s)

    def calibration(self, rng: random.Random) -> None:
        """``C``: the calibration view (read on a connection of its own), then Esc."""
        self.keys("C")
        self.wait("the calibration view", lambda s: "band" in s)
        self.keys("Escape")
        self.wait("the review screen again", lambda s: _REVIEW_FOOTER in s)

    def bulk(self, rng: random.Random) -> None:
        """``m`` twice, ``D`` and a decision: one bulk decision on its own connection."""
        decision = rng.choice(["a", "x"])
        self.keys("m")
        self.wait("one item marked", lambda s: "1 marked" in s)
        self.keys("m")
        self.wait("two items marked", lambda s: "2 marked" in s)
        self.keys("D")
        self.wait("the bulk screen", lambda s: "2 marked item(s) of flagged_pairs" in s)
        self.keys(decision)
        self.wait(
            "the bulk decision",
            lambda s: "one signed record each" in s or "nothing was signed" in s,
        )

    def signoff(self, rng: random.Random) -> None:
        """``S``, then ``e`` (items are undecided: sign with exceptions), a note, Enter;
        logs the record the screen says was signed, then Esc.

        A sign-off names the tree head it was shown: when another writer appended
        meanwhile it is refused ("not signed"). Then the other writers are asked to
        pause between decisions (``hold_file``), and it is read again (``r``) and
        tried again, a few times; a refused sign-off acknowledged nothing.
        """
        hold = hold_file(self.log)
        self.keys("S")
        self.wait("the sign-off screen", lambda s: "Tree head to sign" in s)
        try:
            for _ in range(self.SIGNOFF_TRIES):
                if self._sign_off_once(rng):
                    break
                hold.touch()
                self.keys("r")
                self.wait("the summary read again", lambda s: "summary read again" in s)
        finally:
            hold.unlink(missing_ok=True)
        self.keys("Escape")
        self.wait("the review screen again", lambda s: _REVIEW_FOOTER in s)

    def _full_width(self) -> None:
        """Waits until the app draws at the pane's full width (its key bar then names
        every key). Started on a loaded machine, the app can read its size before tmux
        has sized the pane and keep a smaller one; a resize, as a person's terminal
        sends, makes it read the size again."""
        for width in ("159", "160", "159", "160"):
            try:
                self.wait("the app at full width", lambda s: _WIDE_FOOTER in s, timeout=5)
                return
            except AssertionError:
                self.tmux("resize-window", "-t", self.name, "-x", width, "-y", "40")
        self.wait("the app at full width", lambda s: _WIDE_FOOTER in s)

    def _sign_off_once(self, rng: random.Random) -> bool:
        """Gives whether one try at signing off (``e``, a note, Enter) signed."""
        self.keys("e")
        self.wait("the sign-off question", lambda s: "EXCEPTION(S)" in s)
        self.text(f"history sign-off {rng.randrange(1000)}")
        self.keys("Enter")
        shown = self.wait(
            "the sign-off's record or its refusal",
            lambda s: bool(_SIGNED.search(s) and _HASH.search(s)) or "not signed" in s,
        )
        signed, full = _SIGNED.search(shown), _HASH.search(shown)
        if not (signed and full):
            return False
        log_ack(self.log, Ack("lena (app)", int(signed.group(1)), full.group(1), "SIGNED OFF"))
        self.signoffs += 1
        return True

    def run(self, plan: Sequence[str], seed: int) -> None:
        """Runs the plan's actions in order, then quits the app and waits for it to exit."""
        rng = random.Random(seed)
        self.wait("the app", lambda s: _REVIEW_FOOTER in s)
        self._full_width()
        for action in plan:
            began = time.monotonic()
            getattr(self, action)(rng)
            self.timings.append(f"{action} {time.monotonic() - began:.1f}s")
        self.keys("q")
        deadline = time.monotonic() + self.timeout
        while not self.done.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"the app did not exit on q:\n{self.screen()}")
            time.sleep(0.1)


if __name__ == "__main__":
    main()
