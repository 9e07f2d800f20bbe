"""Resolving claims to exact source intervals, without guessing.

Claims are source-ordered and never overlap, so claim *i* is looked for only
at or after the end of claim *i-1*. It resolves when its exact text occurs
there exactly once; zero occurrences (missing, or out of order) and two or
more (ambiguous) make the whole response invalid. An invalid response is
recorded as such; the claims it held are not used at all, because using
some and dropping others would turn a rater's proposal into an omission.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.exam.entities import normalize_entity
from engine.exam.inputs import Claim


@dataclass(frozen=True)
class Located:
    """A claim with its interval [start, end) in code points of the completion."""

    index: int
    start: int
    end: int
    span_exact_text: str
    family: str
    entity: str
    entity_normalized: str

    def contains(self, other: Located) -> bool:
        """Says whether this interval holds the other wholly (equal counts)."""
        return self.start <= other.start and other.end <= self.end

    def to_json(self) -> dict:
        """Gives the artifact's form of a located claim."""
        return {
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "span_exact_text": self.span_exact_text,
            "family": self.family,
            "entity": self.entity,
            "entity_normalized": self.entity_normalized,
        }


@dataclass(frozen=True)
class InvalidResponse:
    """Why a response's claims could not be placed in the source."""

    claim_index: int
    reason: str

    def to_json(self) -> dict:
        """Gives the artifact's form."""
        return {"claim_index": self.claim_index, "reason": self.reason}


def occurrences(text: str, needle: str, start: int) -> list[int]:
    """Gives every start offset >= start where needle occurs (overlapping ones too)."""
    found, pos = [], text.find(needle, start)
    while pos != -1:
        found.append(pos)
        pos = text.find(needle, pos + 1)
    return found


def locate(text: str, claims: tuple[Claim, ...]) -> list[Located] | InvalidResponse:
    """Gives every claim's interval, or the first reason the response is invalid."""
    located: list[Located] = []
    floor = 0
    for index, claim in enumerate(claims):
        hits = occurrences(text, claim.span_exact_text, floor)
        if not hits:
            if claim.span_exact_text in text:
                reason = (
                    "occurs only before the previous claim ends: claims must be "
                    "source-ordered and non-overlapping"
                )
            else:
                reason = "span_exact_text is not a substring of the completion"
            return InvalidResponse(index, reason)
        if len(hits) > 1:
            return InvalidResponse(
                index,
                f"span_exact_text occurs {len(hits)} times after "
                "the previous claim; its place is ambiguous",
            )
        start = hits[0]
        end = start + len(claim.span_exact_text)
        entity_normalized = normalize_entity(claim.entity)
        if not entity_normalized:
            return InvalidResponse(index, "entity is empty after normalization")
        located.append(
            Located(
                index,
                start,
                end,
                claim.span_exact_text,
                claim.family,
                claim.entity,
                entity_normalized,
            )
        )
        floor = end
    return located
