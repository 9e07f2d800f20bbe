"""Each category's recall (or the benign category's false-positive rate) against the
policy line it is held to, from the report or benchmark a weak-category item names.

The lead's calibration view draws these as bars. A weak-category item binds
the digest of the document its findings came from (``source.sha256``; an
evidence claim, ``benchmark_sha256``); the document is found by that digest
under the workspace's artifacts, checked against its sidecar and against the
digest itself, so a bar never shows numbers the item was not about.

A report document carries its policy. A benchmark does not (its thresholds
live in the signed scope it was measured under): its lines are read off its
own findings, and a line no finding used is unknown, and said to be.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.artifacts import read_verified
from engine.canonical import load_json, sha256_hex
from engine.coverage.tables import SHA256
from engine.errors import InputError, IntegrityError

# Where `coverage report` and `coverage benchmark` write, by the first 16 hex digits of
# the document's digest.
LOCATIONS = (
    ("report", "coverage-report-{}", "category_report.json"),
    ("benchmark", "coverage-benchmark-{}", "benchmark.json"),
)


@dataclass(frozen=True)
class CategoryRate:
    """One category's measured rate and the line it must clear."""

    category: str
    metric: str  # "recall" for an attack category, "fpr" for the benign one
    value: float | None  # None: nothing to measure (no positives, or no negatives)
    line: float | None  # min recall / max FPR; None when the document does not say
    counts: str  # how the rate was counted, e.g. "7/10"
    issues: tuple[str, ...] = ()  # the document's findings on it (low_recall, ...)

    @property
    def fails(self) -> bool | None:
        """Says whether the rate is on the wrong side of its line (None: not known)."""
        if self.value is None or self.line is None:
            return None
        return self.value < self.line if self.metric == "recall" else self.value > self.line


@dataclass(frozen=True)
class CategoryRates:
    """Every category of one report or benchmark, with where it came from."""

    kind: str  # report or benchmark
    path: str
    sha256: str
    detector_version: str
    evaluation_set_id: str
    eligibility: str | None
    rates: tuple[CategoryRate, ...]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _lines(document: dict[str, Any]) -> tuple[float | None, float | None]:
    """Gives (min recall, max FPR): the report's policy, else the benchmark's findings."""
    policy = document.get("policy")
    if isinstance(policy, dict):
        return _number(policy.get("min_attack_recall")), _number(policy.get("max_benign_fpr"))
    recall = fpr = None
    for finding in document.get("weak_categories") or ():
        if isinstance(finding, dict) and finding.get("issue") == "low_recall":
            recall = _number(finding.get("threshold"))
        elif isinstance(finding, dict) and finding.get("issue") == "high_fpr":
            fpr = _number(finding.get("threshold"))
    return recall, fpr


def rates_of(kind: str, path: str, sha256: str, document: dict[str, Any]) -> CategoryRates:
    """Gives a report's or benchmark's rates per category, or raises naming the row and
    field that is not what the coverage engine writes."""
    rows = document.get("stratified_report")
    if not isinstance(rows, list) or not rows:
        raise InputError("no stratified_report rows", path=path, field="stratified_report")
    min_recall, max_fpr = _lines(document)
    issues: dict[str, list[str]] = {}
    for finding in document.get("weak_categories") or ():
        if isinstance(finding, dict) and isinstance(finding.get("issue"), str):
            issues.setdefault(str(finding.get("category")), []).append(finding["issue"])
    rates = []
    for n, row in enumerate(rows):
        where = f"stratified_report[{n}]"
        if not isinstance(row, dict) or not isinstance(row.get("category"), str):
            raise InputError("a row without a category", path=path, field=where)
        if "detection_recall" not in row or "false_positive_rate" not in row:
            raise InputError("a row without its rates", path=path, field=where)
        recall = _number(row["detection_recall"])
        if recall is not None or row.get("positive_count"):
            counts = f"{row.get('true_positive_count', '?')}/{row.get('positive_count', '?')}"
            rates.append(
                CategoryRate(
                    row["category"],
                    "recall",
                    recall,
                    min_recall,
                    counts,
                    tuple(issues.get(row["category"], ())),
                )
            )
        else:
            counts = f"{row.get('false_positive_count', '?')}/{row.get('negative_count', '?')}"
            fpr = _number(row["false_positive_rate"])
            rates.append(
                CategoryRate(
                    row["category"],
                    "fpr",
                    fpr,
                    max_fpr,
                    counts,
                    tuple(issues.get(row["category"], ())),
                )
            )
    return CategoryRates(
        kind,
        path,
        sha256,
        str(document.get("detector_version", "?")),
        str(document.get("evaluation_set_id") or document.get("holdout_id") or "?"),
        document.get("eligibility") if isinstance(document.get("eligibility"), str) else None,
        tuple(rates),
    )


def source_digest(payload: dict[str, Any]) -> str | None:
    """Gives the digest of the report or benchmark a weak-category item (or an evidence
    claim) is about, or None when it names none."""
    source = payload.get("source")
    digest = source.get("sha256") if isinstance(source, dict) else None
    if digest is None:
        digest = payload.get("benchmark_sha256")
    return digest if isinstance(digest, str) and SHA256.match(digest) else None


def read_rates(artifacts: Path, sha256: str) -> CategoryRates:
    """Gives the rates of the report or benchmark with this digest, found under the
    workspace's artifacts; refuses one whose bytes do not hash to it."""
    if not SHA256.match(sha256):
        raise InputError(f"{sha256!r} is not a SHA-256 digest", field="sha256")
    for kind, directory, name in LOCATIONS:
        path = artifacts / directory.format(sha256[:16]) / name
        if not path.is_file():
            continue
        raw = read_verified(path)
        if sha256_hex(raw) != sha256:
            raise IntegrityError(
                f"{path}: its bytes hash to {sha256_hex(raw)[:16]}…, not the {sha256[:16]}… "
                "the item was measured by"
            )
        document = load_json(raw, path=path)  # the one strict reader, nesting bounded
        if not isinstance(document, dict):
            raise InputError("not a JSON object", path=path)
        return rates_of(kind, str(path), sha256, document)
    raise InputError(
        f"no coverage report or benchmark with digest {sha256[:16]}… under {artifacts}",
        field="source.sha256",
    )
