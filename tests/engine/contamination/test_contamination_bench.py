"""The benchmark command runs both sides on the same generated files and compares their pairs."""

from __future__ import annotations

import json

import pytest

from engine.contamination.bench.synthetic import make_synthetic


def test_synthetic_data_plants_leaks_where_it_says(tmp_path):
    data = make_synthetic(tmp_path, pool_size=400, eval_size=60)
    evals = [json.loads(line)["question"] for line in data.eval_path.open()]
    pool = [json.loads(line)["text"] for line in data.pool_path.open()]
    assert len(evals) == 60 and len(pool) == 400
    for e, p in data.planted["verbatim"]:
        assert pool[p] == evals[e]
    for e, p in data.planted["embedded"]:
        assert evals[e] in pool[p] and pool[p] != evals[e]
    for e, p in data.planted["one_word_changed"]:
        assert sum(a != b for a, b in zip(evals[e].split(), pool[p].split(), strict=True)) == 1


@pytest.mark.slow
def test_bench_reports_both_sides_and_the_same_jaccard_pairs(sealdesk, tmp_path):
    proc = sealdesk(
        "bench",
        "contamination",
        "--pool-size",
        "600",
        "--eval-size",
        "60",
        "--data-dir",
        tmp_path,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["reference"]["pool_docs"] == result["sealdesk"]["pool_docs"] == 600
    for side in ("reference", "sealdesk"):
        assert result[side]["docs_per_s"] > 0 and result[side]["peak_rss_mb"] > 0
    comparison = result["comparison"]
    assert comparison["same_ngram_pairs"] and comparison["same_internal_pairs"]
    assert comparison["both"] == result["reference"]["ngram_pairs"] > 0
    assert comparison["containment_pairs_reference_cannot_see"] > 0
    assert comparison["docs_per_s_ratio"] == pytest.approx(
        result["sealdesk"]["docs_per_s"] / result["reference"]["docs_per_s"], rel=0.01
    )
