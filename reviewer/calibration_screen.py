"""The calibration views: each channel's score histogram over a run's flagged pairs, and
for the lead each category's recall (benign FPR) against its policy line.

The threshold is drawn on each histogram and the borderline band around it
marked; Enter hands the band's items back to the review (``Band``), which
filters the flagged-pairs queue to them. Everything is block characters and
text attributes, so it reads the same without colour (``NO_COLOR``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from engine.contamination.report.distribution import (
    BAND,
    ChannelScores,
    Distribution,
    read_distribution,
)
from engine.coverage.rates import CategoryRates, read_rates
from engine.terminal_text import visible
from engine.workspace import Workspace
from reviewer.actions import bindings
from reviewer.widgets.bars import KeyHints


class _Hinting(Protocol):
    """The app's side these screens use (the app module sits above them)."""

    def key_hints(self, screen: Screen) -> list[tuple[str, str, int, str]]: ...


BLOCKS = " ▁▂▃▄▅▆▇█"
GUTTER = 6  # the count scale left of the bars
BIN_CHOICES = (100, 50, 40, 25, 20, 10)
BAND_STEP = 0.01
BAND_LIMITS = (0.01, 0.25)


@dataclass(frozen=True)
class Band:
    """The borderline band chosen on the view: which channel, its score range, its items."""

    run_id: str
    channel: str
    lo: float
    hi: float
    items: tuple[str, ...]

    @property
    def label(self) -> str:
        """Gives how the queue's filter line names the band."""
        return f"band {self.channel} {self.lo:.2f}..{self.hi:.2f}"


def bins_for(width: int) -> tuple[int, int]:
    """Gives (bins, columns per bin) for a histogram ``width`` columns wide: the most bins
    that fit, each a whole number of columns, so that the threshold's column is exact."""
    for bins in BIN_CHOICES:
        if bins <= width:
            return bins, width // bins
    return 1, max(1, width)


def _column(value: float, bins: int) -> int:
    return min(bins - 1, max(0, math.floor(value * bins)))


def exact(value: float) -> str:
    """Gives a threshold as the run recorded it, to its last digit (0.7972, never 0.80),
    with at least two decimals (0.60)."""
    text = repr(float(value))
    if "e" in text or "n" in text:  # 1e-05, inf, nan: as Python writes them
        return text
    whole, _, decimals = text.partition(".")
    return f"{whole}.{decimals:0<2}"


def _title(scores: ChannelScores) -> str:
    title = scores.channel if scores.channel == scores.score else f"{scores.channel} {scores.score}"
    return visible(title)


def render_channel(
    scores: ChannelScores, width: int, rows: int, *, selected: bool, band_width: float
) -> Text:
    """Gives one channel's block: a title line, ``rows`` rows of bars, the axis with the
    threshold (▲) and band (═) marked, and the scale under it; a channel the run did not
    score is its title line alone."""
    out = Text()
    band = scores.band(band_width)
    title = f"{'▶' if selected else ' '} {_title(scores)}"
    if scores.threshold is None:
        facts = f" · {len(scores.points)} pairs · no threshold: not used by this run"
    else:
        assert band is not None
        title += f" ≥ {exact(scores.threshold)}"
        facts = (
            f" · {len(scores.points)} pairs, {scores.flagged()} flagged · band "
            f"{band[0]:.2f}..{band[1]:.2f}: {len(scores.in_band(band_width))} items"
        )
    out.append(title, style="bold reverse" if selected else "bold")
    out.append(facts[: max(0, width - len(title))])
    if not scores.points:
        return out
    bins, per = bins_for(max(1, width - GUTTER))
    counts = scores.histogram(bins)
    top = max(counts)
    levels = rows * 8
    heights = [0 if c == 0 else max(1, round(c * levels / top)) for c in counts]
    threshold_at = None if scores.threshold is None else _column(scores.threshold, bins)
    band_cols = (
        range(0) if band is None else range(_column(band[0], bins), _column(band[1], bins) + 1)
    )
    for row in range(rows - 1, -1, -1):
        out.append("\n")
        label = str(top) if row == rows - 1 else ""
        out.append(f"{label:>{GUTTER - 1}} ")
        for b, height in enumerate(heights):
            level = min(8, max(0, height - row * 8))
            if level == 0 and b == threshold_at:
                out.append("│" + " " * (per - 1))  # the threshold through the empty space
                continue
            # Bold from the threshold up: what the channel flags stands out without colour.
            style = "bold" if threshold_at is not None and b >= threshold_at else ""
            out.append(BLOCKS[level] * per, style=style)
    out.append("\n" + " " * (GUTTER - 1) + "└")
    for b in range(bins):
        if b == threshold_at:
            out.append("▲" + "═" * (per - 1), style="bold")
        elif b in band_cols:
            out.append("═" * per, style="bold")
        else:
            out.append("─" * per)
    out.append("\n" + " " * GUTTER + _scale(bins * per, scores.threshold))
    return out


