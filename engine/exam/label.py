"""Live labeler lanes: both lanes label every completion, concurrently and blind.

Each lane is its own thread with its own HTTP client; neither sees the
other's output. A completion is never dropped: two failed attempts give an
``operational_failure`` row with ``claims: null`` and exact counters.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engine.canonical import canonical_jsonl, sha256_hex
from engine.exam.endpoint import ModelSpec, client
from engine.exam.inputs import Completion, Context, lane_tallies, LaneRow
from engine.exam.oracles import SweepRequest
from engine.exam.protocol import LANES, PROTOCOL_VERSION, RUBRIC_ID, rubric_sha256
from engine.exam.raters import label_one


def _lane_rows(spec: ModelSpec, completions: tuple[Completion, ...],
               contexts: dict[str, Context], stage: Any) -> list[dict[str, Any]]:
    rows = []
    with client() as http:
        for comp in completions:
            blind = SweepRequest(comp, contexts[comp.completion_id]).blind()
            out = label_one(http, spec, comp, blind)
            ok = out.value is not None
            rows.append({
                "schema_version": 2, "lane": spec.name, "completion_id": comp.completion_id,
                "status": "ok" if ok else "operational_failure",
                "claims": [{"span_exact_text": c.span_exact_text, "family": c.family,
                            "entity": c.entity} for c in out.value] if ok else None,
                "request_model": spec.request_model, "response_model": out.response_model,
                "attempts": out.attempts,
                "invalid_response_attempts": out.invalid_response_attempts,
                "failed_request_attempts": out.failed_request_attempts,
            })
            if stage is not None:
                stage.advance()
    return rows


def label(completions: tuple[Completion, ...], contexts: dict[str, Context],
          specs: dict[str, ModelSpec], corpus_sha256: str, context_sha256: str,
          progress: Any = None) -> tuple[dict[str, bytes], dict[str, Any]]:
    """Gives each lane's label-file bytes and the labeling summary."""
    stages = {lane: progress.stage(f"labeling {lane}", total=len(completions),
                                   unit="completions") if progress else None
              for lane in LANES}
    with ThreadPoolExecutor(max_workers=len(LANES)) as pool:
        futures = {lane: pool.submit(_lane_rows, specs[lane], completions, contexts,
                                     stages[lane]) for lane in LANES}
        rows = {lane: futures[lane].result() for lane in LANES}
    files = {lane: canonical_jsonl(rows[lane]) for lane in LANES}
    lanes = {}
    for lane in LANES:
        tallies = lane_tallies({r["completion_id"]: LaneRow(
            lane, r["completion_id"], r["status"], None, r["request_model"],
            r["response_model"], r["attempts"], r["invalid_response_attempts"],
            r["failed_request_attempts"]) for r in rows[lane]})
        spec = specs[lane]
        lanes[lane] = {"request_model": spec.request_model,
                       "model_identity": spec.model_identity,
                       "request_profile": spec.request_profile,
                       "labels_sha256": sha256_hex(files[lane]), **tallies}
    summary = {"schema_version": 2, "protocol_version": PROTOCOL_VERSION,
               "rubric": {"id": RUBRIC_ID, "sha256": rubric_sha256()},
               "corpus_sha256": corpus_sha256, "context_sha256": context_sha256,
               "lanes": lanes}
    return files, summary
