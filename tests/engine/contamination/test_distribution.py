"""Each channel's scores over a run's flagged pairs, against the thresholds of its report."""

from __future__ import annotations

import json

import pytest

from engine.contamination.report.distribution import (
    ChannelScores,
    ScorePoint,
    newest_run,
    read_distribution,
)
from engine.errors import InputError, IntegrityError
from engine.workspace import Workspace
from tests.support.calibration import (
    RUN,
    in_band,
    payloads,
    place_run,
    report_thresholds,
    scan_sample,
)


def test_a_real_scan_gives_every_pool_and_sibling_match_a_point_per_scored_channel(sealdesk, ws):
    run_id = scan_sample(sealdesk, ws)
    with Workspace.open(ws, read_only=True) as opened:
        dist = read_distribution(opened.conn, opened.artifacts_dir, run_id)
        items = payloads(opened, run_id)
        thresholds = report_thresholds(opened, run_id)
    matches = [m for item in items for m in item.payload["matches"]]
    by_channel = {c.channel: c for c in dist.channels}
    assert dist.items == len(items) == 10
    assert sorted(p.value for p in by_channel["ngram"].points) == sorted(
        m["scores"]["jaccard"] for m in matches
    )
    assert sorted(p.value for p in by_channel["containment"].points) == sorted(
        m["scores"]["containment"] for m in matches
    )
    assert by_channel["ngram"].threshold == thresholds["jaccard_flag"]
    assert by_channel["containment"].threshold == thresholds["containment_flag"]
    # --no-embed: no cosine anywhere, and no line drawn for it
    assert by_channel["embed"].points == () and by_channel["embed"].threshold is None


def test_the_band_lists_the_items_with_a_match_near_the_threshold(workspace):
    items = place_run(workspace)
    dist = read_distribution(workspace.conn, workspace.artifacts_dir, RUN)
    containment = {c.channel: c for c in dist.channels}["containment"]
    assert containment.band(0.05) == (0.45, 0.55)
    assert list(containment.in_band(0.05)) == in_band(items, "containment", 0.45, 0.55)
    assert len(containment.in_band(0.05)) == 4
    wider = containment.in_band(0.1)
    assert list(wider) == in_band(items, "containment", 0.4, 0.6) and len(wider) == 8


def test_the_histogram_counts_every_point_once_and_clamps_scores_outside_0_1():
    scores = ChannelScores(
        "embed",
        "cosine",
        0.9,
        tuple(ScorePoint(f"i{n}", v) for n, v in enumerate([-0.2, 0.0, 0.49, 0.5, 0.95, 1.0])),
    )
    assert scores.histogram(2) == [3, 3]
    assert scores.histogram(4) == [2, 1, 1, 2]
    assert scores.flagged() == 2


def test_a_report_edited_after_the_scan_is_refused(workspace):
    place_run(workspace)
    path = workspace.artifacts_dir / RUN / "contamination_report.json"
    path.write_text(json.dumps({"thresholds": {"containment_flag": 0.9}}))
    with pytest.raises(IntegrityError):
        read_distribution(workspace.conn, workspace.artifacts_dir, RUN)


def test_a_threshold_that_is_no_score_is_refused_naming_the_field(workspace):
    place_run(workspace, {"jaccard_flag": 0.8, "containment_flag": "high"})
    with pytest.raises(InputError) as caught:
        read_distribution(workspace.conn, workspace.artifacts_dir, RUN)
    assert caught.value.field == "thresholds.containment_flag"
    assert caught.value.path.endswith(f"{RUN}/contamination_report.json")


def test_a_run_without_a_report_still_has_its_scores_and_no_thresholds(workspace):
    place_run(workspace)
    (workspace.artifacts_dir / RUN / "contamination_report.json").unlink()
    dist = read_distribution(workspace.conn, workspace.artifacts_dir, RUN)
    assert dist.thresholds_from is None
    assert all(c.threshold is None and c.in_band() == () for c in dist.channels)
    assert len({c.channel: c for c in dist.channels}["ngram"].points) == 27


def test_the_newest_run_is_the_one_ingested_last(workspace):
    assert newest_run(workspace.conn) is None
    place_run(workspace)
    assert newest_run(workspace.conn) == RUN
