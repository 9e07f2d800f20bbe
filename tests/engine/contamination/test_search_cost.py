"""The paraphrase search is chosen by its estimated cost, not by a fixed pool size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.contamination.inputs.shards import sharded_pool
from engine.contamination.inputs.sources import resolve_source
from engine.contamination.scan import (
    DISTILL_COST,
    STATIC_COST,
    TWO_STAGE_SHARE,
    ScanConfig,
    SearchCost,
    search_method,
)


def _jsonl(path: Path, rows: int, field: str = "text") -> Path:
    path.write_text("".join(json.dumps({field: f"text {n}"}) + "\n" for n in range(rows)))
    return path


def _config(tmp_path: Path, eval_rows: int, pool: object, **options) -> ScanConfig:
    evals = resolve_source(
        "eval", str(_jsonl(tmp_path / "eval.jsonl", eval_rows)), text_field="text", id_field=None
    )
    return ScanConfig.of(eval=evals, pool=pool, **options)  # type: ignore[arg-type]


def test_the_crossover_is_where_two_stage_costs_the_given_share_of_exhaustive():
    cost = SearchCost(None, 100, 100 * 70, distilled=False)
    limit = cost.crossover()
    assert limit is not None
    at = SearchCost(limit, 100, 7000, False)
    below = SearchCost(limit - 1, 100, 7000, False)
    assert at.two_stage() <= TWO_STAGE_SHARE * at.exhaustive()
    assert below.two_stage() > TWO_STAGE_SHARE * below.exhaustive()
    # the rerank cannot embed more candidates than the pool holds
    assert SearchCost(10, 100, 7000, True).two_stage() == pytest.approx(STATIC_COST * 10 + 10)
    # a workspace that holds the prefilter already pays no distillation
    assert SearchCost(None, 100, 7000, True).crossover() < limit - DISTILL_COST


@pytest.mark.parametrize("distilled", [False, True])
def test_a_pool_either_side_of_the_crossover_gets_the_cheaper_search(tmp_path, distilled):
    eval_rows, k, lane = 30, 50, 20
    limit = SearchCost(None, eval_rows, eval_rows * (k + lane), distilled).crossover()
    assert limit is not None
    for rows, two_stage in ((limit - 1, False), (limit, True)):
        pool_file = _jsonl(tmp_path / f"pool-{rows}.jsonl", rows)
        pool = resolve_source("pool", str(pool_file), text_field="text", id_field=None)
        chosen, why = search_method(_config(tmp_path, eval_rows, pool), distilled)
        assert chosen is two_stage, why
        assert f"pool of {rows} documents, {eval_rows} eval items" in why
        assert f"two-stage from {limit:,} documents" in why
        assert ("distilling" in why) is not distilled


def test_a_larger_eval_set_moves_the_crossover_up(tmp_path):
    pool = resolve_source(
        "pool", str(_jsonl(tmp_path / "pool.jsonl", 9000)), text_field="text", id_field=None
    )
    small, _ = search_method(_config(tmp_path, 10, pool), distilled=True)
    large, why = search_method(_config(tmp_path, 200, pool), distilled=True)
    assert small is True and large is False, why


def test_a_sharded_pool_is_counted_up_to_the_crossover_only(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    for n in range(3):
        _jsonl(shards / f"p-{n}.jsonl", 4000)
    pool = sharded_pool(str(shards / "p-*.jsonl"), text_field="text", id_field=None)
    chosen, why = search_method(_config(tmp_path, 10, pool), distilled=True)
    limit = SearchCost(None, 10, 700, True).crossover()
    assert chosen is True
    assert why.startswith(f"pool of {limit}+ documents in 3 shard(s), "), why


def test_an_option_overrides_the_estimate(tmp_path):
    pool = resolve_source(
        "pool", str(_jsonl(tmp_path / "pool.jsonl", 5)), text_field="text", id_field=None
    )
    assert search_method(_config(tmp_path, 3, pool, embed_two_stage=True)) == (
        True,
        "--embed-two-stage",
    )
    big = resolve_source(
        "pool", str(_jsonl(tmp_path / "big.jsonl", 50_000)), text_field="text", id_field=None
    )
    assert search_method(_config(tmp_path, 3, big, embed_exhaustive=True)) == (
        False,
        "--embed-exhaustive",
    )


def test_read_eval_items_that_state_numbers_lower_the_bound_and_the_crossover(tmp_path):
    from engine.contamination.channels.prefilter import NEAREST_WITH_NUMBERS
    from engine.contamination.scan import candidates_bound

    k, lane = 50, 20
    word_problems = [f"Mia had {n + 100} beads and gave 7 to Leo." for n in range(30)]
    prose = [f"A question without figures, number {n}." for n in range(10)]
    # an item with two numbers or more sends its nearest few and its lane; any other
    # its K nearest (it has no lane)
    bound = candidates_bound(word_problems + prose, k, lane)
    assert bound == 30 * (NEAREST_WITH_NUMBERS + lane) + 10 * k
    pool_file = _jsonl(tmp_path / "pool.jsonl", 3000)
    pool = resolve_source("pool", str(pool_file), text_field="text", id_field=None)
    config = _config(tmp_path, 40, pool)
    counted, why_counted = search_method(config, distilled=True)
    read, why_read = search_method(config, True, word_problems + prose)
    assert f"two-stage from {SearchCost(None, 40, 40 * (k + lane), True).crossover():,}" in (
        why_counted
    )
    assert f"two-stage from {SearchCost(None, 40, bound, True).crossover():,}" in why_read
    assert (counted, read) == (False, True)  # 3,000 documents: between the two crossovers
