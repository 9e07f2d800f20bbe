"""Where the third vote, the completeness sweep and sweep validations come from.

Each source answers one blind request at a time: a vote request carries one
completion, its context and one opaque candidate; a sweep request carries a
completion and its context. No request ever names a lane, a lane's output,
another vote or an agreement state. Sources are: nothing configured, a
recorded file (locked by its SHA-256), a model endpoint (``raters.py``), or
the responses recorded inside a sealed artifact (for re-derivation).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from engine.endpoint.failures import Failure
from engine.errors import InputError
from engine.exam.inputs import Claim, Completion, Context, completion_row, parse_claims
from engine.exam.protocol import ADJUDICATOR, LANES
from engine.exam.union import Candidate
from engine.exam.votes import Vote
from engine.rows import jsonl_rows

VOTER_CHOICES = (ADJUDICATOR, *LANES)
FILE_VOTES = ("accept", "reject", "operational_failure")
# A sweep file says of every completion what happened; "not_run" is said, not implied.
SWEEP_STATUSES = ("ok", "operational_failure", "not_run")


@dataclass(frozen=True)
class VoteRequest:
    """A blind request for one vote on one candidate."""

    candidate: Candidate
    completion: Completion
    context: Context

    def blind(self) -> dict[str, Any]:
        """Gives everything the rater sees, as JSON."""
        return {
            "candidate": self.candidate.blind(),
            "completion": {
                "completion_id": self.completion.completion_id,
                "text": self.completion.text,
            },
            "context": [{"role": m.role, "content": m.content} for m in self.context.messages],
        }


@dataclass(frozen=True)
class SweepRequest:
    """A blind request to list every claim of one completion."""

    completion: Completion
    context: Context

    def blind(self) -> dict[str, Any]:
        """Gives everything the sweeping rater sees, as JSON."""
        return {
            "completion": {
                "completion_id": self.completion.completion_id,
                "text": self.completion.text,
            },
            "context": [{"role": m.role, "content": m.content} for m in self.context.messages],
        }


@dataclass(frozen=True)
class SweepResponse:
    """A completeness sweep's answer for one completion."""

    status: str  # ok | operational_failure | not_run
    claims: tuple[Claim, ...] | None
    source: str
    attempts: int = 0
    invalid_response_attempts: int = 0
    failed_request_attempts: int = 0
    failures: tuple[Failure, ...] = ()


class ThirdVotes(Protocol):
    """Gives the adjudicator's blind vote on a union candidate."""

    source_kind: str

    def vote(self, request: VoteRequest) -> Vote: ...


class Sweeps(Protocol):
    """Gives the adjudicator's blind sweep of a completion."""

    source_kind: str

    def sweep(self, request: SweepRequest) -> SweepResponse: ...


class Validations(Protocol):
    """Gives a lane's blind vote on a sweep-only candidate."""

    source_kind: str

    def validate(self, lane: str, request: VoteRequest) -> Vote: ...


class NoRater:
    """Nothing configured: third votes and validations are absent, sweeps not run."""

    source_kind = "none"

    def vote(self, request: VoteRequest) -> Vote:
        return Vote(ADJUDICATOR, "absent", "not_configured", "none")

    def validate(self, lane: str, request: VoteRequest) -> Vote:
        return Vote(lane, "absent", "not_configured", "none")

    def sweep(self, request: SweepRequest) -> SweepResponse:
        return SweepResponse("not_run", None, "none")


