"""The core of the sealed artifact: lanes located, union, votes, sweep, decisions.

``build_core`` is a pure function of the validated inputs and the answers of
the configured raters; the same inputs and answers give the same bytes.
Only the parts a human can still change (final decisions, gold, counts,
status) are left to ``artifact.seal``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.exam.inputs import Completion, ExamInputs, LaneRow
from engine.exam.oracles import (
    NoRater,
    SweepRequest,
    SweepResponse,
    Sweeps,
    ThirdVotes,
    Validations,
    VoteFile,
    VoteRequest,
)
from engine.exam.protocol import (
    ADJUDICATOR,
    LANES,
    PROTOCOL_VERSION,
    RUBRIC_ID,
    SEED,
    protocol_sha256,
    rubric_sha256,
)
from engine.exam.spans import InvalidResponse, locate
from engine.exam.union import Candidate, LaneState, seeded, sweep_candidates, union_candidates
from engine.exam.votes import Vote, decide, lane_votes


@dataclass(frozen=True)
class Raters:
    """The three external answer sources and how the artifact describes them."""

    third: ThirdVotes = field(default_factory=NoRater)
    sweeps: Sweeps = field(default_factory=NoRater)
    validations: Validations = field(default_factory=NoRater)
    described: dict[str, Any] = field(
        default_factory=lambda: {
            "third_votes": {"source": "none"},
            "sweep": {"source": "none"},
            "validation": {"source": "none"},
        }
    )


def lane_state(row: LaneRow, text: str) -> LaneState:
    """Gives a lane's state for one completion, its claims placed in the source."""
    if row.status != "ok":
        return LaneState("operational_failure")
    located = locate(text, row.claims or ())
    if isinstance(located, InvalidResponse):
        return LaneState("invalid_response", (), located)
    return LaneState("ok", tuple(located))


def _state_json(state: LaneState, row: LaneRow) -> dict[str, Any]:
    return {
        "status": state.status,
        "claims": [c.to_json() for c in state.claims],
        "invalid": state.invalid.to_json() if state.invalid else None,
        "response_model": row.response_model,
        "attempts": row.attempts,
        "invalid_response_attempts": row.invalid_response_attempts,
        "failed_request_attempts": row.failed_request_attempts,
        # None: the lane file records counters but no reasons
        "failures": None if row.failures is None else [f.to_json() for f in row.failures],
    }


def _candidate_json(cand: Candidate, votes: list[Vote]) -> dict[str, Any]:
    decision, reason = decide(votes)
    return {
        "candidate_id": cand.candidate_id,
        "origin": cand.origin,
        "start": cand.start,
        "end": cand.end,
        "span_exact_text": cand.span_exact_text,
        "family": cand.family,
        "entity": cand.entity,
        "entity_normalized": cand.entity_normalized,
        "members": [{"rater": m.rater, "claim_index": m.claim.index} for m in cand.members],
        "containment_ambiguous": cand.containment_ambiguous,
        "votes": [v.to_json() for v in votes],
        "decision": decision,
        "reason": reason,
    }


def _sweep_json(
    resp: SweepResponse,
    status: str,
    proposals: list[dict[str, Any]],
    invalid: InvalidResponse | None,
) -> dict[str, Any]:
    return {
        "source": resp.source,
        "response_status": resp.status,
        "status": status,
        "response_claims": None
        if resp.claims is None
        else [
            {"span_exact_text": c.span_exact_text, "family": c.family, "entity": c.entity}
            for c in resp.claims
        ],
        "proposals": proposals,
        "invalid": invalid.to_json() if invalid else None,
        "attempts": resp.attempts,
        "invalid_response_attempts": resp.invalid_response_attempts,
        "failed_request_attempts": resp.failed_request_attempts,
        "failures": [f.to_json() for f in resp.failures],
    }


class _Stage:
    """A progress stage, or nothing when no reporter is given."""

    def __init__(self, progress: Any, name: str, total: int, unit: str) -> None:
        self.stage = progress.stage(name, total=total, unit=unit) if progress else None

    def advance(self) -> None:
        if self.stage is not None:
            self.stage.advance()


def _sweep(
    comp: Completion, resp: SweepResponse, union: list[Candidate]
) -> tuple[list[Candidate], dict[str, Any]]:
    """Gives a completion's sweep-only candidates and the sweep's artifact form."""
    if resp.status != "ok":
        return [], _sweep_json(resp, resp.status, [], None)
    located = locate(comp.text, resp.claims or ())
    if isinstance(located, InvalidResponse):
        return [], _sweep_json(resp, "invalid_response", [], located)
    new, covered = sweep_candidates(comp.completion_id, union, tuple(located))
    new_ids = {(c.start, c.end, c.family, c.entity_normalized): c.candidate_id for c in new}
    proposals = [
        {
            **claim.to_json(),
            "covered_by": covered[claim.index],
            "candidate_id": None
            if covered[claim.index]
            else new_ids[(claim.start, claim.end, claim.family, claim.entity_normalized)],
        }
        for claim in located
    ]
    return new, _sweep_json(resp, "ok", proposals, None)


