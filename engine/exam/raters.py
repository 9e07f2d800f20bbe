"""Model-backed raters: labeling, third votes, sweeps and sweep validation.

Every request is blind: it holds the rubric, one completion, its sanitized
preceding message and, for a vote, one opaque candidate. Nothing else.
"""

from __future__ import annotations

from typing import Any

import httpx

from engine.canonical import canonical_json
from engine.endpoint.chat import AttemptError, ModelSpec, Outcome, client
from engine.exam.endpoint import CLAIMS_SCHEMA, VOTE_SCHEMA, ask
from engine.exam.inputs import Claim, Completion, parse_claims
from engine.exam.oracles import SweepRequest, SweepResponse, VoteRequest
from engine.exam.protocol import ADJUDICATOR, RUBRIC_TEXT
from engine.exam.spans import InvalidResponse, locate
from engine.exam.votes import Vote
from engine.rows import Row

LABEL_TASK = (
    RUBRIC_TEXT
    + """
You receive one completion and the message before it, as JSON. Return
{"schema_version": 2, "completion_id": <the id given>, "claims": [...]}.
"""
)
VOTE_TASK = (
    RUBRIC_TEXT
    + """
You receive one completion, the message before it, and one candidate span of
the completion with a family and an entity, as JSON. Vote "accept" if the
span is a claim of that family about that entity under the rubric, else
"reject". Return {"schema_version": 2, "candidate_id": <the id given>, "vote": ...}.
"""
)


def check_claims(value: Any, completion: Completion, who: str) -> tuple[Claim, ...]:
    """Gives the claims of a labeling answer; spans must be placeable in the source.

    A schema fault raises InputError; an answer about another completion or
    with a span not in the source raises AttemptError with its own reason.
    """
    row = Row(value, f"<{who} response>", None)
    obj = row.fields(value, {"schema_version", "completion_id", "claims"})
    row.version(obj, 2)
    claims = parse_claims(row, obj["claims"], "claims")
    if obj["completion_id"] != completion.completion_id:
        raise AttemptError(
            "wrong_id",
            row.error(
                f"answers for {obj['completion_id']!r}, not {completion.completion_id!r}",
                "completion_id",
            ).one_line(),
        )
    located = locate(completion.text, claims)
    if isinstance(located, InvalidResponse):
        raise AttemptError(
            "span",
            row.error(located.reason, f"claims[{located.claim_index}].span_exact_text").one_line(),
        )
    return claims


def check_vote(value: Any, candidate_id: str, who: str) -> str:
    """Gives the vote of a vote answer about exactly this candidate."""
    row = Row(value, f"<{who} response>", None)
    obj = row.fields(value, {"schema_version", "candidate_id", "vote"})
    row.version(obj, 2)
    vote = row.choice(obj, "vote", ("accept", "reject"))
    if obj["candidate_id"] != candidate_id:
        raise AttemptError(
            "wrong_id",
            row.error(
                f"answers for {obj['candidate_id']!r}, not {candidate_id!r}", "candidate_id"
            ).one_line(),
        )
    return vote


def _user(blind: dict[str, Any]) -> str:
    return canonical_json(blind).decode("utf-8")


def label_one(
    http: httpx.Client, spec: ModelSpec, completion: Completion, blind: dict[str, Any]
) -> Outcome:
    """Gives the outcome of labeling one completion."""
    return ask(
        http,
        spec,
        LABEL_TASK,
        _user(blind),
        "exam_claims",
        CLAIMS_SCHEMA,
        lambda v: check_claims(v, completion, spec.name),
    )


def vote_one(
    http: httpx.Client, spec: ModelSpec, voter: str, basis: str, request: VoteRequest
) -> Vote:
    """Gives one blind vote on one candidate (operational_failure after two failures)."""
    cid = request.candidate.candidate_id
    out = ask(
        http,
        spec,
        VOTE_TASK,
        _user(request.blind()),
        "exam_vote",
        VOTE_SCHEMA,
        lambda v: check_vote(v, cid, spec.name),
    )
    vote = out.value if out.value is not None else "operational_failure"
    return Vote(
        voter,
        vote,
        basis,
        f"model:{spec.model_identity}",
        out.attempts,
        out.invalid_response_attempts,
        out.failed_request_attempts,
        out.failures,
    )


class ModelAdjudicator:
    """The adjudicator model: third votes and completeness sweeps."""

    source_kind = "model"

    def __init__(self, spec: ModelSpec, http: httpx.Client | None = None) -> None:
        self.spec = spec
        self.http = http or client()

    def vote(self, request: VoteRequest) -> Vote:
        return vote_one(self.http, self.spec, ADJUDICATOR, "third_vote", request)

    def sweep(self, request: SweepRequest) -> SweepResponse:
        out = label_one(self.http, self.spec, request.completion, request.blind())
        status = "ok" if out.value is not None else "operational_failure"
        return SweepResponse(
            status,
            out.value,
            f"model:{self.spec.model_identity}",
            out.attempts,
            out.invalid_response_attempts,
            out.failed_request_attempts,
            out.failures,
        )


class ModelLanes:
    """The two lane models, validating sweep-only candidates blindly."""

    source_kind = "model"

    def __init__(self, specs: dict[str, ModelSpec], http: httpx.Client | None = None) -> None:
        self.specs = specs
        self.http = http or client()

    def validate(self, lane: str, request: VoteRequest) -> Vote:
        return vote_one(self.http, self.specs[lane], lane, "validation", request)
