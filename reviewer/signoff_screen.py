"""The lead's sign-off screen: the whole state of the review, then one signed record.

It shows what ``engine.signoff.summary.signoff_summary`` gives (read in a
worker thread on its own connection, again whenever the ledger moves) and
signs through ``engine.signoff.summary.sign_off``, also in a worker: with
``ssh -A`` the signature comes from the lead's laptop, and with ``ssh-add -c``
it waits for a click there, so the screen must stay live meanwhile. The
engine refuses what may not be signed (a role other than lead, undecided
items without exceptions, a ledger that moved since the summary was shown);
the screen asks first only so as not to ask for a confirmation it knows is
futile, and shows every refusal.
"""

from __future__ import annotations

import sqlite3
from typing import Protocol, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Label, Static
from textual.worker import Worker, WorkerState

from engine.desk import Record, push_latest
from engine.errors import SealdeskError
from engine.item_query import last_signoff
from engine.roles import SIGNOFF_ROLE
from engine.signoff.summary import SignoffSummary, pending_text, sign_off, signoff_summary
from engine.terminal_text import visible
from engine.workspace import Workspace
from reviewer.actions import bindings
from reviewer.next_steps import running_holds
from reviewer.session import Session
from reviewer.signoff_view import render_signed, render_summary
from reviewer.widgets.bars import KeyHints, StatusBar
from reviewer.workspace_io import POLL_SECONDS, why_not_written


class _Keyed(Protocol):
    """The app's side these screens use (the app module sits above them)."""

    def key_for(self, binding_id: str) -> str: ...

    def key_hints(self, screen: Screen) -> list[tuple[str, str, int, str]]: ...


class SummaryRead(Message):
    """The summary was read again (a worker on its own connection), with the engine runs
    still running that hold the sign-off back."""

    def __init__(self, summary: SignoffSummary, running: list[str]) -> None:
        super().__init__()
        self.summary = summary
        self.running = running


