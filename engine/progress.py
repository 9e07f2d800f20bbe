"""Progress of long engine work, for people and for the app's jobs panel.

Producers call ``task = progress.stage("embedding pool", total=n, unit="texts")``
and ``task.advance(k)``. In a terminal it draws a rich progress bar with an
ETA on stderr; when ``SEALDESK_PROGRESS_FILE`` is set (``engine.jobs`` sets
it for background runs) each update is also appended there as one JSON line:

    {"stage": "embedding pool", "done": 1200, "total": 50000, "unit": "texts",
     "rate": 41.2, "eta_s": 1184.5, "t": 1764500000.1}

Updates are throttled (at most ~5 per second per stage), so calling
``advance`` per document is cheap.

When stderr is not a terminal (CI, nohup, a log file), a stage that has run
for ``SEALDESK_PROGRESS_INTERVAL`` seconds (10 by default) gets one plain line
then and every interval after, and one when it ends:

    progress: embedding pool 1,200/50,000 texts (2.4%), 41 texts/s, 19m44s left
    progress: embedding pool done: 50,000 texts in 20m11s, 41 texts/s

Work shorter than the interval prints nothing. ``SEALDESK_NO_PROGRESS`` turns
both the bar and the lines off (background jobs report through the file).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from engine.terminal_text import visible

_MIN_INTERVAL = 0.2
_PLAIN_INTERVAL_S = 10.0


def _duration(seconds: float) -> str:
    """Gives a duration as people read it: 42s, 3m05s, 2h10m."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _count(n: float) -> str:
    return f"{n:,.0f}"


class Stage:
    """One measured stage of work."""

    def __init__(self, name: str, total: int | None, unit: str, bar, plain=None) -> None:
        self.name, self.total, self.unit = name, total, unit
        self.done = 0
        self.finished = False
        self._plain = plain  # the PlainLines that prints this stage, when stderr is no terminal
        self._said = False  # whether a plain line named this stage yet
        self.lined_at = 0.0  # when the last plain line was printed (monotonic)
        self._start = time.monotonic()
        self._last = 0.0
        self._bar = bar
        # A stage's name may quote a file name or a dataset: drawn visibly, as plain text.
        self._task = (
            bar.add_task(visible(name), total=total, unit=unit) if bar is not None else None
        )
        self._file = os.environ.get("SEALDESK_PROGRESS_FILE")
        self._emit(force=True)

    def advance(self, n: int = 1) -> None:
        """Counts n more units done."""
        self.done += n
        self._emit()

    def set_total(self, total: int) -> None:
        """Sets the total once it is known (streams learn it late)."""
        self.total = total
        if self._bar is not None:
            self._bar.update(self._task, total=total)

    def finish(self) -> None:
        """Marks the stage complete."""
        if self.total is None:
            self.total = self.done
        self.finished = True
        self._emit(force=True, finished=True)
        if self._plain is not None and self._said:
            self._plain.write(self.line(time.monotonic()))

    def line(self, now: float) -> str:
        """Gives the stage's plain progress line: counts, rate and time left (or taken)."""
        self._said = True
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        name = visible(self.name)
        if self.finished:
            return (
                f"progress: {name} done: {_count(self.done)} {self.unit} in "
                f"{_duration(elapsed)}, {rate:,.1f} {self.unit}/s"
            )
        of = f"/{_count(self.total)}" if self.total else ""
        share = f" ({100 * self.done / self.total:.1f}%)" if self.total else ""
        left = ""
        if self.total and rate > 0:
            left = f", {_duration(max(self.total - self.done, 0) / rate)} left"
        elif not self.done:
            left = f", running {_duration(elapsed)}"
        counted = f"{_count(self.done)}{of} {self.unit}{share}"
        return f"progress: {name} {counted}, {rate:,.1f} {self.unit}/s{left}"

    def due(self, now: float, interval: float) -> bool:
        """Whether the stage has run long enough to get a plain line."""
        return not self.finished and now - self._start >= interval

    def _emit(self, force: bool = False, finished: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < _MIN_INTERVAL:
            return
        self._last = now
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        if self._file:
            elapsed = max(now - self._start, 1e-9)
            rate = self.done / elapsed
            eta = None
            if self.total and rate > 0:
                eta = round(max(self.total - self.done, 0) / rate, 1)
            line = {
                "stage": self.name,
                "done": self.done,
                "total": self.total,
                "unit": self.unit,
                "rate": round(rate, 2),
                "eta_s": eta,
                "finished": finished,
                "t": round(time.time(), 3),
            }
            try:
                with open(self._file, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(line) + "\n")
            except OSError:
                self._file = None  # progress is a courtesy: it never fails the work


def _rate_column():
    """Gives a rich column showing a stage's rate, e.g. ``82,263 docs/s``."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task) -> Text:
            if not task.speed:
                return Text("")
            return Text(f"{task.speed:,.0f} {task.fields.get('unit', 'items')}/s")

    return RateColumn()


class PlainLines:
    """Prints each running stage's plain line every interval on a stream (stderr that is
    no terminal), from a thread of its own: a stage stuck in one long call still shows
    it is running."""

    def __init__(self, stream, interval: float) -> None:
        self.stream, self.interval = stream, interval
        self.stages: list[Stage] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="progress-lines", daemon=True)

    def write(self, line: str) -> None:
        with self._lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                self._stop.set()  # progress is a courtesy: a closed stream ends it

    def _tick(self) -> None:
        while not self._stop.wait(min(self.interval, 1.0)):
            now = time.monotonic()
            for stage in list(self.stages):
                if stage.due(now, self.interval) and now - stage.lined_at >= self.interval:
                    stage.lined_at = now
                    self.write(stage.line(now))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def _plain_interval() -> float:
    """Gives the seconds between plain progress lines (SEALDESK_PROGRESS_INTERVAL)."""
    raw = os.environ.get("SEALDESK_PROGRESS_INTERVAL", "")
    try:
        value = float(raw) if raw else _PLAIN_INTERVAL_S
    except ValueError:
        return _PLAIN_INTERVAL_S
    return value if value > 0 else _PLAIN_INTERVAL_S


class Reporter:
    """Hands out stages; draws bars when stderr is a terminal, plain lines every few
    seconds when it is not."""

    def __init__(self, enabled: bool | None = None) -> None:
        quiet = bool(os.environ.get("SEALDESK_NO_PROGRESS"))
        tty = sys.stderr.isatty()
        if enabled is None:
            enabled = tty and not quiet
        self._plain = None
        if not tty and not quiet:
            self._plain = PlainLines(sys.stderr, _plain_interval())
        self._bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                _rate_column(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )

    def stage(self, name: str, total: int | None = None, unit: str = "items") -> Stage:
        """Gives a new stage to advance."""
        stage = Stage(name, total, unit, self._bar, self._plain)
        if self._plain is not None:
            self._plain.stages.append(stage)
        return stage

    def __enter__(self) -> Reporter:
        if self._bar is not None:
            self._bar.start()
        if self._plain is not None:
            self._plain.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        if self._plain is not None:
            self._plain.stop()


@contextmanager
def reporter(enabled: bool | None = None) -> Iterator[Reporter]:
    """Gives a progress reporter for the duration of a run."""
    with Reporter(enabled) as rep:
        yield rep
