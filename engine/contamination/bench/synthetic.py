"""Synthetic eval sets and pools for the benchmark, with planted leaks.

Words are pseudo-words drawn from a Zipf-like distribution, documents are
about ``doc_words`` words (about 500 bytes), one document in a hundred
carries an accented word (so the non-ASCII path is exercised too). Leaks
are planted at fixed positions: verbatim copies, copies with one word
changed, copies inside a longer document, and duplicated eval items.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "ti",
    "vo",
    "pe",
    "da",
    "gu",
    "ri",
    "zo",
    "be",
    "fa",
    "hu",
    "ji",
    "no",
    "qe",
    "wy",
]


@dataclass(frozen=True)
class SyntheticData:
    """Paths of a generated eval set and pool, and the planted pairs."""

    eval_path: Path
    pool_path: Path
    planted: dict[str, list[tuple[int, int]]]  # kind -> [(eval index, pool index)]
    pool_shards: tuple[Path, ...] = ()  # when written as shards: their files, in order


def _vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    from itertools import product

    every = ["".join(p) for k in (2, 3, 4) for p in product(_SYLLABLES, repeat=k)]
    chosen = rng.choice(len(every), size=size, replace=False)
    return sorted(every[i] for i in chosen.tolist())


def make_synthetic(
    directory: Path,
    *,
    pool_size: int,
    eval_size: int = 1319,
    eval_words: int = 50,
    doc_words: int = 85,
    seed: int = 7,
    shards: int = 0,
) -> SyntheticData:
    """Gives a written eval set and pool (JSONL) with leaks planted at known places.

    With ``shards`` > 0 the pool is written as that many files
    ``pool-00000.jsonl``... (equal row ranges, in order) instead of one
    ``pool.jsonl``; their concatenation is the same pool for the same seed.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(30_000, rng)
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 0.9
    weights /= weights.sum()

    eval_ids = rng.choice(len(vocab), size=(eval_size, eval_words), p=weights)
    evals = [" ".join([vocab[i] for i in row]) for row in eval_ids.tolist()]
    # internal duplicates: every 250th item repeats the one before it, one word changed
    for i in range(250, eval_size, 250):
        words = evals[i - 1].split(" ")
        words[-1] = "unique" + str(i)
        evals[i] = " ".join(words)

    planted: dict[str, list[tuple[int, int]]] = {
        "verbatim": [],
        "one_word_changed": [],
        "embedded": [],
    }
    step = max(pool_size // max(min(eval_size // 10, pool_size // 50), 1), 1)
    plants: dict[int, str] = {}
    kinds = list(planted)
    for k, pool_index in enumerate(range(step // 2, pool_size, step)):
        eval_index = (k * 37) % eval_size
        kind = kinds[k % 3]
        text = evals[eval_index]
        if kind == "one_word_changed":
            words = text.split(" ")
            words[len(words) // 2] = "changed"
            text = " ".join(words)
        elif kind == "embedded":
            # enough context around the copy that its Jaccard is far below 0.8
            # (containment stays 1.0): no MinHash estimate can flip the verdict
            text = (
                " ".join(vocab[i] for i in rng.choice(len(vocab), size=30).tolist())
                + " "
                + text
                + " "
                + " ".join(vocab[i] for i in rng.choice(len(vocab), size=20).tolist())
            )
        plants[pool_index] = text
        planted[kind].append((eval_index, pool_index))

    with open(directory / "eval.jsonl", "w", encoding="utf-8") as handle:
        for i, text in enumerate(evals):
            handle.write(json.dumps({"id": f"e{i}", "question": text}) + "\n")
    chunk = 50_000
    names = (
        [directory / f"pool-{k:05d}.jsonl" for k in range(shards)]
        if shards
        else [directory / "pool.jsonl"]
    )
    bounds = [pool_size * k // len(names) for k in range(len(names) + 1)]
    handles = [open(name, "w", encoding="utf-8") for name in names]
    try:
        for start in range(0, pool_size, chunk):
            count = min(chunk, pool_size - start)
            rows = rng.choice(len(vocab), size=(count, doc_words), p=weights)
            lines = []
            for offset, row in enumerate(rows):
                index = start + offset
                doc_text = plants.get(index)
                if doc_text is None:
                    drawn = " ".join([vocab[i] for i in row.tolist()])
                    doc_text = "café " + drawn if index % 100 == 99 else drawn
                lines.append(
                    json.dumps({"id": f"d{index}", "text": doc_text}, ensure_ascii=False) + "\n"
                )
            for k, handle in enumerate(handles):
                low, high = max(bounds[k], start), min(bounds[k + 1], start + count)
                if low < high:
                    handle.write("".join(lines[low - start : high - start]))
    finally:
        for handle in handles:
            handle.close()
    return SyntheticData(
        directory / "eval.jsonl",
        names[0] if not shards else directory,
        planted,
        tuple(names) if shards else (),
    )
