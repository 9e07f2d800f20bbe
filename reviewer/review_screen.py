"""The review screen: the three backlogs beside the detail of the highlighted item.

Every decision key signs and durably appends a record through the workspace
(``ws.decide`` / ``ws.retract`` / ``ws.note``) and only then moves the cursor,
so what the screen shows as decided is always already in the ledger. A
decision that cannot be made (read-only, wrong role, a signer error) is
refused with a visible message; nothing is dropped silently.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, cast

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState

from engine import item_query, jobs, subjects
from engine.bulk import BulkPlan, plan
from engine.desk import Record
from engine.errors import OverruleRequired, SealdeskError
from engine.item_query import (
    ItemFilter,
    ItemRow,
    QueueProgress,
    SignoffMark,
    Watermark,
    last_signoff,
)
from engine.reasons import Guidelines
from engine.roles import ADJUDICATION, FLAGGED_PAIRS, QUEUES, WEAK_CATEGORIES
from engine.terminal_text import visible
from engine.workspace import Workspace
from reviewer.actions import SORTS, STATUSES, bindings
from reviewer.after_decision import Keys, after_decision
from reviewer.bulk_screen import BulkChoice, BulkScreen, Member, cluster_members
from reviewer.claiming import Claiming
from reviewer.disputed_screen import DisputedScreen
from reviewer.jobs_screen import JobsScreen
from reviewer.modals import ConfirmOverrule, FilterScreen, NoteScreen, ReasonScreen
from reviewer.next_steps import EXAM_QUEUE, after_queue, next_queue, signoff_holds, undecided
from reviewer.panes import render_detail
from reviewer.panes.anchors import anchor_lines, jump_target
from reviewer.session import Session
from reviewer.state import QueueView
from reviewer.widgets.bars import QUEUE_LABELS, JobsStrip, KeyHints, QueueTabs, StatusBar
from reviewer.widgets.queue_list import QueueList
from reviewer.workspace_io import BUSY_TIMEOUT_MS, POLL_SECONDS, why_not_written

if TYPE_CHECKING:
    from reviewer.calibration_screen import Band

__all__ = ["POLL_SECONDS", "ReviewScreen", "why_not_written"]

SORT_CYCLE = ("score_desc", "score_asc", "id_asc")
# At most this many items in one bulk decision (marked at once, or signed at once):
# each is listed before it is signed, and a list longer than this is not read.
BULK_LIMIT = 1000
# How far past a decided item the cursor looks for the next undecided one.
SKIP_DECIDED = 200
SORT_LABEL = dict(SORTS)
STATUS_CYCLE = (None, *STATUSES)
# Keys that sign: left out of the key line where this session may not decide.
DECIDING = frozenset(
    {"review.accept", "review.reject", "review.skip", "review.undo", "review.note"}
)


class _Keyed(Protocol):
    """The app's side this screen uses (the app module sits above it)."""

    def key_for(self, binding_id: str) -> str: ...

    def key_hints(self, screen: Screen) -> list[tuple[str, str, int, str]]: ...

    def remember_view(self, queue: str, filters: ItemFilter, sort: str) -> None: ...

    def keys_of(self, binding_id: str) -> frozenset[str]: ...

    def asks_reason(self, queue: str) -> bool: ...


@dataclass
class View:
    """How one queue is being browsed: its filter, sort and where the cursor was."""

    filters: ItemFilter
    sort: str = "score_desc"
    item_id: str | None = None
    band: str = ""  # how the filter line names filters.items (the calibration band)


@dataclass(frozen=True)
class Decided:
    """A record this session appended, so that undo can go back to it."""

    queue: str
    item_id: str
    seq: int
    index: int  # where it was in the list when decided


class BulkPlanned(Message):
    """A bulk decision was read (its items, what deciding each would do): show it."""

    def __init__(
        self, token: int, title: str, plan: BulkPlan, members: list[Member] | None
    ) -> None:
        super().__init__()
        self.token, self.title, self.plan, self.members = token, title, plan, members


class BulkSigned(Message):
    """A bulk decision ended: what deciding each item did, or why nothing was signed."""

    def __init__(self, plan: BulkPlan, decision: str, outcomes: list, why: str | None) -> None:
        super().__init__()
        self.plan, self.decision, self.outcomes, self.why = plan, decision, outcomes, why


class SearchDone(Message):
    """A background text search has counted its matches."""

    def __init__(self, token: int, total: int, index: int) -> None:
        super().__init__()
        self.token, self.total, self.index = token, total, index


