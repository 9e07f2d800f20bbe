"""Where a run's flagged pairs fall on each channel's score scale, against its threshold.

The review app's calibration view draws these as histograms. A point is one
match a flagged_pairs item shows (the eval item and one pool document or eval
sibling) with the score a channel reads: exact 13-gram Jaccard for ``ngram``,
containment for ``containment``, cosine for ``embed``. A pair is in the run's
output only when some channel flagged it, so the points below a channel's
threshold are the pairs another channel flagged: exactly the near misses a
reviewer can judge the threshold by. The thresholds come from the run's
``contamination_report.json``, checked against its sidecar.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.artifacts import read_verified
from engine.contamination.report.findings import QUEUE
from engine.errors import InputError, IntegrityError

REPORT = "contamination_report.json"
# channel, the score it reads, the report's threshold field for it
CHANNELS = (
    ("ngram", "jaccard", "jaccard_flag"),
    ("containment", "containment", "containment_flag"),
    ("embed", "cosine", "cosine_flag"),
)
# How far either side of a threshold a score is borderline: a reviewer's call, not the
# channel's, so the view says the width it used.
BAND = 0.05


@dataclass(frozen=True)
class ScorePoint:
    """One match of one item, as a channel scores it."""

    item_id: str
    value: float


@dataclass(frozen=True)
class ChannelScores:
    """One channel's scores over a run's flagged pairs, and the threshold that flags."""

    channel: str
    score: str  # the score the channel reads: jaccard, containment, cosine
    threshold: float | None  # None: the run did not use the channel
    points: tuple[ScorePoint, ...]

    def histogram(self, bins: int) -> list[int]:
        """Gives how many points fall in each of ``bins`` equal bins over [0, 1]; a score
        outside (a negative cosine) counts in the nearest end bin."""
        if bins < 1:
            raise InputError(f"a histogram needs at least one bin, not {bins}", field="bins")
        counts = [0] * bins
        for point in self.points:
            counts[min(bins - 1, max(0, math.floor(point.value * bins)))] += 1
        return counts

    def band(self, width: float = BAND) -> tuple[float, float] | None:
        """Gives the borderline score range around the threshold, or None without one."""
        if self.threshold is None:
            return None
        return max(0.0, self.threshold - width), min(1.0, self.threshold + width)

    def flagged(self) -> int:
        """Gives how many points this channel's threshold flags."""
        if self.threshold is None:
            return 0
        return sum(p.value >= self.threshold for p in self.points)

    def in_band(self, width: float = BAND) -> tuple[str, ...]:
        """Gives the ids of the items with a match inside the band, each once, sorted."""
        band = self.band(width)
        if band is None:
            return ()
        lo, hi = band
        return tuple(sorted({p.item_id for p in self.points if lo <= p.value <= hi}))


@dataclass(frozen=True)
class Distribution:
    """Every channel's scores over one run's flagged pairs."""

    run_id: str
    channels: tuple[ChannelScores, ...]
    items: int  # flagged items the points came from
    thresholds_from: str | None  # the report read, or None when the run has none


def _threshold(thresholds: dict[str, Any], field: str, path: str) -> float | None:
    value = thresholds.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InputError(
            f"threshold {value!r} is not a number in [0, 1]", path=path, field=f"thresholds.{field}"
        )
    return float(value)


def thresholds_of(report: dict[str, Any], path: str) -> dict[str, float | None]:
    """Gives each channel's threshold from a contamination report, or raises naming the
    field that is missing or not a score."""
    thresholds = report.get("thresholds")
    if not isinstance(thresholds, dict):
        raise InputError("the report has no thresholds object", path=path, field="thresholds")
    return {channel: _threshold(thresholds, field, path) for channel, _, field in CHANNELS}


def distribution(
    run_id: str,
    thresholds: dict[str, float | None],
    items: Iterable[tuple[str, dict[str, Any]]],
    *,
    thresholds_from: str | None = None,
) -> Distribution:
    """Gives the per-channel scores of (item id, payload) pairs of one run.

    A match without a channel's score (no cosine when the run had no
    embedding) adds no point to that channel; payloads of another shape add
    nothing, as the app shows them as JSON.
    """
    points: dict[str, list[ScorePoint]] = {channel: [] for channel, _, _ in CHANNELS}
    n = 0
    for item_id, payload in items:
        n += 1
        matches = payload.get("matches") if isinstance(payload, dict) else None
        for match in matches if isinstance(matches, list) else ():
            scores = match.get("scores") if isinstance(match, dict) else None
            if not isinstance(scores, dict):
                continue
            for channel, score, _ in CHANNELS:
                value = scores.get(score)
                if (
                    isinstance(value, (int, float))
                    and not isinstance(value, bool)
                    and math.isfinite(value)
                ):
                    points[channel].append(ScorePoint(item_id, float(value)))
    return Distribution(
        run_id,
        tuple(
            ChannelScores(channel, score, thresholds.get(channel), tuple(points[channel]))
            for channel, score, _ in CHANNELS
        ),
        n,
        thresholds_from,
    )


def newest_run(conn: sqlite3.Connection) -> str | None:
    """Gives the run of the flagged pair ingested last, or None before any."""
    row = conn.execute(
        "SELECT run_id FROM items WHERE queue = ? ORDER BY rowid DESC LIMIT 1", (QUEUE,)
    ).fetchone()
    return None if row is None else row[0]


def read_distribution(conn: sqlite3.Connection, artifacts: Path, run_id: str) -> Distribution:
    """Gives a run's distribution: its flagged pairs from the workspace, its thresholds
    from its report under ``artifacts/<run_id>/`` (none when the run wrote no report,
    as for items ingested from a file).

    A report that does not match its sidecar or holds no valid thresholds is
    refused, rather than drawing a line no scan used.
    """
    path = artifacts / run_id / REPORT
    thresholds: dict[str, float | None] = {}
    found = None
    if path.is_file():
        data = read_verified(path)
        try:
            report = json.loads(data)
        except ValueError as exc:
            raise IntegrityError(f"{path}: not JSON ({exc})") from exc
        if not isinstance(report, dict):
            raise InputError("the report is not a JSON object", path=path)
        thresholds = thresholds_of(report, str(path))
        found = str(path)
    rows = conn.execute(
        "SELECT item_id, payload FROM items WHERE queue = ? AND run_id = ? ORDER BY item_id",
        (QUEUE, run_id),
    )
    return distribution(
        run_id,
        thresholds,
        ((item_id, json.loads(payload)) for item_id, payload in rows),
        thresholds_from=found,
    )
