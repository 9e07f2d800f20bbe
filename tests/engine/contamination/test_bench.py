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


def test_the_paraphrase_pool_has_a_lookalike_half_with_renumbered_copies(tmp_path):
    from engine.contamination.bench.paraphrase_data import RENUMBERED, make_paraphrase_data
    from engine.contamination.inputs.canonical_text import numbers_only_differ

    data = make_paraphrase_data(tmp_path, 3000, 48, 1000)
    evals = [json.loads(line)["question"] for line in data.eval_path.open()]
    pool = [json.loads(line)["text"] for line in data.pool_path.open()]
    assert len(data.planted) == 2 * 48 and len(data.planted_in_subset) == 48
    assert 0 < len(data.lookalike_items) < 48
    for e, text in enumerate(evals):
        copies = sum(1 for doc in pool if numbers_only_differ(text, doc))
        assert copies == (RENUMBERED if e in data.lookalike_items else 0), e
    # every other word problem in the pool is of a family of the look-alike half
    import re

    from engine.contamination.bench.paraphrase_data import _FAMILIES, has_lookalikes

    def family_of(doc: str) -> int | None:
        for f, (_, question) in enumerate(_FAMILIES):
            pattern = re.escape(question).replace(r"\{n\}", r"\w+").replace(r"\{o\}", r"[\w ]+")
            if re.search(pattern.replace(r"\{p\}", r"\w+") + "$", doc):
                return f
        return None

    planted_docs = {p for _, p in data.planted}
    families = {family_of(doc) for p, doc in enumerate(pool) if p not in planted_docs}
    families.discard(None)
    assert families and all(has_lookalikes(f) for f in families)
    assert any(not has_lookalikes(e % len(_FAMILIES)) for e in range(48))


def test_embed_data_with_a_pair_naming_no_pool_row_is_refused_in_one_line(sealdesk, tmp_path):
    (tmp_path / "eval.jsonl").write_text(json.dumps({"id": "r0", "question": "q"}) + "\n")
    (tmp_path / "pool.jsonl").write_text(json.dumps({"id": "t0", "text": "t"}) + "\n")
    (tmp_path / "planted.jsonl").write_text(json.dumps({"eval_id": "r0", "pool_id": "t9"}) + "\n")
    proc = sealdesk("bench", "contamination", "--embed", "--embed-data", tmp_path)
    assert proc.returncode != 0
    (line,) = proc.stderr.strip().splitlines()
    assert f"{tmp_path / 'planted.jsonl'}:1: pool_id: 't9' is not an id of pool.jsonl" in line
    assert not (tmp_path / "workspace").exists()  # nothing written
