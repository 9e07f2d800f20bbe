"""Each category's rate against its policy line, from the document a weak item names."""

from __future__ import annotations

import os

import pytest

from engine.artifacts import sidecar_path
from engine.canonical import sha256_hex
from engine.coverage.rates import read_rates, source_digest
from engine.errors import InputError, IntegrityError
from tests.support.calibration import REPORT, placed_report, stored_benchmark


def test_a_stored_benchmark_gives_each_rows_rate_and_the_lines_of_its_findings(workspace, tmp_path):
    source, document = stored_benchmark(workspace, tmp_path / "benchmark")
    items = [workspace.item("weak_categories", i["item_id"]) for i in workspace.items()]
    assert {source_digest(item["payload"]) for item in items} == {source.sha256}
    rates = read_rates(workspace.artifacts_dir, source.sha256)
    assert (rates.kind, rates.eligibility) == ("benchmark", document["eligibility"])
    rows = {r["category"]: r for r in document["stratified_report"]}
    assert [r.category for r in rates.rates] == list(rows)
    for rate in rates.rates:
        row = rows[rate.category]
        expected = (
            row["detection_recall"] if rate.metric == "recall" else row["false_positive_rate"]
        )
        assert rate.value == expected
    thresholds = {f["issue"]: f["threshold"] for f in document["weak_categories"]}
    recall_lines = {r.line for r in rates.rates if r.metric == "recall"}
    assert recall_lines == {thresholds["low_recall"]}
    assert {r.line for r in rates.rates if r.metric == "fpr"} == {thresholds["high_fpr"]}
    failing = {r.category for r in rates.rates if r.issues}
    assert failing == {f["category"] for f in document["weak_categories"]}


def test_a_report_carries_its_own_policy_lines(workspace):
    rates = read_rates(workspace.artifacts_dir, placed_report(workspace))
    by = {r.category: r for r in rates.rates}
    assert by["obfuscated"].value == 0.6 and by["obfuscated"].fails is True
    assert by["roleplay"].value == 0.8 and by["roleplay"].fails is False  # on the line passes
    assert by["benign"].metric == "fpr" and by["benign"].value == 0.15 and by["benign"].fails
    assert {r.line for r in rates.rates if r.metric == "recall"} == {
        REPORT["policy"]["min_attack_recall"]
    }


def test_a_document_whose_bytes_are_not_the_items_digest_is_refused(workspace):
    digest = placed_report(workspace)
    path = workspace.artifacts_dir / f"coverage-report-{digest[:16]}" / "category_report.json"
    edited = path.read_bytes().replace(b'"true_positive_count":19', b'"true_positive_count":20')
    os.chmod(path, 0o600)
    os.chmod(sidecar_path(path), 0o600)
    path.write_bytes(edited)
    sidecar_path(path).write_text(f"{sha256_hex(edited)}  category_report.json\n")
    with pytest.raises(IntegrityError, match="not the"):
        read_rates(workspace.artifacts_dir, digest)


def test_a_digest_nothing_was_stored_under_is_refused_naming_the_field(workspace):
    with pytest.raises(InputError) as caught:
        read_rates(workspace.artifacts_dir, "0" * 64)
    assert caught.value.field == "source.sha256"