class SignDone(Message):
    """A sign-off attempt ended: the appended record, or why nothing was written."""

    def __init__(self, record: Record | None, why: str | None, forks: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.record, self.why, self.forks = record, why, forks


class ConfirmSignoff(ModalScreen[str | None]):
    """Asks the lead to confirm; gives the note to sign with ('' for none), or None."""

    SCOPE = "signoff.confirm"
    BINDINGS = bindings(SCOPE)
    AUTO_FOCUS = "#signoff-note"

    def __init__(self, question: Text) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, id="signoff-question")
            yield Input(
                placeholder="note for the record (optional)", id="signoff-note", compact=True
            )
            yield Label("Enter signs · Esc cancels, nothing is written")

    @on(Input.Submitted)
    def confirm(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class SignoffScreen(Screen[tuple[Record, ...]]):
    """Per-queue counts, run conclusions, undecided items, tree head and artifacts; sign.

    Gives back, when closed, the sign-off records signed on it (oldest first).
    """

    SCOPE = "signoff"
    BINDINGS = bindings(SCOPE)

    def __init__(self, ws: Workspace, session: Session, *, decided: int = 0) -> None:
        super().__init__()
        self.ws = ws
        self.session = session
        self.decided = decided  # decisions this session signed before opening the screen
        self.summary: SignoffSummary | None = None
        self.running: list[str] = []  # engine runs still running that hold the sign-off
        self.signed: Record | None = None
        self.signed_here: list[Record] = []
        self.signing = False
        self.message = ""
        self._seen_head: int | None = None
        self._reading = False
        self._read_again = False

    def compose(self) -> ComposeResult:
        yield Static(Text(" Sign-off · reading the summary…"), id="banner")
        with VerticalScroll(id="signoff-pane"):
            yield Static(id="signoff-result")
            yield Static(Text("reading the summary…", style="italic"), id="signoff-body")
        yield StatusBar(id="status-bar")
        yield KeyHints(id="key-hints")

    def on_mount(self) -> None:
        self.query_one("#signoff-result").display = False
        self.query_one(KeyHints).show(cast(_Keyed, self.app).key_hints(self))
        self.query_one("#signoff-pane").focus()
        self._show_status()
        self.read_summary()
        self.set_interval(POLL_SECONDS, self.poll)

    # -- reading ----------------------------------------------------------------
    def read_summary(self) -> None:
        """Reads the summary again in the background (it hashes every artifact).

        One read at a time: on 100,000 items a read takes seconds, and others
        may append records faster than that; a read asked for meanwhile runs
        once the current one is in.
        """
        if self._reading:
            self._read_again = True
            return
        self._reading, self._read_again = True, False
        self._seen_head = self.ws.watermark().head_seq
        self._read()

    @work(thread=True, group="sign-off summary", exit_on_error=False)
    def _read(self) -> None:
        # Its own connection: the UI thread keeps using the main one.
        running = running_holds(self.ws.root)
        with self.ws.another() as reader:
            summary = signoff_summary(reader)
        self.post_message(SummaryRead(summary, running))

    @on(SummaryRead)
    def _summary_read(self, event: SummaryRead) -> None:
        self._reading = False
        self.summary = event.summary
        self.running = event.running
        self._draw()
        self._show_status()
        if self._read_again:
            self.read_summary()

    def poll(self) -> None:
        """Reads the summary again when anyone appended a record (others keep deciding),
        or an engine run holding the sign-off back started or ended."""
        if self.signing:
            return
        head = self.ws.watermark().head_seq
        if head != self._seen_head:
            self.say(f"the ledger moved to #{head}: summary read again")
            self.read_summary()
        elif not self._reading and running_holds(self.ws.root) != self.running:
            self.say("an engine run started or ended: summary read again")
            self.read_summary()

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            if event.worker.group == "sign-off summary":
                self._reading = False
            else:
                self.signing = False
            error = event.worker.error
            why = error.one_line() if isinstance(error, SealdeskError) else str(error)
            self.refuse(f"{event.worker.group} failed: {why}")

    # -- drawing ----------------------------------------------------------------
    def _key(self, binding_id: str) -> str:
        return cast(_Keyed, self.app).key_for(binding_id)

    def _draw(self) -> None:
        s = self.summary
        if s is None:
            return
        pane = self.query_one("#signoff-pane")
        width = pane.scrollable_content_region.width or self.size.width
        self.query_one("#signoff-body", Static).update(
            render_summary(
                s,
                width=width,
                sign_key=self._key("signoff.sign"),
                exceptions_key=self._key("signoff.sign_exceptions"),
                holds=[*s.holds, *self.running],
            )
        )
        self.query_one("#banner", Static).update(
            Text(f" Sign-off · {s.tree.origin} · {s.tree.size} record(s) to sign")
        )

    def on_resize(self) -> None:
        # The summary goes to two columns or back to one as the terminal crosses WIDE.
        self.call_after_refresh(self._draw)

    def _show_status(self) -> None:
        why = self.session.signoff_refusal()
        role = SIGNOFF_ROLE if why is None else f"{'/'.join(self.session.roles)} (may not sign off)"
        self.query_one(StatusBar).show(
            principal=self.session.principal,
            role=role,
            decided=self.decided,
            head=self.ws.head(),
            message=self.message,
            signoff=last_signoff(self.ws.conn),
        )

    def say(self, message: str) -> None:
        """Shows a short message in the status bar."""
        self.message = message
        self._show_status()

    def refuse(self, why: str) -> None:
        """Says, visibly, that nothing was signed and why."""
        self.say("not signed")
        self.app.notify(why, title="Refused", severity="error", timeout=8, markup=False)

    # -- signing ----------------------------------------------------------------
    def action_sign(self, with_exceptions: bool) -> None:
        """Asks the lead to confirm, then signs the sign-off record (in the background)."""
        why = self.session.signoff_refusal()
        if why is None and self.signing:
            why = "a sign-off is already being signed"
        if why is None and self.summary is None:
            why = "the summary is still being read"
        s = self.summary
        if why is None and s is not None:
            why = s.blocker(with_exceptions)
            if why is None and self.running and not with_exceptions:
                why = f"not ready: {'; '.join(self.running)}"
            if why is not None and (s.pending or s.holds or self.running) and not with_exceptions:
                why += f" ({self._key('signoff.sign_exceptions')} signs with exceptions)"
        if why is not None:
            self.refuse(why)
            return
        assert s is not None
        size = s.tree.size

        def answered(note: str | None) -> None:
            if note is None:
                self.say("sign-off cancelled: nothing was written")
                return
            self.signing = True
            self.say("signing… (your ssh-agent may ask you to confirm)")
            self._sign(with_exceptions, note or None, size)

        self.app.push_screen(ConfirmSignoff(self._question(s, with_exceptions)), answered)

    def _question(self, s: SignoffSummary, with_exceptions: bool) -> Text:
        out = Text(
            f"Sign off {s.tree.size} record(s) as {self.session.principal} ({SIGNOFF_ROLE})?",
            style="bold",
        )
        out.append(f"\ntree root\n{s.tree.root_hex}")
        out.append(
            f"\n{len(s.artifacts)} artifact(s) and {len(s.runs)} run manifest(s) bound by SHA-256"
        )
        if with_exceptions and s.pending:
            out.append(
                f"\nWITH {len(s.pending)} EXCEPTION(S), listed in the record: ",
                style="bold reverse",
            )
            out.append(visible(pending_text(s.pending)))
        if with_exceptions:
            for hold in [*s.holds, *self.running]:
                # Bound as it stands: the record carries the exam's status.
                out.append("\nWHILE NOT READY: ", style="bold reverse")
                out.append(hold)
        return out

    @work(thread=True, exclusive=True, group="sign-off", exit_on_error=False)
    def _sign(self, with_exceptions: bool, note: str | None, size: int) -> None:
        with self.ws.another() as writer:
            try:
                record = sign_off(
                    writer,
                    self.session.require_signer(),
                    with_exceptions,
                    principal=self.session.principal,
                    note=note,
                    expected_size=size,
                )
            except (SealdeskError, sqlite3.Error) as exc:
                self.post_message(SignDone(None, why_not_written(exc)))
                return
            # The sign-off stands; a witness that reports a fork is said out loud.
            forks = [
                f"witness {target}: {outcome.one_line()}"
                for target, outcome in push_latest(writer)
                if isinstance(outcome, SealdeskError)
            ]
        self.post_message(SignDone(record, None, tuple(forks)))

    @on(SignDone)
    def _sign_done(self, event: SignDone) -> None:
        self.signing = False
        if event.record is None:
            self.refuse(event.why or "nothing was signed")
        else:
            record = self.signed = event.record
            self.signed_here.append(record)
            result = self.query_one("#signoff-result", Static)
            result.update(render_signed(record))
            result.display = True
            self.query_one("#signoff-pane").scroll_home(animate=False)
            self.say("keep it: sealdesk checkpoint export")
            self.app.notify(
                f"record #{record.seq} {record.record_hash[:16]}; export the "
                "checkpoint to keep it off this host",
                title="Signed off",
                timeout=8,
                markup=False,
            )
            for fork in event.forks:
                self.app.notify(fork, title="Witness", severity="error", timeout=20, markup=False)
        self.read_summary()

    # -- the rest ---------------------------------------------------------------
    def action_reread(self) -> None:
        self.say("summary read again")
        self.read_summary()

    def action_close(self) -> None:
        self.dismiss(tuple(self.signed_here))
