"""Contamination runs for the calibration view's tests: a real scan of the sample data,
or a hand-placed run whose every score is known (for exact counts and snapshots)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.artifacts import write_json_artifact
from engine.workspace import BacklogItem, Workspace
from tests.conftest import REPO

SAMPLE = REPO / "sample_data" / "contamination"
RUN = "contam-placed"
THRESHOLDS = {"jaccard_flag": 0.8, "containment_flag": 0.5, "cosine_flag": 0.9}


def scan_sample(sealdesk, root: Path, *extra: str) -> str:
    """Runs the real CLI's n-gram scan of the sample data into the workspace at root;
    gives the run id."""
    sealdesk(
        "scan",
        "contamination",
        "--eval",
        SAMPLE / "eval.jsonl",
        "--text-field",
        "question",
        "--id-field",
        "id",
        "--pool",
        SAMPLE / "pool.jsonl",
        "--pool-text-field",
        "text",
        "--no-embed",
        *extra,
        workspace=root,
        check=True,
    )
    with Workspace.open(root, read_only=True) as ws:
        (run_id,) = {
            r for (r,) in ws.conn.execute("SELECT run_id FROM items WHERE queue='flagged_pairs'")
        }
    return run_id


def placed_pair(n: int, jaccard: float, containment: float, cosine: float | None) -> dict:
    """Gives a flagged_pairs payload in the contamination producer's shape, one match."""
    scores: dict[str, Any] = {"jaccard": jaccard, "containment": containment}
    if cosine is not None:
        scores["cosine"] = cosine
    return {
        "eval": {"id": f"q-{n:03d}", "index": n, "text": f"question {n}"},
        "matches": [
            {
                "kind": "pool",
                "index": n,
                "id": f"doc-{n}",
                "text": f"document {n}",
                "channels": ["containment"],
                "scores": scores,
                "spans": [],
                "numbers_only_differ": False,
            }
        ],
        "channels": ["containment"],
        "summary": {
            "title": f"q-{n:03d}: question {n}",
            "score": max(jaccard, containment, cosine or 0),
            "tags": ["containment"],
        },
    }


# (jaccard, containment, cosine) per item: a spread with a few near each threshold
PLACED = [
    # off the band's edges (x.xx4), so no count hangs on how a float rounds
    (0.124 + 0.03 * (n % 11), 0.304 + 0.025 * n, 0.554 + 0.018 * n if n % 3 else None)
    for n in range(24)
] + [(0.81, 0.95, 0.97), (0.78, 1.0, 0.93), (1.0, 1.0, 0.99)]


def place_run(ws: Workspace, thresholds: dict[str, Any] | None = None) -> list[BacklogItem]:
    """Ingests the hand-placed run with its report (and sidecar); gives the items."""
    items = [
        BacklogItem.make(
            "flagged_pairs",
            f"fp-{n:03d}",
            RUN,
            placed_pair(n, round(j, 4), round(min(c, 1.0), 4), None if e is None else round(e, 4)),
        )
        for n, (j, c, e) in enumerate(PLACED)
    ]
    ws.ingest(items)
    report = {"thresholds": dict(THRESHOLDS if thresholds is None else thresholds)}
    directory = ws.artifacts_dir / RUN
    directory.mkdir(parents=True, exist_ok=True)
    write_json_artifact(directory / "contamination_report.json", report)
    return items


def in_band(items: list[BacklogItem], score: str, lo: float, hi: float) -> list[str]:
    """Gives the ids of the items with a match whose score lies in [lo, hi], worked out
    from the payloads as the engine wrote them."""
    return sorted(
        item.item_id
        for item in items
        if any(lo <= m["scores"].get(score, -1) <= hi for m in item.payload["matches"])
    )


def payloads(ws: Workspace, run_id: str) -> list[BacklogItem]:
    """Gives a run's flagged pairs as held in the workspace."""
    rows = ws.conn.execute(
        "SELECT item_id, payload FROM items WHERE queue='flagged_pairs' AND run_id=?", (run_id,)
    )
    return [BacklogItem.make("flagged_pairs", i, run_id, json.loads(p)) for i, p in rows]


def report_thresholds(ws: Workspace, run_id: str) -> dict[str, Any]:
    """Gives the thresholds the run's report recorded."""
    path = ws.artifacts_dir / run_id / "contamination_report.json"
    return json.loads(path.read_text())["thresholds"]
