"""Measuring a candidate end to end: verify the signed inputs, derive, reserve, sign, finalize.

This is the evidence service's run of ``coverage benchmark``: every signed
input is verified and the benchmark derived before anything is written;
then its exact bytes are reserved in the lineage store, signed, written to
the run's artifacts, read back and finalized. Without a signing key the
reservation is left unsigned for ``coverage finalize`` (recovery).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from engine.artifacts import read_verified
from engine.canonical import canonical_json
from engine.coverage.benchmark import derive_benchmark, evaluation_context, predictions_from_results
from engine.coverage.holdout import load_holdout
from engine.coverage.lineage import LineageStore, Reservation
from engine.coverage.publish import publish
from engine.coverage.scope import check_scope
from engine.coverage.tables import DETECTOR_RESULT_COLUMNS, read_table
from engine.coverage.trust import TrustRoot, read_signed
from engine.run_records import SIGNATURE_KEYS, write_run
from engine.workspace import Workspace

BENCHMARK = "benchmark.json"
SIGNATURE = BENCHMARK + ".sig"


@dataclass(frozen=True)
class Measured:
    """A reserved (and, with a key, signed and finalized) measurement."""

    benchmark: dict[str, Any]
    payload_sha256: str
    path: Path
    payload: bytes
    signature: bytes | None


@overload
def store_benchmark(
    ws: Workspace,
    payload_sha256: str,
    raw: bytes,
    signature: None,
    public_key: None = None,
    *,
    kind: str = "coverage-benchmark",
) -> tuple[Path, bytes, None]: ...


@overload
def store_benchmark(
    ws: Workspace,
    payload_sha256: str,
    raw: bytes,
    signature: bytes,
    public_key: Ed25519PublicKey,
    *,
    kind: str = "coverage-benchmark",
) -> tuple[Path, bytes, bytes]: ...


def store_benchmark(
    ws: Workspace,
    payload_sha256: str,
    raw: bytes,
    signature: bytes | None,
    public_key: Ed25519PublicKey | None = None,
    *,
    kind: str = "coverage-benchmark",
) -> tuple[Path, bytes, bytes | None]:
    """Gives (path, bytes read back, signature read back) after writing and recording
    the run's ``benchmark.json`` and, when signed, ``benchmark.json.sig``.

    A signature is recorded with ``public_key``, the benchmark authority's key it
    verifies under: a sign-off checks it over the benchmark without a trust root.
    """
    outputs = {BENCHMARK: raw}
    manifest: dict[str, Any] = {"kind": kind, "inputs": {"payload_sha256": payload_sha256}}
    if signature is not None:
        if public_key is None:
            raise ValueError("a signed benchmark is recorded with the key it verifies under")
        outputs[SIGNATURE] = signature
        manifest[SIGNATURE_KEYS] = {
            SIGNATURE: public_key.public_bytes(
                serialization.Encoding.Raw, serialization.PublicFormat.Raw
            ).hex()
        }
    written = write_run(
        ws,
        f"coverage-benchmark-{payload_sha256[:16]}",
        outputs,
        manifest,
        hint="a measurement's files are sealed once written",
    )
    path = written.directory / BENCHMARK
    if signature is None:
        return path, read_verified(path), None
    return path, read_verified(path), read_verified(written.directory / SIGNATURE)


def measure_candidate(
    ws: Workspace,
    trust: TrustRoot,
    *,
    holdout: str,
    holdout_signature: str | None,
    scope: str,
    scope_signature: str | None,
    baseline: str | None,
    baseline_signature: str | None,
    predictions: str,
    candidate_sha256: str,
    candidate_version: str,
    store: str,
    store_id: str,
    key: Ed25519PrivateKey | None,
) -> Measured:
    """Gives the measurement after verifying, deriving, reserving and (with a key)
    signing, reading back and finalizing it."""
    if key is not None:
        # A wrong key found only after reserving would burn a one-use genesis.
        trust.check_private_key("benchmark", key, what="the signing key")
    scope_raw, scope_sig = read_signed(scope, scope_signature)
    verified = check_scope(
        trust.verify_document("scope", scope_raw, scope_sig, what=scope), scope_raw, path=scope
    )
    sealed = load_holdout(
        holdout, holdout_signature or f"{holdout}.sig", verified["holdout_manifest_sha256"], trust
    )
    baseline_raw, baseline_sig = (
        read_signed(baseline, baseline_signature) if baseline else (None, None)
    )
    context = evaluation_context(
        sealed,
        candidate_sha256,
        candidate_version,
        scope_raw,
        scope_sig,
        trust,
        baseline_raw=baseline_raw,
        baseline_signature=baseline_sig,
        scope_path=scope,
        baseline_path=baseline or "baseline",
    )
    rows = predictions_from_results(
        read_table(predictions, DETECTOR_RESULT_COLUMNS), sealed, candidate_sha256
    )
    result = derive_benchmark(rows, sealed, candidate_sha256, candidate_version, scope_raw, context)
    raw = canonical_json(result)
    with LineageStore(
        store, store_id, verified["decision_store_timeout_seconds"], trust
    ) as lineage:
        if key is None:
            payload_sha256 = lineage.reserve(context.scope, sealed.holdout_id, raw)
            path = store_benchmark(ws, payload_sha256, raw, None)[0]
            return Measured(result, payload_sha256, path, raw, None)
        # publish re-derives everything independently before reserving.
        done = publish(
            result,
            holdout=sealed,
            scope_raw=scope_raw,
            scope_signature=scope_sig,
            baseline_raw=baseline_raw,
            baseline_signature=baseline_sig,
            trust=trust,
            store=lineage,
            sign_and_store=lambda sha, data: store_benchmark(
                ws, sha, data, key.sign(data), key.public_key()
            )[1:],
        )
    path = ws.run_dir(f"coverage-benchmark-{done.payload_sha256[:16]}") / BENCHMARK
    return Measured(result, done.payload_sha256, path, done.payload, done.signature)


def finalize_reservation(
    ws: Workspace, lineage: LineageStore, reserved: Reservation, signature: bytes
) -> Path:
    """Gives the benchmark path after completing a reservation with a signature over
    exactly its reserved bytes (recovery: nothing is re-measured)."""
    lineage.trust.verify(
        "benchmark", reserved.payload, signature, what=f"reservation {reserved.payload_sha256}"
    )
    path, raw, back = store_benchmark(
        ws,
        reserved.payload_sha256,
        reserved.payload,
        signature,
        lineage.trust.public_key("benchmark"),
        kind="coverage-finalize",
    )
    lineage.finalize(reserved.payload_sha256, raw, back)
    return path
