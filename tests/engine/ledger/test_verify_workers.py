"""Verify's worker processes: shared ranges, progress, and a worker that dies or fails."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

from engine.errors import SealdeskError
from engine.ledger import verify
from engine.ledger.authority import signer_policy
from engine.signoff.verify import verify_workspace
from tests.conftest import FOUNDER, enrol_key, found_workspace
from tests.support.backlog import make_items

RECORDS = 300  # several small ranges, so both processes claim some


@pytest.fixture
def ledger(workspace, enrol):
    rita = enrol("rita", "reviewer")
    workspace.ingest(make_items(4))
    for i in range(RECORDS):  # each visit the other decision: the same again signs nothing
        workspace.decide(rita, "flagged_pairs", f"item-{i % 4}", ("accept", "reject")[i // 4 % 2])
    return workspace


def authority_records(ws) -> int:
    """Gives how many genesis and enrol records (all the founder's) precede the decisions."""
    count = ws.conn.execute(
        "SELECT COUNT(*) FROM records WHERE kind IN ('genesis', 'enrol') AND principal = ?",
        (FOUNDER,),
    ).fetchone()[0]
    assert count >= 2
    return count


def test_two_processes_share_the_ranges_and_report_progress(ledger, monkeypatch, tmp_path):
    parent = os.getpid()
    child_started = multiprocessing.get_context("fork").Event()
    in_parent: list[tuple[int, int]] = []
    real = verify.check_range

    def spy(bounds):
        if os.getpid() == parent:
            # Hold the parent at its first range until the child has claimed one.
            assert child_started.wait(timeout=60), "the forked child never claimed a range"
            in_parent.append(bounds)
        else:
            child_started.set()
        return real(bounds)

    monkeypatch.setattr(verify, "check_range", spy)
    ctx = verify.load_context(
        ledger.conn,
        ledger.db_path,
        ledger.workspace_id,
        signer_policy(ledger.conn, ledger.allowed_signers_path),
    )
    base = authority_records(ledger)
    seen: list[int] = []
    callers = tmp_path / "progress-callers"

    def progress(done: int) -> None:
        seen.append(done)
        with callers.open("a") as f:  # a forked child's calls would land here too
            f.write(f"{os.getpid()}\n")

    report = verify.verify_ledger(ledger.conn, ctx, processes=2, progress=progress)
    total = base + RECORDS
    assert report.ok and report.records == total
    assert report.signers == {FOUNDER: base, "rita": RECORDS}
    ranges = verify._ranges(1, total, 2)
    assert 0 < len(in_parent) < len(ranges)  # each process checked some of the ranges
    # Progress comes from this process only (a callback's locks may not survive a fork):
    # once per range it checked, then once more when every range is in.
    assert set(callers.read_text().split()) == {str(parent)}
    assert len(seen) == len(in_parent) + 1 and seen == sorted(seen) and seen[-1] == total


def test_a_worker_that_dies_fails_verify_instead_of_passing_or_hanging(ledger, monkeypatch):
    parent = os.getpid()
    real = verify.check_range

    def die_in_child(bounds):
        if os.getpid() != parent:
            os._exit(9)  # as if killed: no report ever reaches the parent
        return real(bounds)

    monkeypatch.setattr(verify, "check_range", die_in_child)
    with pytest.raises(SealdeskError, match="worker process died before it reported"):
        verify_workspace(ledger, processes=2)


@pytest.mark.timeout(60)
def test_a_worker_killed_while_holding_the_range_lock_fails_verify_instead_of_hanging(
    ledger, monkeypatch
):
    """A child SIGKILLed between taking and releasing the shared lock leaves it held for
    ever; the parent must notice while it waits for the lock, and say so."""
    parent = os.getpid()
    real_context = verify.multiprocessing.get_context("fork")
    child_holds_it = real_context.Event()
    parent_waits: list[bool] = []  # what each of the parent's acquires returned

    class DyingLock:
        def __init__(self):
            self._lock = real_context.Lock()

        def acquire(self, *args, **kwargs):
            got = self._lock.acquire(*args, **kwargs)
            if os.getpid() != parent:
                child_holds_it.set()
                os.kill(os.getpid(), signal.SIGKILL)  # dies holding it
            parent_waits.append(got)
            return got

        def release(self):
            self._lock.release()

    class Context:
        def __getattr__(self, name):
            return getattr(real_context, name)

        Lock = staticmethod(DyingLock)

    real = verify.check_range

    def after_the_child_died(bounds):
        if os.getpid() == parent:
            assert child_holds_it.wait(timeout=30), "the forked child never took the lock"
        return real(bounds)

    monkeypatch.setattr(verify.multiprocessing, "get_context", lambda method: Context())
    monkeypatch.setattr(verify, "check_range", after_the_child_died)
    with pytest.raises(SealdeskError, match="worker process died before it reported"):
        verify_workspace(ledger, processes=2)
    assert False in parent_waits  # the parent was kept waiting for the lock, and looked


def test_a_worker_that_raises_names_the_error(ledger, monkeypatch):
    parent = os.getpid()
    real = verify.check_range

    def fail_in_child(bounds):
        if os.getpid() != parent:
            raise MemoryError("no room for the range")
        return real(bounds)

    monkeypatch.setattr(verify, "check_range", fail_in_child)
    with pytest.raises(SealdeskError, match="MemoryError: no room for the range"):
        verify_workspace(ledger, processes=2)


def test_one_process_never_touches_multiprocessing(ledger, monkeypatch):
    """Where fork or POSIX semaphores are missing, verify with one process still works."""

    def refuse(*args, **kwargs):
        raise OSError("no multiprocessing here")

    monkeypatch.setattr(verify.multiprocessing, "get_context", refuse)
    assert verify_workspace(ledger, processes=1).ok
    with pytest.raises(OSError, match="no multiprocessing here"):
        verify_workspace(ledger, processes=2)


def test_two_verifies_in_threads_of_one_process_each_check_their_own_ledger(
    ledger, keygen, tmp_path
):
    """Verify keeps a context, a connection and a checker per process; two threads that
    verify two workspaces at once must not check one's records against the other's."""
    from concurrent.futures import ThreadPoolExecutor

    from engine.ledger.signers import FileSigner
    from engine.workspace import Workspace

    other_lead = keygen("other-lead")
    other = found_workspace(tmp_path / "other", other_lead)
    ravi = keygen("ravi")
    enrol_key(other, other_lead, "ravi", ["reviewer"], ravi)
    other.ingest(make_items(3))
    theirs_base = authority_records(other)
    for i in range(RECORDS // 2):
        other.decide(
            FileSigner(ravi), "flagged_pairs", f"item-{i % 3}", ("reject", "accept")[i // 3 % 2]
        )
    other.close()

    def verify_often(root, processes: int) -> list[tuple]:
        with Workspace.open(root) as ws:  # a connection of this thread's own
            return [
                (r.ok, r.records, r.signers)
                for r in (verify_workspace(ws, processes=processes) for _ in range(6))
            ]

    mine_base = authority_records(ledger)
    with ThreadPoolExecutor(2) as pool:
        for processes in (1, 2):
            mine = pool.submit(verify_often, ledger.root, processes)
            theirs = pool.submit(verify_often, other.root, processes)
            assert (
                mine.result()
                == [(True, mine_base + RECORDS, {FOUNDER: mine_base, "rita": RECORDS})] * 6
            )
            assert (
                theirs.result()
                == [
                    (True, theirs_base + RECORDS // 2, {FOUNDER: theirs_base, "ravi": RECORDS // 2})
                ]
                * 6
            )
