"""Progress of long engine work, for people and for the app's jobs panel.

Producers call ``task = progress.stage("embedding pool", total=n, unit="texts")``
and ``task.advance(k)``. In a terminal it draws a rich progress bar with an
ETA on stderr; when ``SEALDESK_PROGRESS_FILE`` is set (``engine.jobs`` sets
it for background runs) each update is also appended there as one JSON line:

    {"stage": "embedding pool", "done": 1200, "total": 50000, "unit": "texts",
     "rate": 41.2, "eta_s": 1184.5, "t": 1764500000.1}

Updates are throttled (at most ~5 per second per stage), so calling
``advance`` per document is cheap.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from engine.terminal_text import visible

_MIN_INTERVAL = 0.2


class Stage:
    """One measured stage of work."""

    def __init__(self, name: str, total: int | None, unit: str, bar) -> None:
        self.name, self.total, self.unit = name, total, unit
        self.done = 0
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
        self._emit(force=True, finished=True)

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


class Reporter:
    """Hands out stages; draws bars only when stderr is a terminal."""

    def __init__(self, enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty() and not os.environ.get("SEALDESK_NO_PROGRESS")
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
        return Stage(name, total, unit, self._bar)

    def __enter__(self) -> Reporter:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


@contextmanager
def reporter(enabled: bool | None = None) -> Iterator[Reporter]:
    """Gives a progress reporter for the duration of a run."""
    with Reporter(enabled) as rep:
        yield rep