def _scale(width: int, threshold: float | None) -> str:
    """Gives the line under the axis: 0, 0.5 and 1, and the threshold under its ▲ (a mark
    it would touch is left out)."""
    scale = [" "] * (width + 1)
    taken: set[int] = set()
    if threshold is not None:
        text = f"{threshold:g}"
        at = min(len(scale) - len(text), _column(threshold, width) if width else 0)
        scale[at : at + len(text)] = text
        taken = set(range(at - 1, at + len(text) + 1))
    for value in (0.0, 0.5, 1.0):
        text = f"{value:g}"
        at = min(len(scale) - len(text), round(value * width))
        if taken.isdisjoint(range(at, at + len(text))):
            scale[at : at + len(text)] = text
    return "".join(scale).rstrip()


def render_distribution(
    dist: Distribution, width: int, height: int, selected: int, band_width: float
) -> Text:
    """Gives the whole view for a terminal area: a line about the run, then each channel
    with as many bar rows as the height leaves."""
    out = Text(visible(f" run {dist.run_id} · {dist.items} items · "))
    if dist.thresholds_from is None:
        out.append("no contamination_report.json: thresholds unknown", style="bold")
    else:
        out.append(f"band ±{band_width:.2f}")
    scored = [c for c in dist.channels if c.points] or [dist.channels[0]]
    spare = height - 1 - (len(dist.channels) - len(scored))
    per_channel = max(2, spare // len(scored) - 3)
    for n, scores in enumerate(dist.channels):
        out.append("\n")
        out.append_text(
            render_channel(
                scores, width, per_channel, selected=n == selected, band_width=band_width
            )
        )
    return out


class Loaded(Message):
    """The run's distribution has been read."""

    def __init__(self, dist: Distribution) -> None:
        super().__init__()
        self.dist = dist


class CalibrationScreen(Screen[Band | None]):
    """Each channel's histogram against its threshold; Enter gives the band's items."""

    SCOPE = "calibration"
    BINDINGS = bindings(SCOPE)

    def __init__(self, ws: Workspace, run_id: str) -> None:
        super().__init__()
        self.ws, self.run_id = ws, run_id
        self.dist: Distribution | None = None
        self.selected = 0
        self.band_width = BAND

    def compose(self) -> ComposeResult:
        yield Static(Text(" calibration · scores against thresholds"), id="banner")
        yield Static(Text(" reading the run's flagged pairs…"), id="calibration")
        yield KeyHints(id="key-hints")

    def on_mount(self) -> None:
        self.query_one(KeyHints).show(cast(_Hinting, self.app).key_hints(self))
        self._read(self.run_id)

    @work(thread=True, exclusive=True, group="calibration", exit_on_error=False)
    def _read(self, run_id: str) -> None:
        # Its own connection, off the UI thread: a run's payloads may be many.
        with self.ws.another() as reader:
            dist = read_distribution(reader.conn, reader.artifacts_dir, run_id)
        self.post_message(Loaded(dist))

    @on(Worker.StateChanged)
    def _read_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.query_one("#calibration", Static).update(
                Text(
                    visible(f" could not read run {self.run_id}: {event.worker.error}"),
                    style="bold",
                )
            )

    @on(Loaded)
    def _loaded(self, event: Loaded) -> None:
        self.dist = event.dist
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        if self.dist is None:
            return
        area = self.query_one("#calibration", Static)
        width = area.content_size.width or self.size.width
        height = area.content_size.height or max(1, self.size.height - 2)
        area.update(render_distribution(self.dist, width, height, self.selected, self.band_width))

    @property
    def current(self) -> ChannelScores | None:
        """Gives the channel selected, once the run is read."""
        return None if self.dist is None else self.dist.channels[self.selected]

    def action_step(self, step: int) -> None:
        if self.dist is not None:
            self.selected = (self.selected + step) % len(self.dist.channels)
            self._draw()

    def action_widen(self, step: int) -> None:
        lo, hi = BAND_LIMITS
        self.band_width = round(min(hi, max(lo, self.band_width + step * BAND_STEP)), 2)
        self._draw()

    def action_band(self) -> None:
        """Closes with the selected channel's band, or says why there is none to show."""
        scores = self.current
        if scores is None:
            return
        band = scores.band(self.band_width)
        items = scores.in_band(self.band_width)
        if band is None or not items:
            why = (
                f"{scores.channel} has no threshold in this run"
                if band is None
                else f"no {scores.channel} score within {self.band_width:.2f} of the threshold"
            )
            self.app.notify(why, title="No band", severity="warning", timeout=5, markup=False)
            return
        self.dismiss(Band(self.run_id, scores.channel, band[0], band[1], items))

    def action_close(self) -> None:
        self.dismiss(None)


# -- the lead's view: each category's rate against its policy line --------------------


def _rate_bar(value: float | None, line: float | None, width: int) -> Text:
    """Gives a bar of ``width`` cells over [0, 1]: filled to the value, the line (┃) at
    its place; a missing value is an empty bar."""
    filled = 0 if value is None else round(max(0.0, min(1.0, value)) * width)
    at = None if line is None else min(width - 1, round(line * width))
    out = Text()
    for cell in range(width):
        if cell == at:
            out.append("┃", style="bold")
        else:
            out.append("█" if cell < filled else "░")
    return out


def render_rates(rates: CategoryRates, width: int) -> Text:
    """Gives the lead's bars: a line per category, its rate against the policy line."""
    out = Text(visible(f" {rates.kind} {rates.sha256[:16]}… · {rates.detector_version} on "))
    out.append(visible(rates.evaluation_set_id))
    if rates.eligibility:
        out.append(f" · {visible(rates.eligibility)}", style="bold")
    lines = {r.metric: r.line for r in rates.rates}
    out.append("\n ┃ the policy line: ")
    out.append(
        ", ".join(
            f"{what} {'?' if lines.get(metric) is None else format(lines[metric], '.2f')}"
            for metric, what in (("recall", "recall at least"), ("fpr", "benign FPR at most"))
            if metric in lines
        )
    )
    if any(r.line is None for r in rates.rates):
        out.append(" (? : no finding used it; the benchmark's scope holds it)", style="italic")
    names = {r.category: visible(r.category) for r in rates.rates}
    name_width = min(28, max(len(name) for name in names.values()))
    verdicts = max(len(visible(", ".join(r.issues))) + 2 if r.issues else 7 for r in rates.rates)
    head = name_width + 1 + 6 + 5 + 7 + verdicts + 2  # name, metric, value, counts, verdict
    # Too narrow for a bar worth reading beside the facts: the bar gets a line of its own.
    stacked = width - head < 30
    bar_width = width - 4 if stacked else width - head
    for r in rates.rates:
        value = "–" if r.value is None else f"{r.value:.2f}"
        flagged = bool(r.issues) or r.fails is True
        if r.issues:
            verdict = "✗ " + visible(", ".join(r.issues))
        else:
            verdict = {True: "✗ fails", False: "✓", None: ""}[r.fails]
        out.append("\n ")
        name = names[r.category][:name_width]
        out.append(f"{name:<{name_width}} ", style="bold" if flagged else "")
        out.append(f"{'recall' if r.metric == 'recall' else 'FPR':<6}{value:>5} ")
        if stacked:
            out.append(f"{r.counts:>5} ")
            out.append(verdict, style="bold reverse" if flagged else "")
            out.append("\n   ")
            out.append_text(_rate_bar(r.value, r.line, bar_width))
        else:
            out.append_text(_rate_bar(r.value, r.line, bar_width))
            out.append(f" {r.counts:>5} ")
            out.append(verdict, style="bold reverse" if flagged else "")
    return out


class RatesLoaded(Message):
    """The report or benchmark's rates have been read."""

    def __init__(self, rates: CategoryRates) -> None:
        super().__init__()
        self.rates = rates


class RatesScreen(Screen[None]):
    """Each category's recall (the benign one's FPR) against its policy line, as bars."""

    SCOPE = "rates"
    BINDINGS = bindings(SCOPE)

    def __init__(self, ws: Workspace, sha256: str) -> None:
        super().__init__()
        self.ws, self.sha256 = ws, sha256
        self.rates: CategoryRates | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text(" calibration · categories against the policy"), id="banner")
        yield Static(Text(" reading the report…"), id="calibration")
        yield KeyHints(id="key-hints")

    def on_mount(self) -> None:
        self.query_one(KeyHints).show(cast(_Hinting, self.app).key_hints(self))
        self._read(self.sha256)

    @work(thread=True, exclusive=True, group="calibration", exit_on_error=False)
    def _read(self, sha256: str) -> None:
        with self.ws.another() as reader:
            rates = read_rates(reader.artifacts_dir, sha256)
        self.post_message(RatesLoaded(rates))

    @on(Worker.StateChanged)
    def _read_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.query_one("#calibration", Static).update(
                Text(
                    visible(f" could not read the categories' rates: {event.worker.error}"),
                    style="bold",
                )
            )

    @on(RatesLoaded)
    def _loaded(self, event: RatesLoaded) -> None:
        self.rates = event.rates
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        if self.rates is None:
            return
        area = self.query_one("#calibration", Static)
        area.update(render_rates(self.rates, area.content_size.width or self.size.width))

    def action_close(self) -> None:
        self.dismiss(None)
