"""A leak that keeps the numbers is kept among look-alikes: the numbers lane of the
candidates, and the bound on matches per eval item that ranks numbers-keeping first."""

from __future__ import annotations

import numpy as np
import pytest

from engine.contamination.channels.embedding import TopK
from engine.contamination.channels.kept_numbers import KeptNumbers, number_tokens
from engine.contamination.channels.prefilter import CandidateHeap, rerank

ITEM = "Mia bought 1,250 beads at $3.75 each and gave 7 of them to Leo. How many are left?"
LEAK = "Leo got 7 beads from Mia, who had bought 1250 of them for 3.75 dollars each. Left?"
# the item's wording with other numbers, and a problem sharing only small counting numbers
RENUMBERED = "Mia bought 1,400 beads at $2.10 each and gave 7 of them to Leo. How many are left?"
SMALL = "Sam has 7 cats and 3 dogs; 2 of them sleep. How many are awake?"


def test_numbers_are_read_as_written_and_normalised():
    assert number_tokens("1,250 and 1250, 3.50 then 4.0 and 007 at 12:30") == [
        "1250",
        "3.5",
        "4",
        "7",
        "12",
        "30",
    ]
    assert number_tokens("no numbers here") == []


def test_the_share_weighs_a_small_counting_number_less_than_a_rare_amount():
    kept = KeptNumbers([ITEM])
    # 1250 and 3.75 weigh 1 each, 7 weighs 0.3: a total of 2.3
    assert kept.share(0, LEAK) == pytest.approx(1.0)
    assert kept.share(0, RENUMBERED) == pytest.approx(0.3 / 2.3)
    assert kept.share(0, SMALL) == pytest.approx(0.3 / 2.3)


def test_only_documents_keeping_two_numbers_of_an_item_are_found():
    kept = KeptNumbers([ITEM, SMALL])
    items, docs, shares = kept.keepers([RENUMBERED, LEAK, "7 and 3 and 2", "nothing"])
    found = {(int(e), int(d)): float(s) for e, d, s in zip(items, docs, shares, strict=True)}
    # the leak keeps three of ITEM's numbers; "7 and 3 and 2" keeps SMALL's three; the
    # renumbered copy keeps one number of each item, which is not enough to be found
    assert found == {(0, 1): pytest.approx(1.0), (1, 2): pytest.approx(1.0)}


def _unit(rows: list[list[float]]) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float64)
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def test_the_numbers_lane_keeps_a_leak_that_look_alikes_push_out_of_the_nearest():
    # the eval item and, under the static model, three renumbered look-alikes nearer
    # to it than the leak: with K=2 the nearest lane holds two look-alikes only
    eval_static = _unit([[1.0, 0.0]])
    texts = [RENUMBERED, RENUMBERED.replace("1,400", "1,900"), LEAK, RENUMBERED + " Now."]
    vectors = _unit([[1.0, 0.05], [1.0, 0.06], [1.0, 0.9], [1.0, 0.07]])
    alone = CandidateHeap(eval_static, 2)
    alone.add(vectors, 0, list("abcd"), texts)
    assert 2 not in set(alone.candidates()[1][0].tolist())
    both = CandidateHeap(eval_static, 2, KeptNumbers([ITEM]), 1)
    both.add(vectors, 0, list("abcd"), texts)
    _, rows = both.candidates()
    assert rows[0, :2].tolist() == [0, 1] and rows[0, 2] == 2
    assert set(both.docs) == {0, 1, 2}


def test_the_lane_is_the_same_however_the_pool_is_batched_or_sharded():
    rng = np.random.default_rng(3)
    evals = [ITEM, SMALL, "Ann ran 12 km in 1.5 hours, then 8 km more."]
    texts = [
        f"{rng.integers(1, 40)} then {rng.integers(1, 40)} and 1,250 at 3.75 or 12 km in 1.5"
        for _ in range(60)
    ]
    vectors = _unit(rng.normal(size=(60, 4)).tolist())
    eval_static = _unit(rng.normal(size=(3, 4)).tolist())
    kept = KeptNumbers(evals)
    one = CandidateHeap(eval_static, 5, kept, 4)
    one.add(vectors, 0, list(range(60)), texts)
    batched = CandidateHeap(eval_static, 5, kept, 4)
    for start in range(0, 60, 7):
        batched.add(
            vectors[start : start + 7],
            start,
            list(range(start, start + 7)),
            texts[start : start + 7],
        )
    merged = CandidateHeap(eval_static, 5, kept, 4)
    for start in (0, 25):
        shard = CandidateHeap(eval_static, 5, kept, 4)
        end = start + 25 if start == 0 else 60
        shard.add(vectors[start:end], 0, list(range(start, end)), texts[start:end])
        scores, rows = shard.candidates()
        merged.absorb(scores, rows, dict(shard.docs), start)
    for other in (batched, merged):
        assert np.array_equal(one.candidates()[1], other.candidates()[1])
    assert (one.candidates()[1][:, 5:] >= 0).any()  # the lane holds documents


