"""One adjudicate run: inputs and raters opened, artifact sealed, queue ingested.

Everything is validated and computed before the first byte is written; then
the artifact, the queue file and the workspace items are written, and a
sealed artifact that already exists is never replaced by different bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.backlog import RUN_ID, RUN_ID_RULE
from engine.canonical import canonical_json, canonical_jsonl, sha256_hex
from engine.errors import ConflictError, InputError
from engine.exam.adjudicate import Raters, build_core
from engine.exam.artifact import code_identity, seal
from engine.exam.inputs import Completion, ExamInputs, InputPaths, load_inputs
from engine.exam.oracles import NoRater, Recorded, SweepFile, VoteFile
from engine.exam.queue import QUEUE, abstained_items
from engine.rows import check_expected, read_bytes

ARTIFACT = "exam-adjudication.json"
QUEUE_FILE = "adjudication-queue.jsonl"


def check_run_id(run_id: str | None, option: str = "run-id") -> None:
    """Refuses a run id that cannot name a directory under artifacts/ (the workspace's
    rule), up front, before any work or any write."""
    if run_id is not None and not RUN_ID.match(run_id):
        raise InputError(f"{run_id!r} {RUN_ID_RULE}", field=option)


@dataclass(frozen=True)
class RaterFiles:
    """Where third votes, sweeps and validations come from (files win over models)."""

    votes: Path | None = None
    expected_votes_sha256: str | None = None
    sweep: Path | None = None
    expected_sweep_sha256: str | None = None
    adjudicator_config: Path | None = None
    labelers_config: Path | None = None


@dataclass(frozen=True)
class AdjudicateResult:
    """What an adjudicate run wrote."""

    run_id: str
    artifact_path: Path
    artifact_sha256: str
    status: str
    counts: dict[str, Any]
    queued: int
    added: int
    code: dict[str, Any]  # the artifact's code identity: files, checkout, lock


def _locked(path: Path | None, expected: str | None, option: str) -> tuple[bytes, str] | None:
    if path is None:
        return None
    if expected is None:
        raise InputError(
            f"--{option} is required with this file: every rater file is locked by its SHA-256",
            path=path,
            field=option,
        )
    data = read_bytes(path)
    return data, check_expected(path, data, expected, option)


def open_raters(
    files: RaterFiles, completions: tuple[Completion, ...]
) -> tuple[Raters, dict[str, str | None]]:
    """Gives the raters the options name, and the SHA-256 of each rater file."""
    votes = _locked(files.votes, files.expected_votes_sha256, "expected-votes-sha256")
    sweep = _locked(files.sweep, files.expected_sweep_sha256, "expected-sweep-sha256")
    vote_file = None if votes is None or files.votes is None else VoteFile(votes[0], files.votes)
    sweep_file = (
        None
        if sweep is None or files.sweep is None
        else SweepFile(sweep[0], files.sweep, completions)
    )
    adjudicator = lanes = None
    if files.adjudicator_config or files.labelers_config:
        from engine.endpoint.chat import client
        from engine.exam.endpoint import load_adjudicator, load_labelers
        from engine.exam.preflight import require_preflight
        from engine.exam.raters import ModelAdjudicator, ModelLanes

        specs = {}
        if files.adjudicator_config:
            specs["adjudicator"] = load_adjudicator(files.adjudicator_config)
        if files.labelers_config:
            specs.update(load_labelers(files.labelers_config))
        # Every model this run will ask passes its preflight before the first vote.
        require_preflight(specs)
        http = client()
        if files.adjudicator_config:
            adjudicator = ModelAdjudicator(specs["adjudicator"], http)
        if files.labelers_config:
            lanes = ModelLanes({k: v for k, v in specs.items() if k != "adjudicator"}, http)
    none = NoRater()
    third = vote_file or adjudicator or none
    sweeps = sweep_file or adjudicator or none
    validations = vote_file or lanes or none

    def describe(source: Any) -> dict[str, Any]:
        if source is adjudicator:
            return adjudicator.spec.describe()
        if source is lanes:
            return {
                "source": "model",
                "lanes": {k: s.describe() for k, s in sorted(lanes.specs.items())},
            }
        return {"source": source.source_kind}

    described = {
        "third_votes": describe(third),
        "sweep": describe(sweeps),
        "validation": describe(validations),
    }
    bound = {"votes": votes[1] if votes else None, "sweep": sweep[1] if sweep else None}
    return Raters(third, sweeps, validations, described), bound


def recorded_raters(
    art: dict[str, Any], files: RaterFiles, completions: tuple[Completion, ...]
) -> tuple[Raters, dict[str, str | None]]:
    """Gives raters that replay a sealed artifact's answers, reading the files it binds."""
    models = art["models"]
    for key, path, option in (("votes", files.votes, "votes"), ("sweep", files.sweep, "sweep")):
        if art["inputs"].get(key) and path is None:
            raise InputError(
                f"the artifact binds a {key} file (SHA-256 "
                f"{art['inputs'][key]}); pass it with --{option}",
                field=option,
            )
        if path is not None and not art["inputs"].get(key):
            raise InputError(f"the artifact binds no {key} file", path=path, field=option)
    file_raters, bound = open_raters(
        RaterFiles(
            files.votes, files.expected_votes_sha256, files.sweep, files.expected_sweep_sha256
        ),
        completions,
    )
    recorded = Recorded(art, "model")

    def pick(kind: str, from_file: Any) -> Any:
        source = models[kind]["source"]
        if source == "model":
            return recorded
        if source in ("votes-file", "sweep-file"):
            return from_file
        return NoRater()

    raters = Raters(
        pick("third_votes", file_raters.third),
        pick("sweep", file_raters.sweeps),
        pick("validation", file_raters.validations),
        {k: models[k] for k in ("third_votes", "sweep", "validation")},
    )
    return raters, bound


