"""One-line and few-line widgets around the lists: queue tabs, status bar, jobs strip."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from engine.item_query import QueueProgress, SignoffMark
from engine.jobs import Job
from engine.roles import ADJUDICATION, FLAGGED_PAIRS, QUEUES, WEAK_CATEGORIES
from engine.terminal_text import visible

QUEUE_LABELS = {
    FLAGGED_PAIRS: "pairs",
    ADJUDICATION: "adjudicate",
    WEAK_CATEGORIES: "weak cats",
}


def _short(n: int) -> str:
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    return str(n)


class QueueTabs(Static):
    """The three backlogs, one line each: key, name, decided/total and a progress bar."""

    _last: tuple[str, dict[str, QueueProgress]] | None = None

    def on_resize(self) -> None:
        if self._last is not None:
            self.show(*self._last)

    def show(self, current: str, progress: dict[str, QueueProgress]) -> None:
        """Redraws for the current queue and the latest counts."""
        self._last = (current, dict(progress))
        width = max(20, self.content_size.width or 28)
        out = Text()
        for n, queue in enumerate(QUEUES, start=1):
            p = progress.get(queue, QueueProgress(0, 0, 0, 0))
            marker = "▶" if queue == current else " "
            counts = f"{_short(p.decided)}/{_short(p.total)}"
            head = f"{marker}{n} {QUEUE_LABELS[queue]:<10} {counts:>9} "
            bar_width = max(0, width - len(head))
            filled = round(bar_width * p.decided / p.total) if p.total else 0
            if out:
                out.append("\n")
            style = "bold reverse" if queue == current else ""
            out.append(head, style=style)
            out.append("█" * filled, style="bold")
            out.append("░" * (bar_width - filled))
        self.update(out)


class StatusBar(Static):
    """Who signs, in which role, how much this session decided, the ledger head and the
    newest sign-off in it."""

    def show(
        self,
        *,
        principal: str | None,
        role: str,
        decided: int,
        head: tuple[int, str],
        message: str = "",
        signoff: SignoffMark | None = None,
    ) -> None:
        """Redraws the bar."""
        out = Text()
        if principal:
            out.append(f" {visible(principal)}", style="bold")
            out.append(f" as {role}")
        else:
            out.append(" READ-ONLY", style="bold reverse")
        out.append(f" · {decided} decided this session")
        seq, record_hash = head
        out.append(f" · ledger #{seq} {record_hash[:10]}")
        if signoff is not None and signoff.seq == seq:
            out.append(f" signed off by {visible(signoff.principal)}", style="bold")
        elif signoff is not None:
            out.append(f" (sign-off #{signoff.seq})")
        if message:
            out.append(f" · {visible(message)}", style="bold")
        self.update(out)


class JobsStrip(Static):
    """The newest background job in one line: its stage and progress, or how it ended."""

    def show(self, job: Job | None) -> None:
        """Redraws for a job (hidden when there is none)."""
        self.display = job is not None
        if job is None:
            return
        out = Text(" job ", style="bold")
        out.append(visible(job.command)[:60])
        if job.state == "running":
            stage = job.current
            if stage is None:
                out.append(" · starting…")
            else:
                total = f"/{stage.total}" if stage.total else ""
                pct = f" {stage.fraction:.0%}" if stage.fraction is not None else ""
                eta = f" eta {stage.eta_s:.0f}s" if stage.eta_s else ""
                out.append(visible(f" · {stage.stage} {stage.done}{total} {stage.unit}{pct}{eta}"))
        elif job.state == "succeeded":
            out.append(" · done", style="bold")
            if job.summary:
                out.append(f": {visible(job.summary[0])}")
        else:
            out.append(f" · {job.state.upper()}: ", style="bold reverse")
            out.append(visible(job.error))
        out.append("  (b: jobs)", style="italic")
        self.update(out)


class KeyHints(Static):
    """The main keys as currently bound, in one line (cheaper to draw than a Footer).

    When they do not all fit, the least needed go first (highest rank, the later
    of equals), so help (rank 0) is always shown and tells the rest.
    """

    _hints: list[tuple[str, str, int, str]] = []

    def on_resize(self) -> None:
        self.show(self._hints)

    def show(self, hints: list[tuple[str, str, int, str]]) -> None:
        """Redraws from (key display, description, rank, binding id), as many as fit."""
        self._hints = list(hints)
        self.update(fit_hints(self._hints, self.size.width or 80))


def fit_hints(hints: list[tuple[str, str, int, str]], width: int) -> Text:
    """Gives the key line for a width: every hint in order, spaced two apart when that
    fits, else one apart, else without the least needed until the rest fit."""
    shown = list(hints)
    while True:
        for gap in ("  ", " "):
            out = Text(" ")
            for key, description, *_ in shown:
                if len(out) > 1:
                    out.append(gap)
                out.append(key, style="bold reverse")
                out.append(f" {description.lower()}")
            if out.cell_len <= width:
                return out
        droppable = [i for i, hint in enumerate(shown) if hint[2] > 0]
        if not droppable:
            return out
        shown.pop(max(droppable, key=lambda i: (shown[i][2], i)))