def test_the_bound_keeps_every_match_at_the_threshold_numbers_keeping_first():
    # one eval item, four documents at the threshold: three look-alikes nearer than the
    # leak; a bound of 2 keeps the leak first, then the nearest look-alike, and counts one
    eval_vectors = _unit([[1.0, 0.0]])
    texts = [RENUMBERED, RENUMBERED + " Now.", LEAK, "unrelated prose"]
    vectors = _unit([[1.0, 0.1], [1.0, 0.12], [1.0, 0.5], [0.0, 1.0]])
    top = TopK(eval_vectors, 2, 0.8, KeptNumbers([ITEM]))
    top.add(vectors[:2], 0, ["a", "b"], texts[:2])
    top.add(vectors[2:], 2, ["c", "d"], texts[2:])
    assert [j for _, j, _ in top.flagged()] == [0, 2]
    assert top.index[0].tolist() == [2, 0]  # the leak first
    assert top.over_bound == 1
    assert set(top.docs) == {0, 2}
    # without the numbers the same bound keeps the two nearest look-alikes
    plain = TopK(eval_vectors, 2, 0.8)
    plain.add(vectors, 0, list("abcd"), texts)
    assert [j for _, j, _ in plain.flagged()] == [0, 1]


def test_nothing_under_the_threshold_is_held_and_a_candidate_of_two_lanes_counts_once():
    eval_static = _unit([[1.0, 0.0]])
    texts = [LEAK, "prose about 3 cats", RENUMBERED]
    vectors = _unit([[1.0, 0.2], [0.0, 1.0], [1.0, 0.1]])
    heap = CandidateHeap(eval_static, 2, KeptNumbers([ITEM]), 2)
    heap.add(vectors, 0, list("abc"), texts)
    _, rows = heap.candidates()
    assert 0 in rows[0, :2] and 0 in rows[0, 2:]  # the leak is in both lanes

    def embed(batch: list[str]) -> np.ndarray:
        return _unit([[1.0, 0.2] if "leo got" in t else [0.0, 1.0] for t in batch])

    topk, scored = rerank(heap, _unit([[1.0, 0.0]]), embed, 10, 0.9, KeptNumbers([ITEM]))
    assert scored == 2
    assert [(e, j) for e, j, _ in topk.flagged()] == [(0, 0)]


def test_an_item_with_a_numbers_lane_sends_fewer_nearest_to_the_rerank():
    from engine.contamination.channels.prefilter import NEAREST_WITH_NUMBERS

    rng = np.random.default_rng(5)
    k = NEAREST_WITH_NUMBERS + 10
    texts = [f"prose number {n}" for n in range(200)]
    vectors = _unit(rng.normal(size=(200, 4)).tolist())
    evals = [ITEM, "a question stating no number at all"]
    heap = CandidateHeap(_unit(rng.normal(size=(2, 4)).tolist()), k, KeptNumbers(evals), 3)
    heap.add(vectors, 0, list(range(200)), texts)
    _, rows = heap.candidates()
    assert (rows[0, :k] >= 0).sum() == NEAREST_WITH_NUMBERS  # ITEM states three numbers
    assert (rows[1, :k] >= 0).sum() == k
    # the nearest kept are the item's best: the cut takes the tail of a best-first lane
    full = CandidateHeap(heap.eval, k)
    full.add(vectors, 0, list(range(200)), texts)
    assert (
        rows[0, :NEAREST_WITH_NUMBERS].tolist()
        == full.candidates()[1][0, :NEAREST_WITH_NUMBERS].tolist()
    )


def test_a_far_document_keeping_the_numbers_by_chance_stays_out_of_the_lane():
    from engine.contamination.channels.prefilter import LANE_MIN_COSINE

    eval_static = _unit([[1.0, 0.0]])
    far = np.cos(np.arccos(LANE_MIN_COSINE) + 0.05)  # just under the floor
    near = np.cos(np.arccos(LANE_MIN_COSINE) - 0.05)
    prose = "At 1,250 metres the path turned; 3.75 km later we stopped. 7 swans."
    vectors = np.asarray([[far, np.sqrt(1 - far**2)], [near, np.sqrt(1 - near**2)]])
    heap = CandidateHeap(eval_static, 1, KeptNumbers([ITEM]), 2)
    heap.add(vectors.astype(np.float32), 0, ["far", "near"], [prose, prose])
    _, rows = heap.candidates()
    assert rows[0, 1:].tolist() == [1, -1]  # only the near one entered the lane


def test_a_heap_not_yet_full_takes_a_worse_document_and_lists_empty_slots_last():
    # one document a batch: while fewer than K are held, a worse one is still taken
    heap = CandidateHeap(_unit([[1.0, 0.0]]), 3)
    for row, vector in enumerate(([1.0, 0.1], [1.0, 0.9])):
        heap.add(_unit([vector]), row, [row], [f"t{row}"])
    scores, rows = heap.candidates()
    assert rows[0].tolist() == [0, 1, -1]
    assert scores[0, 2] == -np.inf and scores[0, 0] > scores[0, 1]


def _numbers_whole_text(text: str) -> list[str]:
    """The numbers as the whole-text pattern reads them, normalised the same way."""
    import re

    found = re.findall(r"(?<![\d.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", text)
    normal = []
    for f in found:
        plain = f.replace(",", "")
        if "." in plain:
            plain = plain.rstrip("0").rstrip(".")
        plain = plain.lstrip("0") or "0"
        normal.append("0" + plain if plain.startswith(".") else plain)
    return list(dict.fromkeys(normal))[:40]


def test_reading_numbers_run_by_run_finds_what_reading_the_whole_text_finds():
    import random

    draw = random.Random(5)
    alphabet = "0123456789" * 3 + ".,., $a-:"
    for _ in range(5000):
        text = "".join(draw.choice(alphabet) for _ in range(draw.randint(0, 30)))
        assert number_tokens(text) == _numbers_whole_text(text), text
