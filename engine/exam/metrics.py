"""The seven frozen metrics, the three gates, and the inter-rater diagnostics.

A metric with a zero denominator is ``null``; a gate on a null metric fails
(closed). Values are exact fractions until they are written, and gates
compare fractions, so 7/10 passes ``>= 0.70`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from engine.exam.protocol import GATES, LANES, gate_passes

METRICS = (
    "precision",
    "recall",
    "family_agreement",
    "entity_agreement",
    "full_tuple_match",
    "gold_zero_false_positive_rate",
    "operational_failure_rate",
)


@dataclass(frozen=True)
class Ratio:
    """numerator / denominator, null when the denominator is zero."""

    numerator: int
    denominator: int

    @property
    def value(self) -> Fraction | None:
        return Fraction(self.numerator, self.denominator) if self.denominator else None

    def to_json(self) -> dict[str, Any]:
        """Gives {numerator, denominator, value} with value a float or null."""
        value = self.value
        return {
            "numerator": self.numerator,
            "denominator": self.denominator,
            "value": None if value is None else float(value),
        }


@dataclass(frozen=True)
class Tallies:
    """The counts the metrics are made of."""

    completions: int
    detector_failures: int
    detections: int  # on completions the detector handled
    gold: int  # on every completion: a failed completion's gold counts as missed
    matched: int
    family_equal: int
    entity_equal: int
    full_tuple: int
    gold_zero_completions: int  # gold-zero completions the detector handled
    gold_zero_with_detection: int

    def to_json(self) -> dict[str, int]:
        """Gives the tallies as a JSON object."""
        return dict(self.__dict__)


def metrics(t: Tallies) -> dict[str, Ratio]:
    """Gives the seven metrics by name."""
    return {
        "precision": Ratio(t.matched, t.detections),
        "recall": Ratio(t.matched, t.gold),
        "family_agreement": Ratio(t.family_equal, t.matched),
        "entity_agreement": Ratio(t.entity_equal, t.matched),
        "full_tuple_match": Ratio(t.full_tuple, t.matched),
        "gold_zero_false_positive_rate": Ratio(t.gold_zero_with_detection, t.gold_zero_completions),
        "operational_failure_rate": Ratio(t.detector_failures, t.completions),
    }


def gates(values: dict[str, Ratio]) -> list[dict[str, Any]]:
    """Gives each gate's verdict; a null metric fails its gate."""
    out = []
    for metric, op, threshold in GATES:
        value = values[metric].value
        passed = value is not None and gate_passes(op, value, threshold)
        out.append(
            {
                "metric": metric,
                "op": op,
                "threshold": threshold,
                "value": None if value is None else float(value),
                "pass": passed,
            }
        )
    return out


def cohen_kappa(both: int, only_a: int, only_b: int, neither: int) -> dict[str, Any]:
    """Gives Cohen's kappa of a 2x2 table with observed and chance agreement (null if undefined)."""
    n = both + only_a + only_b + neither
    table = {"both": both, "only_lane_a": only_a, "only_lane_b": only_b, "neither": neither}
    if n == 0:
        return {"value": None, "observed": None, "expected": None, "table": table}
    observed = Fraction(both + neither, n)
    pa, pb = Fraction(both + only_a, n), Fraction(both + only_b, n)
    expected = pa * pb + (1 - pa) * (1 - pb)
    value = None if expected == 1 else (observed - expected) / (1 - expected)
    return {
        "value": None if value is None else float(value),
        "observed": float(observed),
        "expected": float(expected),
        "table": table,
    }


def _claim_set(lane: dict[str, Any]) -> set[tuple]:
    return {(c["start"], c["end"], c["family"], c["entity_normalized"]) for c in lane["claims"]}


PER_CANDIDATE = (
    "Per union candidate of a completion both lanes labeled: did each lane propose it? "
    "both_lanes_proposed / candidates is the share of candidates the lanes agree on. "
    "A union candidate exists only because some lane proposed it, so there is no "
    "'neither' cell and no kappa here. Diagnostic only: never decides gold or a gate."
)
PER_COMPLETION = (
    "Per completion both lanes labeled, not per candidate: exact agreement is the share of "
    "completions whose two claim sets are identical; claim-existence kappa asks only "
    "whether each lane claimed anything at all in the completion, so it can be 1.0 while "
    "the lanes disagree on most candidates. Diagnostic only: never decides gold or a gate."
)


def inter_rater(art: dict[str, Any]) -> dict[str, Any]:
    """Gives the lanes' agreement per union candidate and per completion (never gating)."""
    both_ok = [
        c for c in art["completions"] if all(c["lanes"][lane]["status"] == "ok" for lane in LANES)
    ]
    a, b = LANES
    exact = sum(_claim_set(c["lanes"][a]) == _claim_set(c["lanes"][b]) for c in both_ok)
    says = [(bool(c["lanes"][a]["claims"]), bool(c["lanes"][b]["claims"])) for c in both_ok]
    kappa = cohen_kappa(
        sum(x and y for x, y in says),
        sum(x and not y for x, y in says),
        sum(y and not x for x, y in says),
        sum(not x and not y for x, y in says),
    )
    proposed = [
        {m["rater"] for m in cand["members"]}
        for comp in both_ok
        for cand in comp["candidates"]
        if cand["origin"] == "union"
    ]
    both = sum(len(r & set(LANES)) == 2 for r in proposed)
    return {
        "gating": False,
        "per_candidate": {
            "unit": "union candidate",
            "gating": False,
            "description": PER_CANDIDATE,
            "candidates": len(proposed),
            "both_lanes_proposed": both,
            "only_lane_a": sum(r & set(LANES) == {a} for r in proposed),
            "only_lane_b": sum(r & set(LANES) == {b} for r in proposed),
            "agreement": Ratio(both, len(proposed)).to_json(),
        },
        "per_completion": {
            "unit": "completion",
            "gating": False,
            "description": PER_COMPLETION,
            "completions_both_lanes_ok": len(both_ok),
            "exact_completion_agreement": Ratio(exact, len(both_ok)).to_json(),
            "claim_existence_kappa": kappa,
        },
    }
