"""Test data for the coverage tests: real keys, real files, small populations.

Populations are tiny and their answers hand-placed, so every expected
metric in the tests can be worked out on paper from the counts here.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine.canonical import canonical_json, sha256_hex
from engine.coverage.holdout import SCHEMA as HOLDOUT_SCHEMA
from engine.coverage.policy import CategoryGatePolicy
from engine.coverage.scope import SCHEMA as SCOPE_SCHEMA
from engine.coverage.trust import TrustRoot, generate, load_private_key
from tests.conftest import REPO

V1 = hashlib.sha256(b"test detector v1").hexdigest()
V2 = hashlib.sha256(b"test detector v2").hexdigest()
CATEGORIES = ("direct", "obfuscated", "benign")
SIZES = {"direct": 10, "obfuscated": 10, "benign": 20}
POLICY = CategoryGatePolicy(CATEGORIES, "benign", 0.8, 0.1, 0.1)


def eval_rows(wrong: dict[str, int], sizes: dict[str, int] = SIZES) -> list[dict[str, Any]]:
    """Gives unsealed-report rows: the first ``wrong[c]`` cases of each category are misses."""
    rows = []
    for category, n in sizes.items():
        label = 0 if category == "benign" else 1
        for i in range(n):
            pred = 1 - label if i < wrong.get(category, 0) else label
            rows.append(
                {
                    "case_id": f"{category}-{i:02d}",
                    "label": label,
                    "pred": pred,
                    "category": category,
                    "source": "test",
                }
            )
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def holdout_samples(sizes: dict[str, int] = SIZES) -> list[dict[str, Any]]:
    return [
        {
            "case_id": f"{c}-{i:02d}",
            "text": f"{c} case number {i}",
            "label_int": 0 if c == "benign" else 1,
            "category": c,
            "source_ref": "test",
        }
        for c, n in sizes.items()
        for i in range(n)
    ]


class Authority:
    """The holdout, scope and benchmark authorities of a test, with real Ed25519 keys."""

    def __init__(self, root: Path) -> None:
        self.root = root
        generate(root / "trust", root / "private")
        self.trust = TrustRoot.at(root / "trust")
        self.keys = {
            r: load_private_key(root / "private" / f"{r}.key")
            for r in ("scope", "holdout", "benchmark")
        }

    def sign(self, role: str, raw: bytes) -> bytes:
        return self.keys[role].sign(raw)

    def holdout(
        self,
        samples: list[dict[str, Any]] | None = None,
        *,
        version: str = "1",
        name: str = "holdout.json",
    ) -> tuple[Path, Path]:
        """Gives (manifest path, signature path) of a signed canonical holdout."""
        manifest = {
            "schema_version": HOLDOUT_SCHEMA,
            "holdout_id": "test-holdout",
            "version": version,
            "created_at": "2025-06-01T00:00:00Z",
            "samples": samples if samples is not None else holdout_samples(),
        }
        raw = canonical_json(manifest)
        path = self.root / name
        path.write_bytes(raw)
        sig = self.root / (name + ".sig")
        sig.write_bytes(self.sign("holdout", raw))
        return path, sig

    def scope(
        self,
        holdout_path: Path,
        *,
        baseline: bytes | None = None,
        candidate: str = V2,
        version: str = "v2",
        expires: timedelta = timedelta(days=1),
        **override: Any,
    ) -> tuple[bytes, bytes]:
        """Gives (scope bytes, signature) binding a holdout and optionally a baseline."""
        value = {
            "schema_version": SCOPE_SCHEMA,
            "policy_id": "test-policy",
            "policy_version": "1",
            "expires_at": (datetime.now(UTC) + expires).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "candidate_sha256": candidate,
            "candidate_version": version,
            "holdout_manifest_sha256": sha256_hex(holdout_path.read_bytes()),
            "baseline_report_sha256": None if baseline is None else sha256_hex(baseline),
            "required_categories": list(CATEGORIES),
            "benign_category": "benign",
            "min_category_recall": 0.8,
            "max_benign_fpr": 0.1,
            "max_category_regression": 0.1,
            "decision_store_timeout_seconds": 5,
            "threat_mappings": {},
        }
        value.update(override)
        raw = canonical_json(value)
        return raw, self.sign("scope", raw)


def detector_results(
    samples: list[dict[str, Any]], wrong: dict[str, int], detector: str, tag: str = "r"
) -> list[dict[str, Any]]:
    """Gives one recorded detector answer per sample; the first ``wrong[c]`` are misses."""
    seen: dict[str, int] = {}
    out = []
    for n, s in enumerate(samples):
        seen[s["category"]] = seen.get(s["category"], 0) + 1
        miss = seen[s["category"]] <= wrong.get(s["category"], 0)
        malicious = (s["label_int"] == 1) != miss
        out.append(
            {
                "case_id": s["case_id"],
                "label": "malicious" if malicious else "benign",
                "detector_sha256": detector,
                "request_id": f"{tag}-{n}",
            }
        )
    return out


def scope_of(raw: bytes):
    """Gives the checked Scope of scope bytes (signature checked elsewhere)."""
    from engine.coverage.scope import check_scope

    return check_scope(json.loads(raw), raw, path="scope")


def reserve_in_child(
    store: str, trust_dir: str, scope_raw: bytes, payload: bytes, barrier, results
) -> None:
    """Runs in a separate process: waits at the barrier, then reserves a genesis."""
    from engine.coverage.lineage import LineageStore
    from engine.errors import SealdeskError

    with LineageStore(store, "test-store", 5, TrustRoot.at(trust_dir)) as lineage:
        barrier.wait(timeout=60)
        try:
            results.put(("won", lineage.reserve(scope_of(scope_raw), "test-holdout", payload)))
        except SealdeskError as exc:
            results.put(("refused", f"{type(exc).__name__}: {exc}"))


SAMPLE = REPO / "sample_data" / "coverage"


def sample_benchmark(root: Path) -> tuple[Authority, Path, Path]:
    """Gives the demo's signed HOLD benchmark built from sample_data/coverage.

    As the demo does, minus the lineage store: genesis of v1 on the sealed
    holdout (kept as ``baseline.json``, ELIGIBLE), then v2 measured against
    it. Returns (authority, benchmark path, signature path).
    """
    from engine.coverage.benchmark import (
        derive_benchmark,
        evaluation_context,
        predictions_from_results,
    )
    from engine.coverage.holdout import load_holdout
    from engine.coverage.policy import read_document
    from engine.coverage.scope import build_scope
    from engine.coverage.tables import DETECTOR_RESULT_COLUMNS, read_table

    auth = Authority(root)
    manifest = root / "holdout.json"
    manifest.write_bytes((SAMPLE / "holdout.json").read_bytes())
    signature = auth.sign("holdout", manifest.read_bytes())
    (root / "holdout.json.sig").write_bytes(signature)
    expires = datetime.now(UTC) + timedelta(days=1)
    baseline = baseline_path = None
    for template, predictions in (
        ("scope-genesis.toml", "predictions_v1.jsonl"),
        ("scope-candidate.toml", "predictions_v2.jsonl"),
    ):
        value, _ = read_document(SAMPLE / template)
        scope_raw = build_scope(
            value,
            holdout_manifest_sha256=sha256_hex(manifest.read_bytes()),
            baseline_report_sha256=baseline and sha256_hex(baseline[0]),
            expires_at=expires,
            path=template,
        )
        scope_sig = auth.sign("scope", scope_raw)
        sealed = load_holdout(
            manifest, root / "holdout.json.sig", sha256_hex(manifest.read_bytes()), auth.trust
        )
        context = evaluation_context(
            sealed,
            value["candidate_sha256"],
            value["candidate_version"],
            scope_raw,
            scope_sig,
            auth.trust,
            baseline_raw=baseline and baseline[0],
            baseline_signature=baseline and baseline[1],
        )
        rows = predictions_from_results(
            read_table(SAMPLE / predictions, DETECTOR_RESULT_COLUMNS),
            sealed,
            value["candidate_sha256"],
        )
        raw = canonical_json(
            derive_benchmark(
                rows,
                sealed,
                value["candidate_sha256"],
                value["candidate_version"],
                scope_raw,
                context,
            )
        )
        baseline = (raw, auth.sign("benchmark", raw))
        if baseline_path is None:
            baseline_path = root / "baseline.json"
            baseline_path.write_bytes(raw)
            (root / "baseline.json.sig").write_bytes(baseline[1])
    path = root / "benchmark.json"
    path.write_bytes(baseline[0])
    (root / "benchmark.json.sig").write_bytes(baseline[1])
    return auth, path, root / "benchmark.json.sig"


def sample_source(root: Path):
    """Gives the demo HOLD benchmark as a verified finding source."""
    from engine.coverage.findings import load_benchmark

    auth, path, sig = sample_benchmark(root)
    return load_benchmark(path, sig, auth.trust)[0]


def backlog_args(
    benchmark: object, trust: object, rows: object, *extra: object, policy: object = None
) -> tuple:
    """Gives ``coverage backlog`` of a signed benchmark, checked against a trust root, with
    the detector's rows and an attribution policy (the sample's unless given)."""
    policy = SAMPLE / "attribution.toml" if policy is None else policy
    where = ("--benchmark", benchmark, "--trust-root", trust)
    return ("coverage", "backlog", *where, "--rows", rows, "--policy", policy, *extra)


def report_args(rows: object, *extra: object, policy: object = None, version: str = "v") -> tuple:
    """Gives ``coverage report`` on a detector's rows under a gate policy (the sample's
    unless given), for evaluation set "s" unless extra names another."""
    policy = SAMPLE / "policy.toml" if policy is None else policy
    set_id = () if "--evaluation-set-id" in extra else ("--evaluation-set-id", "s")
    gate = ("--policy", policy, "--detector-version", version)
    return ("coverage", "report", "--rows", rows, *gate, *set_id, *extra)