class VoteFile:
    """Recorded votes: adjudicator third votes on union candidates, and lane
    validation votes on sweep candidates, one JSON line each."""

    source_kind = "votes-file"

    def __init__(self, data: bytes, path: Path) -> None:
        self.path = path
        self.rows: dict[tuple[str, str], tuple[str, int]] = {}
        for row in jsonl_rows(data, path):
            obj = row.fields(row.value, {"schema_version", "candidate_id", "voter", "vote"})
            row.version(obj, 1)
            cid = row.ident(obj, "candidate_id")
            voter = row.choice(obj, "voter", VOTER_CHOICES)
            vote = row.choice(obj, "vote", FILE_VOTES)
            if (cid, voter) in self.rows:
                raise row.error(
                    f"{voter} already voted on {cid} at line {self.rows[(cid, voter)][1]}",
                    "candidate_id",
                )
            self.rows[(cid, voter)] = (vote, row.line or 0)
        self.used: set[tuple[str, str]] = set()

    def _lookup(self, cid: str, voter: str, basis: str) -> Vote:
        key = (cid, voter)
        if key not in self.rows:
            return Vote(voter, "absent", "not_in_votes_file", self.source_kind)
        self.used.add(key)
        return Vote(voter, self.rows[key][0], basis, self.source_kind)

    def vote(self, request: VoteRequest) -> Vote:
        return self._lookup(request.candidate.candidate_id, ADJUDICATOR, "third_vote")

    def validate(self, lane: str, request: VoteRequest) -> Vote:
        return self._lookup(request.candidate.candidate_id, lane, "validation")

    def check_all_used(self, union_ids: set[str], sweep_ids: set[str]) -> None:
        """Refuses a vote that applied to no candidate, naming its line."""
        for (cid, voter), (_, line) in sorted(self.rows.items(), key=lambda kv: kv[1][1]):
            if (cid, voter) in self.used:
                continue
            if cid in union_ids:
                why = (
                    f"{voter} votes on union candidates come from its label file; only "
                    "the adjudicator casts a third vote"
                )
            elif cid in sweep_ids:
                why = "the adjudicator proposed this sweep candidate; only the lanes validate it"
            else:
                why = "no candidate of this exam has this id"
            raise InputError(why, path=self.path, line=line, field="candidate_id")


class SweepFile:
    """Recorded completeness sweeps: exactly one JSON line per corpus completion.

    Like a lane file, a sweep file that leaves a completion out is refused: a
    sweep that was not run is a row that says so (``"status": "not_run"``).
    """

    source_kind = "sweep-file"

    def __init__(self, data: bytes, path: Path, completions: tuple[Completion, ...]) -> None:
        known = {c.completion_id for c in completions}
        self.rows: dict[str, SweepResponse] = {}
        lines: dict[str, int] = {}
        for row in jsonl_rows(data, path):
            obj, cid = completion_row(
                row, {"schema_version", "completion_id", "status", "claims"}, 1, known, lines
            )
            status = row.choice(obj, "status", SWEEP_STATUSES)
            if status != "ok" and obj["claims"] is not None:
                raise row.error(f"must be null when status is {status}", "claims")
            claims = parse_claims(row, obj["claims"], "claims") if status == "ok" else None
            self.rows[cid] = SweepResponse(status, claims, self.source_kind)
        missing = [c.completion_id for c in completions if c.completion_id not in self.rows]
        if missing:
            raise InputError(
                f"no sweep row for completion {missing[0]!r}; every completion "
                'has one (a sweep not run is a row with "status": '
                '"not_run")',
                path=path,
                field="completion_id",
            )

    def sweep(self, request: SweepRequest) -> SweepResponse:
        return self.rows[request.completion.completion_id]


class Recorded:
    """The responses a sealed artifact recorded, replayed to re-derive it."""

    def __init__(self, core: dict[str, Any], source_kind: str) -> None:
        self.source_kind = source_kind
        self.votes: dict[tuple[str, str], Vote] = {}
        self.sweeps: dict[str, SweepResponse] = {}
        for completion in core["completions"]:
            for cand in completion["candidates"]:
                for v in cand["votes"]:
                    self.votes[(cand["candidate_id"], v["voter"])] = Vote.from_json(v)
            s = completion["sweep"]
            claims = (
                None
                if s["response_claims"] is None
                else tuple(
                    Claim(c["span_exact_text"], c["family"], c["entity"])
                    for c in s["response_claims"]
                )
            )
            self.sweeps[completion["completion_id"]] = SweepResponse(
                s["response_status"],
                claims,
                s["source"],
                s["attempts"],
                s["invalid_response_attempts"],
                s["failed_request_attempts"],
                tuple(Failure.from_json(f) for f in s.get("failures", ())),
            )

    def _get(self, cid: str, voter: str) -> Vote:
        try:
            return self.votes[(cid, voter)]
        except KeyError:
            raise InputError(
                f"the artifact records no {voter} vote on {cid}; it does not "
                "re-derive from its inputs",
                field="completions",
            ) from None

    def vote(self, request: VoteRequest) -> Vote:
        return self._get(request.candidate.candidate_id, ADJUDICATOR)

    def validate(self, lane: str, request: VoteRequest) -> Vote:
        return self._get(request.candidate.candidate_id, lane)

    def sweep(self, request: SweepRequest) -> SweepResponse:
        cid = request.completion.completion_id
        if cid not in self.sweeps:
            raise InputError(f"the artifact records no sweep of {cid}", field="completions")
        return self.sweeps[cid]
