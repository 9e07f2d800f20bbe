"""One backlog run: select misses, attribute them, write the artifacts, ingest the items.

Everything is read and checked first (rows, policy, model, selection,
every attribution); only then are the artifacts written and the items
ingested, so bad input leaves nothing behind.

The rows must not hold a sealed case of the benchmark's holdout, and the
model attributed must be the detector the benchmark measured (its
directory digest is the detector digest): explaining another model's
weights would explain misses it never made. Attributing another model
anyway takes a stated reason, which every item records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.artifacts import write_sealed
from engine.backlog import BacklogItem
from engine.canonical import canonical_json, canonical_jsonl, canonical_sha256
from engine.coverage.backlog import build_items
from engine.coverage.findings import FindingSource
from engine.coverage.misses import refuse_sealed_rows, select_misses
from engine.coverage.policy import load_attribution_policy
from engine.coverage.tables import DEBUG_COLUMNS, read_table
from engine.errors import InputError, PermissionRefused
from engine.progress import reporter
from engine.workspace import Workspace


@dataclass(frozen=True)
class BacklogRun:
    """What a backlog run wrote and ingested."""

    run_id: str
    run_dir: Path
    items: tuple[BacklogItem, ...]
    added: int
    unchanged: int


def model_binding(
    source: FindingSource, measured: str, model_dir: Path | None, override_reason: str | None
) -> tuple[str | None, str | None]:
    """Gives (model digest, binding) of the model to attribute with: binding is
    ``measured_detector`` when the model is the detector the source measured (digest
    ``measured``), ``override`` when it is not and a reason was given; refuses a mismatch
    without one."""
    from engine.coverage.attribution import directory_digest

    if override_reason is not None and not override_reason.strip():
        raise InputError("must say why another model may explain these misses", field="reason")
    if model_dir is None:
        if override_reason is not None:
            raise InputError(
                "a reason is for attributing with a --model that is not the "
                "measured detector; no --model was given",
                field="reason",
            )
        return None, None
    if not Path(model_dir).is_dir():
        raise InputError("model is not a directory", path=model_dir)
    digest = directory_digest(Path(model_dir))
    if digest == measured:
        if override_reason is not None:
            raise InputError(
                f"{model_dir} is the measured detector {digest[:16]}…: there is "
                "no mismatch to give a reason for",
                field="reason",
            )
        return digest, "measured_detector"
    if override_reason is None:
        raise PermissionRefused(
            f"{model_dir}: model digest {digest[:16]}… is not the {source.kind}'s measured "
            f"detector {measured[:16]}…; attributing it would explain misses "
            "another model made. Attribute the measured detector, or give --reason WHY to "
            "attribute this model anyway (recorded in every item)"
        )
    return digest, "override"


def run_backlog(
    ws: Workspace,
    source: FindingSource,
    rows_path: Path,
    policy_path: Path,
    model_dir: Path | None,
    *,
    override_reason: str | None = None,
) -> BacklogRun:
    """Gives the run after building and ingesting the weak-category backlog of a source.

    ``override_reason`` lets a model that is not the measured detector attribute
    the misses; without it such a model is refused.
    """
    if not source.findings:
        raise InputError(
            f"{source.kind} has no weak category: there is nothing to debug",
            path=source.path,
            field="weak_categories",
        )
    if source.detector_sha256 is None:
        raise InputError(
            "the report names no detector digest; run `coverage report` with "
            "--detector-sha256 so misses can be bound to it",
            path=source.path,
            field="detector_sha256",
        )
    policy = load_attribution_policy(policy_path)
    table = read_table(rows_path, DEBUG_COLUMNS)
    sealed = source.sealed_cases()
    if sealed is not None:
        refuse_sealed_rows(table, *sealed, holdout=source.evaluation_set_id)
    selection = select_misses(
        table, list(source.findings), source.detector_sha256, policy, findings_path=source.path
    )
    # Bound before the model is loaded: a wrong model is refused at once.
    model_sha256, binding = model_binding(
        source, source.detector_sha256, model_dir, override_reason
    )
    explanations: dict[str, dict] = {}
    if model_dir is not None:
        from engine.coverage.attribution import AttributionUnavailable, explain_miss, load_detector

        detector = load_detector(model_dir)
        if detector.sha256 != model_sha256:
            raise AttributionUnavailable(
                f"{model_dir}: the model's files changed while it "
                "was being loaded; nothing was written"
            )
        chosen = [m for ms in selection.selected.values() for m in ms]
        with reporter() as rep:
            stage = rep.stage("attributing misses", total=len(chosen), unit="misses")
            for miss in chosen:
                explanations[miss.case_id] = explain_miss(detector, miss, policy)
                stage.advance()
            stage.finish()
    inputs = {
        "source": source.to_json(),
        "rows_sha256": table.sha256,
        "policy": policy.to_json(),
        "model_sha256": model_sha256,
        "model_binding": binding,
        "override_reason": override_reason,
    }
    run_id = f"coverage-backlog-{canonical_sha256(inputs)[:16]}"
    items = build_items(
        source,
        selection,
        explanations,
        policy,
        run_id=run_id,
        model_sha256=model_sha256,
        binding=binding,
        override_reason=override_reason,
        not_run_reason=None if model_dir else "no --model was given",
    )
    out = ws.run_dir(run_id)
    # Sealed: the run's manifest records these bytes, so a re-run whose attributions
    # came out different must not replace them.
    written = write_sealed(
        {
            out / "miss_selection.json": canonical_json(selection.to_json()),
            out / "attributions.json": canonical_json(
                [explanations[k] for k in sorted(explanations)]
            ),
            out / "debug_backlog.jsonl": canonical_jsonl(i.to_json() for i in items),
        },
        "these inputs were already run with other results; nothing was written",
    )
    artifacts = {path.name: digest for path, digest in written.items()}
    manifest = {"kind": "coverage-backlog", "artifacts": artifacts, "inputs": inputs}
    result = ws.ingest(items, runs={run_id: manifest}, source=str(rows_path))
    return BacklogRun(run_id, out, tuple(items), result.added, result.unchanged)
