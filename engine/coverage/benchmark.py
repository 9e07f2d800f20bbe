"""The out-of-loop benchmark: every sealed case measured, ELIGIBLE or HOLD.

Before any prediction counts, the scope's signature, expiry and bindings
are checked (the candidate digest and version, the holdout digest), and a
required baseline is authenticated and re-derived from its own raw
predictions: a baseline whose aggregate report differs from what its
predictions give is refused as fabricated. Genesis (no baseline) happens
only when the signed scope says ``baseline_report_sha256: null``.

The output is unsigned measurement data in canonical bytes; only the
lineage store's reserve, then a signature, then readback, makes evidence.
It carries the scope's threat mappings, and lists the sealed population a
debug run must stay away from: the case ids (in ``raw_predictions``) and
the canonical text hashes of the sealed texts, never the texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.canonical import canonical_json, sha256_hex
from engine.coverage.holdout import SHA256, SealedHoldout
from engine.coverage.policy import CategoryGatePolicy
from engine.coverage.report import CategoryRow, stratified_report
from engine.coverage.scope import Scope, check_scope
from engine.coverage.tables import Table
from engine.coverage.threats import FIELD as THREATS
from engine.coverage.threats import mappings_json, parse_threat_mappings
from engine.coverage.trust import TrustRoot
from engine.coverage.weak import identify_weak_categories, validate_findings
from engine.errors import InputError, IntegrityError, PermissionRefused

# v2: threat mappings and the sealed cases' canonical text hashes.
SCHEMA = "sealdesk.coverage-benchmark.v2"
ROW_FIELDS = frozenset({"case_id", "label", "pred", "category", "request_id"})
BENCHMARK_FIELDS = frozenset(
    {
        "schema_version",
        "evaluation_policy_sha256",
        "baseline_report_sha256",
        "detector_version",
        "detector_sha256",
        "holdout_id",
        "holdout_version",
        "holdout_manifest_sha256",
        "holdout_signature_sha256",
        "expected_case_count",
        "measured_case_count",
        "raw_predictions",
        "raw_predictions_sha256",
        "stratified_report",
        "weak_categories",
        "eligibility",
        "holdout_text_sha256",
        THREATS,
    }
)
ELIGIBILITY = ("ELIGIBLE", "HOLD")


@dataclass(frozen=True)
class EvaluationContext:
    """What a measurement is checked against: the scope and the previous report."""

    scope: Scope
    previous: list[CategoryRow] | None


def predictions_from_results(
    results: Table, holdout: SealedHoldout, expected_detector_sha256: str
) -> list[dict[str, Any]]:
    """Gives the raw prediction rows, in manifest order, from recorded detector results.

    Each result is the candidate's answer for one sealed case: its verdict,
    the digest of the detector that answered and a unique request id. The
    label and category come from the sealed holdout, never from the candidate.
    """
    cases = holdout.by_case()
    answered: dict[str, dict[str, Any]] = {}
    requests: dict[str, int] = {}
    for i, result in enumerate(results.rows):
        line = results.line_of(i)
        if result["case_id"] not in cases:
            raise InputError(
                f"case {result['case_id']!r} is not in sealed holdout "
                f"{holdout.holdout_id}: an extra case",
                path=results.path,
                line=line,
                field="case_id",
            )
        if result["detector_sha256"] != expected_detector_sha256:
            raise PermissionRefused(
                f"{results.path}:{line}: answered by detector {result['detector_sha256'][:16]}…, "
                f"not the scope's candidate {expected_detector_sha256[:16]}…"
            )
        if result["request_id"] in requests:
            raise InputError(
                f"request id repeats line {requests[result['request_id']]}",
                path=results.path,
                line=line,
                field="request_id",
            )
        requests[result["request_id"]] = line
        answered[result["case_id"]] = result
    missing = [s["case_id"] for s in holdout.samples if s["case_id"] not in answered]
    if missing:
        raise InputError(
            f"{len(missing)} sealed case(s) have no prediction, first "
            f"{missing[0]!r}: the prediction population is incomplete",
            path=results.path,
            field="case_id",
        )
    rows = []
    for sample in holdout.samples:
        result = answered[sample["case_id"]]
        rows.append(
            {
                "case_id": sample["case_id"],
                "label": sample["label_int"],
                "pred": 1 if result["label"] == "malicious" else 0,
                "category": sample["category"],
                "request_id": result["request_id"],
            }
        )
    return rows


def report_from_predictions(
    rows: Any,
    holdout: SealedHoldout,
    detector_version: str,
    policy: CategoryGatePolicy,
    *,
    path: str | None = None,
) -> list[CategoryRow]:
    """Gives the stratified report of raw predictions that match the sealed
    population exactly: every case once, with its sealed label and category."""
    cases = holdout.by_case()

    def at(i: int, field: str) -> dict[str, Any]:
        return {"path": path, "field": f"raw_predictions[{i}].{field}"}

    if not isinstance(rows, list) or len(rows) != len(cases):
        count = len(rows) if isinstance(rows, list) else "no"
        raise InputError(
            f"{count} predictions for {len(cases)} sealed cases: the prediction "
            "population is incomplete",
            path=path,
            field="raw_predictions",
        )
    seen: set[str] = set()
    requests: set[str] = set()
    inputs = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) != ROW_FIELDS:
            raise InputError(
                f"prediction fields must be exactly {', '.join(sorted(ROW_FIELDS))}",
                **at(i, "case_id"),
            )
        found = cases.get(row["case_id"]) if isinstance(row["case_id"], str) else None
        if found is None or row["case_id"] in seen:
            raise InputError(
                f"case {row['case_id']!r} is not a sealed case or repeats", **at(i, "case_id")
            )
        sample = found[1]
        for field in ("label", "pred"):
            if type(row[field]) is not int or row[field] not in (0, 1):
                raise InputError("must be the integer 0 or 1", **at(i, field))
        if (row["label"], row["category"]) != (sample["label_int"], sample["category"]):
            raise InputError("label or category differs from the sealed case", **at(i, "label"))
        if (
            not isinstance(row["request_id"], str)
            or not row["request_id"]
            or row["request_id"] in requests
        ):
            raise InputError("request id is empty or repeats", **at(i, "request_id"))
        seen.add(row["case_id"])
        requests.add(row["request_id"])
        inputs.append(
            {
                "case_id": row["case_id"],
                "label": row["label"],
                "pred": row["pred"],
                "category": row["category"],
                "source": sample["source_ref"],
            }
        )

    def locate(i: int, field: str) -> dict[str, Any]:
        sample = cases[inputs[i]["case_id"]][0]
        name = "label_int" if field == "label" else field
        return {"path": holdout.path, "field": f"samples[{sample}].{name}"}

    return stratified_report(inputs, detector_version, holdout.holdout_id, policy, locate=locate)


def check_benchmark_shape(value: Any, *, path: str) -> dict[str, Any]:
    """Gives a benchmark document after checking its fields, digests and eligibility
    (everything that can be checked without the holdout and scope)."""
    if not isinstance(value, dict) or set(value) != BENCHMARK_FIELDS:
        odd = sorted(
            BENCHMARK_FIELDS.symmetric_difference(value if isinstance(value, dict) else {})
        )
        raise InputError(
            "benchmark fields differ from the benchmark schema",
            path=path,
            field=odd[0] if odd else None,
        )
    if value["schema_version"] != SCHEMA:
        raise InputError(
            f"unsupported benchmark schema (expected {SCHEMA})", path=path, field="schema_version"
        )
    for name in (
        "evaluation_policy_sha256",
        "detector_sha256",
        "holdout_manifest_sha256",
        "holdout_signature_sha256",
        "raw_predictions_sha256",
    ):
        if not isinstance(value[name], str) or not SHA256.match(value[name]):
            raise InputError("must be 64 lower-case hex digits", path=path, field=name)
    for name in ("expected_case_count", "measured_case_count"):
        if type(value[name]) is not int:
            raise InputError("must be an integer", path=path, field=name)
    if value["raw_predictions_sha256"] != sha256_hex(canonical_json(value["raw_predictions"])):
        raise IntegrityError(f"{path}: raw_predictions do not hash to raw_predictions_sha256")
    if not isinstance(value["raw_predictions"], list) or value["measured_case_count"] != len(
        value["raw_predictions"]
    ):
        raise InputError(
            "measured_case_count is not the number of raw predictions",
            path=path,
            field="measured_case_count",
        )
    validate_findings(value["weak_categories"], path=path)
    _check_sealed_hashes(value, path=path)
    _check_threats(value, path=path)
    expected = "HOLD" if value["weak_categories"] else "ELIGIBLE"
    if value["eligibility"] != expected:
        raise IntegrityError(
            f"{path}: eligibility {value['eligibility']!r} contradicts its "
            f"{len(value['weak_categories'])} weak-category finding(s)"
        )
    return value


def _check_sealed_hashes(value: dict[str, Any], *, path: str) -> None:
    hashes = value["holdout_text_sha256"]
    if (
        not isinstance(hashes, list)
        or not hashes
        or any(not isinstance(h, str) or not SHA256.match(h) for h in hashes)
    ):
        raise InputError(
            "must be a non-empty list of 64 lower-case hex digests",
            path=path,
            field="holdout_text_sha256",
        )
    if hashes != sorted(set(hashes)) or len(hashes) > value["expected_case_count"]:
        raise InputError(
            "must list each sealed text's hash once, sorted, at most one per case",
            path=path,
            field="holdout_text_sha256",
        )


def _check_threats(value: dict[str, Any], *, path: str) -> None:
    rows = (
        [r for r in value["stratified_report"] if isinstance(r, dict)]
        if isinstance(value["stratified_report"], list)
        else []
    )
    # The rows' JSON values as they stand: parse_threat_mappings refuses what does not fit.
    categories: list[Any] = [r.get("category") for r in rows]
    benign: list[Any] = [r.get("category") for r in rows if r.get("detection_recall") is None]
    parse_threat_mappings(
        value[THREATS], categories, benign[0] if len(benign) == 1 else None, path=path
    )


def evaluation_context(
    holdout: SealedHoldout,
    detector_sha256: str,
    detector_version: str,
    scope_raw: bytes,
    scope_signature: bytes,
    trust: TrustRoot,
    *,
    baseline_raw: bytes | None = None,
    baseline_signature: bytes | None = None,
    scope_path: str = "scope",
    baseline_path: str = "baseline",
    now: datetime | None = None,
) -> EvaluationContext:
    """Gives the verified scope and previous report, or refuses the measurement."""
    value = trust.verify_document("scope", scope_raw, scope_signature, what=scope_path)
    scope = check_scope(value, scope_raw, path=scope_path, now=now)
    if (
        not isinstance(detector_sha256, str)
        or not SHA256.match(detector_sha256)
        or not isinstance(detector_version, str)
        or not detector_version
    ):
        raise InputError("candidate digest or version is malformed", field="detector_sha256")
    if scope["candidate_sha256"] != detector_sha256:
        raise PermissionRefused(
            f"candidate {detector_sha256[:16]}… is not the scope's "
            f"candidate {scope['candidate_sha256'][:16]}…"
        )
    if scope["candidate_version"] != detector_version:
        raise PermissionRefused(
            f"candidate version {detector_version!r} is not the scope's "
            f"{scope['candidate_version']!r}"
        )
    if scope["holdout_manifest_sha256"] != holdout.manifest_sha256:
        raise PermissionRefused("the holdout is not the one the signed scope names")
    if scope.genesis:
        # Only an explicitly signed genesis scope gets here; a lost baseline
        # never falls back to genesis.
        if baseline_raw is not None or baseline_signature is not None:
            raise PermissionRefused("a genesis scope cannot consume a prior baseline")
        return EvaluationContext(scope, None)
    if baseline_raw is None or baseline_signature is None:
        raise PermissionRefused(
            "the signed scope requires baseline "
            f"{scope['baseline_report_sha256'][:16]}… and its signature"
        )
    if sha256_hex(baseline_raw) != scope["baseline_report_sha256"]:
        raise PermissionRefused(
            f"{baseline_path}: baseline bytes differ from the one the signed scope names"
        )
    baseline = trust.verify_document(
        "benchmark", baseline_raw, baseline_signature, what=baseline_path
    )
    check_benchmark_shape(baseline, path=baseline_path)
    for name, expected in (
        ("holdout_id", holdout.holdout_id),
        ("holdout_version", holdout.version),
        ("holdout_manifest_sha256", holdout.manifest_sha256),
        ("holdout_signature_sha256", holdout.signature_sha256),
        ("expected_case_count", len(holdout.samples)),
        ("measured_case_count", len(holdout.samples)),
    ):
        if baseline[name] != expected:
            raise PermissionRefused(
                f"{baseline_path}: baseline {name} {baseline[name]!r} "
                f"differs from the sealed holdout's {expected!r}"
            )
    previous = report_from_predictions(
        baseline["raw_predictions"],
        holdout,
        baseline["detector_version"],
        scope.policy,
        path=baseline_path,
    )
    if canonical_json(previous) != canonical_json(baseline["stratified_report"]):
        raise IntegrityError(
            f"{baseline_path}: baseline aggregate report differs from what its "
            "own raw predictions give (fabricated or altered aggregate)"
        )
    return EvaluationContext(scope, previous)


def derive_benchmark(
    rows: Sequence[dict[str, Any]],
    holdout: SealedHoldout,
    detector_sha256: str,
    detector_version: str,
    scope_raw: bytes,
    context: EvaluationContext,
) -> dict[str, Any]:
    """Gives the benchmark document: raw predictions, report, findings, ELIGIBLE or HOLD."""
    scope = context.scope
    rows = [dict(r) for r in rows]
    report = report_from_predictions(rows, holdout, detector_version, scope.policy)
    weak = identify_weak_categories(report, context.previous, scope.policy)
    return {
        "schema_version": SCHEMA,
        "evaluation_policy_sha256": sha256_hex(scope_raw),
        "baseline_report_sha256": scope["baseline_report_sha256"],
        "detector_version": detector_version,
        "detector_sha256": detector_sha256,
        "holdout_id": holdout.holdout_id,
        "holdout_version": holdout.version,
        "holdout_manifest_sha256": holdout.manifest_sha256,
        "holdout_signature_sha256": holdout.signature_sha256,
        "expected_case_count": len(holdout.samples),
        "measured_case_count": len(rows),
        "raw_predictions": rows,
        "raw_predictions_sha256": sha256_hex(canonical_json(rows)),
        "stratified_report": report,
        "weak_categories": weak,
        "eligibility": "HOLD" if weak else "ELIGIBLE",
        "holdout_text_sha256": holdout.text_hashes(),
        THREATS: mappings_json(scope.policy.threat_mappings),
    }
