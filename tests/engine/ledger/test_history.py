"""Nothing acknowledged is lost: a seeded, bounded history of several writers at once,
checked against every acknowledgement each was given (tests/support/history.py).

Writers, all at once on one workspace:

- two ``sealdesk decide`` loops (a process per decision, as scripts run it);
- a process that holds its workspace open and opens it again before each decision,
  as the review app does for a search, calibration, a bulk decision or a sign-off;
- the real app under tmux, driven by key presses through search, calibration, bulk
  decisions, single decisions and sign-off.

``make soak`` runs rounds of the same for $SEALDESK_SOAK_SECONDS and prints the
figures (docs/reliability.md).
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.artifacts import write_json_artifact
from engine.ledger.signers import FileSigner
from tests.conftest import REPO, enrol_key, found_workspace
from tests.support.backlog import record_run
from tests.support.calibration import RUN, THRESHOLDS, place_run
from tests.support.history import (
    Ack,
    AppDriver,
    Verdict,
    app_plan,
    check_history,
    judge,
    read_log,
    receipt_acks,
    spawn,
    worker_items,
)

SEED = 7411
ITEMS = 5  # each writer's own items; it visits them in turn, alternating its decision


@dataclass(frozen=True)
class Size:
    """How much one round does: decisions per CLI writer, by the re-opening process,
    and the rounds of the app's actions (each action kind that many times)."""

    cli: int = 8
    reopen: int = 8
    app_rounds: int = 2


@dataclass
class Round:
    """One round's verdict and what went wrong outside the ledger (an app that died,
    a worker that failed)."""

    verdict: Verdict
    problems: list[str]
    note: str = ""

    def report(self) -> str:
        return "\n".join([self.verdict.report(), self.note, *self.problems])


PEOPLE = {  # who writes, under which roles
    "lena": ("lead", "reviewer"),  # the app: decides and signs off
    "rita": ("reviewer",),  # sealdesk decide
    "sam": ("reviewer",),  # sealdesk decide
    "rex": ("reviewer",),  # the process that re-opens its workspace
}


def history_round(
    base: Path, tmux, keys: dict[str, Path], founder_key: Path, seed: int, size: Size
):
    """Gives the verdict of one round in a new workspace under base."""
    base.mkdir(parents=True)
    root = base / "ws"
    ws = found_workspace(root, founder_key)
    for name, roles in PEOPLE.items():
        enrol_key(ws, founder_key, name, roles, keys[name])
    # The app's queue: 27 pairs and a report the calibration view draws, recorded as
    # the run's own artifact (a sign-off refuses an artifact no run recorded).
    report = ws.artifacts_dir / RUN / "contamination_report.json"
    report.parent.mkdir(parents=True)
    write_json_artifact(report, {"thresholds": THRESHOLDS})
    record_run(ws, RUN, report.name, signer=FileSigner(founder_key))
    place_run(ws)
    for writer in ("rita", "sam", "rex"):
        ws.ingest(worker_items(writer, ITEMS))
    ws.close()  # no connection of this process is open while the history runs
    start = time.monotonic()

    logs = {name: base / f"{name}.acks.jsonl" for name in PEOPLE}
    receipts = {name: base / "receipts" / name for name in PEOPLE}
    outs = {name: base / f"{name}.out" for name in PEOPLE}
    workers = [
        spawn(
            "cli",
            root,
            keys[name],
            name,
            ITEMS,
            size.cli,
            logs[name],
            receipts=receipts[name],
            out=outs[name],
        )
        for name in ("rita", "sam")
    ]
    workers.append(
        spawn(
            "reopen",
            root,
            keys["rex"],
            "rex",
            ITEMS,
            size.reopen,
            logs["rex"],
            logs["rita"],
            logs["sam"],
            receipts=receipts["rex"],
            out=outs["rex"],
        )
    )
    done = base / "app-exit-code"
    env = {
        "TERM": "screen",
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(REPO),
        "SEALDESK_RECEIPTS": str(receipts["lena"]),
        "XDG_CONFIG_HOME": str(base / "app-config"),
    }
    command = (
        f"cd {REPO} && {shlex.join([sys.executable, '-m', 'reviewer'])} "
        f"--workspace {shlex.quote(str(root))} review --key {shlex.quote(str(keys['lena']))}; "
        f"echo $? > {shlex.quote(str(done))}"
    )
    session = f"app-{base.name}"
    tmux.new(session, command, width=160, height=40, env=env)
    # The pane outlives the app: what it printed when it exited (a traceback) stays shown.
    tmux("set-option", "-t", session, "remain-on-exit", "on")
    problems = []
    driver = AppDriver(tmux, session, receipts["lena"], logs["lena"], done)
    try:
        driver.run(app_plan(seed, size.app_rounds), seed)
    except AssertionError as exc:
        problems.append(f"app: {exc}")
    for proc in workers:
        try:
            proc.wait(timeout=240)
        except Exception:  # noqa: BLE001  (a hung worker is reported, then stopped)
            proc.kill()
            proc.wait()
            problems.append(f"worker {proc.args[3:6]} did not finish")
    if done.exists() and done.read_text().strip() != "0":
        problems.append(f"the app exited {done.read_text().strip()}:\n{driver.screen()}")
    tmux("kill-session", "-t", session)
    for name, out in outs.items():
        said = out.read_text().splitlines() if out.exists() else []
        if said:
            more = f"\n  ... and {len(said) - 3} more line(s)" if len(said) > 3 else ""
            problems.append(f"{name} said: " + "\n  ".join(said[:3]) + more)
    acks = [a for name in ("rita", "sam", "rex") for a in read_log(logs[name])]
    acks += read_log(logs["lena"]) + receipt_acks(receipts["lena"], "lena (app)")
    worked = time.monotonic() - start
    verdict = check_history(root, acks, base / "receipts")
    timing = f"history {worked:.0f} s, check {time.monotonic() - start - worked:.0f} s"
    return Round(
        verdict,
        problems,
        f"{timing}; {driver.signoffs} sign-off(s) in the app; app: {', '.join(driver.timings)}",
    )


