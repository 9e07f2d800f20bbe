"""exam-matcher-v0.1: one-to-one matching of detector candidates to gold claims.

A detector candidate can match a gold claim of the same completion only when
its trigger interval lies wholly inside the gold span. Among the possible
pairs the matcher finds a maximum one-to-one matching (augmenting paths,
Kuhn's algorithm) with a frozen order: gold claims by (start, end, id),
and for each the candidates agreeing on family and entity first, then
family only, then entity only, then by (start, end, id). Family and entity
are compared after matching, exactly and after NFKC normalization.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.exam.replay import Detection


@dataclass(frozen=True)
class GoldClaim:
    """One accepted gold claim."""

    candidate_id: str
    completion_id: str
    start: int
    end: int
    family: str
    entity_normalized: str


@dataclass(frozen=True)
class Match:
    """A matched pair and how far they agree."""

    gold: GoldClaim
    detection: Detection

    @property
    def family_equal(self) -> bool:
        return self.gold.family == self.detection.family

    @property
    def entity_equal(self) -> bool:
        return self.gold.entity_normalized == self.detection.entity_normalized

    @property
    def full_tuple(self) -> bool:
        return self.family_equal and self.entity_equal


def _preference(gold: GoldClaim, det: Detection) -> tuple:
    fam = gold.family == det.family
    ent = gold.entity_normalized == det.entity_normalized
    return (not (fam and ent), not fam, not ent, det.start, det.end, det.candidate_id)


def match(gold: list[GoldClaim], detections: list[Detection]) -> list[Match]:
    """Gives a maximum one-to-one matching of one completion's detections to its gold."""
    ordered = sorted(gold, key=lambda g: (g.start, g.end, g.candidate_id))
    options = {
        g.candidate_id: sorted(
            (d for d in detections if g.start <= d.start and d.end <= g.end),
            key=lambda d: _preference(g, d),
        )
        for g in ordered
    }
    holder: dict[str, GoldClaim] = {}  # detection id -> gold it is matched to

    def place(g: GoldClaim, seen: set[str]) -> bool:
        for d in options[g.candidate_id]:
            if d.candidate_id in seen:
                continue
            seen.add(d.candidate_id)
            if d.candidate_id not in holder or place(holder[d.candidate_id], seen):
                holder[d.candidate_id] = g
                return True
        return False

    for g in ordered:
        place(g, set())
    by_id = {d.candidate_id: d for d in detections}
    pairs = [Match(g, by_id[did]) for did, g in holder.items()]
    return sorted(pairs, key=lambda m: (m.gold.start, m.gold.end, m.gold.candidate_id))