class ReviewScreen(Screen):
    """Queue pane on the left, detail pane on the right, keys for deciding."""

    SCOPE = "review"
    BINDINGS = bindings(SCOPE)

    def __init__(
        self, ws: Workspace, session: Session, views: dict[str, QueueView] | None = None
    ) -> None:
        """``views``: each queue's filter and sort as this user last left them."""
        super().__init__()
        self.ws = ws
        self.session = session
        self.queue = self._first_queue()
        self.views = {q: View(self.unfiltered()) for q in QUEUES}
        for queue, saved in (views or {}).items():
            if queue in self.views:
                # "decided by me" means nothing without a signer: a read-only session drops it.
                who = saved.filters.decided_by if session.principal else None
                filters = replace(
                    saved.filters, principal=session.principal, decided_by=who, newest_only=True
                )
                self.views[queue] = View(filters, saved.sort)
        self.progress: dict[str, QueueProgress] = {}
        # The undecided item on screen is claimed, so colleagues' apps pass over it.
        self.claiming = Claiming(
            ws,
            None if session.read_only else session.principal,
            lambda queue: session.role_for(queue) is not None,
        )
        self.decided_here: list[Decided] = []
        self.message = ""
        self.first_ready: float | None = None
        self._watermark: Watermark | None = None
        self._poll_timer: Timer | None = None  # set on mount; paused while covered
        self.own_records: set[int] = set()
        self.last_signoff: SignoffMark | None = None
        self._search_token = 0
        self._jobs_started: set[str] = set()
        # The last item, once decided with nothing after it: decision keys then sign
        # nothing until the cursor moves (a held key must not re-sign it).
        self.ended_at: tuple[str, str] | None = None
        self._triage_first = False  # the score order ranks by triage first here
        # A flagged pair's texts: one word diff (False) or both whole (True), for every
        # item until switched back.
        self.full_texts = False
        # The item the detail pane shows: another one starts at the pane's top.
        self._shown: tuple[str, str] | None = None
        # (detail drawn, width, line of each anchor in it): the jump keys' last reading
        self._anchors: tuple[Any, int, dict[str, int]] | None = None
        # Marked items per queue, in the order marked (a dict keeps it), for one bulk
        # decision; the queue list draws the current queue's.
        self.marks: dict[str, dict[str, None]] = {q: {} for q in QUEUES}
        self._bulk_token = 0
        self.bulk_signing = False

    def _own_queues(self) -> list[str]:
        """Gives the queues that are this session's work (not those it may only settle)."""
        return [q for q in QUEUES if self.session.works_on(q)]

    def _first_queue(self) -> str:
        # Open on the queue this person decides, so the first key works; on mount,
        # _start_queue prefers one of those that still has work.
        mine = self._own_queues()
        return mine[0] if mine else QUEUES[0]

    def _start_queue(self) -> str:
        """Gives the first queue this session decides that has undecided items, else the
        first in which a review plan's disagreements wait for it to settle them, else the
        first queue it decides."""
        for queue in self._own_queues():
            if undecided(self.progress, queue):
                return queue
        for queue in QUEUES:
            # A queue it only settles is not its work, but the disagreements there are
            # (ws.own_work): with nothing left in its own queues, open where they wait
            # rather than on an empty queue.
            settles = self.session.role_for(queue) and not self.session.works_on(queue)
            if settles and self.ws.own_work(queue):
                return queue
        return self._first_queue()

    # -- layout -----------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # Text, not markup strings: a path or reason may hold "[".
        if self.session.read_only:
            banner = Static(
                Text(
                    visible(
                        f" READ-ONLY: {self.session.read_only_reason}. Browsing "
                        "works; decisions are refused."
                    )
                ),
                id="banner",
                classes="read-only",
            )
        else:
            banner = Static(Text(visible(f" sealdesk review · {self.ws.root}")), id="banner")
        yield banner
        with Horizontal(id="main"):
            with Vertical(id="queue-pane"):
                yield QueueTabs(id="queue-tabs")
                yield Static(id="filter-line")
                yield Input(
                    placeholder="search text, Enter applies, Esc clears", id="search", compact=True
                )
                yield QueueList(self._fetch, id="queue-list")
            with VerticalScroll(id="detail-pane"):
                yield Static(id="detail")
        yield JobsStrip(id="jobs-strip")
        yield StatusBar(id="status-bar")
        yield KeyHints(id="key-hints")

    @property
    def view(self) -> View:
        return self.views[self.queue]

    @property
    def queue_list(self) -> QueueList:
        return self.query_one(QueueList)

    def on_mount(self) -> None:
        self.ws.conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_MS)}")
        self.query_one("#search", Input).display = False
        self.query_one(JobsStrip).display = False
        self.refresh_progress()
        self.queue = self._start_queue()
        self.queue_list.marks = self.marks[self.queue]
        self._show_tabs()
        self._show_status()
        self.show_key_hints()
        self.query_one("#search", Input).value = self.view.filters.text or ""
        # Resume: the first item still to decide, under the filter and sort left last time.
        self.reload(first_undecided=True)
        if self._done(self.queue):
            self._say_done(self.queue)
        elif self.view.filters != self.unfiltered() or (self.view.sort != "score_desc"):
            self.say("filter and sort as you left them (f changes, Ctrl+R there clears)")
        self.queue_list.focus()
        self._watermark = self.ws.watermark()
        self._poll_timer = self.set_interval(POLL_SECONDS, self.poll)
        self.first_ready = time.perf_counter()

    def on_screen_suspend(self) -> None:
        # Covered (sign-off, jobs, a dialog): a pushed screen does not stop this
        # screen's timers, and nobody sees what its poll would redraw.
        if self._poll_timer is not None:
            self._poll_timer.pause()

    def on_screen_resume(self) -> None:
        if self._poll_timer is not None:
            self._poll_timer.resume()
            self.poll()  # the watermark diff catches up on whatever moved meanwhile

    def on_unmount(self) -> None:
        self.claiming.release()  # the item is free for others at once, not at lease end

    # -- data -------------------------------------------------------------------
    def _fetch(self, offset: int, limit: int) -> list[ItemRow]:
        view = self.view
        return self.ws.page(self.queue, view.filters, view.sort, offset, limit)

    def reload(self, keep: str | None = None, at: int = 0, first_undecided: bool = False) -> None:
        """Reads the queue's count again and puts the cursor on an item (else on the first
        undecided one when asked, else at an index)."""
        view = self.view
        self._triage_first = view.sort.startswith("score") and item_query.triage_ranks(
            self.ws.conn, self.queue
        )
        self._show_filter_line(None)
        if view.filters.text:
            # Text search reads payloads (~1 s on 100,000 items): do it off the UI thread.
            self._search_token += 1
            self.queue_list.reset(0)
            self.say("searching…")
            self._search(
                self._search_token, self.queue, view.filters, view.sort, keep, first_undecided
            )
            return
        total = self.ws.count(self.queue, view.filters)
        index = self._index_of(keep) if keep else None
        if index is None and first_undecided:
            index = self._first_free_undecided()
        self.queue_list.reset(total, cursor=at if index is None else index)
        self._show_filter_line(total)
        self._show_current()

    def _index_of(self, item_id: str) -> int | None:
        view = self.view
        return self.ws.position(self.queue, item_id, view.filters, view.sort)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(
        self,
        token: int,
        queue: str,
        filters: ItemFilter,
        sort: str,
        keep: str | None,
        first_undecided: bool = False,
    ) -> None:
        # Its own connection: the UI thread keeps using (and writing) the main one.
        with self.ws.another() as reader:
            total = reader.count(queue, filters)
            if keep:
                index = reader.position(queue, keep, filters, sort) or 0
            elif first_undecided:
                found = first_undecided_row(reader, queue, filters, sort)
                index = found[0] if found else 0
            else:
                index = 0
        self.post_message(SearchDone(token, total, index))

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        # Background work never takes the app down: its failure is shown.
        if event.state == WorkerState.ERROR:
            if event.worker.group == "search":
                self.queue_list.reset(0)
            if event.worker.group == "bulk-sign":
                self.bulk_signing = False
            self.refuse(f"{event.worker.group} failed: {event.worker.error}")

    @on(SearchDone)
    def _search_done(self, event: SearchDone) -> None:
        if event.token != self._search_token:
            return  # a newer search replaced this one
        self.queue_list.reset(event.total, cursor=event.index)
        self._show_filter_line(event.total)
        self.say(f"{event.total} match(es)")
        self._show_current()

    def refresh_progress(self) -> None:
        """Reads every queue's counts and the newest sign-off again; redraws tabs and status."""
        self.progress = self.ws.progress()
        self.last_signoff = last_signoff(self.ws.conn)
        self._show_tabs()
        self._show_status()

    def _bump_progress(self, queue: str, old: str, new: str) -> None:
        p = self.progress.get(queue)
        if p is None:
            return
        counts = {"accept": p.accept, "reject": p.reject, "skip": p.skip}
        if old in counts:
            counts[old] -= 1
        if new in counts:
            counts[new] += 1
        self.progress[queue] = QueueProgress(p.total, **counts)
        self._show_tabs()

    def poll(self) -> None:
        """Notices new items (a finished engine run) and others' records; follows jobs;
        keeps the claim on the item shown."""
        self.claiming.renew()
        mark = self.ws.watermark()
        old, self._watermark = self._watermark, mark
        if old is not None and mark != old:
            foreign = any(
                seq not in self.own_records for seq in range(old.head_seq + 1, mark.head_seq + 1)
            )
            if mark.items_rowid != old.items_rowid or foreign:
                self.refresh_progress()
                row = self.queue_list.current
                filters = self.view.filters
                by_decision = (filters.status or filters.decided_by) and not filters.text
                if mark.items_rowid != old.items_rowid or by_decision:
                    # New items, or others' decisions moving rows in or out of a filter
                    # on status or decider: count again, keep the cursor where it was.
                    # (Not under a text search: that recount reads payloads, ~1 s, and
                    # would blank the list every time someone decides.)
                    self.reload(keep=row.item_id if row else None, at=self.queue_list.cursor)
                else:
                    self.queue_list.forget()
                    self._show_current()
        self._show_jobs()

    def _show_jobs(self) -> None:
        # The strip follows the newest job while it runs, and to its end when this
        # session started it; older finished jobs are in the jobs panel.
        newest = next(iter(jobs.list_jobs(self.ws.root, limit=1)), None)
        if newest is not None and (
            newest.state == "running" or newest.job_id in self._jobs_started
        ):
            self.query_one(JobsStrip).show(newest)
        else:
            self.query_one(JobsStrip).show(None)

    # -- drawing ----------------------------------------------------------------
    def show_key_hints(self) -> None:
        """Redraws the key line with the keys this queue needs most, as bound now."""
        hints = cast(_Keyed, self.app).key_hints(self)
        if self.session.refusal(self.queue):  # here deciding is refused: its keys only say so
            hints = [h for h in hints if h[3] not in DECIDING]
        if self.session.signoff_refusal() is None:  # a lead's own next step
            hints = [(k, d, 1 if bid == "review.signoff" else r, bid) for k, d, r, bid in hints]
        self.query_one(KeyHints).show(hints)

    def _show_tabs(self) -> None:
        self.query_one(QueueTabs).show(self.queue, self.progress)

    def _show_filter_line(self, shown: int | None) -> None:
        f, view = self.view.filters, self.view
        # Said when it holds: a likely leak of score 0.6 comes before a look-alike of 0.9.
        order = ("triage, then " if self._triage_first else "") + SORT_LABEL[view.sort]
        parts = [f"{shown:,} shown" if shown is not None else "…", f"sort {order}"]
        if f.status:
            parts.append(f"status {f.status}")
        if f.decided_by:
            parts.append(f"by {f.decided_by}")
        if f.tag:
            parts.append(f"tag {f.tag}")
        if f.score_min is not None or f.score_max is not None:
            lo = "" if f.score_min is None else f"{f.score_min:g}"
            hi = "" if f.score_max is None else f"{f.score_max:g}"
            parts.append(f"score {lo}..{hi}")
        if f.items is not None:
            parts.append(view.band or f"{len(f.items)} chosen")
        if f.text:
            parts.append(f"/{f.text}")
        if not f.newest_only and f.items is None:
            parts.append("all runs")
        marked = len(self.marks[self.queue])
        if marked:
            parts.append(f"{marked} marked")
        self.query_one("#filter-line", Static).update(Text(visible(" " + " · ".join(parts))))

    def _show_status(self) -> None:
        role = self.session.role_for(self.queue)
        if role is None and not self.session.read_only:
            role = f"{'/'.join(self.session.roles)} (may not decide here)"
        self.query_one(StatusBar).show(
            principal=self.session.principal,
            role=role or "",
            decided=len(self.decided_here),
            head=self.ws.head(),
            message=self.message,
            signoff=self.last_signoff,
        )

    def say(self, message: str) -> None:
        """Shows a short message in the status bar."""
        self.message = message
        self._show_status()

    def _show_current(self) -> None:
        self.show_detail(self.queue_list.current)

    def show_detail(self, row: ItemRow | None) -> None:
        """Draws the detail pane for a row (its payload and its history)."""
        detail = self.query_one("#detail", Static)
        if row is None:
            empty = ""
            if self.queue_list.total == 0:
                filtered = self.view.filters != self.unfiltered()
                empty = "nothing here under this filter" if filtered else "this queue is empty"
            detail.update(Text(empty))
            self._shown = None
            return
        item: dict[str, Any] | None = self.ws.item(row.queue, row.item_id)
        history = []
        if item:
            # The item's own records, and those on its subject's other runs' items: the
            # decision a carried or re-opened status comes from is among them.
            history = sorted(
                self.ws.history(row.queue, row.item_id)
                + self.ws.subject_history(row.queue, row.item_id),
                key=lambda rec: rec["seq"],
            )
        guidelines: Guidelines | SealdeskError | None
        try:
            guidelines = self.ws.guidelines(row.queue)
        except SealdeskError as exc:  # shown where they would be, not raised
            guidelines = exc
        shown = render_detail(
            item,
            history,
            guidelines=guidelines,
            full_texts=self.full_texts,
            toggle_key=cast(_Keyed, self.app).key_for("review.texts"),
        )
        planned = self.ws.plan_note(row.queue, row.item_id) if item else None
        if planned is not None:
            shown = Group(Text(visible(planned), style="bold"), shown)
        if item:
            key = cast(_Keyed, self.app).key_for("review.next_undecided")
            held = self.claiming.shown(row, key)
            if held is not None:
                shown = Group(Text(visible(held), style="bold"), shown)
        members = cluster_members(item["payload"]) if item else []
        if members:
            # The cluster's members are listed at the bottom as text: say, on top, which
            # key turns them into items to visit or to decide at once.
            key = cast(_Keyed, self.app).key_for("review.cluster")
            # One line at 80 columns: the list it opens says the rest (go to one, decide all).
            hint = Text(f"duplicate cluster of {len(members)} · ", style="bold")
            hint.append(f"{key} lists its members")
            shown = Group(hint, shown)
        detail.update(shown)
        self.view.item_id = row.item_id
        if self._shown != (row.queue, row.item_id):
            # Another item opens at its top, in the same step as it is drawn: a reader
            # scrolling it never races a later reset (drawn again, it stays where it is).
            self._shown = (row.queue, row.item_id)
            self.query_one("#detail-pane").scroll_home(animate=False, immediate=True)

    @on(QueueList.Highlighted)
    def _highlighted(self, event: QueueList.Highlighted) -> None:
        if event.row is None or (event.row.queue, event.row.item_id) != self.ended_at:
            self.ended_at = None  # the cursor left the last item: the queue goes on
        self.show_detail(event.row)

    # -- deciding ---------------------------------------------------------------
    def refuse(self, why: str) -> None:
        """Says, visibly, that an action was not taken and why."""
        self.say("refused")
        self.app.notify(why, title="Refused", severity="error", timeout=6, markup=False)

    def _signing_args(self, queue: str) -> dict[str, Any] | None:
        why = self.session.refusal(queue)
        if why:
            self.refuse(why)
            return None
        return {"principal": self.session.principal, "role": self.session.role_for(queue)}

    def _appended(self, record) -> None:
        self.own_records.add(record.seq)
        self._keep_receipt(record)
        self._show_status()

    def _keep_receipt(self, record) -> None:
        """Keeps the receipt of an acknowledged record in the signer's own state directory."""
        from engine.desk import keep

        try:
            keep([self.ws.receipt(record)])
        except (OSError, SealdeskError, sqlite3.Error) as exc:
            self.app.notify(
                f"record #{record.seq} is signed and kept, but its receipt could "
                f"not be written: {exc}",
                title="Receipt",
                severity="warning",
                timeout=8,
                markup=False,
            )

    def action_decide(self, decision: str) -> None:
        """Signs and appends a decision on the highlighted item, then moves to the next.

        Another principal's standing decision is replaced only after the person
        confirms the overrule (the record then names it); one made in a role
        above this session's is not replaced at all. After a decision on the
        last item the queue is at its end: decision keys say so and sign nothing
        until the cursor moves (a skip settles nothing, so it does not end it).
        """
        found = self._decidable()
        if found is None:
            return
        row, args = found
        if decision != "skip" and cast(_Keyed, self.app).asks_reason(row.queue):
            self._ask_reason(row, self.queue_list.cursor, decision, args)
            return
        self._sign(row, self.queue_list.cursor, decision, args, overrule=False)

    def action_decide_with_reason(self, decision: str) -> None:
        """Asks for the reason of a decision on the highlighted item (one key, 1-9, picks
        it and signs; Enter signs none; Esc signs nothing), then signs as ``decide``."""
        found = self._decidable()
        if found is None:
            return
        row, args = found
        self._ask_reason(row, self.queue_list.cursor, decision, args)

    def _decidable(self) -> tuple[ItemRow, dict[str, Any]] | None:
        """Gives the highlighted row and the signing arguments for it, or None after
        saying why it cannot be decided now."""
        lst = self.queue_list
        row = lst.current
        if row is None:
            self.refuse("no item is highlighted")
            return None
        if self.ended_at == (row.queue, row.item_id):
            self.say(
                f"end of queue: {row.item_id} was the last item here; nothing signed "
                "(move the cursor to decide an item again)"
            )
            return None
        args = self._signing_args(row.queue)
        if args is None:
            return None
        return row, args

    def _ask_reason(self, row: ItemRow, index: int, decision: str, args: dict[str, Any]) -> None:
        """Asks which of the queue's reasons the decision gives, then signs it with it."""
        try:
            reasons = self.ws.reasons(row.queue)
            guidelines = self.ws.guidelines(row.queue)
        except SealdeskError as exc:
            self.refuse(why_not_written(exc))
            return

        def chosen(code: str | None) -> None:
            if code is None:
                self.say(f"not decided: {row.item_id} is as it was; nothing signed")
                return
            self._sign(row, index, decision, args, overrule=False, reason=code or None)

        keyed = cast(_Keyed, self.app)
        self.app.push_screen(
            ReasonScreen(
                decision,
                f"{row.queue}/{row.item_id}",
                reasons,
                keyed.keys_of(f"review.{decision}") | keyed.keys_of(f"review.{decision}_reason"),
                guidelines.sha256 if guidelines is not None else None,
            ),
            chosen,
        )

    def _ask_to_overrule(
        self,
        row: ItemRow,
        index: int,
        decision: str,
        args: dict[str, Any],
        standing: dict[str, Any],
        reason: str | None = None,
    ) -> None:
        """Asks whether to overrule another's standing decision; signs only on ``y``."""

        def answered(yes: bool | None) -> None:
            if yes:
                # The hash of exactly the decision shown: should another land meanwhile,
                # the workspace refuses rather than overrule what was not confirmed.
                self._sign(
                    row, index, decision, args, overrule=standing["record_hash"], reason=reason
                )
            else:
                self.say(
                    f"not overruled: {row.item_id} still stands at "
                    f"{standing['decision']} by {standing['principal']}; nothing signed"
                )

        self.app.push_screen(
            ConfirmOverrule(
                f"{row.queue}/{row.item_id} stands at {subjects.said(standing)}. Overrule it "
                f"with {decision} as {args['role']}?"
            ),
            answered,
        )

    def _sign(
        self,
        row: ItemRow,
        index: int,
        decision: str,
        args: dict[str, Any],
        overrule: bool | str,
        reason: str | None = None,
    ) -> None:
        """Signs a decision (with ``reason``, a code of the queue's) on the row at
        ``index`` (unless it already stands, said by this person), then moves to the
        next row or marks the end of the queue."""
        lst = self.queue_list
        try:
            (outcome,) = self.ws.decide_many(
                self.session.require_signer(),
                row.queue,
                [row.item_id],
                decision,
                overrule=overrule,
                reason=reason,
                **args,
            )
        except OverruleRequired as exc:
            if overrule is False:
                self._ask_to_overrule(row, index, decision, args, exc.standing, reason)
            else:
                self.refuse(why_not_written(exc))
            return
        except (SealdeskError, sqlite3.Error) as exc:
            self.refuse(why_not_written(exc))
            return
        record = outcome.record
        if record is None:
            # Nothing appended: the signer's own standing decision already said the same.
            assert outcome.standing is not None
            self.message = f"already {decision} by you (#{outcome.standing['seq']}): nothing signed"
            self._show_status()
        else:
            # The record is durably in the ledger now; only now does the screen move on.
            self.decided_here.append(Decided(row.queue, row.item_id, record.seq, index))
            over = outcome.overruled
            self.message = (
                f"{decision} {row.item_id}"
                + (f" · {reason}" if reason else "")
                + (f" (overruled {over['principal']})" if over else "")
            )
            self._appended(record)
            self._bump_progress(row.queue, row.status, decision)
            if self.ws.carries_to_others(row.queue, row.item_id):
                lst.forget()  # other rows of its subject take (or lose) the decision
                self.refresh_progress()
            if row.status == "undecided" and self._done(row.queue):
                self._say_done(row.queue)
        at = lst.row(index)
        if at is not None and at.item_id == row.item_id:
            lst.replace(
                index, replace(row, status=decision, principal=self.session.principal, carry=None)
            )
        keyed = cast(_Keyed, self.app)
        move = after_decision(
            index=index,
            total=lst.total,
            was_undecided=row.status == "undecided",
            decision=decision,
            moved_meanwhile=lst.cursor != index
            or bool(lst.current and lst.current.item_id != row.item_id),
            next_undecided=self._next_undecided,
            left=undecided(self.progress, row.queue),
            done=self._done(row.queue),
            message=self.message,
            keys=Keys(
                keyed.key_for("review.accept"),
                keyed.key_for("review.reject"),
                keyed.key_for("review.next_undecided"),
            ),
        )
        if move.ended:
            self.ended_at = (row.queue, row.item_id)
        if move.notice is not None:
            self.say(move.notice)
        if move.cursor is not None:
            lst.cursor = move.cursor
        else:
            self.show_detail(lst.current)
        if record is not None:
            self._offer_next_step(row.queue)

    def _next_undecided(self, index: int) -> int:
        """Gives the index of the first undecided row after ``index`` that nobody else
        holds (looking at most SKIP_DECIDED rows ahead), claimed now, else the next row."""
        lst = self.queue_list
        for at in range(index + 1, min(lst.total, index + 1 + SKIP_DECIDED)):
            row = lst.row(at)
            if row is not None and row.status == "undecided" and self.claiming.take(row):
                return at
        return index + 1

    def _offer_next_step(self, queue: str) -> None:
        """Says, once a decision settles the last adjudication item, that the exam can
        now be resolved, and with which key."""
        p = self.progress.get(queue)
        if queue != ADJUDICATION or p is None or not p.total or p.accept + p.reject < p.total:
            return
        key = cast(_Keyed, self.app).key_for("review.resolve_exam")
        self.app.notify(
            f"every adjudication item is accepted or rejected: {key} offers exam resolve "
            "as a background job",
            title="Adjudication done",
            timeout=10,
            markup=False,
        )
        self.say(f"{self.message} · adjudication done: {key} resolves the exam")

    def _adjudication_runs(self) -> dict[str, int]:
        """Gives each run holding adjudication items, with how many of its items are not
        yet accepted or rejected (a skip settles nothing)."""
        left: dict[str, int] = {}
        for item in self.ws.items(queue=ADJUDICATION):
            unsettled = item["status"] not in item_query.SETTLING
            left[item["run_id"]] = left.get(item["run_id"], 0) + unsettled
        return left

    def action_resolve_exam(self) -> None:
        """Offers ``exam resolve`` of a run whose adjudication items are all settled, in
        the jobs panel (Enter starts it); refuses while any of them is not."""
        runs = self._adjudication_runs()
        if not runs:
            self.refuse("no adjudication items in this workspace: no exam to resolve")
            return
        ready = sorted(run for run, left in runs.items() if left == 0)
        if not ready:
            run, left = min(runs.items(), key=lambda kv: (kv[1], kv[0]))
            self.refuse(
                f"run {run} has {left} adjudication item(s) not accepted or rejected; "
                "resolving it now would leave the exam PENDING_ADJUDICATION"
            )
            return
        run = ready[-1]
        others = f" (also ready: {', '.join(ready[:-1])})" if len(ready) > 1 else ""
        self.app.push_screen(
            JobsScreen(
                self.ws.root,
                command=f"exam resolve --run-id {run}",
                why=f"every adjudication item of run {run} is decided: Enter resolves "
                f"the exam{others}",
            ),
            self._jobs_closed,
        )

    def action_undo(self) -> None:
        """Retracts the highlighted item's decision, or else this session's latest one."""
        lst = self.queue_list
        row = lst.current
        if row is None or row.status == "undecided":
            row = self._back_to_last_decided()
            if row is None:
                self.refuse(
                    "nothing to undo: this item has no standing decision and this "
                    "session has made none"
                )
                return
        args = self._signing_args(row.queue)
        if args is None:
            return
        try:
            record = self.ws.retract(self.session.require_signer(), row.queue, row.item_id, **args)
        except (SealdeskError, sqlite3.Error) as exc:
            self.refuse(why_not_written(exc))
            return
        self.decided_here = [
            d for d in self.decided_here if (d.queue, d.item_id) != (row.queue, row.item_id)
        ]
        self.message = f"undid {row.item_id}"
        self.ended_at = None  # undone, the last item may be decided again
        self._appended(record)
        # An earlier decision may stand again once the latest is retracted, or one made on
        # another item of the subject carry to it again.
        held = self.ws.item(row.queue, row.item_id) or {}
        standing = held.get("decision") or held.get("carried_from")
        new_status = held.get("status", "undecided")
        carry = "carried" if held.get("carried_from") else None
        new_row = replace(
            row,
            status=new_status,
            principal=standing["principal"] if standing else None,
            carry="reopened" if held.get("reopened") else carry,
        )
        if lst.current is not None and lst.current.item_id == row.item_id:
            lst.replace(lst.cursor, new_row)
        self._bump_progress(row.queue, row.status, new_status)
        self.show_detail(new_row)

    def _back_to_last_decided(self) -> ItemRow | None:
        """Gives the row of this session's latest standing decision, moving the cursor to
        it when it is in the list (a filter may have moved it out of view)."""
        lst = self.queue_list
        while self.decided_here:
            last = self.decided_here[-1]
            if last.queue != self.queue:
                self.switch_queue(last.queue)
            at = lst.row(last.index)
            index = (
                last.index
                if at is not None and at.item_id == last.item_id
                else self._index_of(last.item_id)
            )
            if index is not None:
                lst.cursor = index
                row = lst.current
            else:
                row = self._row_outside_view(last)
            if row is not None and row.status != "undecided":
                return row
            self.decided_here.pop()
        return None

    def _row_outside_view(self, last: Decided) -> ItemRow | None:
        item = self.ws.item(last.queue, last.item_id)
        if item is None or item["decision"] is None:
            return None
        return ItemRow(
            0,
            last.queue,
            last.item_id,
            item["title"],
            item["score"],
            tuple(item["tags"]),
            item["decision"]["decision"],
            item["decision"]["principal"],
        )

    def action_note(self) -> None:
        """Asks for a note and signs it onto the highlighted item."""
        row = self.queue_list.current
        if row is None:
            self.refuse("no item is highlighted")
            return
        if self._signing_args(row.queue) is None:
            return

        def save(text: str | None) -> None:
            if not text:
                return
            args = self._signing_args(row.queue)
            if args is None:
                return
            try:
                record = self.ws.note(
                    self.session.require_signer(), row.queue, row.item_id, text, **args
                )
            except (SealdeskError, sqlite3.Error) as exc:
                self.refuse(why_not_written(exc))
                return
            self.message = f"noted {row.item_id}"
            self._appended(record)
            self.show_detail(row)

        self.app.push_screen(NoteScreen(f"{row.queue}/{row.item_id}"), save)

    # -- browsing ---------------------------------------------------------------
    def switch_queue(self, queue: str) -> None:
        """Shows another backlog, where its cursor was (on a first visit, at its first
        undecided item)."""
        if queue == self.queue:
            return
        self.queue = queue
        self.queue_list.marks = self.marks[queue]
        self._show_tabs()
        self._show_status()
        self.show_key_hints()
        search = self.query_one("#search", Input)
        search.value = self.view.filters.text or ""
        if self.view.item_id is None:
            # First visit in this session: the first undecided item (under a review plan,
            # of this person's own work) rather than the top of the list.
            self.reload(first_undecided=True)
        else:
            self.reload(keep=self.view.item_id)

    def action_queue(self, queue: str) -> None:
        self.switch_queue(queue)

    def action_step_queue(self, step: int) -> None:
        self.switch_queue(QUEUES[(QUEUES.index(self.queue) + step) % len(QUEUES)])

    def unfiltered(self) -> ItemFilter:
        """Gives the whole queue's filter: one row per subject (its newest item; v lists
        every run's), with whose "me" is."""
        return ItemFilter(principal=self.session.principal, newest_only=True)

    def set_filters(self, filters: ItemFilter) -> None:
        """Applies a new filter to the current queue, keeping the cursor's item if it passes."""
        row = self.queue_list.current
        self.view.filters = filters
        self._remember()
        self.reload(keep=row.item_id if row else None)

    def _remember(self) -> None:
        cast(_Keyed, self.app).remember_view(self.queue, self.view.filters, self.view.sort)

    def action_cycle_status(self) -> None:
        f = self.view.filters
        status = STATUS_CYCLE[(STATUS_CYCLE.index(f.status) + 1) % len(STATUS_CYCLE)]
        self.set_filters(replace(f, status=status))

    def action_cycle_sort(self) -> None:
        view = self.view
        view.sort = (
            SORT_CYCLE[(SORT_CYCLE.index(view.sort) + 1) % len(SORT_CYCLE)]
            if view.sort in SORT_CYCLE
            else SORT_CYCLE[0]
        )
        self._remember()
        row = self.queue_list.current
        self.reload(keep=row.item_id if row else None)

    def action_filters(self) -> None:
        from engine.item_query import tags

        def apply(new: ItemFilter | None) -> None:
            if new is not None:
                self.query_one("#search", Input).value = new.text or ""
                self.set_filters(new)

        self.app.push_screen(
            FilterScreen(
                self.view.filters,
                tags(self.ws.conn, self.queue),
                can_filter_by_me=not self.session.read_only,
            ),
            apply,
        )

    def action_search(self) -> None:
        search = self.query_one("#search", Input)
        search.display = True
        # Focus now, not on the next tick: keys typed right after "/" are search
        # text, and must never reach the decision bindings.
        self.set_focus(search)

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip() or None
        if not text:
            event.input.display = False
        self.set_focus(self.queue_list)
        self.set_filters(replace(self.view.filters, text=text))

    def action_clear_search(self) -> None:
        search = self.query_one("#search", Input)
        search.value = ""
        search.display = False
        self.set_focus(self.queue_list)
        if self.view.filters.text:
            # The match count (or "searching…") was about the search just dropped.
            self.message = ""
            self.set_filters(replace(self.view.filters, text=None))
            self._show_status()

    def action_detail_scroll(self, direction: int) -> None:
        pane = self.query_one("#detail-pane")
        pane.scroll_relative(y=direction * max(1, pane.size.height // 2), animate=False)

    def action_toggle_texts(self) -> None:
        """Shows a flagged pair's texts whole, or again as one word diff."""
        self.full_texts = not self.full_texts
        self.show_detail(self.queue_list.current)
        self.say("texts shown whole" if self.full_texts else "texts shown as one word diff")

    def action_toggle_zoom(self) -> None:
        """Narrows the queue list to each row's status and score, or widens it again: at
        80 columns the detail then takes 65 columns instead of 47, and most pairs fit."""
        self.toggle_class("zoomed")
        zoomed = self.has_class("zoomed")
        self.say("detail zoomed" if zoomed else "list back")

    def action_detail_jump(self, where: str) -> None:
        """Scrolls the detail to its top, its end, its history or the next/previous match."""
        pane = self.query_one("#detail-pane", VerticalScroll)
        if where == "top":
            pane.scroll_home(animate=False)
            return
        if where == "end":
            pane.scroll_end(animate=False)
            return
        detail = self.query_one("#detail", Static)
        width = detail.content_size.width
        if self._anchors is None or self._anchors[:2] != (detail.content, width):
            # Drawing a long item takes ~2 ms a match: once per item and width, not per key.
            self._anchors = (detail.content, width, anchor_lines(detail.content, width))
        line, said = jump_target(self._anchors[2], pane.scroll_y, where)
        if line is not None:
            pane.scroll_to(y=line, animate=False)
        # Named: the message stays in the status bar after the cursor moves on.
        row = self.queue_list.current
        self.say(f"{row.item_id}: {said}" if row is not None else said)

    def action_jobs(self) -> None:
        self.app.push_screen(JobsScreen(self.ws.root), self._jobs_closed)

    def _jobs_closed(self, started: tuple[jobs.Job, ...] | None) -> None:
        """Follows the jobs started in the panel just closed, in the jobs strip."""
        self._jobs_started.update(job.job_id for job in started or ())
        self._show_jobs()

    def action_signoff(self) -> None:
        """Opens the lead's sign-off screen over the review."""
        from reviewer.signoff_screen import SignoffScreen  # its engine reads load on first use

        self.app.push_screen(
            SignoffScreen(self.ws, self.session, decided=len(self.decided_here)), self._signed_off
        )

    def _signed_off(self, records: tuple[Record, ...] | None) -> None:
        """Takes note of the sign-offs signed on the screen just closed: the status bar's
        head shows the newest, and the poll does not take them for someone else's."""
        for record in records or ():
            self.own_records.add(record.seq)
            self.last_signoff = SignoffMark(
                record.seq, record.record_hash, record.body["principal"]
            )
            # the offer to sign off, said before, is done with: say what was signed
            self.message = f"signed off: #{record.seq} by {visible(record.body['principal'])}"
        self._show_status()

    def action_calibration(self) -> None:
        """Opens the calibration view: on weak categories, the rates of the report or
        benchmark the highlighted item names; else the highlighted pair's run (or the
        newest run's) score histograms."""
        from engine.contamination.report.distribution import newest_run
        from engine.coverage.rates import source_digest
        from reviewer.calibration_screen import CalibrationScreen, RatesScreen

        row = self.queue_list.current
        if self.queue == WEAK_CATEGORIES:
            item = self.ws.item(row.queue, row.item_id) if row is not None else None
            digest = source_digest(item["payload"]) if item is not None else None
            if digest is None:
                self.refuse("this item names no coverage report or benchmark to draw")
                return
            self.app.push_screen(RatesScreen(self.ws, digest))
            return
        item = (
            self.ws.item(row.queue, row.item_id)
            if row is not None and row.queue == FLAGGED_PAIRS
            else None
        )
        run_id = item["run_id"] if item is not None else newest_run(self.ws.conn)
        if run_id is None:
            self.refuse("no contamination run has flagged pairs here yet")
            return
        self.app.push_screen(CalibrationScreen(self.ws, run_id), self._band_chosen)

    def _band_chosen(self, band: Band | None) -> None:
        """Shows the flagged pairs of the band chosen on the calibration view, if any."""
        if band is None:
            return
        self.switch_queue(FLAGGED_PAIRS)
        self.view.band = band.label
        self.set_filters(replace(self.view.filters, items=band.items))
        self.say(f"{len(band.items)} item(s) in the {band.label}")

    def action_toggle_runs(self) -> None:
        """Lists every run's items, or again one row per subject (its newest item)."""
        f = self.view.filters
        self.set_filters(replace(f, newest_only=not f.newest_only))
        self.say(
            "every run's items listed (v: newest only)"
            if f.newest_only
            else "one row per subject: its newest item (v: every run)"
        )

    def action_clear_filters(self) -> None:
        self.set_filters(self.unfiltered())

    def action_set_sort(self, sort: str) -> None:
        self.view.sort = sort
        self._remember()
        row = self.queue_list.current
        self.reload(keep=row.item_id if row else None)

    def action_show_status(self, status: str) -> None:
        self.set_filters(replace(self.view.filters, status=status))

    # -- what is left to decide ---------------------------------------------------
    def _done(self, queue: str) -> bool:
        """Says whether a queue has items and none is left undecided."""
        p = self.progress.get(queue)
        return p is not None and p.total > 0 and p.decided == p.total

    def _say_done(self, queue: str) -> None:
        """Says a queue is done, and what comes next, with the keys that do it."""
        total = self.progress[queue].total
        mark, (head, _) = self.last_signoff, self.ws.head()
        steps = after_queue(
            queue,
            self.progress,
            self.session,
            lambda: signoff_holds(self.ws),
            signed_off_by=visible(mark.principal) if mark and mark.seq == head else None,
        )
        p = self.progress[queue]
        if queue == EXAM_QUEUE and p.accept + p.reject == p.total and not steps:
            return  # _offer_next_step says it, with the key that resolves the exam
        offer = (
            " · ".join(
                f"{cast(_Keyed, self.app).key_for(s.binding_id)}: {s.text}"
                if s.binding_id
                else s.text
                for s in steps
            )
            or "nothing is left to decide in your queues"
        )
        text = f"{QUEUE_LABELS[queue]} done, all {total:,} decided · {offer}"
        self.say(text)
        self.app.notify(text, title="Queue done", timeout=10, markup=False)

    def action_next_undecided(self) -> None:
        """Moves to the first undecided item here (under the filter), else to the first
        undecided item of the next queue this session decides, else says all is done."""
        index = self._first_free_undecided()
        if index is not None:
            self.queue_list.cursor = index
            return
        left = undecided(self.progress, self.queue)
        if left:
            self.say(self._why_none_free(left))
            return
        then = next_queue(self.queue, self.progress, self.session)
        if then is None:
            self._say_done(self.queue)
            return
        self.switch_queue(then)
        index = self._first_free_undecided()
        if index is not None:
            self.queue_list.cursor = index

    def _why_none_free(self, left: int) -> str:
        """Says why none of the queue's ``left`` undecided items is offered: colleagues'
        apps hold them (claims), or the filter hides them."""
        others = self.ws.held_by_others(self.queue)
        held = self.ws.count(self.queue, ItemFilter(status="undecided", items=others))
        hidden = (
            f"outside the filter ({cast(_Keyed, self.app).key_for('review.filter')}, then "
            "Ctrl+R, clears it)"
        )
        if not held:
            return f"{left:,} undecided item(s) here are {hidden}"
        colleagues = "held by colleagues, each on the item their app shows (k/j reach them)"
        if held >= left:
            return f"the {left:,} undecided item(s) here are {colleagues}"
        return f"{left:,} undecided item(s) here: {held:,} {colleagues}, the rest {hidden}"

    def _first_free_undecided(self) -> int | None:
        """Gives where the first undecided item nobody else holds is listed, claimed now
        for this session. Another app may claim it between the look and the claim;
        then the next one is looked for (a few times: claims are advice)."""
        view = self.view
        index = None
        for _ in range(5):
            found = first_undecided_row(self.ws, self.queue, view.filters, view.sort)
            if found is None:
                return None
            index, row = found
            if self.claiming.take(row):
                return index
        return index

    # -- bulk: marked items and duplicate clusters --------------------------------
    def mark(self, item_ids: list[str] | tuple[str, ...], on: bool = True) -> int:
        """Marks (or unmarks) items of the current queue for one bulk decision; gives how
        many are marked now. Other screens and commands select through this (filter,
        then mark what is shown), then ``action_decide_marked`` shows and signs them."""
        marks = self.marks[self.queue]
        for item_id in item_ids:
            if on:
                marks[item_id] = None
            else:
                marks.pop(item_id, None)
        self.queue_list.refresh()
        self._show_filter_line(self.queue_list.total)
        return len(marks)

    def action_mark(self) -> None:
        """Marks or unmarks the highlighted item, then moves to the next row."""
        row = self.queue_list.current
        if row is None:
            self.refuse("no item is highlighted")
            return
        on = row.item_id not in self.marks[self.queue]
        if on and len(self.marks[self.queue]) >= BULK_LIMIT:
            self.refuse(f"{BULK_LIMIT} items are marked already: decide them first")
            return
        count = self.mark([row.item_id], on)
        self.say(f"{'marked' if on else 'unmarked'} {row.item_id} · {count} marked")
        self.queue_list.move(1)

    def action_mark_shown(self) -> None:
        """Marks every item the current filter shows (unmarks them when all are marked)."""
        view = self.view
        ids = item_query.item_ids(self.ws.conn, self.queue, view.filters, view.sort, BULK_LIMIT + 1)
        if not ids:
            self.refuse("nothing is shown under this filter: nothing to mark")
            return
        if len(ids) > BULK_LIMIT:
            self.refuse(
                f"more than {BULK_LIMIT} items are shown: narrow the filter to mark them "
                "all at once"
            )
            return
        marks = self.marks[self.queue]
        on = not all(i in marks for i in ids)
        if on and len(set(marks) | set(ids)) > BULK_LIMIT:
            self.refuse(f"that would mark more than {BULK_LIMIT} items: decide some first")
            return
        count = self.mark(ids, on)
        self.say(f"{'marked' if on else 'unmarked'} {len(ids)} shown · {count} marked")

    def action_clear_marks(self) -> None:
        self.marks[self.queue].clear()
        self.mark([])
        self.say("no item is marked")

    def action_show_marked(self) -> None:
        """Filters the queue to its marked items."""
        marked = tuple(self.marks[self.queue])
        if not marked:
            self.refuse("nothing is marked in this queue")
            return
        self.show_only(marked, "marked")

    def show_only(self, item_ids: tuple[str, ...], label: str) -> None:
        """Shows only these items of the current queue (a selection, a band, a cluster),
        under the rest of the filter; Clear filters shows the whole queue again."""
        self.view.band = f"only {label} ({len(item_ids)})"
        self.set_filters(replace(self.view.filters, items=tuple(item_ids)))

    def action_decide_marked(self) -> None:
        """Shows every marked item of this queue and what deciding it would do; one key
        then decides them all."""
        marked = list(self.marks[self.queue])
        if not marked:
            m, big_m = (
                cast(_Keyed, self.app).key_for(b) for b in ("review.mark", "review.mark_shown")
            )
            self.refuse(
                f"nothing is marked in this queue: {m} marks the highlighted item, "
                f"{big_m} every item shown"
            )
            return
        self._bulk_token += 1
        self.say(f"reading {len(marked)} marked item(s)…")
        self._plan_bulk(self._bulk_token, self.queue, marked, None)

    def action_cluster(self) -> None:
        """Shows the highlighted item's duplicate cluster: each member's item, to visit
        or to decide all at once."""
        row = self.queue_list.current
        if row is None:
            self.refuse("no item is highlighted")
            return
        item = self.ws.item(row.queue, row.item_id)
        members = cluster_members(item["payload"]) if item is not None else []
        if item is None or not members:
            self.refuse(f"{row.item_id} is in no duplicate cluster")
            return
        if len(members) > BULK_LIMIT:
            # The payload says how many; a list nobody can read is not offered for signing.
            self.refuse(
                f"{row.item_id}'s cluster lists {len(members):,} members, more than "
                f"{BULK_LIMIT} to show at once: filter and mark them instead"
            )
            return
        self._bulk_token += 1
        self.say("finding the cluster's items…")
        self._plan_bulk(self._bulk_token, self.queue, None, (row.item_id, item["run_id"]))

    def action_disputed(self) -> None:
        """Lists this queue's planned items whose decisions disagree, most disputed first;
        the one chosen is shown, in a list of only the disputed items."""
        found = self.ws.disputed(self.queue)
        label = QUEUE_LABELS[self.queue]
        if not found:
            self.say(f"no disputed items in {label}: no decisions under a review plan disagree")
            return
        ids = tuple(r["item_id"] for r in found)

        def chosen(item_id: str | None) -> None:
            if item_id is None:
                return
            self.show_only(ids, "disputed")
            self.go_to(item_id)

        self.app.push_screen(
            DisputedScreen(f"{len(found)} disputed in {label}, most disputed first", found),
            chosen,
        )

    def _who(self, queue: str) -> tuple[str | None, str | None]:
        if self.session.refusal(queue):
            return None, None
        return self.session.principal, self.session.role_for(queue)

    @work(thread=True, exclusive=True, group="bulk", exit_on_error=False)
    def _plan_bulk(
        self,
        token: int,
        queue: str,
        ids: list[str] | None,
        cluster_of: tuple[str, str] | None,
    ) -> None:
        # Its own connection: a cluster's items are found by reading the run's payloads.
        principal, role = self._who(queue)
        members: list[Member] | None = None
        with self.ws.another() as reader:
            if cluster_of is not None:
                item_id, run_id = cluster_of
                item = reader.item(queue, item_id) or {}
                listed = cluster_members(item.get("payload"))
                by_id = [m for m in listed if m.get("id") is not None]
                held = item_query.items_by_field(
                    reader.conn, queue, "$.eval.id", [m["id"] for m in by_id], run_id
                )
                members = []
                for m in listed:
                    found = held.get(m.get("id"), [])
                    index = f" (#{m['index']})" if m.get("index") is not None else ""
                    label = f"eval {m.get('id', '?')}{index}"
                    text = m.get("text")
                    text = text if isinstance(text, str) else ""
                    members.append(Member(label, text, found[0] if found else None))
                ids = [m.item_id for m in members if m.item_id]
                title = f"Duplicate cluster of {len(listed)} eval items ({len(ids)} in {queue})"
            else:
                title = f"{len(ids or [])} marked item(s) of {queue}"
            bulk = plan(reader.conn, queue, ids or [], principal, role)
        self.post_message(BulkPlanned(token, title, bulk, members))

    @on(BulkPlanned)
    def _bulk_planned(self, event: BulkPlanned) -> None:
        if event.token != self._bulk_token:
            return  # a newer bulk request replaced this one

        def chosen(choice: BulkChoice | None) -> None:
            if choice is None:
                self.say("bulk decision cancelled: nothing signed")
            elif choice.goto is not None:
                self.go_to(choice.goto)
            elif choice.decision is not None:
                self._sign_bulk_now(event.plan, choice.decision)

        self.say(f"{len(event.plan.items)} item(s) read")
        self.app.push_screen(BulkScreen(event.title, event.plan, event.members), chosen)

    def go_to(self, item_id: str) -> None:
        """Puts the cursor on an item of the current queue, or says why it cannot."""
        index = self._index_of(item_id)
        if index is None:
            self.refuse(f"{item_id} is not shown under this filter (clear the filters to see it)")
            return
        self.queue_list.cursor = index
        self.say(f"at {item_id}")

    def _sign_bulk_now(self, bulk: BulkPlan, decision: str) -> None:
        args = self._signing_args(bulk.queue)
        if args is None:
            return
        if self.bulk_signing:
            self.refuse("a bulk decision is being signed already")
            return
        self.bulk_signing = True
        self.say(f"signing {len(bulk.signable)} {decision} record(s)…")
        self._sign_bulk(bulk, decision, args)

    @work(thread=True, exclusive=True, group="bulk-sign", exit_on_error=False)
    def _sign_bulk(self, bulk: BulkPlan, decision: str, args: dict[str, Any]) -> None:
        # One transaction on its own connection: the UI stays live while the records
        # are signed (an agent may ask for a confirmation per signature).
        with self.ws.another() as writer:
            try:
                outcomes = writer.decide_many(
                    self.session.require_signer(),
                    bulk.queue,
                    bulk.signable,
                    decision,
                    overrule=bulk.overrules,
                    **args,
                )
            except (SealdeskError, sqlite3.Error) as exc:
                self.post_message(BulkSigned(bulk, decision, [], why_not_written(exc)))
                return
        self.post_message(BulkSigned(bulk, decision, outcomes, None))

    @on(BulkSigned)
    def _bulk_signed(self, event: BulkSigned) -> None:
        self.bulk_signing = False
        if event.why is not None:
            self.refuse(f"nothing was signed: {event.why}")
            return
        signed = [o for o in event.outcomes if o.record is not None]
        for o in signed:
            self.decided_here.append(Decided(o.queue, o.item_id, o.record.seq, -1))
            self._appended(o.record)
        done = {o.item_id for o in event.outcomes}
        self.mark(list(done), on=False)
        over = sum(o.overruled is not None for o in signed)
        already = len(event.outcomes) - len(signed)
        self.refresh_progress()
        row = self.queue_list.current
        # The rows decided move on: keep the cursor's item, and leave it when it was one.
        self.reload(keep=row.item_id if row else None, at=self.queue_list.cursor)
        lst = self.queue_list
        if lst.current is not None and lst.current.item_id in done and lst.total:
            lst.cursor = min(lst.total - 1, self._next_undecided(lst.cursor - 1))
        parts = [f"{event.decision} on {len(signed)} item(s), one signed record each"]
        if over:
            parts.append(f"{over} overruled")
        if already:
            parts.append(f"{already} already so")
        self.say(" · ".join(parts))
        self._offer_next_step(event.plan.queue)


def first_undecided_row(
    ws: Workspace, queue: str, filters: ItemFilter, sort: str
) -> tuple[int, ItemRow] | None:
    """Gives the first undecided item of a filtered, sorted queue that nobody else holds,
    with where it is listed, or None when the filter shows no such item."""
    if filters.status not in (None, "undecided") or filters.decided_by:
        return None  # every item listed has a decision
    # Items a colleague's app holds are theirs for now (engine.claims): looked past,
    # though still listed (the position is the listing's).
    looking = replace(filters, status="undecided", skip=ws.held_by_others(queue) or None)
    mine = ws.own_work(queue)
    rows: list[ItemRow] = []
    if mine and filters.items is None:
        # Under a review plan the reviewer's own share comes first (an adjudicator's: the
        # disagreements).
        rows = ws.page(queue, replace(looking, items=mine), sort, 0, 1)
    rows = rows or ws.page(queue, looking, sort, 0, 1)
    if not rows:
        return None
    index = ws.position(queue, rows[0].item_id, filters, sort)
    return None if index is None else (index, rows[0])
