"""Where weak-category findings come from: an unsealed report document or a signed benchmark.

Both carry the stratified report and its findings; the benchmark adds the
sealed holdout binding and ELIGIBLE or HOLD. Either is re-checked when read
back: the report against its ``.sha256`` sidecar, the benchmark against
the benchmark authority's signature; then every ratio is re-derived from
its counts and every finding checked against its threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.artifacts import read_verified
from engine.canonical import parse_canonical, sha256_hex
from engine.coverage.benchmark import check_benchmark_shape
from engine.coverage.policy import CategoryGatePolicy, gate_policy_from
from engine.coverage.report import CategoryRow
from engine.coverage.tables import SHA256
from engine.coverage.threats import FIELD as THREATS
from engine.coverage.threats import mapping_of
from engine.coverage.trust import TrustRoot, read_signed
from engine.coverage.weak import check_report, validate_findings
from engine.errors import InputError

# v2: the policy carries the taxonomy's threat mappings.
REPORT_SCHEMA = "sealdesk.coverage-report.v2"
REPORT_DOCUMENT_FIELDS = frozenset(
    {
        "schema_version",
        "detector_version",
        "detector_sha256",
        "evaluation_set_id",
        "policy",
        "rows_sha256",
        "previous_report_sha256",
        "stratified_report",
        "weak_categories",
        "coverage_veto",
    }
)


@dataclass(frozen=True)
class FindingSource:
    """Findings and the report they came from, with the bytes' digest."""

    kind: str  # "report" or "benchmark"
    path: str
    sha256: str
    detector_sha256: str | None
    detector_version: str
    evaluation_set_id: str
    report: tuple[dict[str, Any], ...]
    findings: tuple[dict[str, Any], ...]
    eligibility: str | None
    document: dict[str, Any]
    threat_mappings: dict[str, Any]

    def row(self, category: str) -> dict[str, Any]:
        """Gives the report row of a category."""
        return next(r for r in self.report if r["category"] == category)

    def threats(self, category: str) -> dict[str, list[str]] | None:
        """Gives the ATLAS and OWASP ids the taxonomy maps a category to, if any."""
        return mapping_of(self.threat_mappings, category)

    def sealed_cases(self) -> tuple[frozenset[str], frozenset[str]] | None:
        """Gives (case ids, canonical text hashes) of the sealed holdout a benchmark
        measured; None for a report, which names no sealed population."""
        if self.kind != "benchmark":
            return None
        return (
            frozenset(
                r["case_id"] for r in self.document["raw_predictions"] if isinstance(r, dict)
            ),
            frozenset(self.document["holdout_text_sha256"]),
        )

    def to_json(self) -> dict[str, Any]:
        """Gives the identity a backlog item records about its source."""
        return {
            "kind": self.kind,
            "sha256": self.sha256,
            "detector_sha256": self.detector_sha256,
            "detector_version": self.detector_version,
            "evaluation_set_id": self.evaluation_set_id,
            "eligibility": self.eligibility,
        }


def report_document(
    report: list[CategoryRow],
    weak: list[dict[str, Any]],
    policy: CategoryGatePolicy,
    *,
    detector_sha256: str | None,
    rows_sha256: str,
    previous_report_sha256: str | None,
) -> dict[str, Any]:
    """Gives the unsealed report document: counts, ratios, findings and the veto flag."""
    first = report[0]
    return {
        "schema_version": REPORT_SCHEMA,
        "detector_version": first["detector_version"],
        "detector_sha256": detector_sha256,
        "evaluation_set_id": first["evaluation_set_id"],
        "policy": policy.to_json(),
        "rows_sha256": rows_sha256,
        "previous_report_sha256": previous_report_sha256,
        "stratified_report": list(report),
        "weak_categories": weak,
        "coverage_veto": bool(weak),
    }


def load_report_document(path: str | Path) -> FindingSource:
    """Gives an unsealed report artifact after checking its sidecar, schema, ratios and findings."""
    path = str(path)
    raw = read_verified(Path(path))
    value = parse_canonical(raw, path=path)
    if not isinstance(value, dict) or set(value) != REPORT_DOCUMENT_FIELDS:
        raise InputError("not a coverage report document (fields differ)", path=path)
    if value["schema_version"] != REPORT_SCHEMA:
        raise InputError(
            f"unsupported report schema (expected {REPORT_SCHEMA})",
            path=path,
            field="schema_version",
        )
    if not isinstance(value["policy"], dict) or set(value["policy"]) != {
        "required_categories",
        "benign_category",
        "min_attack_recall",
        "max_benign_fpr",
        "max_recall_regression",
        THREATS,
    }:
        raise InputError("policy fields differ", path=path, field="policy")
    policy = gate_policy_from(value["policy"], path=path)
    check_report(value["stratified_report"], policy, path=path)
    validate_findings(value["weak_categories"], path=path)
    digest = value["detector_sha256"]
    if digest is not None and (not isinstance(digest, str) or not SHA256.match(digest)):
        raise InputError(
            "must be null or 64 lower-case hex digits", path=path, field="detector_sha256"
        )
    if value["coverage_veto"] is not bool(value["weak_categories"]):
        raise InputError("coverage_veto contradicts the findings", path=path, field="coverage_veto")
    return FindingSource(
        "report",
        path,
        sha256_hex(raw),
        digest,
        value["detector_version"],
        value["evaluation_set_id"],
        tuple(value["stratified_report"]),
        tuple(value["weak_categories"]),
        None,
        value,
        policy.to_json()[THREATS],
    )


def load_benchmark(
    path: str | Path, signature_path: str | Path, trust: TrustRoot
) -> tuple[FindingSource, bytes, bytes]:
    """Gives a signed benchmark as a finding source, with its exact bytes and signature."""
    path = str(path)
    raw, signature = read_signed(path, signature_path)
    value = trust.verify_document("benchmark", raw, signature, what=path)
    check_benchmark_shape(value, path=path)
    # The rows' JSON values as they stand: check_report refuses what does not fit.
    categories: list[Any] = [
        r.get("category") for r in value["stratified_report"] if isinstance(r, dict)
    ]
    benign: list[Any] = [
        r.get("category")
        for r in value["stratified_report"]
        if isinstance(r, dict) and r.get("detection_recall") is None
    ]
    if len(benign) != 1:
        raise InputError(
            "the report must hold exactly one benign row", path=path, field="stratified_report"
        )
    # Thresholds live in the scope; the report's own counts and ratios are
    # re-derived against its categories with neutral thresholds.
    shape = CategoryGatePolicy(tuple(categories), benign[0], 0.0, 1.0, 1.0)
    check_report(value["stratified_report"], shape, path=path)
    source = FindingSource(
        "benchmark",
        path,
        sha256_hex(raw),
        value["detector_sha256"],
        value["detector_version"],
        value["holdout_id"],
        tuple(value["stratified_report"]),
        tuple(value["weak_categories"]),
        value["eligibility"],
        value,
        value[THREATS],
    )
    return source, raw, signature
