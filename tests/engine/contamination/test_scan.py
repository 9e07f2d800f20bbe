"""A scan of the sample: artifacts, flagged rows, backlog items, and recall/precision vs truth."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
from pathlib import Path

import pytest

from engine.artifacts import read_verified
from engine.canonical import canonical_sha256
from engine.contamination.inputs.canonical_text import canonical, content_sha256
from engine.contamination.inputs.pool_hash import pool_sha256
from engine.workspace import Workspace
from tests.conftest import FOUNDER, REPO
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args

SAMPLE = REPO / "sample_data" / "contamination"
POOL_ROW_FIELDS = {
    "test_idx",
    "test_id",
    "pool_idx",
    "pool_id",
    "channel",
    "channels",
    "jaccard",
    "containment",
    "minhash_jaccard",
    "numbers_only_differ",
}
INTERNAL_ROW_FIELDS = {
    "a_idx",
    "a_id",
    "b_idx",
    "b_id",
    "channel",
    "jaccard",
    "cluster",
    "containment_ab",
    "containment_ba",
    "via",
}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def run_dir(ws: Path) -> Path:
    (only,) = [p for p in (ws / "artifacts").iterdir() if p.name.startswith("contam-")]
    return only


@pytest.fixture(scope="module")
def scanned(tmp_path_factory) -> Path:
    """One real CLI scan of the sample (n-gram channels), shared by the tests below."""
    import os
    import subprocess
    import sys

    ws = tmp_path_factory.mktemp("scan") / "ws"
    base = [sys.executable, "-m", "engine.cli", "--workspace", str(ws)]
    lead_key = ws.parent / FOUNDER  # the scan signs nothing; the key only founds the ledger
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(lead_key)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        base + ["init", "--lead", FOUNDER, "--key", str(lead_key)], check=True, capture_output=True
    )
    env = {**os.environ, "SEALDESK_PROGRESS_FILE": str(ws.parent / "progress.jsonl")}
    proc = subprocess.run(
        base
        + [
            *scan_args(
                str(SAMPLE / "eval.jsonl"), str(SAMPLE / "pool.jsonl"), *SAMPLE_FIELDS, "--no-embed"
            ),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "flagged (pending review): 10 of 22 eval items" in proc.stdout
    # the headline adds up: against the pool, internal duplicates only, the probe only
    assert (
        "= 6 against the pool + 4 internal duplicate(s) only + 0 by the probe only" in proc.stdout
    )
    return ws


def test_report_records_both_datasets_provenance_with_the_flat_content_hash(scanned):
    report = json.loads(read_verified(run_dir(scanned) / "contamination_report.json"))
    questions = [r["question"] for r in read_jsonl(SAMPLE / "eval.jsonl")]
    texts = [r["text"] for r in read_jsonl(SAMPLE / "pool.jsonl")]
    assert report["test"]["content_sha256"] == content_sha256(questions)
    # a one-file pool carries the flat content hash, and beside it the block hash that a
    # sharded scan of the same items gives whatever the sharding
    assert report["pool"]["content_sha256"] == content_sha256(texts)
    assert report["pool"]["content_hash"] == "sha256-items-nul"
    assert report["pool"]["content_sha256_blocks"] == pool_sha256(canonical(t) for t in texts)
    assert report["pool_shards"][0]["content_sha256"] == content_sha256(texts)
    assert report["test"]["n"] == len(questions) and report["pool"]["n"] == len(texts)
    assert (
        report["test"]["file_sha256"]
        == hashlib.sha256((SAMPLE / "eval.jsonl").read_bytes()).hexdigest()
    )
    for key in ("name", "split", "revision"):
        assert key in report["test"] and key in report["pool"]


def test_report_has_the_contract_fields_and_says_which_channel_caught_what(scanned):
    report = json.loads(read_verified(run_dir(scanned) / "contamination_report.json"))
    for key in (
        "counts",
        "leakage_rate",
        "thresholds",
        "recommended_action",
        "provenance",
        "internal",
        "channels",
    ):
        assert key in report
    assert report["thresholds"]["ngram_n"] == 13 and report["thresholds"]["jaccard_flag"] == 0.8
    assert report["provenance"]["date"] and report["provenance"]["machine"]["cpus"]
    assert report["channels"]["pairs_by_channels"] == {
        "containment": 4,
        "internal": 2,
        "ngram+containment": 2,
    }
    # 2 verbatim + 4 containment-only items, 4 items in 2 internal clusters
    assert report["counts"]["total_flagged_items"] == 10
    counts = report["counts"]
    parts = ("pool_flagged", "internal_only", "probe_only")
    split = tuple(counts[f"{part}_items"] for part in parts)
    assert split == (6, 4, 0) and sum(split) == counts["total_flagged_items"]
    assert counts["near_threshold_items"] == 0  # no paraphrase channel in this scan
    assert report["flagged"]["rate"] == round(10 / 22, 4)
    assert [len(c) for c in report["internal"]["clusters"]] == [2, 2]


def test_every_artifact_has_a_matching_sidecar_and_is_private(scanned):
    directory = run_dir(scanned)
    names = {p.name for p in directory.iterdir()}
    for name in (
        "contamination_report.json",
        "flagged_pairs.jsonl",
        "eval_items.jsonl",
        "flagged_items.jsonl",
    ):
        assert f"{name}.sha256" in names
        read_verified(directory / name)
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600


def test_flagged_rows_keep_the_contract_fields_plus_ids_and_measures(scanned):
    rows = read_jsonl(run_dir(scanned) / "flagged_pairs.jsonl")
    pool_rows = [r for r in rows if r["channel"] != "internal"]
    internal_rows = [r for r in rows if r["channel"] == "internal"]
    assert pool_rows and internal_rows
    for row in pool_rows:
        assert POOL_ROW_FIELDS <= row.keys()
        assert row["channel"] in ("ngram", "containment") and row["channel"] == row["channels"][0]
    for row in internal_rows:
        assert INTERNAL_ROW_FIELDS <= row.keys()


def truth_pairs(channel: str) -> set[tuple[str, str]]:
    return {
        (t["eval_id"], t["match_id"])
        for t in read_jsonl(SAMPLE / "truth.jsonl")
        if channel in t["expected_channels"]
    }


def recall_precision(flagged: set, channel: str) -> tuple[float, float]:
    every_truth = {(t["eval_id"], t["match_id"]) for t in read_jsonl(SAMPLE / "truth.jsonl")}
    expected = truth_pairs(channel)
    recall = len(flagged & expected) / len(expected)
    precision = len(flagged & every_truth) / len(flagged) if flagged else 1.0
    return recall, precision


@pytest.mark.parametrize("channel", ["ngram", "containment"])
def test_each_pool_channel_finds_every_planted_pair_it_should_and_nothing_else(scanned, channel):
    rows = read_jsonl(run_dir(scanned) / "flagged_pairs.jsonl")
    flagged = {(r["test_id"], r["pool_id"]) for r in rows if channel in r["channels"]}
    recall, precision = recall_precision(flagged, channel)
    print(f"{channel}: recall {recall:.2f}, precision {precision:.2f} on {len(flagged)} pairs")
    assert (recall, precision) == (1.0, 1.0)


def test_internal_channel_finds_every_planted_duplicate_and_nothing_else(scanned):
    rows = read_jsonl(run_dir(scanned) / "flagged_pairs.jsonl")
    flagged = {(r["a_id"], r["b_id"]) for r in rows if r["channel"] == "internal"}
    recall, precision = recall_precision(flagged, "internal")
    assert (recall, precision) == (1.0, 1.0)


def test_one_backlog_item_per_flagged_eval_item_is_ingested_in_the_same_run(scanned):
    with Workspace.open(scanned) as ws:
        items = ws.items(queue="flagged_pairs")
        assert len(items) == 10
        run = {i["run_id"] for i in items}
        assert run == {run_dir(scanned).name}
        manifest = json.loads(ws.conn.execute("SELECT manifest FROM runs").fetchone()[0])
    assert manifest["kind"] == "contamination-scan"
    for name, digest in manifest["artifacts"].items():
        assert hashlib.sha256((run_dir(scanned) / name).read_bytes()).hexdigest() == digest


def test_a_backlog_item_holds_eval_text_matches_spans_and_both_provenances(scanned):
    with Workspace.open(scanned) as ws:
        (listed,) = [
            i for i in ws.items(queue="flagged_pairs") if i["title"].startswith("q-wallet")
        ]
        item = ws.item("flagged_pairs", listed["item_id"])
    payload = item["payload"]
    assert item["item_sha256"] == canonical_sha256(payload)
    assert item["item_id"] == f"fp-{item['item_sha256'][:16]}"
    eval_text = payload["eval"]["text"]
    assert payload["eval"]["id"] == "q-wallet" and payload["eval"]["index"] == 2
    (match,) = payload["matches"]
    assert match["kind"] == "pool" and match["channels"] == ["containment"]
    assert set(match["scores"]) >= {"jaccard", "containment", "minhash_jaccard"}
    assert match["numbers_only_differ"] is False
    # the one changed word splits the copy into two shared runs, both highlighted
    assert len(match["spans"]) == 2
    for span in match["spans"]:
        a, b = span["eval"]
        c, d = span["match"]
        assert eval_text[a:b] == match["text"][c:d]
    assert sum(s["words"] for s in match["spans"]) == len(eval_text.split()) - 1
    assert payload["provenance"]["eval"]["content_sha256"]
    assert payload["provenance"]["pool"]["content_sha256"]
    assert payload["summary"]["tags"] == ["containment", "likely_leak"]


def test_an_internal_duplicate_item_lists_its_sibling_and_cluster(scanned):
    with Workspace.open(scanned) as ws:
        (listed,) = [
            i for i in ws.items(queue="flagged_pairs") if i["title"].startswith("q-oneoff-0-copy")
        ]
        payload = ws.item("flagged_pairs", listed["item_id"])["payload"]
    (match,) = payload["matches"]
    assert match["kind"] == "eval" and match["id"] == "q-oneoff-0"
    assert match["channels"] == ["internal"] and match["scores"]["jaccard"] == 1.0
    assert [m["id"] for m in payload["cluster"]] == ["q-oneoff-0", "q-oneoff-0-copy"]


def test_a_rescan_of_unchanged_data_adds_no_items(scanned, sealdesk, tmp_path):
    scanned = Path(shutil.copytree(scanned, tmp_path / "copy"))
    proc = sealdesk(
        *scan_args(SAMPLE / "eval.jsonl", SAMPLE / "pool.jsonl", *SAMPLE_FIELDS, "--no-embed"),
        workspace=scanned,
    )
    assert proc.returncode == 0, proc.stderr
    assert "backlog: 0 new item(s), 10 already held" in proc.stdout
    with Workspace.open(scanned) as ws:
        assert len(ws.items(queue="flagged_pairs")) == 10
        assert ws.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2


def test_the_scan_reports_progress_for_the_jobs_panel(scanned):
    lines = read_jsonl(scanned.parent / "progress.jsonl")
    pool = [line for line in lines if line["stage"] == "scanning pool"]
    assert pool[0]["total"] == 53 and pool[0]["unit"] == "docs"
    assert pool[-1]["finished"] and pool[-1]["done"] == 53


def test_the_near_threshold_count_takes_items_resting_only_on_a_close_paraphrase():
    from engine.contamination.report.findings import _near_threshold

    def row(item, channels, cosine=None):
        out = {"test_idx": item, "channel": channels[0], "channels": channels}
        return out if cosine is None else {**out, "cosine": cosine}

    rows = [
        row(0, ["embed"], 0.81),  # just above 0.80: a judgement call
        row(1, ["embed"], 0.81),
        row(1, ["embed"], 0.93),  # item 1 also has a clear paraphrase
        row(2, ["containment", "embed"], 0.82),  # copied text is not a judgement call
        row(3, ["embed"], 0.8499),
        row(4, ["embed"], 0.85),  # exactly the margin above: clear
    ]
    assert _near_threshold(rows, {0, 1, 2, 3, 4}, 0.80) == 2  # items 0 and 3
    assert _near_threshold(rows, {0, 1, 2, 3, 4}, None) == 0
