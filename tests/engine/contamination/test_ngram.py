"""The n-gram channels: exact scores, and no pair at or above a threshold is missed."""

from __future__ import annotations

import json
import random
import re

import pytest

from engine.contamination.bench.reference import reference_scan
from engine.contamination.channels.internal import clusters, ngram_pairs
from engine.contamination.channels.ngram import EvalIndex, NgramSettings, match_batch
from tests.conftest import REPO

SAMPLE = REPO / "sample_data" / "contamination"


def oracle_shingles(text: str, n: int = 13) -> set[str]:
    """Every run of n words of the canonical text (the whole text if fewer), written out
    again independently of the engine."""
    words = re.sub(r"\s+", " ", text.strip().lower()).split(" ")
    if len(words) < n:
        return {" ".join(words)}
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def oracle_pairs(evals: list[str], docs: list[str], jaccard: float, containment: float):
    out = {}
    for e, et in enumerate(evals):
        a = oracle_shingles(et)
        for d, dt in enumerate(docs):
            b = oracle_shingles(dt)
            shared = len(a & b)
            if shared / len(a | b) >= jaccard or shared / len(a) >= containment:
                out[(e, d)] = (shared / len(a | b), shared / len(a))
    return out


def make_corpus(seed: int, n_eval: int = 40, n_docs: int = 300):
    """Eval items and documents from a tiny vocabulary, with copies, edits and splices."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(60)]
    evals = [" ".join(rng.choices(vocab, k=rng.randint(5, 45))) for _ in range(n_eval)]
    docs = []
    for _ in range(n_docs):
        kind = rng.random()
        base = rng.choice(evals).split(" ")
        if kind < 0.25:  # light edits: a few words changed
            for _ in range(rng.randint(0, 4)):
                base[rng.randrange(len(base))] = rng.choice(vocab)
            docs.append(" ".join(base))
        elif kind < 0.5:  # a piece of an eval item inside other words
            i = rng.randrange(len(base))
            piece = base[i : i + rng.randint(5, 40)]
            docs.append(
                " ".join(
                    rng.choices(vocab, k=rng.randint(0, 20))
                    + piece
                    + rng.choices(vocab, k=rng.randint(0, 20))
                )
            )
        elif kind < 0.6:  # case and whitespace changes only
            docs.append("  " + "\n".join(w.upper() for w in base))
        else:
            docs.append(" ".join(rng.choices(vocab, k=rng.randint(1, 60))))
    return evals, docs


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("thresholds", [(0.8, 0.5), (0.3, 0.2), (1.0, 1.0)])
def test_flagged_pairs_equal_a_brute_force_comparison_of_every_pair(seed, thresholds):
    jaccard, containment = thresholds
    evals, docs = make_corpus(seed)
    index = EvalIndex(
        [re.sub(r"\s+", " ", e.strip().lower()) for e in evals],
        NgramSettings(jaccard=jaccard, containment=containment),
    )
    found = {
        (p.eval_index, p.doc): (p.jaccard, p.containment) for p in match_batch(index, docs).pairs
    }
    expected = oracle_pairs(evals, docs, jaccard, containment)
    assert expected, "the corpus should contain pairs at these thresholds"
    assert found.keys() == expected.keys()
    for key, (j, c) in expected.items():
        assert found[key] == pytest.approx((j, c))


def test_scores_are_exact_on_a_hand_counted_pair():
    eval_text = " ".join(f"w{i}" for i in range(20))  # 8 shingles
    doc = " ".join(f"w{i}" for i in range(20)) + " tail"  # 9 shingles, 8 shared
    index = EvalIndex([eval_text], NgramSettings())
    (pair,) = match_batch(index, [doc]).pairs
    assert (pair.shared, pair.eval_shingles, pair.doc_shingles) == (8, 8, 9)
    assert pair.jaccard == pytest.approx(8 / 9)
    assert pair.containment == 1.0


def test_short_item_is_one_whole_string_shingle_matching_only_the_same_short_text():
    index = EvalIndex(["how many apples are left"], NgramSettings())
    result = match_batch(
        index,
        [
            "How  many apples are LEFT",
            "so how many apples are left",
            "how many apples are left " + "x " * 20,
        ],
    )
    assert [(p.doc, p.jaccard) for p in result.pairs] == [(0, 1.0)]


def test_internal_duplicates_are_pairs_of_distinct_items_grouped_into_clusters():
    base = " ".join(f"w{i}" for i in range(30))
    texts = [base, base.replace("w29", "x"), "unrelated " * 14, base + " more words here"]
    index = EvalIndex(texts, NgramSettings())
    pairs = ngram_pairs(index)
    assert set(pairs) == {(0, 1), (0, 3), (1, 3)}
    assert pairs[(0, 1)].jaccard == pytest.approx(17 / 19)
    assert clusters(list(pairs)) == [[0, 1, 3]]


def test_clusters_are_connected_components_largest_first():
    assert clusters([(5, 6), (1, 2), (2, 3), (9, 8)]) == [[1, 2, 3], [5, 6], [8, 9]]


def _sample_texts():
    evals = [json.loads(line)["question"] for line in open(SAMPLE / "eval.jsonl")]
    docs = [json.loads(line)["text"] for line in open(SAMPLE / "pool.jsonl")]
    return evals, docs


def near_threshold_corpus():
    """Gives eval items of 60 words, each with 8..16 words appended.

    Their Jaccard similarity 48/(48+k) straddles 0.8.
    """
    rng = random.Random(11)
    evals = [" ".join(f"v{rng.randrange(10**6)}" for _ in range(60)) for _ in range(30)]
    docs = [
        e + " " + " ".join(f"x{rng.randrange(10**6)}" for _ in range(k))
        for e in evals
        for k in range(8, 17)
    ]
    return evals, docs


def test_every_pair_the_datasketch_reference_flags_is_flagged_by_sealdesk():
    evals, docs = near_threshold_corpus()
    canon = [re.sub(r"\s+", " ", t.strip().lower()) for t in evals]
    reference = reference_scan(canon, [re.sub(r"\s+", " ", d.strip().lower()) for d in docs])
    index = EvalIndex(canon, NgramSettings())
    ours = {
        (p.eval_index, p.doc): p.jaccard for p in match_batch(index, docs).pairs if p.jaccard >= 0.8
    }
    exact = oracle_pairs(evals, docs, 0.8, 1.01)
    flagged_by_reference = {(e, d) for e, d, _ in reference.pool_hits}
    # what the reference flags with a true Jaccard >= 0.8, sealdesk flags too ...
    assert {k for k in flagged_by_reference if k in exact} <= ours.keys()
    # ... sealdesk flags exactly the true pairs, including ones the reference misses
    assert ours.keys() == exact.keys()
    missed = exact.keys() - flagged_by_reference
    wrongly = flagged_by_reference - exact.keys()
    assert missed or wrongly, "this corpus shows where estimation and exactness part"


def test_on_the_sample_sealdesk_finds_every_reference_pair_and_the_containment_ones():
    evals, docs = _sample_texts()
    canon = [re.sub(r"\s+", " ", t.strip().lower()) for t in evals]
    reference = reference_scan(canon, [re.sub(r"\s+", " ", d.strip().lower()) for d in docs])
    index = EvalIndex(canon, NgramSettings())
    pairs = match_batch(index, docs).pairs
    jaccard = {(p.eval_index, p.doc) for p in pairs if p.jaccard >= 0.8}
    assert {(e, d) for e, d, _ in reference.pool_hits} == jaccard == {(0, 0), (1, 2)}
    only_containment = {(p.eval_index, p.doc) for p in pairs} - jaccard
    assert len(only_containment) == 4  # two one-word edits, two copies inside posts