def _completion_json(
    comp: Completion,
    inputs: ExamInputs,
    states: dict[str, LaneState],
    sweep: dict[str, Any],
    cands: list[dict[str, Any]],
) -> dict[str, Any]:
    ctx = inputs.contexts[comp.completion_id]
    return {
        "completion_id": comp.completion_id,
        "session_id": comp.session_id,
        "target_turn_id": comp.target_turn_id,
        "text": comp.text,
        "context": {
            "preceding_turn_id": ctx.preceding_turn_id,
            "messages": [{"role": m.role, "content": m.content} for m in ctx.messages],
        },
        "lanes": {
            lane: _state_json(states[lane], inputs.lanes[lane][comp.completion_id])
            for lane in LANES
        },
        "sweep": sweep,
        "candidates": cands,
    }


def build_core(
    inputs: ExamInputs,
    raters: Raters,
    bound: dict[str, str | None],
    code: dict[str, Any],
    progress: Any = None,
) -> dict[str, Any]:
    """Gives the artifact's core: everything but what human decisions change."""
    by_id: dict[str, Completion] = {c.completion_id: c for c in inputs.completions}
    states = {
        c.completion_id: {
            lane: lane_state(inputs.lanes[lane][c.completion_id], c.text) for lane in LANES
        }
        for c in inputs.completions
    }
    union = {cid: union_candidates(cid, states[cid]) for cid in by_id}

    def request(cand: Candidate) -> VoteRequest:
        return VoteRequest(cand, by_id[cand.completion_id], inputs.contexts[cand.completion_id])

    # Requests go out in the global seeded order, so a rater sees no grouping
    # by completion or by lane agreement.
    all_union = seeded([c for cid in union for c in union[cid]])
    stage = _Stage(progress, "third votes", len(all_union), "candidates")
    third: dict[str, Vote] = {}
    for cand in all_union:
        third[cand.candidate_id] = raters.third.vote(request(cand))
        stage.advance()

    stage = _Stage(progress, "completeness sweep", len(by_id), "completions")
    sweeps: dict[str, dict[str, Any]] = {}
    swept: dict[str, list[Candidate]] = {}
    for comp in inputs.completions:
        cid = comp.completion_id
        resp = raters.sweeps.sweep(SweepRequest(comp, inputs.contexts[cid]))
        swept[cid], sweeps[cid] = _sweep(comp, resp, union[cid])
        stage.advance()

    all_sweep = seeded([c for cid in swept for c in swept[cid]])
    stage = _Stage(progress, "sweep validation", len(all_sweep), "candidates")
    validation: dict[tuple[str, str], Vote] = {}
    for cand in all_sweep:
        for lane in LANES:
            validation[(cand.candidate_id, lane)] = raters.validations.validate(lane, request(cand))
        stage.advance()

    for source in {
        id(raters.third): raters.third,
        id(raters.validations): raters.validations,
    }.values():
        if isinstance(source, VoteFile):
            source.check_all_used(
                {c.candidate_id for c in all_union}, {c.candidate_id for c in all_sweep}
            )

    completions = []
    for comp in inputs.completions:
        cid = comp.completion_id
        cands = []
        for cand in seeded(union[cid] + swept[cid]):
            if cand.origin == "union":
                votes = lane_votes(cand, states[cid]) + [third[cand.candidate_id]]
            else:
                proposer = Vote(ADJUDICATOR, "accept", "sweep_proposal", sweeps[cid]["source"])
                votes = [validation[(cand.candidate_id, lane)] for lane in LANES] + [proposer]
            cands.append(_candidate_json(cand, votes))
        completions.append(_completion_json(comp, inputs, states[cid], sweeps[cid], cands))
    models = {
        lane: {
            "request_model": s.request_model,
            "model_identity": s.model_identity,
            "request_profile": s.request_profile,
            "provider_routing": s.provider_routing,
        }
        for lane, s in inputs.lane_specs.items()
    }
    models.update(raters.described)
    return {
        "artifact": "exam-adjudication",
        "schema_version": 2,
        "protocol": {"version": PROTOCOL_VERSION, "sha256": protocol_sha256()},
        "rubric": {"id": RUBRIC_ID, "sha256": rubric_sha256()},
        "seed": SEED,
        "code": code,
        "inputs": {**inputs.hashes, **bound},
        "models": models,
        "completions": completions,
    }
