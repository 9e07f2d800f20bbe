"""Registered channels: a channel module alone puts its flags in the report, pairs and items.

The channel here is a module the test writes into a folder of its own and
adds to the channels package's path, the way ``registry.registered`` finds
every channel: no line of the scan, the report or the command is changed for
it. The scan's data (tests/support/judge_endpoint.py) has four flagged pool
pairs and one internal pair.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.contamination.channels.registry import registered
from engine.workspace import Workspace
from tests.support.judge_endpoint import write_inputs
from tests.support.pool_channel import channel_module
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args

MODULE = "lakeside"
# Flags each eval item that mentions the lake, and writes each flagged pair's triage
# label beside it; it reads an option of the scan, the n-gram length, into its report.
SOURCE = '''"""A channel written by a test: flags the eval items that mention a lake."""

from engine.contamination.channels.registry import Channel, ChannelResult, ItemFlag


def find(context):
    flags = tuple(
        ItemFlag(item.index, {"word": "lake"}, {"word": "lake", "words": len(item.text.split())})
        for item in context.eval.items
        if "lake" in item.text
    )
    beside = {pair.key: {"triage": pair.triage} for pair in context.pairs()}
    report = {"flagged": len(flags), "ngram_n": context.options.ngram_n}
    return ChannelResult(report, flags, beside)


CHANNEL = Channel(
    name="lakeside_words",
    key="lakeside",
    enabled=lambda options: True,
    run=find,
    reads_pairs=True,
)
'''


@pytest.fixture
def lakeside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Gives the registry a channel module more, in a folder on the package's path."""
    with channel_module(tmp_path / "more_channels", monkeypatch, SOURCE, MODULE):
        yield


def _scan(sealdesk_main, ws: Path):
    ev, pool = write_inputs(ws.parent / "data")
    proc = sealdesk_main(
        *scan_args(ev, pool, *SAMPLE_FIELDS, "--no-embed", "--jobs", "1"), workspace=ws
    )
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (ws / "artifacts").iterdir()
    report = json.loads((run_dir / "contamination_report.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (run_dir / "flagged_pairs.jsonl").open(encoding="utf-8")]
    return report, rows


def test_the_probe_and_the_judge_are_found_through_the_registry_probe_first():
    assert [(c.name, c.key) for c in registered()] == [
        ("behavioral_probe", "probe"),
        ("judge", "judge"),
    ]


def test_a_channel_module_alone_flags_items_in_the_report_the_pairs_and_the_items(
    lakeside, sealdesk_main, ws
):
    assert [c.key for c in registered()] == ["probe", "judge", "lakeside"]
    report, rows = _scan(sealdesk_main, ws)

    # the report: its section, its counts, and the channels' tallies
    assert report["lakeside"] == {"flagged": 1, "ngram_n": 13}
    assert report["counts"]["lakeside_suspected_items"] == 1
    assert report["counts"]["lakeside_only_items"] == 0  # e1 is flagged against the pool too
    assert report["channels"]["items_caught_by"]["lakeside_words"] == 1
    assert report["probe"] is None and report["judge"] is None

    # the pairs artifact: a row for the flagged item, and its field beside every pair
    (flagged,) = [r for r in rows if r["channel"] == "lakeside_words"]
    assert flagged == {
        "test_idx": 1,
        "test_id": "e1",
        "channel": "lakeside_words",
        "channels": ["lakeside_words"],
        "word": "lake",
    }
    pairs = [r for r in rows if "triage" in r]
    assert len(pairs) == 5
    assert all(r["lakeside"] == {"triage": r["triage"]["label"]} for r in pairs)

    # the items ingested: the flagged item names the channel and holds its account
    with Workspace.open(ws, read_only=True) as opened:
        items = [
            opened.item("flagged_pairs", i["item_id"]) for i in opened.items(queue="flagged_pairs")
        ]
    payloads = {p["eval"]["id"]: p for p in (i["payload"] for i in items if i is not None)}
    lake = payloads["e1"]
    assert "lakeside_words" in lake["channels"] and "lakeside_words" in lake["summary"]["tags"]
    assert lake["lakeside"]["word"] == "lake"
    assert all("lakeside" not in p for k, p in payloads.items() if k != "e1")
    assert all(m["lakeside"]["triage"] for p in payloads.values() for m in p["matches"])


def test_without_the_channel_module_the_scan_is_as_before(sealdesk_main, ws):
    report, rows = _scan(sealdesk_main, ws)
    assert "lakeside" not in report
    assert "lakeside_words" not in report["channels"]["items_caught_by"]
    assert all("lakeside" not in r for r in rows)
