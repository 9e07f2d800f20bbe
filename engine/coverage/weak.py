"""Weak categories against the exact previous report (the unsealed report's second step).

A category is weak when its recall is below the minimum (``low_recall``),
when the benign false-positive rate is above the maximum (``high_fpr``), or
when recall fell from the previous report by more than the allowed
regression (``recall_regression``). Comparisons are exact: ratios of the
integer counts against the thresholds' decimals, so recall 0.7 against a
minimum of 0.7 is not weak and a fall from 0.8 to 0.7 is exactly 0.1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from engine.coverage.policy import CategoryGatePolicy, exact, probability, validate_gate_policy
from engine.coverage.report import REPORT_COLUMNS
from engine.errors import InputError

ISSUES = ("low_recall", "high_fpr", "recall_regression")
_REGRESSION_FIELDS = frozenset({"category", "issue", "current", "previous", "delta", "threshold"})
_VALUE_FIELDS = frozenset({"category", "issue", "value", "threshold"})


def _count(row: dict[str, Any], name: str, field: str, path: str | None) -> int:
    value = row[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError("must be a non-negative integer count", path=path, field=field)
    return value


def check_report(
    report: Sequence[Mapping[str, Any]],
    policy: CategoryGatePolicy,
    *,
    name: str = "stratified_report",
    path: str | None = None,
) -> dict[str, dict]:
    """Gives the report rows by category after re-deriving every count and ratio.

    Refuses a report whose fields differ, whose categories are not exactly
    the policy's, or whose ratios do not follow from its own counts.
    """
    if not isinstance(report, (list, tuple)):
        raise InputError("must be a list of category rows", path=path, field=name)
    by_category: dict[str, dict] = {}
    versions = set()
    for i, row in enumerate(report):
        field = f"{name}[{i}]"
        if not isinstance(row, dict) or set(row) != REPORT_COLUMNS:
            raise InputError(
                "report row fields differ from the stratified report schema", path=path, field=field
            )
        category = row["category"]
        if not isinstance(category, str) or category in by_category:
            raise InputError(
                f"category {category!r} is repeated or not a name",
                path=path,
                field=f"{field}.category",
            )
        if category not in policy.required_categories:
            raise InputError(
                f"category {category!r} is not in the policy's taxonomy",
                path=path,
                field=f"{field}.category",
            )
        n = _count(row, "sample_count", f"{field}.sample_count", path)
        pos = _count(row, "positive_count", f"{field}.positive_count", path)
        neg = _count(row, "negative_count", f"{field}.negative_count", path)
        tp = _count(row, "true_positive_count", f"{field}.true_positive_count", path)
        fp = _count(row, "false_positive_count", f"{field}.false_positive_count", path)
        if n < 1 or pos + neg != n:
            raise InputError(
                "sample_count must be positive and equal positives + negatives",
                path=path,
                field=f"{field}.sample_count",
            )
        if category == policy.benign_category:
            consistent = (
                pos == 0
                and tp == 0
                and fp <= n
                and row["detection_recall"] is None
                and row["false_positive_rate"] == fp / n
            )
            metric = "false_positive_rate"
        else:
            consistent = (
                neg == 0
                and fp == 0
                and tp <= n
                and row["false_positive_rate"] is None
                and row["detection_recall"] == tp / n
            )
            metric = "detection_recall"
        if not consistent:
            raise InputError(
                f"{metric} does not follow from the row's counts (or the other ratio is not null)",
                path=path,
                field=f"{field}.{metric}",
            )
        for ident in ("detector_version", "evaluation_set_id"):
            if not isinstance(row[ident], str) or not row[ident]:
                raise InputError("must be a non-empty string", path=path, field=f"{field}.{ident}")
        versions.add((row["detector_version"], row["evaluation_set_id"]))
        by_category[category] = row
    missing = [c for c in policy.required_categories if c not in by_category]
    if missing:
        raise InputError(
            f"report does not cover required category {missing[0]!r}", path=path, field=name
        )
    if len(versions) != 1:
        raise InputError("rows name different detectors or evaluation sets", path=path, field=name)
    return by_category


def _ratio(row: dict[str, Any], benign: bool) -> Fraction:
    numerator = row["false_positive_count"] if benign else row["true_positive_count"]
    return Fraction(numerator, row["sample_count"])


def identify_weak_categories(
    current: Sequence[Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]] | None,
    policy: CategoryGatePolicy,
    *,
    previous_path: str | None = None,
) -> list[dict[str, Any]]:
    """Gives the findings, in policy order: low_recall, recall_regression, high_fpr.

    ``previous`` is the exact prior report of the same population, or None
    for a genesis measurement (then no regression is claimed).
    """
    validate_gate_policy(policy)
    now = check_report(current, policy, name="current")
    before = None
    if previous is not None:
        before = check_report(previous, policy, name="previous", path=previous_path)
        first_now = next(iter(now.values()))
        first_before = next(iter(before.values()))
        if first_before["evaluation_set_id"] != first_now["evaluation_set_id"]:
            raise InputError(
                f"previous report measured evaluation set {first_before['evaluation_set_id']!r}, "
                f"not {first_now['evaluation_set_id']!r}: only identical populations compare",
                path=previous_path,
                field="evaluation_set_id",
            )
        for category in policy.required_categories:
            for count in ("sample_count", "positive_count", "negative_count"):
                if before[category][count] != now[category][count]:
                    raise InputError(
                        f"previous report's {category!r} {count} is "
                        f"{before[category][count]}, now {now[category][count]}: "
                        "only identical category populations compare",
                        path=previous_path,
                        field=count,
                    )

    min_recall = exact(policy.min_attack_recall)
    max_fpr = exact(policy.max_benign_fpr)
    max_drop = exact(policy.max_recall_regression)
    weak: list[dict[str, Any]] = []
    for category in policy.required_categories:
        row = now[category]
        if category == policy.benign_category:
            fpr = _ratio(row, benign=True)
            if fpr > max_fpr:
                weak.append(
                    {
                        "category": category,
                        "issue": "high_fpr",
                        "value": float(fpr),
                        "threshold": policy.max_benign_fpr,
                    }
                )
            continue
        recall = _ratio(row, benign=False)
        if recall < min_recall:
            weak.append(
                {
                    "category": category,
                    "issue": "low_recall",
                    "value": float(recall),
                    "threshold": policy.min_attack_recall,
                }
            )
        if before is not None:
            prior = _ratio(before[category], benign=False)
            if prior - recall > max_drop:
                weak.append(
                    {
                        "category": category,
                        "issue": "recall_regression",
                        "current": float(recall),
                        "previous": float(prior),
                        "delta": float(prior - recall),
                        "threshold": policy.max_recall_regression,
                    }
                )
    return weak


def validate_findings(
    findings: Any, *, path: str | None = None, name: str = "weak_categories"
) -> list[tuple[str, str]]:
    """Gives the (category, issue) keys of findings after checking each one is
    well formed and really breaches its threshold; duplicates refused."""
    if not isinstance(findings, list):
        raise InputError("must be a list of findings", path=path, field=name)
    keys: list[tuple[str, str]] = []
    for i, item in enumerate(findings):
        field = f"{name}[{i}]"
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("category"), str)
            or not item["category"]
            or item.get("issue") not in ISSUES
        ):
            raise InputError(
                f"finding needs a category and an issue of {', '.join(ISSUES)}",
                path=path,
                field=field,
            )
        regression = item["issue"] == "recall_regression"
        expected = _REGRESSION_FIELDS if regression else _VALUE_FIELDS
        if set(item) != expected:
            raise InputError(
                f"{item['issue']} finding fields must be exactly {', '.join(sorted(expected))}",
                path=path,
                field=field,
            )
        for metric in sorted(expected - {"category", "issue"}):
            probability(item[metric], f"{field}.{metric}", path=path)
        if regression:
            if not math.isclose(
                item["previous"] - item["current"], item["delta"], rel_tol=1e-12, abs_tol=1e-12
            ) or exact(item["delta"]) <= exact(item["threshold"]):
                raise InputError(
                    "recall regression evidence is inconsistent (delta is not "
                    "previous - current, or does not exceed the threshold)",
                    path=path,
                    field=f"{field}.delta",
                )
        elif (item["issue"] == "high_fpr" and exact(item["value"]) <= exact(item["threshold"])) or (
            item["issue"] == "low_recall" and exact(item["value"]) >= exact(item["threshold"])
        ):
            raise InputError(
                "finding does not breach its threshold", path=path, field=f"{field}.value"
            )
        key = (item["category"], item["issue"])
        if key in keys:
            raise InputError(
                f"finding {key[1]} for {key[0]!r} is duplicated", path=path, field=field
            )
        keys.append(key)
    return keys


def severity(finding: dict[str, Any]) -> float:
    """Gives how far a finding is past its threshold (for sorting the backlog)."""
    if finding["issue"] == "low_recall":
        return finding["threshold"] - finding["value"]
    if finding["issue"] == "high_fpr":
        return finding["value"] - finding["threshold"]
    return finding["delta"] - finding["threshold"]
