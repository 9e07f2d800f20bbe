"""One backlog run: select misses, attribute them, write the artifacts, ingest the items.

Everything is read and checked first (rows, policy, model, selection,
every attribution); only then are the artifacts written and the items
ingested, so bad input leaves nothing behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.artifacts import write_sealed
from engine.canonical import canonical_json, canonical_jsonl, canonical_sha256
from engine.coverage.backlog import build_items
from engine.coverage.findings import FindingSource
from engine.coverage.misses import select_misses
from engine.coverage.policy import load_attribution_policy
from engine.coverage.tables import DEBUG_COLUMNS, read_table
from engine.errors import InputError
from engine.progress import reporter
from engine.workspace import BacklogItem, Workspace


@dataclass(frozen=True)
class BacklogRun:
    """What a backlog run wrote and ingested."""

    run_id: str
    run_dir: Path
    items: tuple[BacklogItem, ...]
    added: int
    unchanged: int


def run_backlog(ws: Workspace, source: FindingSource, rows_path: Path, policy_path: Path,
                model_dir: Path | None) -> BacklogRun:
    """Gives the run after building and ingesting the weak-category backlog of a source."""
    if not source.findings:
        raise InputError(f"{source.kind} has no weak category: there is nothing to debug",
                         path=source.path, field="weak_categories")
    if source.detector_sha256 is None:
        raise InputError("the report names no detector digest; run `coverage report` with "
                         "--detector-sha256 so misses can be bound to it", path=source.path,
                         field="detector_sha256")
    policy = load_attribution_policy(policy_path)
    table = read_table(rows_path, DEBUG_COLUMNS)
    selection = select_misses(table, list(source.findings), source.detector_sha256, policy,
                              findings_path=source.path)
    explanations: dict[str, dict] = {}
    model_sha256 = None
    if model_dir is not None:
        from engine.coverage.attribution import explain_miss, load_detector

        detector = load_detector(model_dir)
        model_sha256 = detector.sha256
        chosen = [m for ms in selection.selected.values() for m in ms]
        with reporter() as rep:
            stage = rep.stage("attributing misses", total=len(chosen), unit="misses")
            for miss in chosen:
                explanations[miss.case_id] = explain_miss(detector, miss, policy)
                stage.advance()
            stage.finish()
    inputs = {"source": source.to_json(), "rows_sha256": table.sha256,
              "policy": policy.to_json(), "model_sha256": model_sha256}
    run_id = f"coverage-backlog-{canonical_sha256(inputs)[:16]}"
    items = build_items(source, selection, explanations, policy, run_id=run_id,
                        model_sha256=model_sha256,
                        not_run_reason=None if model_dir else "no --model was given")
    out = ws.run_dir(run_id)
    # Sealed: the run's manifest records these bytes, so a re-run whose attributions
    # came out different must not replace them.
    written = write_sealed({
        out / "miss_selection.json": canonical_json(selection.to_json()),
        out / "attributions.json": canonical_json([explanations[k]
                                                   for k in sorted(explanations)]),
        out / "debug_backlog.jsonl": canonical_jsonl(i.to_json() for i in items),
    }, "these inputs were already run with other results; nothing was written")
    artifacts = {path.name: digest for path, digest in written.items()}
    manifest = {"kind": "coverage-backlog", "artifacts": artifacts, "inputs": inputs}
    result = ws.ingest(items, runs={run_id: manifest}, source=str(rows_path))
    return BacklogRun(run_id, out, tuple(items), result.added, result.unchanged)
