"""The jobs panel: start an engine run in the background and follow every run's progress."""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from engine import jobs
from engine.cli import gate_policy
from engine.errors import SealdeskError
from engine.terminal_text import visible
from reviewer.actions import bindings

EXAMPLES = (
    "scan contamination --eval eval.jsonl --pool pool.jsonl",
    "exam adjudicate ...",
    "coverage report ...",
    "ingest backlog.jsonl",
)


def _bar(fraction: float | None, width: int = 20) -> str:
    if fraction is None:
        return "[" + "?" * width + "]"
    filled = round(width * fraction)
    return "[" + "█" * filled + "░" * (width - filled) + "]"


def render_jobs(all_jobs: list[jobs.Job]) -> Group | Text:
    """Gives every job: command, state, each stage's progress, and the error of a failed one."""
    if not all_jobs:
        return Text("no jobs yet: type an engine command below and press Enter", style="italic")
    parts = []
    for job in all_jobs:
        head = Text()
        head.append(
            f"{job.state.upper():9}",
            style="bold reverse" if job.state in ("failed", "lost") else "bold",
        )
        head.append(f" {visible(job.command)}")
        head.append(f"  ({visible(job.job_id)})", style="italic")
        parts.append(head)
        for stage in job.stages:
            total = f"/{stage.total}" if stage.total else ""
            eta = f" eta {stage.eta_s:.0f}s" if stage.eta_s and not stage.finished else ""
            parts.append(
                Text(
                    visible(
                        f"   {_bar(stage.fraction)} {stage.stage}: {stage.done}{total} "
                        f"{stage.unit}{eta}{' ✓' if stage.finished else ''}"
                    )
                )
            )
        if job.summary_cut:
            parts.append(
                Text(visible(f"   │ … {job.summary_cut} earlier line(s) in {job.path}/stdout.log"))
            )
        # Every line the run printed when done (its counts, COMPLETE or PENDING, what
        # it wrote), not only the last: these are the run's answer.
        for line in job.summary:
            parts.append(Text(f"   │ {visible(line)}"))
        if job.error:
            parts.append(Text(f"   {visible(job.error, multiline=True)}", style="bold"))
    return Group(*parts)


class JobsScreen(ModalScreen[tuple[jobs.Job, ...]]):
    """Lists the workspace's jobs (refreshed live) and starts new ones.

    Gives back, when closed, the jobs started from it, for the review to follow.
    """

    SCOPE = "jobs"
    BINDINGS = bindings(SCOPE)
    AUTO_FOCUS = "#job-command"

    def __init__(self, workspace_root: Path, command: str = "", why: str = "") -> None:
        """``command`` is offered in the command line (Enter starts it), ``why`` says why."""
        super().__init__()
        self.workspace_root = workspace_root
        self.started: list[jobs.Job] = []
        self.offered, self.why = command, why

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog jobs"):
            yield Label("Engine runs · Enter starts one · Ctrl+K cancels the newest · Esc closes")
            gated = gate_policy.active()
            if gated is not None:
                policy = gated[0]
                yield Label(
                    Text(
                        visible(
                            f"Under ssh-gate: allowed {', '.join(policy.allowed)}; files are "
                            f"read from {policy.inputs}/ and artifacts/, written inside the "
                            "workspace"
                        )
                    ),
                    id="jobs-gate",
                )
            with VerticalScroll(id="jobs-list"):
                yield Static(id="jobs-body")
            yield Static(Text(visible(self.why)), id="jobs-error")
            yield Input(
                value=self.offered,
                placeholder=f"sealdesk {EXAMPLES[0]}",
                id="job-command",
                compact=True,
            )

    def on_mount(self) -> None:
        self.refresh_jobs()
        self.set_interval(0.5, self.refresh_jobs)

    def refresh_jobs(self) -> None:
        """Reads every job's files again and redraws."""
        self.query_one("#jobs-body", Static).update(
            render_jobs(jobs.list_jobs(self.workspace_root))
        )

    @on(Input.Submitted, "#job-command")
    def start(self, event: Input.Submitted) -> None:
        error = self.query_one("#jobs-error", Static)
        try:
            # Checked before anything starts: engine work only, and under ssh-gate only
            # what the gate would let a job run.
            argv = jobs.check_command(self.workspace_root, event.value)
            job = jobs.start_job(self.workspace_root, argv)
        except SealdeskError as exc:
            error.update(Text(visible(exc.one_line()), style="bold"))
            return
        except OSError as exc:
            error.update(Text(visible(exc), style="bold"))
            return
        error.update(Text(visible(f"started {job.command}")))
        event.input.value = ""
        self.started.append(job)
        self.refresh_jobs()

    def action_cancel_newest(self) -> None:
        for job in jobs.list_jobs(self.workspace_root):
            if job.state == "running":
                jobs.cancel_job(job)
                self.query_one("#jobs-error", Static).update(
                    Text(visible(f"cancelling {job.command}"))
                )
                return
        self.query_one("#jobs-error", Static).update(Text("no running job to cancel"))

    def action_close(self) -> None:
        self.dismiss(tuple(self.started))
