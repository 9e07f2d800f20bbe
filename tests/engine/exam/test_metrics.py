"""The seven metrics, null on zero denominators, each gate's boundary, and kappa."""

from __future__ import annotations

import pytest

from engine.exam.metrics import Ratio, Tallies, cohen_kappa, gates, metrics


def _tallies(**kw) -> Tallies:
    base = dict(
        completions=0,
        detector_failures=0,
        detections=0,
        gold=0,
        matched=0,
        family_equal=0,
        entity_equal=0,
        full_tuple=0,
        gold_zero_completions=0,
        gold_zero_with_detection=0,
    )
    return Tallies(**{**base, **kw})


def test_each_metric_is_its_own_ratio():
    m = metrics(
        _tallies(
            completions=10,
            detector_failures=1,
            detections=8,
            gold=12,
            matched=6,
            family_equal=5,
            entity_equal=4,
            full_tuple=3,
            gold_zero_completions=4,
            gold_zero_with_detection=1,
        )
    )
    assert {k: (r.numerator, r.denominator) for k, r in m.items()} == {
        "precision": (6, 8),
        "recall": (6, 12),
        "family_agreement": (5, 6),
        "entity_agreement": (4, 6),
        "full_tuple_match": (3, 6),
        "gold_zero_false_positive_rate": (1, 4),
        "operational_failure_rate": (1, 10),
    }
    assert m["precision"].to_json() == {"numerator": 6, "denominator": 8, "value": 0.75}


def test_every_metric_is_null_on_a_zero_denominator():
    m = metrics(_tallies())
    assert all(r.to_json()["value"] is None for r in m.values())
    assert len(m) == 7


def test_null_gated_metrics_fail_closed():
    verdicts = gates(metrics(_tallies()))
    assert [(g["metric"], g["value"], g["pass"]) for g in verdicts] == [
        ("precision", None, False),
        ("recall", None, False),
        ("operational_failure_rate", None, False),
    ]


def _gate(metric: str, num: int, den: int) -> bool:
    values = {name: Ratio(1, 1) for name in ("precision", "recall")}
    values["operational_failure_rate"] = Ratio(0, 1)
    values[metric] = Ratio(num, den)
    return next(g["pass"] for g in gates(values) if g["metric"] == metric)


@pytest.mark.parametrize(
    "metric,num,den,passes",
    [
        ("precision", 7, 10, True),  # exactly 0.70 passes >=
        ("precision", 69, 100, False),
        ("precision", 699, 1000, False),
        ("recall", 2, 5, True),  # exactly 0.40 passes >=
        ("recall", 39, 100, False),
        ("operational_failure_rate", 1, 10, False),  # exactly 0.10 fails <
        ("operational_failure_rate", 99, 1000, True),
        ("operational_failure_rate", 0, 7, True),
    ],
)
def test_gate_boundaries(metric, num, den, passes):
    assert _gate(metric, num, den) is passes


def test_kappa_of_a_hand_computed_table():
    # n=5: po=4/5, pa=4/5, pb=3/5, pe=12/25+2/25=14/25, kappa=(20-14)/(25-14)=6/11
    k = cohen_kappa(both=3, only_a=1, only_b=0, neither=1)
    assert k["value"] == pytest.approx(6 / 11)
    assert (k["observed"], k["expected"]) == (pytest.approx(0.8), pytest.approx(0.56))


def test_kappa_of_perfect_disagreement_is_minus_one():
    assert cohen_kappa(0, 2, 2, 0)["value"] == -1.0


def test_kappa_is_null_when_chance_agreement_is_certain_or_there_is_nothing():
    assert cohen_kappa(4, 0, 0, 0)["value"] is None
    assert cohen_kappa(0, 0, 0, 0)["value"] is None
