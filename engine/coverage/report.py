"""The unsealed taxonomy-stratified report: counts, recall and benign FPR.

Recall is measured for every attack category and the false-positive rate
for the benign one; the other is null, because it is undefined on that
slice. Per-category precision and F1 are never reported: an attack slice
holds only positives, so they would say nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from engine.coverage.policy import CategoryGatePolicy, validate_gate_policy
from engine.coverage.tables import KINDS, Table
from engine.errors import InputError

EVAL_FIELDS = frozenset({"case_id", "label", "pred", "category", "source"})
REPORT_COLUMNS = frozenset(
    {
        "category",
        "sample_count",
        "positive_count",
        "negative_count",
        "true_positive_count",
        "false_positive_count",
        "detection_recall",
        "false_positive_rate",
        "detector_version",
        "evaluation_set_id",
    }
)


class CategoryRow(TypedDict):
    """One category's raw counts and its one defined ratio."""

    category: str
    sample_count: int
    positive_count: int
    negative_count: int
    true_positive_count: int
    false_positive_count: int
    detection_recall: float | None
    false_positive_rate: float | None
    detector_version: str
    evaluation_set_id: str


# A locator turns (row index, field) into where the row came from.
Locator = Callable[[int, str], dict[str, Any]]


def table_locator(table: Table) -> Locator:
    """Gives a locator naming the table's file and the row's line."""
    return lambda i, field: {"path": table.path, "line": table.line_of(i), "field": field}


def stratified_report(
    rows: Sequence[dict[str, Any]],
    detector_version: str,
    evaluation_set_id: str,
    policy: CategoryGatePolicy,
    *,
    locate: Locator | None = None,
) -> list[CategoryRow]:
    """Gives one report row per required category, in policy order, after checking
    that the population covers exactly the policy's taxonomy with clean labels."""
    import pandas as pd

    validate_gate_policy(policy)
    where = locate or (lambda i, field: {"line": i + 1, "field": field})
    if not isinstance(detector_version, str) or not detector_version:
        raise InputError("must be a non-empty string", field="detector_version")
    if not isinstance(evaluation_set_id, str) or not evaluation_set_id:
        raise InputError("must be a non-empty string", field="evaluation_set_id")
    if not rows:
        raise InputError("the evaluation population is empty", **where(0, "case_id"))
    seen: dict[str, int] = {}
    declared = set(policy.required_categories)
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) != EVAL_FIELDS:
            fields = sorted(EVAL_FIELDS.symmetric_difference(row if isinstance(row, dict) else {}))
            raise InputError(
                "row fields differ from case_id, label, pred, category, source",
                **where(i, fields[0] if fields else "case_id"),
            )
        for field, kind in (
            ("case_id", "id"),
            ("label", "binary"),
            ("pred", "binary"),
            ("category", "name"),
            ("source", "name"),
        ):
            value = row[field]
            # Strictness survives callers that skipped the table reader:
            # a str "1" is not a label here, only the int.
            if kind == "binary" and isinstance(value, str):
                raise InputError(f"must be the integer 0 or 1, got {value!r}", **where(i, field))
            try:
                KINDS[kind](value)
            except ValueError as exc:
                raise InputError(str(exc), **where(i, field)) from None
        if row["case_id"] in seen:
            raise InputError(
                f"{row['case_id']!r} repeats row {seen[row['case_id']] + 1}: "
                "case ids must be unique",
                **where(i, "case_id"),
            )
        seen[row["case_id"]] = i
        if row["category"] not in declared:
            raise InputError(
                f"category {row['category']!r} is not declared by the policy "
                f"({', '.join(policy.required_categories)})",
                **where(i, "category"),
            )
        is_benign = row["category"] == policy.benign_category
        if row["label"] != (0 if is_benign else 1):
            kind = "benign" if is_benign else "attack"
            raise InputError(
                f"{kind} category {row['category']!r} holds a row labelled "
                f"{row['label']}: mixed labels in one slice",
                **where(i, "label"),
            )

    frame = pd.DataFrame(list(rows), columns=sorted(EVAL_FIELDS))
    counts = frame.groupby("category").agg(
        sample_count=("case_id", "size"),
        positive_count=("label", "sum"),
        predicted_positive=("pred", "sum"),
    )
    report: list[CategoryRow] = []
    for category in policy.required_categories:
        if category not in counts.index:
            raise InputError(
                f"required category {category!r} has no rows: the population "
                "does not cover the taxonomy",
                path=where(0, "category").get("path"),
                field="category",
            )
        # Column then label: the stubs type a column's cells as Any and an .at cell as
        # a union of scalars that int() does not take.
        n = int(counts["sample_count"][category])
        positives = int(counts["positive_count"][category])
        flagged = int(counts["predicted_positive"][category])
        if category == policy.benign_category:
            tp, fp, recall, fpr = 0, flagged, None, flagged / n
        else:
            tp, fp, recall, fpr = flagged, 0, flagged / n, None
        report.append(
            CategoryRow(
                category=category,
                sample_count=n,
                positive_count=positives,
                negative_count=n - positives,
                true_positive_count=tp,
                false_positive_count=fp,
                detection_recall=recall,
                false_positive_rate=fpr,
                detector_version=detector_version,
                evaluation_set_id=evaluation_set_id,
            )
        )
    return report
