"""Representative misses per weak category (debug backlog, step 1), chosen deterministically.

Every miss (label differs from prediction) in a weak category is eligible;
they are ranked by SHA-256 of ``selection_seed:case_id`` and the first
``max_examples_per_category`` are selected. The whole eligible population
and every rank key are kept, so nobody can pick attractive examples by hand.
The rows are a debug population with text, bound to the measured detector;
they are never the sealed holdout: a row whose case id, or whose text in
canonical form, is a sealed case the benchmark lists is refused.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from engine.canonical import sha256_hex
from engine.coverage.holdout import canonical_text_sha256
from engine.coverage.policy import AttributionPolicy, positive_integer
from engine.coverage.tables import SHA256, Table
from engine.coverage.weak import validate_findings
from engine.errors import InputError, PermissionRefused


@dataclass(frozen=True)
class Miss:
    """One misclassified debug row and its rank key."""

    case_id: str
    text: str
    text_sha256: str
    label: int
    pred: int
    category: str
    detector_sha256: str
    rank_key: str

    def to_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "text": self.text,
            "text_sha256": self.text_sha256,
            "label": self.label,
            "prediction": self.pred,
            "category": self.category,
            "detector_sha256": self.detector_sha256,
            "rank_key": self.rank_key,
        }


@dataclass(frozen=True)
class MissSelection:
    """Every eligible miss per weak category, ranked, and the selected prefix."""

    selection_seed: str
    eligible: dict[str, tuple[Miss, ...]]
    selected: dict[str, tuple[Miss, ...]]

    def to_json(self) -> dict[str, Any]:
        """Gives the selection evidence: populations, counts, rank keys, chosen ids."""
        return {
            "selection_seed": self.selection_seed,
            "eligible_miss_counts": {c: len(m) for c, m in self.eligible.items()},
            "selected_counts": {c: len(m) for c, m in self.selected.items()},
            "eligible": {
                c: [{"case_id": m.case_id, "rank_key": m.rank_key} for m in ms]
                for c, ms in self.eligible.items()
            },
            "selected_case_ids": {c: [m.case_id for m in ms] for c, ms in self.selected.items()},
        }


def rank_key(seed: str, case_id: str) -> str:
    """Gives the deterministic rank key of a case under a selection seed."""
    return hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()


def refuse_sealed_rows(
    rows: Table, case_ids: frozenset[str], text_hashes: frozenset[str], *, holdout: str
) -> None:
    """Raises naming the first row (file, line, field) that is a sealed holdout case:
    its case id is one, or its text is one up to case, width, invisible characters
    and spacing. Benchmark cases stay outside attribution and developer access."""
    found = []
    for i, row in enumerate(rows.rows):
        if row["case_id"] in case_ids:
            what = f"case {row['case_id']!r} is a case of sealed holdout {holdout}"
            found.append((rows.line_of(i), "case_id", what))
        elif canonical_text_sha256(row["text"]) in text_hashes:
            what = (
                f"text of case {row['case_id']!r} is the text of a case of sealed holdout {holdout}"
            )
            found.append((rows.line_of(i), "text", what))
    if found:
        line, field, what = found[0]
        more = f" ({len(found) - 1} more such row(s))" if len(found) > 1 else ""
        raise InputError(
            f"{what}; sealed cases stay out of attribution and review{more}",
            path=rows.path,
            line=line,
            field=field,
        )


def select_misses(
    rows: Table,
    findings: list[dict[str, Any]],
    expected_detector_sha256: str,
    policy: AttributionPolicy,
    *,
    findings_path: str | None = None,
) -> MissSelection:
    """Gives the deterministic selection of misses for every weak category.

    Refuses an empty or malformed finding list, a row whose text does not
    hash to its text_sha256 or that another detector produced, and a weak
    category without a single miss to explain.
    """
    positive_integer(policy.max_examples_per_category, "max_examples_per_category")
    if not policy.selection_seed or not SHA256.match(expected_detector_sha256 or ""):
        raise InputError("selection seed or detector digest is invalid", field="selection_seed")
    if not findings:
        raise InputError(
            "there are no weak-category findings to debug",
            path=findings_path,
            field="weak_categories",
        )
    keys = validate_findings(findings, path=findings_path)
    weak = sorted({category for category, _ in keys})
    misses: dict[str, list[Miss]] = {c: [] for c in weak}
    for i, row in enumerate(rows.rows):
        line = rows.line_of(i)
        if sha256_hex(row["text"].encode("utf-8")) != row["text_sha256"]:
            raise InputError(
                "text does not hash to text_sha256", path=rows.path, line=line, field="text_sha256"
            )
        if row["detector_sha256"] != expected_detector_sha256:
            raise PermissionRefused(
                f"{rows.path}:{line}: row was predicted by detector "
                f"{row['detector_sha256'][:16]}…, not the measured "
                f"{expected_detector_sha256[:16]}…"
            )
        if row["category"] in misses and row["label"] != row["pred"]:
            misses[row["category"]].append(
                Miss(
                    row["case_id"],
                    row["text"],
                    row["text_sha256"],
                    row["label"],
                    row["pred"],
                    row["category"],
                    row["detector_sha256"],
                    rank_key(policy.selection_seed, row["case_id"]),
                )
            )
    empty = [c for c, found in misses.items() if not found]
    if empty:
        raise InputError(
            f"weak category {empty[0]!r} has no miss among these rows to explain",
            path=rows.path,
            field="category",
        )
    eligible = {c: tuple(sorted(found, key=lambda m: m.rank_key)) for c, found in misses.items()}
    selected = {c: found[: policy.max_examples_per_category] for c, found in eligible.items()}
    return MissSelection(policy.selection_seed, eligible, selected)
