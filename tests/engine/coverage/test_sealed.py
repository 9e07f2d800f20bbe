"""The sealed benchmark: the sealed holdout, the signed scope, the baseline and the benchmark.

Every refusal of the sealed path, with real Ed25519 keys and real files. The
holdout is direct 10, obfuscated 10, benign 20; thresholds 0.8 / 0.1 / 0.1.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from engine.canonical import canonical_json, sha256_hex
from engine.coverage.benchmark import derive_benchmark, evaluation_context, predictions_from_results
from engine.coverage.holdout import load_holdout
from engine.coverage.tables import DETECTOR_RESULT_COLUMNS, read_table
from engine.errors import InputError, IntegrityError, PermissionRefused
from tests.support.coverage import V1, V2, Authority, detector_results, holdout_samples, write_jsonl


def measure(
    auth: Authority,
    holdout: tuple[Path, Path],
    wrong: dict[str, int],
    *,
    scope: tuple[bytes, bytes],
    baseline: tuple[bytes, bytes] | None = None,
    candidate: str = V2,
    version: str = "v2",
    results_detector: str | None = None,
    results: list[dict] | None = None,
) -> dict:
    """Runs the whole sealed path (as the CLI does) and gives the benchmark."""
    scope_raw, scope_sig = scope
    sealed = load_holdout(
        holdout[0], holdout[1], json.loads(scope_raw)["holdout_manifest_sha256"], auth.trust
    )
    context = evaluation_context(
        sealed,
        candidate,
        version,
        scope_raw,
        scope_sig,
        auth.trust,
        baseline_raw=baseline and baseline[0],
        baseline_signature=baseline and baseline[1],
    )
    rows = (
        results
        if results is not None
        else detector_results(list(sealed.samples), wrong, results_detector or candidate)
    )
    table = read_table(write_jsonl(auth.root / "results.jsonl", rows), DETECTOR_RESULT_COLUMNS)
    rows = predictions_from_results(table, sealed, candidate)
    return derive_benchmark(rows, sealed, candidate, version, scope_raw, context)


def genesis(auth: Authority, holdout: tuple[Path, Path], wrong: dict[str, int]) -> bytes:
    """Gives the signed-ready canonical bytes of a v1 genesis benchmark."""
    scope = auth.scope(holdout[0], candidate=V1, version="v1")
    return canonical_json(measure(auth, holdout, wrong, scope=scope, candidate=V1, version="v1"))


# -- the measurement ---------------------------------------------------------


def test_genesis_within_thresholds_is_eligible(auth):
    holdout = auth.holdout()
    bench = measure(
        auth,
        holdout,
        {"direct": 2, "benign": 2},
        scope=auth.scope(holdout[0], candidate=V1, version="v1"),
        candidate=V1,
        version="v1",
    )
    assert bench["eligibility"] == "ELIGIBLE" and bench["weak_categories"] == []
    assert bench["baseline_report_sha256"] is None
    assert (bench["expected_case_count"], bench["measured_case_count"]) == (40, 40)


def test_candidate_against_baseline_gives_hold_with_each_finding(auth):
    # baseline: direct 9/10, obfuscated 10/10, benign 1/20.
    # candidate: direct 7/10 (low, drop 0.2), obfuscated 8/10 (drop 0.2),
    # benign 3/20 = 0.15 (high).
    holdout = auth.holdout()
    base = genesis(auth, holdout, {"direct": 1, "benign": 1})
    bench = measure(
        auth,
        holdout,
        {"direct": 3, "obfuscated": 2, "benign": 3},
        scope=auth.scope(holdout[0], baseline=base),
        baseline=(base, auth.sign("benchmark", base)),
    )
    assert bench["eligibility"] == "HOLD"
    assert [(f["category"], f["issue"]) for f in bench["weak_categories"]] == [
        ("direct", "low_recall"),
        ("direct", "recall_regression"),
        ("obfuscated", "recall_regression"),
        ("benign", "high_fpr"),
    ]
    regression = bench["weak_categories"][2]
    assert (regression["previous"], regression["current"], regression["delta"]) == (1.0, 0.8, 0.2)
    assert bench["baseline_report_sha256"] == sha256_hex(base)


def test_benchmark_binds_scope_holdout_and_raw_predictions(auth):
    holdout = auth.holdout()
    scope = auth.scope(holdout[0], candidate=V1, version="v1")
    bench = measure(auth, holdout, {}, scope=scope, candidate=V1, version="v1")
    assert bench["evaluation_policy_sha256"] == sha256_hex(scope[0])
    assert bench["holdout_manifest_sha256"] == sha256_hex(holdout[0].read_bytes())
    assert bench["holdout_signature_sha256"] == sha256_hex(holdout[1].read_bytes())
    assert bench["raw_predictions_sha256"] == sha256_hex(canonical_json(bench["raw_predictions"]))


def test_labels_come_from_the_sealed_holdout_not_the_candidate(auth):
    holdout = auth.holdout()
    bench = measure(
        auth,
        holdout,
        {"direct": 1},
        scope=auth.scope(holdout[0], candidate=V1, version="v1"),
        candidate=V1,
        version="v1",
    )
    first = bench["raw_predictions"][0]
    assert (first["case_id"], first["label"], first["pred"], first["category"]) == (
        "direct-00",
        1,
        0,
        "direct",
    )


# -- the prediction population ----------------------------------------------


def test_missing_case_is_refused(auth):
    holdout = auth.holdout()
    rows = detector_results(holdout_samples(), {}, V2)[:-1]
    with pytest.raises(InputError, match="have no prediction, first 'benign-19'"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0]), results=rows)


def test_duplicate_case_is_refused(auth):
    holdout = auth.holdout()
    rows = detector_results(holdout_samples(), {}, V2)
    rows.append(dict(rows[0], request_id="again"))
    with pytest.raises(InputError, match="ids must be unique"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0]), results=rows)


def test_extra_case_is_refused(auth):
    holdout = auth.holdout()
    rows = detector_results(holdout_samples(), {}, V2)
    rows.append(dict(rows[0], case_id="not-sealed", request_id="x"))
    with pytest.raises(InputError, match="an extra case"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0]), results=rows)


def test_answer_from_another_detector_is_refused(auth):
    holdout = auth.holdout()
    with pytest.raises(PermissionRefused, match="not the scope's candidate"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0]), results_detector=V1)


def test_repeated_request_id_is_refused(auth):
    holdout = auth.holdout()
    rows = detector_results(holdout_samples(), {}, V2)
    rows[1] = dict(rows[1], request_id=rows[0]["request_id"])
    with pytest.raises(InputError, match="request id repeats"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0]), results=rows)


# -- the sealed holdout -----------------------------------------------------


def test_holdout_bytes_other_than_the_scope_names_are_refused(auth):
    holdout = auth.holdout()
    other = auth.holdout(
        holdout_samples({"direct": 10, "obfuscated": 10, "benign": 19}), name="other.json"
    )
    with pytest.raises(IntegrityError, match="differ from the digest the signed scope names"):
        load_holdout(other[0], other[1], sha256_hex(holdout[0].read_bytes()), auth.trust)


def test_forged_holdout_signature_is_refused(auth):
    holdout = auth.holdout()
    forged = bytearray(holdout[1].read_bytes())
    forged[0] ^= 1
    holdout[1].write_bytes(bytes(forged))
    with pytest.raises(IntegrityError, match="holdout authority"):
        load_holdout(holdout[0], holdout[1], sha256_hex(holdout[0].read_bytes()), auth.trust)


def test_holdout_signed_with_another_roles_key_is_refused(auth):
    holdout = auth.holdout()
    holdout[1].write_bytes(auth.sign("scope", holdout[0].read_bytes()))
    with pytest.raises(IntegrityError, match="signed by another key"):
        load_holdout(holdout[0], holdout[1], sha256_hex(holdout[0].read_bytes()), auth.trust)


def test_holdout_signed_by_a_key_outside_the_trust_root_is_refused(auth, tmp_path):
    stranger = Authority(tmp_path / "stranger")
    holdout = auth.holdout()
    holdout[1].write_bytes(stranger.sign("holdout", holdout[0].read_bytes()))
    with pytest.raises(IntegrityError):
        load_holdout(holdout[0], holdout[1], sha256_hex(holdout[0].read_bytes()), auth.trust)


def test_signed_but_non_canonical_holdout_is_refused(auth):
    holdout = auth.holdout()
    pretty = json.dumps(json.loads(holdout[0].read_bytes()), indent=1).encode()
    holdout[0].write_bytes(pretty)
    holdout[1].write_bytes(auth.sign("holdout", pretty))
    with pytest.raises(InputError, match="not canonical"):
        load_holdout(holdout[0], holdout[1], sha256_hex(pretty), auth.trust)


def test_holdout_with_a_duplicated_case_is_refused(auth):
    samples = holdout_samples()
    samples[1] = dict(samples[1], case_id=samples[0]["case_id"])
    holdout = auth.holdout(samples)
    with pytest.raises(InputError) as err:
        load_holdout(holdout[0], holdout[1], sha256_hex(holdout[0].read_bytes()), auth.trust)
    assert err.value.field == "samples[1].case_id"


def test_holdout_with_mixed_labels_in_a_category_is_refused(auth):
    samples = holdout_samples()
    samples[12] = dict(samples[12], label_int=0)  # obfuscated-02 labelled benign
    holdout = auth.holdout(samples)
    with pytest.raises(InputError, match="mixed labels") as err:
        measure(auth, holdout, {}, scope=auth.scope(holdout[0]))
    assert err.value.field == "samples[12].label_int"


def test_holdout_with_an_undeclared_category_is_refused(auth):
    samples = holdout_samples() + [
        {
            "case_id": "x-1",
            "text": "t",
            "label_int": 1,
            "category": "jailbreak",
            "source_ref": "test",
        }
    ]
    holdout = auth.holdout(samples)
    with pytest.raises(InputError, match="'jailbreak' is not declared"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0]))


def test_holdout_missing_a_required_category_is_refused(auth):
    holdout = auth.holdout(holdout_samples({"direct": 10, "benign": 20}))
    with pytest.raises(InputError, match="'obfuscated' has no rows"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0]))


# -- the signed scope ---------------------------------------------------------


def test_forged_scope_signature_is_refused(auth):
    holdout = auth.holdout()
    raw, sig = auth.scope(holdout[0])
    with pytest.raises(IntegrityError, match="scope authority"):
        measure(auth, holdout, {}, scope=(raw.replace(b'"v2"', b'"v3"'), sig), version="v3")


def test_scope_signed_by_the_holdout_key_is_refused(auth):
    holdout = auth.holdout()
    raw, _ = auth.scope(holdout[0])
    with pytest.raises(IntegrityError):
        measure(auth, holdout, {}, scope=(raw, auth.sign("holdout", raw)))


def test_expired_scope_is_refused(auth):
    holdout = auth.holdout()
    with pytest.raises(PermissionRefused, match="expired"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0], expires=timedelta(seconds=-1)))


def test_candidate_digest_other_than_the_scope_is_refused(auth):
    holdout = auth.holdout()
    with pytest.raises(PermissionRefused, match="not the scope's candidate"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0], candidate=V1))


def test_candidate_version_other_than_the_scope_is_refused(auth):
    holdout = auth.holdout()
    with pytest.raises(PermissionRefused, match="version 'v2' is not the scope's 'v2-rc'"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0], version="v2-rc"))


def test_scope_naming_another_holdout_is_refused(auth):
    holdout = auth.holdout()
    other = auth.holdout(version="2", name="other.json")
    raw, sig = auth.scope(other[0])
    sealed = load_holdout(holdout[0], holdout[1], sha256_hex(holdout[0].read_bytes()), auth.trust)
    with pytest.raises(PermissionRefused, match="not the one the signed scope names"):
        evaluation_context(sealed, V2, "v2", raw, sig, auth.trust)


def test_scope_with_an_undeclared_field_is_refused(auth):
    holdout = auth.holdout()
    with pytest.raises(InputError, match="scope fields differ"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0], max_latency_ms=20))


# -- the baseline -------------------------------------------------------------


def against(
    auth: Authority,
    holdout: tuple[Path, Path],
    named: bytes | None,
    given: bytes,
    role: str = "benchmark",
):
    """Measures against the baseline given (signed with role's key) under a scope naming
    the baseline named (None: a genesis scope, naming none)."""
    scope = auth.scope(holdout[0]) if named is None else auth.scope(holdout[0], baseline=named)
    return measure(auth, holdout, {}, scope=scope, baseline=(given, auth.sign(role, given)))


def test_missing_required_baseline_is_refused(auth):
    holdout = auth.holdout()
    base = genesis(auth, holdout, {})
    with pytest.raises(PermissionRefused, match="requires baseline"):
        measure(auth, holdout, {}, scope=auth.scope(holdout[0], baseline=base))


def test_baseline_other_than_the_scope_names_is_refused(auth):
    holdout = auth.holdout()
    base = genesis(auth, holdout, {})
    other = genesis(auth, holdout, {"direct": 1})
    with pytest.raises(PermissionRefused, match="differ from the one the signed scope names"):
        against(auth, holdout, base, other)


def test_baseline_with_a_forged_signature_is_refused(auth):
    holdout = auth.holdout()
    base = genesis(auth, holdout, {})
    with pytest.raises(IntegrityError, match="benchmark authority"):
        against(auth, holdout, base, base, "scope")


def test_baseline_with_a_fabricated_aggregate_is_refused(auth):
    # The raw predictions say direct 8/10; the aggregate claims 10/10.
    holdout = auth.holdout()
    value = json.loads(genesis(auth, holdout, {"direct": 2}))
    value["stratified_report"][0].update(true_positive_count=10, detection_recall=1.0)
    fabricated = canonical_json(value)
    with pytest.raises(IntegrityError, match="fabricated"):
        against(auth, holdout, fabricated, fabricated)


def test_baseline_whose_raw_predictions_were_edited_is_refused(auth):
    holdout = auth.holdout()
    value = json.loads(genesis(auth, holdout, {"direct": 2}))
    value["raw_predictions"][0]["pred"] = 1
    edited = canonical_json(value)
    with pytest.raises(IntegrityError, match="do not hash to raw_predictions_sha256"):
        against(auth, holdout, edited, edited)


def test_baseline_of_another_holdout_version_is_refused(auth):
    old = auth.holdout(version="0", name="old.json")
    base = genesis(auth, old, {})
    holdout = auth.holdout()
    with pytest.raises(PermissionRefused, match="holdout_version"):
        against(auth, holdout, base, base)


def test_genesis_scope_cannot_consume_a_baseline(auth):
    holdout = auth.holdout()
    base = genesis(auth, holdout, {})
    with pytest.raises(PermissionRefused, match="genesis scope cannot consume"):
        against(auth, holdout, None, base)
