"""Where the paraphrase search loses planted pairs: threshold, prefilter, or the bound.

``python -m engine.contamination.bench.where_lost DIR`` reads a directory the
paraphrase benchmark generated (eval.jsonl, pool.jsonl, planted.json) and
counts, for every planted paraphrase:

- its full-model cosine under the calibrated threshold (no search finds it);
- its rank under the static model among the whole pool, and whether that is
  within the prefilter's K nearest; whether the numbers lane holds it;
- for a sample of eval items, how many of the candidates the full model
  scores above it (three or more: an earlier top-3 turned it away).

It scores what the scan scores with the same models and caches (the
workspace's prefilter, an embedding cache file), so its figures explain a
benchmark run rather than estimate one.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _lines(path: Path, field: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line)[field] for line in handle]


def where_lost(
    directory: Path, workspace: Path, cache: Path, k: int, lane: int, sample: int
) -> dict[str, Any]:
    """Gives the counts described in the module's docstring."""
    from engine.contamination.channels.calibration import (
        DEFAULT_CALIBRATION,
        calibrate,
        read_calibration,
    )
    from engine.contamination.channels.embedding import (
        EmbedCounts,
        Embedder,
        EmbeddingCache,
        embed_texts,
        identify_model,
    )
    from engine.contamination.channels.kept_numbers import KeptNumbers
    from engine.contamination.channels.prefilter import (
        CandidateHeap,
        _decode,
        cached_prefilter,
        load_static,
    )
    from engine.contamination.inputs.canonical_text import canonical

    started = time.perf_counter()
    evals = [canonical(t) for t in _lines(directory / "eval.jsonl", "question")]
    pool = [canonical(t) for t in _lines(directory / "pool.jsonl", "text")]
    planted = [(int(e), int(p)) for e, p in json.loads((directory / "planted.json").read_text())]
    info = identify_model(None)
    embedder = Embedder(info)
    store = EmbeddingCache(cache)
    counts = EmbedCounts()

    def full(texts: list[str]) -> np.ndarray:
        return embed_texts(embedder, store, texts, counts).astype(np.float64)

    pairs, sha = read_calibration(DEFAULT_CALIBRATION)
    threshold = calibrate(pairs, sha, str(DEFAULT_CALIBRATION), full, info.sha256).threshold
    eval_full = full(evals)
    plant_full = full([pool[p] for _, p in planted])
    cosine = np.einsum("ij,ij->i", eval_full[[e for e, _ in planted]], plant_full)
    under = cosine < threshold

    static = load_static(Path(cached_prefilter(workspace / "cache" / "prefilter", info).path))
    eval_static = static.encode(evals).astype(np.float64)
    kept = KeptNumbers(evals)
    heap = CandidateHeap(eval_static.astype(np.float32), k, kept, lane)
    plant_static = static.encode([pool[p] for _, p in planted]).astype(np.float64)
    mine = np.einsum("ij,ij->i", eval_static[[e for e, _ in planted]], plant_static)
    above = np.zeros(len(planted), dtype=np.int64)  # pool documents nearer than the plant
    items = np.asarray([e for e, _ in planted])
    batch = 4096
    for start in range(0, len(pool), batch):
        texts = pool[start : start + batch]
        vectors = static.encode(texts)
        heap.add(vectors, start, [None] * len(texts), texts)
        sims = eval_static[items] @ vectors.astype(np.float64).T
        above += (sims > mine[:, None]).sum(axis=1)
    # both lanes untrimmed (candidates() cuts an item with numbers to its
    # NEAREST_WITH_NUMBERS nearest)
    _, rows = _decode(np.concatenate([heap.keys, heap.lane], axis=1))
    # each lane is held best first: its first k' columns are what a smaller lane keeps
    grid = {}
    for k_small in sorted({10, 15, 20, 30, k}):
        for lane_small in sorted({0, 5, 10, lane}):
            if k_small > k or lane_small > lane:
                continue
            picked = np.concatenate([rows[:, :k_small], rows[:, k : k + lane_small]], axis=1)
            unique = len(set(picked[picked >= 0].tolist()))
            held = [set(picked[e].tolist()) for e in range(len(evals))]
            found = sum(1 for n, (e, p) in enumerate(planted) if p in held[e] and not under[n])
            grid[f"k{k_small}+lane{lane_small}"] = {
                "candidates_to_rerank": unique,
                "planted_over_threshold_in_candidates": found,
            }
    # what the scan's rerank gets with these K and lane (an item with a numbers lane
    # sends its NEAREST_WITH_NUMBERS nearest only)
    _, sent = heap.candidates()
    held = [set(sent[e].tolist()) for e in range(len(evals))]
    grid["as_the_scan_sends"] = {
        "candidates_to_rerank": len(set(sent[sent >= 0].tolist())),
        "planted_over_threshold_in_candidates": sum(
            1 for n, (e, p) in enumerate(planted) if p in held[e] and not under[n]
        ),
    }
    nearest = [set(rows[e, :k].tolist()) for e in range(len(evals))]
    laned = [set(rows[e, k:].tolist()) for e in range(len(evals))]
    in_nearest = np.asarray([p in nearest[e] for e, p in planted])
    in_lane = np.asarray([p in laned[e] for e, p in planted])

    # the full model's rank among the nearest candidates, for a sample of eval items
    chosen = sorted(random.Random(7).sample(range(len(evals)), min(sample, len(evals))))

    outranked: list[int] = []
    for e in chosen:
        near = sorted(r for r in nearest[e] if r >= 0)
        vectors = full([pool[r] for r in near])
        scores = vectors @ eval_full[e]
        for n, (pe, p) in enumerate(planted):
            if pe == e and p in nearest[e] and not under[n]:
                outranked.append(int((scores > cosine[n] + 1e-9).sum()))
    store.close()
    total = len(planted)
    return {
        "planted": total,
        "threshold": round(threshold, 4),
        "under_threshold": int(under.sum()),
        "outside_static_nearest_k": int((~in_nearest).sum()),
        "outside_static_nearest_k_and_over_threshold": int((~in_nearest & ~under).sum()),
        "static_rank_median": int(np.median(above)) + 1,
        "static_rank_p90": int(np.percentile(above, 90)) + 1,
        "in_numbers_lane": int(in_lane.sum()),
        "outside_both_lanes_and_over_threshold": int((~in_nearest & ~in_lane & ~under).sum()),
        "sampled_eval_items": len(chosen),
        "sampled_plants_in_nearest_over_threshold": len(outranked),
        "sampled_outranked_by_3_or_more": sum(1 for n in outranked if n >= 3),
        "k": k,
        "numbers_lane": lane,
        "by_lane_sizes": grid,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m engine.contamination.bench.where_lost")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--workspace", type=Path, default=None)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--numbers-lane", type=int, default=20)
    parser.add_argument("--sample", type=int, default=100)
    args = parser.parse_args(argv)
    workspace = args.workspace or args.directory / "workspace"
    cache = args.cache or args.directory / "where-lost-cache.sqlite"
    result = where_lost(args.directory, workspace, cache, args.k, args.numbers_lane, args.sample)
    sys.stdout.write(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
