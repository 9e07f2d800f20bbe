"""The sealed benchmark's lineage store, reserve before signing and finalize after readback.

Real SQLite files, real Ed25519 signatures, and real processes racing for
one genesis.
"""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from engine.canonical import canonical_json, sha256_hex
from engine.coverage.benchmark import derive_benchmark, evaluation_context
from engine.coverage.holdout import load_holdout
from engine.coverage.lineage import LineageStore, provision_store
from engine.coverage.publish import publish
from engine.errors import ConflictError, InputError, IntegrityError, PermissionRefused
from tests.support.coverage import V1, V2, Authority, reserve_in_child, scope_of


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "lineage.db"
    provision_store(path, "test-store", 5)
    return path


def open_store(auth: Authority, path: Path, store_id: str = "test-store") -> LineageStore:
    return LineageStore(path, store_id, 5, auth.trust)


def benchmark_for(
    auth: Authority, holdout, scope, *, candidate=V1, version="v1", baseline=None, misses=0
) -> dict:
    sealed = load_holdout(
        holdout[0], holdout[1], json.loads(scope[0])["holdout_manifest_sha256"], auth.trust
    )
    context = evaluation_context(
        sealed,
        candidate,
        version,
        scope[0],
        scope[1],
        auth.trust,
        baseline_raw=baseline and baseline[0],
        baseline_signature=baseline and baseline[1],
    )
    rows = [
        {
            "case_id": s["case_id"],
            "label": s["label_int"],
            "pred": 1 - s["label_int"] if i < misses else s["label_int"],
            "category": s["category"],
            "request_id": f"q{i}",
        }
        for i, s in enumerate(sealed.samples)
    ]
    return derive_benchmark(rows, sealed, candidate, version, scope[0], context)


def publish_with(auth, store, holdout, scope, bench, baseline=None, signer=None):
    sealed = load_holdout(
        holdout[0], holdout[1], json.loads(scope[0])["holdout_manifest_sha256"], auth.trust
    )
    return publish(
        bench,
        holdout=sealed,
        scope_raw=scope[0],
        scope_signature=scope[1],
        baseline_raw=baseline and baseline[0],
        baseline_signature=baseline and baseline[1],
        trust=auth.trust,
        store=store,
        sign_and_store=signer or (lambda sha, raw: (raw, auth.sign("benchmark", raw))),
    )


def published_genesis(auth, store):
    holdout = auth.holdout()
    scope = auth.scope(holdout[0], candidate=V1, version="v1")
    done = publish_with(auth, store, holdout, scope, benchmark_for(auth, holdout, scope))
    return holdout, (done.payload, done.signature)


# -- provisioning and opening ----------------------------------------------


def test_provisioning_refuses_an_existing_file(store_path: Path):
    with pytest.raises(ConflictError, match="never replaces"):
        provision_store(store_path, "test-store", 5)