def adjudicate(
    ws: Any,
    paths: InputPaths,
    files: RaterFiles,
    run_id: str | None,
    *,
    ingest: bool = True,
    progress: Any = None,
) -> AdjudicateResult:
    """Gives the result of a run after writing its artifacts and ingesting its queue."""
    check_run_id(run_id)
    inputs: ExamInputs = load_inputs(paths)
    raters, bound = open_raters(files, inputs.completions)
    core = build_core(inputs, raters, bound, code_identity(), progress)
    art = seal(core, {}, None)
    data = canonical_json(art)
    digest = sha256_hex(data)
    run_id = run_id or f"exam-{digest[:12]}"
    items = [item for _, item in abstained_items(art, run_id)]
    queue_data = canonical_jsonl(i.to_json() for i in items)
    for item in items:
        held = ws.item(QUEUE, item.item_id)
        if held is not None and held["item_sha256"] != item.item_sha256:
            raise ConflictError(f"item {QUEUE}/{item.item_id} exists with different bytes")
    from engine.artifacts import write_sealed

    run_dir = ws.run_dir(run_id)
    written = write_sealed(
        {run_dir / ARTIFACT: data, run_dir / QUEUE_FILE: queue_data}, "choose another --run-id"
    )
    queue_sha = written[run_dir / QUEUE_FILE]
    manifest = {
        "kind": "exam-adjudication",
        "artifacts": {ARTIFACT: digest, QUEUE_FILE: queue_sha},
        "inputs": art["inputs"],
        "protocol": art["protocol"],
    }
    # Without ingest the run is still recorded (a sign-off binds only recorded files);
    # only its queue stays out of the backlog.
    added = ws.ingest(
        items if ingest else [], runs={run_id: manifest}, source=f"exam adjudicate {run_id}"
    ).added
    return AdjudicateResult(
        run_id,
        run_dir / ARTIFACT,
        digest,
        art["status"],
        art["counts"],
        len(items),
        added,
        art["code"],
    )