@pytest.fixture
def people(keygen) -> dict[str, Path]:
    """Gives each writer's private key."""
    return {name: keygen(name) for name in PEOPLE}


@pytest.mark.slow
@pytest.mark.needs_tmux
def test_every_acknowledged_record_survives_writers_a_reopening_process_and_the_app(
    tmux, people, founder_key, tmp_path
):
    start = time.monotonic()
    outcome = history_round(tmp_path / "round-0", tmux, people, founder_key, SEED, Size())
    print(f"history: {outcome.verdict.figures()}; {outcome.note}; {time.monotonic() - start:.0f} s")
    if not outcome.verdict.ok or outcome.problems:
        pytest.fail(outcome.report(), pytrace=False)
    if outcome.verdict.acknowledged < 20:  # a history too short proves nothing
        pytest.fail(f"too few acknowledgements to judge:\n{outcome.report()}", pytrace=False)


@pytest.mark.slow
@pytest.mark.needs_tmux
@pytest.mark.skipif(
    not os.environ.get("SEALDESK_SOAK_SECONDS"), reason="the soak runs under make soak"
)
@pytest.mark.timeout(0)
def test_soak(tmux, people, founder_key, tmp_path):
    seconds = float(os.environ["SEALDESK_SOAK_SECONDS"])
    start, rounds, outcomes = time.monotonic(), 0, []
    while time.monotonic() - start < seconds:
        outcomes.append(
            history_round(
                tmp_path / f"round-{rounds}", tmux, people, founder_key, SEED + rounds, Size()
            )
        )
        rounds += 1
    acked = sum(o.verdict.acknowledged for o in outcomes)
    lost = sum(len(o.verdict.lost) for o in outcomes)
    forked = sum(len(o.verdict.forked) for o in outcomes)
    bad = [
        f"round {n}: {o.report()}" for n, o in enumerate(outcomes) if not o.verdict.ok or o.problems
    ]
    print(
        f"\nsoak: {rounds} round(s) in {time.monotonic() - start:.0f} s: acknowledged {acked} / "
        f"lost {lost} / forked {forked}; rounds failing a check: {len(bad)}"
    )
    assert not bad, "\n\n".join(bad)


# -- the checker itself: it finds each fault it is there to find --------------------------


def test_the_checker_counts_lost_forked_and_twice_acknowledged_records():
    a, b, c = "a" * 64, "b" * 64, "c" * 64
    held = {1: a, 2: b}
    acks = [
        Ack("rita", 1, a, "kept"),
        Ack("app", 2, b[:16], "the screen's prefix"),  # a prefix shown is the same record
        Ack("sam", 2, c, "told #2 but another record is there"),
        Ack("rex", 3, c, "told #3, the ledger ends at #2"),
    ]
    verdict = judge(acks, held)
    assert (len(verdict.lost), len(verdict.forked), len(verdict.twice)) == (1, 1, 1)
    assert "rex was told #3" in verdict.lost[0] and "sam was told #2" in verdict.forked[0]
    assert not verdict.ok
    assert judge(acks[:2], held).ok
    assert not judge(acks[:2], held, integrity="row 3 missing from index").ok
    assert not judge(acks[:2], held, verify_failures=["verify: FAIL: record 2"]).ok
    assert not judge([Ack("app", 1, "a" * 4)], held).ok  # too short a prefix proves nothing
