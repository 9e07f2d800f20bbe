"""Live labeler lanes: both lanes label every completion, concurrently and blind.

A preflight (``preflight.py``) checks each lane's endpoint first; when it
fails, no lane request is made. Each lane is then its own thread with its
own HTTP client; neither sees the other's output. A completion is never
dropped: two failed attempts give an ``operational_failure`` row with
``claims: null``, exact counters and each attempt's reason. A lane whose
every attempt failed for a transport reason labeled nothing, and the run is
refused rather than written as a file of failures.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engine.canonical import canonical_jsonl, sha256_hex
from engine.endpoint.chat import ModelSpec, Outcome, client
from engine.endpoint.failures import FAILED_REQUEST, describe, tally
from engine.errors import NotReadyError
from engine.exam.inputs import Completion, Context, LaneRow, lane_tallies
from engine.exam.oracles import SweepRequest
from engine.exam.preflight import require_preflight
from engine.exam.protocol import LANES, PROTOCOL_VERSION, RUBRIC_ID, rubric_sha256
from engine.exam.raters import label_one


def _lane_outcomes(
    spec: ModelSpec, completions: tuple[Completion, ...], contexts: dict[str, Context], stage: Any
) -> list[Outcome]:
    outcomes = []
    with client() as http:
        for comp in completions:
            blind = SweepRequest(comp, contexts[comp.completion_id]).blind()
            outcomes.append(label_one(http, spec, comp, blind))
            if stage is not None:
                stage.advance()
    return outcomes


def _row(spec: ModelSpec, comp: Completion, out: Outcome) -> dict[str, Any]:
    ok = out.value is not None
    return {
        "schema_version": 2,
        "lane": spec.name,
        "completion_id": comp.completion_id,
        "status": "ok" if ok else "operational_failure",
        "claims": [
            {"span_exact_text": c.span_exact_text, "family": c.family, "entity": c.entity}
            for c in out.value
        ]
        if ok
        else None,
        "request_model": spec.request_model,
        "response_model": out.response_model,
        "attempts": out.attempts,
        "invalid_response_attempts": out.invalid_response_attempts,
        "failed_request_attempts": out.failed_request_attempts,
        "failures": [f.to_json() for f in out.failures],
    }


def refuse_unreachable(outcomes: dict[str, list[Outcome]]) -> None:
    """Refuses a run in which a lane's every attempt failed for a transport reason."""
    for lane, outs in outcomes.items():
        failures = [f for o in outs for f in o.failures]
        attempts = sum(o.attempts for o in outs)
        if (
            attempts
            and len(failures) == attempts
            and all(f.kind == FAILED_REQUEST for f in failures)
        ):
            raise NotReadyError(
                f"{lane}: every one of its {attempts} attempts failed for a transport reason "
                f"({describe(tally(failures))}; first: {failures[0].detail}); no lane file "
                "was written: make the endpoint answer, then label again"
            )


def label(
    completions: tuple[Completion, ...],
    contexts: dict[str, Context],
    specs: dict[str, ModelSpec],
    corpus_sha256: str,
    context_sha256: str,
    progress: Any = None,
) -> tuple[dict[str, bytes], dict[str, Any]]:
    """Gives each lane's label-file bytes and the labeling summary.

    Raises PreflightFailed before any lane request when a lane's endpoint
    fails its preflight, and NotReadyError when a lane reached nothing.
    """
    require_preflight({lane: specs[lane] for lane in LANES})
    stages = {
        lane: progress.stage(f"labeling {lane}", total=len(completions), unit="completions")
        if progress
        else None
        for lane in LANES
    }
    with ThreadPoolExecutor(max_workers=len(LANES)) as pool:
        futures = {
            lane: pool.submit(_lane_outcomes, specs[lane], completions, contexts, stages[lane])
            for lane in LANES
        }
        outcomes = {lane: futures[lane].result() for lane in LANES}
    refuse_unreachable(outcomes)
    rows = {
        lane: [
            _row(specs[lane], comp, out)
            for comp, out in zip(completions, outcomes[lane], strict=True)
        ]
        for lane in LANES
    }
    files = {lane: canonical_jsonl(rows[lane]) for lane in LANES}
    lanes = {}
    for lane in LANES:
        tallies = lane_tallies(
            {
                r["completion_id"]: LaneRow(
                    lane,
                    r["completion_id"],
                    r["status"],
                    None,
                    r["request_model"],
                    r["response_model"],
                    r["attempts"],
                    r["invalid_response_attempts"],
                    r["failed_request_attempts"],
                )
                for r in rows[lane]
            }
        )
        spec = specs[lane]
        lanes[lane] = {
            "request_model": spec.request_model,
            "model_identity": spec.model_identity,
            "request_profile": spec.request_profile,
            "provider_routing": spec.provider_routing,
            "labels_sha256": sha256_hex(files[lane]),
            **tallies,
            "failure_reasons": tally(f for o in outcomes[lane] for f in o.failures),
        }
    summary = {
        "schema_version": 2,
        "protocol_version": PROTOCOL_VERSION,
        "rubric": {"id": RUBRIC_ID, "sha256": rubric_sha256()},
        "corpus_sha256": corpus_sha256,
        "context_sha256": context_sha256,
        "lanes": lanes,
    }
    return files, summary
