"""A channel that reads every pool document: its module alone puts it in the pool pass.

The channel (tests/support/pool_channel.py) flags a pool document holding an
eval item's words in any order. The test adds a module declaring it to the
channels package's path, the way ``registry.registered`` finds every channel:
no line of the scan, the pool pass, the records or the report is changed for
it. The pool is the synthetic one (planted verbatim and edited copies) with
three eval items' words shuffled into new documents, which no n-gram matches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.contamination.channels.registry import registered
from engine.contamination.pool.shard_scan import PoolReader
from engine.workspace import Workspace
from tests.support.contamination_shards import read_rows, scan, split_into, synthetic_pool
from tests.support.pool_channel import (
    DECLARES_WORD_BAG,
    channel_module,
    with_shuffled_copies,
)

SHUFFLED = (5, 17, 42)  # eval items whose words are shuffled into new pool documents


@pytest.fixture
def word_bag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with channel_module(tmp_path / "more_channels", monkeypatch, DECLARES_WORD_BAG):
        yield


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    """The synthetic eval set and pool, three eval items shuffled into it, as one file and
    as three shards."""
    root = tmp_path_factory.mktemp("pool-channel")
    eval_path, pool_path = synthetic_pool(root / "data")
    rows = with_shuffled_copies(read_rows(pool_path), read_rows(eval_path), SHUFFLED)
    pool = root / "pool.jsonl"
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    split_into(root / "shards", rows, ["p-0.jsonl", "p-1.jsonl.gz", "p-2.parquet"])
    return {"root": root, "eval": eval_path, "pool": pool, "shards": str(root / "shards" / "p-*")}


def _pairs(outcome) -> dict[tuple[int, int], dict]:
    return {(r["test_idx"], r["pool_idx"]): r for r in outcome.rows if "pool_idx" in r}


def test_a_pool_channel_flags_its_pairs_the_same_in_one_stream_in_workers_and_in_shards(
    word_bag, data, tmp_path
):
    assert [c.key for c in registered()] == ["probe", "word_bag", "judge"]
    alone = scan(tmp_path / "a", data["eval"], str(data["pool"]), sharded=False, jobs=1)
    workers = scan(tmp_path / "b", data["eval"], str(data["pool"]), sharded=False, jobs=2)
    shards = scan(tmp_path / "c", data["eval"], data["shards"], jobs=2)
    # small batches: a shard's matches shifted by the batches before them in the shard
    batches = scan(tmp_path / "d", data["eval"], data["shards"], jobs=1, batch_size=128)
    assert workers.report["ngram_search"]["workers"] == 2
    assert shards.report["pool_scan"]["scanned"] == 3
    assert alone.rows == workers.rows == shards.rows == batches.rows

    pairs = _pairs(alone)
    shuffled = {k: v for k, v in pairs.items() if str(v["pool_id"]).startswith("shuffled-")}
    # the shuffled copies: found by this channel alone, its score under its key
    assert sorted(e for e, _ in shuffled) == list(SHUFFLED)
    for row in shuffled.values():
        assert row["channels"] == ["same_words"] and row["channel"] == "same_words"
        assert row["word_bag"] == 1.0 and row["jaccard"] < 0.8
        assert row["triage"]["label"] == "likely_leak"  # the channel declares a copy
    # a verbatim copy: the n-gram channels and this one
    both = [v for v in pairs.values() if v["channels"][:1] == ["ngram"] and v.get("word_bag")]
    assert both and all(v["channels"][-1] == "same_words" for v in both)

    report = alone.report
    items = {e for e, _ in pairs if "same_words" in pairs[(e, _)]["channels"]}
    matched = [v for v in pairs.values() if "same_words" in v["channels"]]
    assert report["word_bag"] == {"pairs": len(matched), "items": len(items)}
    assert report["counts"]["word_bag_suspected_items"] == len(items)
    # what it alone found is among the channels' tallies, as for the core pool channels
    assert "word_bag_only_items" not in report["counts"]
    assert report["channels"]["items_caught_by"]["same_words"] == len(items)
    assert report["channels"]["items_caught_only_by"]["same_words"] == len(SHUFFLED)
    # its items are among those flagged against the pool, and the split still adds up
    counts = report["counts"]
    assert counts["pool_flagged_items"] == len({e for e, _ in pairs}) > len(items)
    assert (
        counts["pool_flagged_items"] + counts["internal_only_items"]
        == counts["total_flagged_items"]
    )
    assert report["channels"]["pairs_by_channels"]["same_words"] == len(SHUFFLED)

    # the items ingested: the channel among the item's channels and its score in the match
    with Workspace.open(tmp_path / "a", read_only=True) as opened:
        payloads = [
            opened.item("flagged_pairs", i["item_id"])["payload"]
            for i in opened.items(queue="flagged_pairs")
        ]
    for index in SHUFFLED:
        (payload,) = [p for p in payloads if p["eval"]["index"] == index]
        assert "same_words" in payload["channels"] and "same_words" in payload["summary"]["tags"]
        (match,) = [m for m in payload["matches"] if m["channels"] == ["same_words"]]
        assert match["scores"]["word_bag"] == 1.0 and match["id"].startswith("shuffled-")


def test_a_pool_channels_matches_are_in_the_shard_records_a_rerun_reads_them(
    data, tmp_path, monkeypatch
):
    ws = tmp_path / "ws"
    without = scan(ws, data["eval"], data["shards"], jobs=1)
    assert "word_bag" not in without.report
    with channel_module(tmp_path / "more_channels", monkeypatch, DECLARES_WORD_BAG):
        # records made without the channel hold none of its matches: not reused
        first = scan(ws, data["eval"], data["shards"], jobs=1)
        again = scan(ws, data["eval"], data["shards"], jobs=2)
    assert first.report["pool_scan"]["scanned"] == 3
    assert again.report["pool_scan"]["from_records"] == 3
    assert first.report["pool_scan"]["records"] != without.report["pool_scan"]["records"]
    assert again.rows == first.rows
    assert again.report["word_bag"] == first.report["word_bag"]
    assert first.report["channels"]["items_caught_only_by"]["same_words"] == len(SHUFFLED)
    # without the channel, the scan is as before: the shuffled copies are not flagged
    assert not any(str(r.get("pool_id")).startswith("shuffled-") for r in without.rows)


@pytest.mark.parametrize(
    ("declaration", "refusal"),
    [
        (
            "Channel(name='x', key='x', enabled=lambda o: True)",
            "reads no pool: give it a run",
        ),
        (
            "Channel(name='x', key='x', enabled=lambda o: True, reads_pairs=True, "
            "pool=PoolReading(lambda o, t: None, lambda m, t: (), lambda o: {}))",
            "reads the pool, before any pair is flagged: not the pairs",
        ),
        (
            "Channel(name='x', key='x', enabled=lambda o: True, flags_items=False, "
            "pool=PoolReading(lambda o, t: None, lambda m, t: (), lambda o: {}))",
            "reads the pool: its matches flag pairs, so it flags items",
        ),
    ],
)
def test_a_channel_that_reads_nothing_or_the_pool_and_the_pairs_is_refused(
    declaration, refusal, tmp_path, monkeypatch
):
    source = (
        "from engine.contamination.channels.registry import Channel, PoolReading\n"
        f"CHANNEL = {declaration}\n"
    )
    with channel_module(tmp_path / "more_channels", monkeypatch, source):
        with pytest.raises(TypeError, match=refusal):
            registered()


@pytest.mark.parametrize(
    "found", [(0, 3, 1.0), (0, -1, 1.0), (0, 0, float("nan")), (4, 0, 1.0), (-1, 0, 1.0)]
)
def test_a_match_outside_the_eval_set_or_its_batch_or_without_a_finite_score_is_refused(found):
    reader = PoolReader("bad", lambda matcher, texts: [found], None, eval_count=4)
    with pytest.raises(ValueError, match="pool channel 'bad' matched eval index"):
        reader.read(["a", "b", "c"])


def test_a_pair_matched_twice_in_a_batch_is_kept_once_with_its_highest_score():
    twice = [(1, 2, 0.5), (0, 2, 0.25), (1, 2, 0.75), (1, 2, 0.5)]
    reader = PoolReader("twice", lambda matcher, texts: twice, None, eval_count=4)
    assert reader.read(["a", "b", "c"]) == [(0, 2, 0.25), (1, 2, 0.75)]


@pytest.mark.parametrize(
    ("reading", "refusal"),
    [
        # its match is a lambda: pickle cannot name it, so no worker process could import it
        (
            "PoolReading(lambda o, t: {}, lambda m, t: (), lambda o: {})",
            "its matcher or match does not pickle",
        ),
        # its settings key the records: a float NaN is no canonical JSON
        (
            "PoolReading(word_bags, same_words, lambda o: {'bar': float('nan')})",
            "its settings are not canonical JSON",
        ),
    ],
)
def test_a_pool_channel_no_worker_or_record_could_take_is_refused_before_the_pool_is_read(
    reading, refusal, data, tmp_path, monkeypatch
):
    source = (
        "from engine.contamination.channels.registry import Channel, PoolReading\n"
        "from tests.support.pool_channel import same_words, word_bags\n"
        "CHANNEL = Channel(name='odd_words', key='odd_words', enabled=lambda o: True,\n"
        f"    pool={reading})\n"
    )
    with channel_module(tmp_path / "more_channels", monkeypatch, source):
        with pytest.raises(TypeError, match=f"pool channel 'odd_words': {refusal}"):
            scan(tmp_path / "ws", data["eval"], data["shards"], jobs=1)
    assert not list((tmp_path / "ws" / "cache").glob("shards/*/*.npz"))
