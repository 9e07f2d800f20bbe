"""Votes and the 2-of-3 rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.endpoint.failures import Failure
from engine.exam.protocol import LANES
from engine.exam.union import Candidate, LaneState

VOTE_VALUES = ("accept", "reject", "operational_failure", "absent")


@dataclass(frozen=True)
class Vote:
    """One rater's vote on one candidate, with where it came from."""

    voter: str  # lane-a | lane-b | adjudicator
    vote: str  # accept | reject | operational_failure | absent
    basis: str  # proposed | omitted | lane_failed | invalid_response | third_vote | ...
    source: str  # lane-a labels | votes-file | sweep-file | model:<identity> | none
    attempts: int = 0
    invalid_response_attempts: int = 0
    failed_request_attempts: int = 0
    failures: tuple[Failure, ...] = ()  # why each failed attempt failed, in order

    def to_json(self) -> dict[str, Any]:
        """Gives the artifact's form of the vote."""
        return {
            "voter": self.voter,
            "vote": self.vote,
            "basis": self.basis,
            "source": self.source,
            "attempts": self.attempts,
            "invalid_response_attempts": self.invalid_response_attempts,
            "failed_request_attempts": self.failed_request_attempts,
            "failures": [f.to_json() for f in self.failures],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Vote:
        """Gives a vote back from its artifact form."""
        return cls(
            obj["voter"],
            obj["vote"],
            obj["basis"],
            obj["source"],
            obj["attempts"],
            obj["invalid_response_attempts"],
            obj["failed_request_attempts"],
            tuple(Failure.from_json(f) for f in obj.get("failures", ())),
        )


def lane_votes(candidate: Candidate, states: dict[str, LaneState]) -> list[Vote]:
    """Gives both lanes' votes on a union candidate: proposer accepts, omitter rejects."""
    raters = {m.rater for m in candidate.members}
    out = []
    for lane in LANES:
        state = states[lane]
        source = f"{lane} labels"
        if state.status == "ok":
            proposed = lane in raters
            out.append(
                Vote(
                    lane,
                    "accept" if proposed else "reject",
                    "proposed" if proposed else "omitted",
                    source,
                )
            )
        elif state.status == "invalid_response":
            out.append(Vote(lane, "operational_failure", "invalid_response", source))
        else:
            out.append(Vote(lane, "operational_failure", "lane_failed", source))
    return out


def decide(votes: list[Vote]) -> tuple[str, str]:
    """Gives (accept | reject | abstain, why) under the 2-of-3 rule."""
    accepts = sum(v.vote == "accept" for v in votes)
    rejects = sum(v.vote == "reject" for v in votes)
    tally = ", ".join(f"{v.voter} {v.vote}" for v in votes)
    if accepts >= 2:
        return "accept", f"{accepts} of {len(votes)} votes accept ({tally})"
    if rejects >= 2:
        return "reject", f"{rejects} of {len(votes)} votes reject ({tally})"
    return "abstain", f"no two votes agree ({tally})"
