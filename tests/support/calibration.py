"""Contamination runs for the calibration view's tests: a real scan of the sample data,
or a hand-placed run whose every score is known (for exact counts and snapshots)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.artifacts import write_json_artifact
from engine.workspace import BacklogItem, Workspace
from tests.conftest import REPO
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args

SAMPLE = REPO / "sample_data" / "contamination"
RUN = "contam-placed"
THRESHOLDS = {"jaccard_flag": 0.8, "containment_flag": 0.5, "cosine_flag": 0.9}


def scan_sample(sealdesk, root: Path, *extra: str) -> str:
    """Runs the real CLI's n-gram scan of the sample data into the workspace at root;
    gives the run id."""
    sealdesk(
        *scan_args(
            SAMPLE / "eval.jsonl",
            SAMPLE / "pool.jsonl",
            *SAMPLE_FIELDS,
            "--no-embed",
            *extra,
        ),
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


# -- coverage: a benchmark stored as `coverage benchmark` stores it, a report by hand ----


def stored_benchmark(ws: Workspace, root: Path):
    """Stores the demo's signed HOLD benchmark in the workspace as the coverage engine
    does, and ingests its weak-category backlog; gives (finding source, its document)."""
    from engine.canonical import sha256_hex
    from engine.coverage.findings import load_benchmark
    from engine.coverage.measure import store_benchmark
    from engine.coverage.run_backlog import run_backlog
    from tests.support.coverage import sample_benchmark

    auth, path, sig = sample_benchmark(root)
    raw = path.read_bytes()
    store_benchmark(ws, sha256_hex(raw), raw, None)
    source = load_benchmark(path, sig, auth.trust)[0]
    coverage = REPO / "sample_data" / "coverage"
    run_backlog(ws, source, coverage / "debug_rows.jsonl", coverage / "attribution.toml", None)
    return source, json.loads(raw)


def _row(category: str, positives: int, caught: int, negatives: int = 0, fps: int = 0) -> dict:
    return {
        "category": category,
        "detection_recall": caught / positives if positives else None,
        "false_positive_rate": fps / negatives if negatives else None,
        "positive_count": positives,
        "true_positive_count": caught,
        "negative_count": negatives,
        "false_positive_count": fps,
        "sample_count": positives + negatives,
    }


REPORT = {
    "schema_version": "sealdesk.coverage-report.v2",
    "detector_version": "v7",
    "evaluation_set_id": "placed-set",
    "policy": {"min_attack_recall": 0.8, "max_benign_fpr": 0.1},
    "stratified_report": [
        _row("direct", 20, 19),
        _row("obfuscated", 20, 12),
        _row("roleplay", 10, 8),
        _row("benign", 0, 0, 40, 6),
    ],
    "weak_categories": [
        {"category": "obfuscated", "issue": "low_recall", "value": 0.6, "threshold": 0.8},
        {"category": "benign", "issue": "high_fpr", "value": 0.15, "threshold": 0.1},
    ],
}


def placed_report(ws: Workspace) -> str:
    """Writes a hand-placed coverage report where `coverage report` writes one, and a
    weak-category item naming it; gives the report's digest."""
    from engine.artifacts import write_artifact
    from engine.canonical import canonical_json, sha256_hex

    raw = canonical_json(REPORT)
    digest = sha256_hex(raw)
    directory = ws.artifacts_dir / f"coverage-report-{digest[:16]}"
    directory.mkdir(parents=True, exist_ok=True)
    write_artifact(directory / "category_report.json", raw)
    payload = {
        "kind": "coverage.weak_category",
        "category": "obfuscated",
        "findings": [REPORT["weak_categories"][0]],
        "source": {"kind": "report", "sha256": digest, "detector_version": "v7"},
        "release_authority": "none",
        "summary": {"title": "obfuscated: low_recall 0.6 < 0.8", "score": 0.2, "tags": []},
    }
    ws.ingest([BacklogItem.make("weak_categories", "wc-placed", "coverage-placed", payload)])
    return digest
