"""The deterministic union of two lanes' claims into opaque, seeded candidates.

Two claims form one candidate only when they have the same family, the same
normalized entity and one interval contains the other. Because one lane's
claims never overlap each other, a candidate has at most one claim per lane;
a claim whose containment partner is not unique (one long claim holding two
short ones of the other lane) stays on its own rather than being paired by
a guess, and the candidate says so (``containment_ambiguous``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from engine.canonical import canonical_sha256
from engine.exam.protocol import LANES, SEED
from engine.exam.spans import InvalidResponse, Located


@dataclass(frozen=True)
class LaneState:
    """What one rater said about one completion, after locating its claims."""

    status: str  # ok | operational_failure | invalid_response | not_run
    claims: tuple[Located, ...] = ()
    invalid: InvalidResponse | None = None


@dataclass(frozen=True)
class Member:
    """One rater's claim inside a candidate."""

    rater: str
    claim: Located


@dataclass(frozen=True)
class Candidate:
    """One opaque claim candidate of one completion."""

    candidate_id: str
    completion_id: str
    origin: str  # union | sweep
    start: int
    end: int
    span_exact_text: str
    family: str
    entity: str
    entity_normalized: str
    members: tuple[Member, ...]
    containment_ambiguous: bool

    def blind(self) -> dict:
        """Gives what a blind rater may see of the candidate: no raters, no votes."""
        return {
            "candidate_id": self.candidate_id,
            "start": self.start,
            "end": self.end,
            "span_exact_text": self.span_exact_text,
            "family": self.family,
            "entity": self.entity,
        }


def candidate_id(
    completion_id: str, start: int, end: int, family: str, entity_normalized: str
) -> str:
    """Gives the opaque id of a candidate, derived from the frozen seed and its content."""
    digest = canonical_sha256(
        [SEED, "candidate", completion_id, start, end, family, entity_normalized]
    )
    return "cand-" + digest[:20]


@functools.lru_cache(maxsize=65536)
def order_key(cid: str) -> str:
    """Gives the seeded sort key of a candidate id (an order no rater can infer)."""
    return canonical_sha256([SEED, "order", cid])


def seeded(candidates: list[Candidate]) -> list[Candidate]:
    """Gives the candidates in seeded order."""
    return sorted(candidates, key=lambda c: order_key(c.candidate_id))


def _related(a: Located, b: Located) -> bool:
    return (
        a.family == b.family
        and a.entity_normalized == b.entity_normalized
        and (a.contains(b) or b.contains(a))
    )


def _candidate(
    completion_id: str, origin: str, members: list[Member], ambiguous: bool
) -> Candidate:
    # The outermost interval is the candidate's span; the members form a chain
    # of containment, so it holds every other member.
    outer = max(members, key=lambda m: (m.claim.end - m.claim.start, -m.claim.start)).claim
    entity = min(
        m.claim.entity for m in members if (m.claim.start, m.claim.end) == (outer.start, outer.end)
    )
    cid = candidate_id(completion_id, outer.start, outer.end, outer.family, outer.entity_normalized)
    return Candidate(
        cid,
        completion_id,
        origin,
        outer.start,
        outer.end,
        outer.span_exact_text,
        outer.family,
        entity,
        outer.entity_normalized,
        tuple(sorted(members, key=lambda m: m.rater)),
        ambiguous,
    )


def union_candidates(completion_id: str, states: dict[str, LaneState]) -> list[Candidate]:
    """Gives the lane union of one completion in seeded order."""
    nodes = [
        Member(lane, claim)
        for lane in LANES
        if states[lane].status == "ok"
        for claim in states[lane].claims
    ]
    partners = {
        id(n): [m for m in nodes if m.rater != n.rater and _related(n.claim, m.claim)]
        for n in nodes
    }
    done: set[int] = set()
    out = []
    for node in nodes:
        if id(node) in done:
            continue
        mine = partners[id(node)]
        if len(mine) == 1 and partners[id(mine[0])] == [node]:
            group = [node, mine[0]]
        else:
            group = [node]
        done.update(id(m) for m in group)
        # A claim with containment partners that still stands alone was left
        # unmerged because the pairing was not one-to-one.
        ambiguous = len(group) == 1 and bool(mine)
        out.append(_candidate(completion_id, "union", group, ambiguous))
    return seeded(out)


def covering(candidates: list[Candidate], proposal: Located) -> list[str]:
    """Gives the ids of union candidates a proposal would have joined."""
    return sorted(
        c.candidate_id for c in candidates if all(_related(m.claim, proposal) for m in c.members)
    )


def sweep_candidates(
    completion_id: str, union: list[Candidate], proposals: tuple[Located, ...]
) -> tuple[list[Candidate], dict[int, list[str]]]:
    """Gives the new candidates of sweep-only proposals and, per proposal, what covered it."""
    new, covered = [], {}
    for claim in proposals:
        ids = covering(union, claim)
        covered[claim.index] = ids
        if not ids:
            new.append(_candidate(completion_id, "sweep", [Member("adjudicator", claim)], False))
    return seeded(new), covered
