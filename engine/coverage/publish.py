"""Publishing a measurement as evidence: re-derive, reserve, sign, read back, finalize.

The submitted benchmark is re-derived from its raw predictions under the
verified scope, holdout and baseline; only identical bytes are reserved.
The reservation is durable before the signer is called; the signed bytes
are then read back from where they were stored and must verify and equal
the re-derived benchmark before the reservation is finalized.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.canonical import canonical_json, sha256_hex
from engine.coverage.benchmark import BENCHMARK_FIELDS, derive_benchmark, evaluation_context
from engine.coverage.holdout import SealedHoldout
from engine.coverage.lineage import LineageStore
from engine.coverage.trust import TrustRoot
from engine.errors import InputError, IntegrityError

# (payload_sha256, raw) -> (bytes read back, signature read back)
SignAndStore = Callable[[str, bytes], tuple[bytes, bytes]]


@dataclass(frozen=True)
class Published:
    """A finalized measurement."""

    eligibility: str
    payload_sha256: str
    payload: bytes
    signature: bytes


def publish(
    benchmark: dict[str, Any],
    *,
    holdout: SealedHoldout,
    scope_raw: bytes,
    scope_signature: bytes,
    baseline_raw: bytes | None,
    baseline_signature: bytes | None,
    trust: TrustRoot,
    store: LineageStore,
    sign_and_store: SignAndStore,
) -> Published:
    """Gives the finalized evidence of a benchmark that re-derives exactly."""
    if not isinstance(benchmark, dict) or set(benchmark) != BENCHMARK_FIELDS:
        raise InputError("benchmark fields differ from the benchmark schema")
    context = evaluation_context(
        holdout,
        benchmark["detector_sha256"],
        benchmark["detector_version"],
        scope_raw,
        scope_signature,
        trust,
        baseline_raw=baseline_raw,
        baseline_signature=baseline_signature,
    )
    derived = derive_benchmark(
        benchmark["raw_predictions"],
        holdout,
        benchmark["detector_sha256"],
        benchmark["detector_version"],
        scope_raw,
        context,
    )
    raw = canonical_json(benchmark)
    if raw != canonical_json(derived):
        raise IntegrityError(
            "the submitted benchmark contradicts the independently re-derived "
            "one; nothing was reserved or signed"
        )
    payload_sha256 = store.reserve(context.scope, holdout.holdout_id, raw)
    readback, signature = sign_and_store(payload_sha256, raw)
    observed = trust.verify_document("benchmark", readback, signature, what="benchmark readback")
    if readback != raw or observed != derived:
        raise IntegrityError(
            f"signed readback of {payload_sha256[:16]}… differs from the "
            "reserved benchmark; the reservation stays unresolved"
        )
    store.finalize(payload_sha256, readback, signature)
    return Published(observed["eligibility"], sha256_hex(readback), readback, signature)