def test_opening_a_missing_store_is_refused_and_creates_nothing(auth, tmp_path: Path):
    with pytest.raises(InputError, match="provisioned once"):
        open_store(auth, tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()


def test_opening_a_store_with_another_identity_is_refused(auth, store_path: Path):
    with pytest.raises(PermissionRefused, match="identity differs"):
        open_store(auth, store_path, "prod-store")


def test_opening_a_file_that_is_not_a_store_is_refused(auth, tmp_path: Path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(PermissionRefused, match="not a coverage lineage store"):
        open_store(auth, other)


def test_store_deadline_must_equal_the_signed_scope(auth, store_path: Path):
    holdout = auth.holdout()
    scope = auth.scope(holdout[0], candidate=V1, version="v1", decision_store_timeout_seconds=9)
    with LineageStore(store_path, "test-store", 5, auth.trust) as store:
        with pytest.raises(PermissionRefused, match="deadline"):
            store.reserve(scope_of(scope[0]), "test-holdout", b"{}")


# -- genesis and lineage ------------------------------------------------------


def test_publishing_reserves_signs_reads_back_and_finalizes(auth, store_path: Path):
    with open_store(auth, store_path) as store:
        holdout, (raw, sig) = published_genesis(auth, store)
        held = store.get(sha256_hex(raw))
    assert (held.payload, held.signature, held.policy_id) == (raw, sig, "test-policy")


def test_second_genesis_is_refused_even_under_a_fresh_scope(auth, store_path: Path):
    with open_store(auth, store_path) as store:
        holdout, _ = published_genesis(auth, store)
        # Another genesis scope for the same policy and holdout ids, other bytes.
        fresh = auth.scope(holdout[0], candidate=V1, version="v1", policy_version="2")
        with pytest.raises(PermissionRefused, match="genesis is one-use"):
            publish_with(auth, store, holdout, fresh, benchmark_for(auth, holdout, fresh))


def test_genesis_stays_used_after_the_store_is_reopened(auth, store_path: Path):
    with open_store(auth, store_path) as store:
        holdout, _ = published_genesis(auth, store)
    fresh = auth.scope(holdout[0], candidate=V1, version="v1", policy_version="3")
    with open_store(auth, store_path) as store, pytest.raises(PermissionRefused):
        store.reserve(scope_of(fresh[0]), "test-holdout", b"anything")


def test_normal_measurement_needs_an_established_lineage(auth, store_path: Path):
    holdout = auth.holdout()
    scope = auth.scope(holdout[0], baseline=b"a baseline kept elsewhere")
    with (
        open_store(auth, store_path) as store,
        pytest.raises(PermissionRefused, match="never falls back"),
    ):
        store.reserve(scope_of(scope[0]), "test-holdout", b"payload")


def test_normal_measurement_needs_the_baseline_completed_and_signed(auth, store_path: Path):
    holdout = auth.holdout()
    genesis_scope = auth.scope(holdout[0], candidate=V1, version="v1")
    base = canonical_json(benchmark_for(auth, holdout, genesis_scope))
    with open_store(auth, store_path) as store:
        store.reserve(scope_of(genesis_scope[0]), "test-holdout", base)  # never finalized
        scope = auth.scope(holdout[0], baseline=base)
        with pytest.raises(PermissionRefused, match="not completed, signed evidence"):
            store.reserve(scope_of(scope[0]), "test-holdout", b"next")


def test_normal_measurement_after_a_finalized_baseline_is_published(auth, store_path: Path):
    with open_store(auth, store_path) as store:
        holdout, base = published_genesis(auth, store)
        scope = auth.scope(holdout[0], baseline=base[0])
        bench = benchmark_for(
            auth, holdout, scope, candidate=V2, version="v2", baseline=base, misses=3
        )
        done = publish_with(auth, store, holdout, scope, bench, baseline=base)
    assert done.eligibility == "HOLD"


def test_the_same_measurement_cannot_be_reserved_twice(auth, store_path: Path):
    with open_store(auth, store_path) as store:
        holdout, base = published_genesis(auth, store)
        scope = auth.scope(holdout[0], baseline=base[0])
        bench = benchmark_for(auth, holdout, scope, candidate=V2, version="v2", baseline=base)
        publish_with(auth, store, holdout, scope, bench, baseline=base)
        with pytest.raises(ConflictError, match="already reserved"):
            publish_with(auth, store, holdout, scope, bench, baseline=base)


def test_a_benchmark_that_contradicts_its_rederivation_is_not_reserved(auth, store_path: Path):
    holdout = auth.holdout()
    scope = auth.scope(holdout[0], candidate=V1, version="v1")
    bench = benchmark_for(auth, holdout, scope, misses=3)
    bench["eligibility"] = "ELIGIBLE"
    bench["weak_categories"] = []
    with open_store(auth, store_path) as store:
        with pytest.raises(IntegrityError, match="contradicts"):
            publish_with(auth, store, holdout, scope, bench)
        assert store.db.execute("SELECT COUNT(*) FROM evidence").fetchone()[0] == 0


# -- finalize -------------------------------------------------------------------


def test_finalize_with_different_bytes_is_refused(auth, store_path: Path):
    holdout = auth.holdout()
    scope = auth.scope(holdout[0], candidate=V1, version="v1")
    raw = canonical_json(benchmark_for(auth, holdout, scope))
    other = canonical_json(benchmark_for(auth, holdout, scope, misses=1))
    with open_store(auth, store_path) as store:
        sha = store.reserve(scope_of(scope[0]), "test-holdout", raw)
        with pytest.raises(IntegrityError, match="differ from the reserved digest"):
            store.finalize(sha, other, auth.sign("benchmark", other))
        with pytest.raises(ConflictError, match="no open reservation"):
            store.finalize(sha256_hex(other), other, auth.sign("benchmark", other))
        assert store.get(sha).signature is None


def test_finalize_with_a_signature_from_another_key_is_refused(auth, store_path: Path):
    holdout = auth.holdout()
    scope = auth.scope(holdout[0], candidate=V1, version="v1")
    raw = canonical_json(benchmark_for(auth, holdout, scope))
    with open_store(auth, store_path) as store:
        sha = store.reserve(scope_of(scope[0]), "test-holdout", raw)
        with pytest.raises(IntegrityError):
            store.finalize(sha, raw, auth.sign("scope", raw))


def test_finalize_happens_once(auth, store_path: Path):
    with open_store(auth, store_path) as store:
        _, (raw, sig) = published_genesis(auth, store)
        with pytest.raises(ConflictError, match="already finalized"):
            store.finalize(sha256_hex(raw), raw, sig)


def test_failed_signing_leaves_the_reservation_unresolved_and_unreleased(auth, store_path: Path):
    holdout = auth.holdout()
    scope = auth.scope(holdout[0], candidate=V1, version="v1")
    bench = benchmark_for(auth, holdout, scope)

    def signer_fails(sha, raw):
        raise OSError("signing service unreachable")

    with open_store(auth, store_path) as store:
        with pytest.raises(OSError):
            publish_with(auth, store, holdout, scope, bench, signer=signer_fails)
        pending = store.unresolved()
        assert [r.payload for r in pending] == [canonical_json(bench)]
        # Neither a retry nor a re-measured genesis can take its place.
        with pytest.raises(PermissionRefused, match="one-use"):
            publish_with(auth, store, holdout, scope, bench)
        remeasured = benchmark_for(auth, holdout, scope, misses=1)
        with pytest.raises(PermissionRefused, match="one-use"):
            publish_with(auth, store, holdout, scope, remeasured)
        # Recovery: sign exactly the reserved bytes and finalize.
        raw = pending[0].payload
        store.finalize(pending[0].payload_sha256, raw, auth.sign("benchmark", raw))
        assert store.unresolved() == []


def test_readback_that_differs_from_the_reservation_is_not_finalized(auth, store_path: Path):
    holdout = auth.holdout()
    scope = auth.scope(holdout[0], candidate=V1, version="v1")
    bench = benchmark_for(auth, holdout, scope)
    swapped = canonical_json(benchmark_for(auth, holdout, scope, misses=2))
    with open_store(auth, store_path) as store:
        with pytest.raises(IntegrityError, match="readback"):
            publish_with(
                auth,
                store,
                holdout,
                scope,
                bench,
                signer=lambda sha, raw: (swapped, auth.sign("benchmark", swapped)),
            )
        assert len(store.unresolved()) == 1


# -- triggers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE evidence SET payload = x'00'",
        "UPDATE evidence SET signature = x'00'",
        "DELETE FROM evidence",
        "DELETE FROM lineages",
        "UPDATE lineages SET genesis_scope_sha256 = 'x'",
        "UPDATE metadata SET store_id = 'other'",
        "DELETE FROM metadata",
    ],
)
def test_triggers_refuse_replacement_and_deletion(auth, store_path: Path, statement: str):
    with open_store(auth, store_path) as store:
        published_genesis(auth, store)
    conn = sqlite3.connect(store_path)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(statement)
    conn.close()


# -- concurrency ----------------------------------------------------------------


def test_two_processes_reserving_the_same_genesis_exactly_one_wins(auth, store_path: Path):
    holdout = auth.holdout()
    scopes = [
        auth.scope(holdout[0], candidate=V1, version="v1", policy_version=str(n)) for n in (1, 2)
    ]
    payloads = [canonical_json(benchmark_for(auth, holdout, s)) for s in scopes]
    mp = multiprocessing.get_context("spawn")
    barrier, results = mp.Barrier(2), mp.Queue()
    workers = [
        mp.Process(
            target=reserve_in_child,
            args=(str(store_path), str(auth.trust.directory), s[0], p, barrier, results),
        )
        for s, p in zip(scopes, payloads, strict=True)
    ]
    for w in workers:
        w.start()
    outcomes = [results.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
    assert sorted(o[0] for o in outcomes) == ["refused", "won"], outcomes
    assert "one-use" in next(o[1] for o in outcomes if o[0] == "refused")
    conn = sqlite3.connect(store_path)
    assert conn.execute("SELECT COUNT(*) FROM lineages").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM evidence").fetchone()[0] == 1
    conn.close()
