"""The two-stage paraphrase channel: a distilled static prefilter, then the full model.

Distilling the static model passes MiniLM's whole vocabulary through it (a
minute or more of CPU), so this module distils once, in the ``distilled``
workspace, and the other workspaces start from a copy of its cache folder,
as a workspace copied with its cache would.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("model2vec")
pytest.importorskip("sentence_transformers")

from engine.contamination.bench.synthetic import make_synthetic  # noqa: E402
from engine.contamination.channels.embedding import identify_model  # noqa: E402
from engine.contamination.channels.prefilter import load_static  # noqa: E402
from engine.contamination.inputs.canonical_text import canonical  # noqa: E402
from engine.contamination.inputs.sources import resolve_source  # noqa: E402
from engine.contamination.scan import ScanConfig, run_scan  # noqa: E402
from engine.errors import IntegrityError  # noqa: E402
from engine.workspace import Workspace  # noqa: E402
from tests.conftest import REPO
from tests.support.contamination_shards import read_rows, split_into
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args

SAMPLE = REPO / "sample_data" / "contamination"
# the module's first test distils the prefilter: minutes of CPU on a busy machine
pytestmark = pytest.mark.timeout(1200)
# Every test of the ``distilled`` workspace runs on one worker under ``pytest -n 2
# --dist loadgroup``, in the group the Ray test must be in (one Ray at a time, beside
# test_ray.py's): that worker distils the prefilter once. Spread over both workers,
# each would distil it for itself, and the Ray test's worker once more.
WITH_THE_DISTILLED = pytest.mark.xdist_group("ray")


def sample_config(**options) -> ScanConfig:
    """Gives the sample's scan config: two-stage unless told otherwise, small as the pool is."""
    if not options.get("embed_exhaustive"):
        options.setdefault("embed_two_stage", True)
    return ScanConfig.of(
        eval=resolve_source(
            "eval", str(SAMPLE / "eval.jsonl"), text_field="question", id_field="id"
        ),
        pool=resolve_source("pool", str(SAMPLE / "pool.jsonl"), text_field="text", id_field="id"),
        **options,
    )


def scan_in(root: Path, config: ScanConfig):
    with Workspace.open(root) if root.exists() else Workspace.init(root) as ws:
        return run_scan(ws, config)


def with_prefilter_of(distilled: Path, root: Path) -> Path:
    """Gives a new workspace at root holding a copy of the distilled workspace's prefilter."""
    Workspace.init(root).close()
    shutil.copytree(distilled / "cache" / "prefilter", root / "cache" / "prefilter")
    return root


@pytest.fixture(scope="module")
def distilled(tmp_path_factory) -> dict:
    """A workspace whose first two-stage scan of the sample distilled the prefilter."""
    root = tmp_path_factory.mktemp("distilled") / "ws"
    first = scan_in(root, sample_config())
    return {"root": root, "first": first}


@WITH_THE_DISTILLED
def test_the_first_two_stage_scan_distils_the_prefilter_from_the_scoring_model(distilled):
    search = distilled["first"].report["embedding"]["search"]
    assert search["method"] == "two-stage"
    assert search["prefilter"]["distilled_by_this_scan"] is True
    assert search["prefilter"]["distilled_from"] == identify_model(None).identity
    assert Path(search["prefilter"]["path"]).parent == distilled["root"] / "cache" / "prefilter"


@WITH_THE_DISTILLED
def test_a_second_scan_takes_the_distilled_prefilter_from_the_workspace_cache(distilled):
    again = scan_in(distilled["root"], sample_config())
    first = distilled["first"].report["embedding"]["search"]["prefilter"]
    search = again.report["embedding"]["search"]["prefilter"]
    assert search["distilled_by_this_scan"] is False
    assert (search["path"], search["identity_sha256"]) == (first["path"], first["identity_sha256"])
    assert again.rows == distilled["first"].rows


def test_a_small_pool_is_searched_exhaustively_without_distilling_unless_told(tmp_path):
    outcome = scan_in(tmp_path / "ws", sample_config(embed_two_stage=False))
    search = outcome.report["embedding"]["search"]
    assert search["method"] == "exhaustive"
    assert search["chosen"].startswith("pool of 53 documents, ")
    assert "exhaustive ~53 full-model embeddings" in search["chosen"]
    assert not (tmp_path / "ws" / "cache" / "prefilter").exists()


@WITH_THE_DISTILLED
def test_a_prefilter_changed_in_the_cache_is_refused_not_used(distilled, tmp_path):
    root = with_prefilter_of(distilled["root"], tmp_path / "ws")
    (folder,) = (root / "cache" / "prefilter").iterdir()
    (folder / "config.json").write_text("{}")
    with pytest.raises(IntegrityError, match="changed since it was made"):
        scan_in(root, sample_config())


@WITH_THE_DISTILLED
def test_two_stage_flags_what_the_exhaustive_scan_flags_when_every_true_pair_is_a_candidate(
    distilled, tmp_path
):
    exhaustive = scan_in(tmp_path / "ex", sample_config(embed_exhaustive=True))
    flagged = {
        (row["test_idx"], row["pool_idx"])
        for row in exhaustive.rows
        if row["channel"] != "internal" and "embed" in row["channels"]
    }
    assert flagged
    # the least K that holds every flagged pool document among its eval item's
    # candidates, ranked by the static model alone (ties to the earlier document)
    static = load_static(
        Path(distilled["first"].report["embedding"]["search"]["prefilter"]["path"])
    )
    eval_rows = read_rows(SAMPLE / "eval.jsonl")
    pool_rows = read_rows(SAMPLE / "pool.jsonl")
    ev = static.encode([canonical(r["question"]) for r in eval_rows]).astype(np.float64)
    po = static.encode([canonical(r["text"]) for r in pool_rows]).astype(np.float64)
    sims = (ev @ po.T).astype(np.float32)
    ranks = [
        int((sims[e] > sims[e, p]).sum() + (sims[e, :p] == sims[e, p]).sum()) for e, p in flagged
    ]
    k = max(max(ranks) + 1, 3)
    assert k < len(pool_rows) // 2  # the prefilter does leave most of the pool out
    root = with_prefilter_of(distilled["root"], tmp_path / "two")
    two = scan_in(root, sample_config(prefilter_k=k))
    assert two.report["embedding"]["search"]["candidates_per_item"] == k
    assert two.report["embedding"]["search"]["candidates_scored"] < len(pool_rows)
    assert two.rows == exhaustive.rows


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> dict:
    """Twenty eval items and eight pool shards of 4,000 rows: a run can be stopped midway."""
    root = tmp_path_factory.mktemp("prefilter-shards")
    data = make_synthetic(root / "data", pool_size=32_000, eval_size=20)
    split_into(root / "pool", read_rows(data.pool_path), [f"p-{k}.jsonl" for k in range(8)])
    return {"eval": data.eval_path, "pattern": str(root / "pool" / "p-*.jsonl")}


def scan_command(ws: Path, shards: dict) -> list[str]:
    return [
        sys.executable,
        "-m",
        "engine.cli",
        "--workspace",
        str(ws),
        *scan_args(
            str(shards["eval"]),
            shards["pattern"],
            *SAMPLE_FIELDS,
            "--embed-two-stage",
            "--prefilter-k",
            "5",
            "--jobs",
            "1",
            "--json",
        ),
    ]


@WITH_THE_DISTILLED
@pytest.mark.slow
def test_a_run_killed_in_the_prefilter_resumes_with_only_the_shards_left(
    distilled, shards, tmp_path
):
    whole_ws = with_prefilter_of(distilled["root"], tmp_path / "whole")
    whole = subprocess.run(scan_command(whole_ws, shards), capture_output=True, text=True)
    assert whole.returncode == 0, whole.stderr
    (whole_run,) = (whole_ws / "artifacts").iterdir()

    ws = with_prefilter_of(distilled["root"], tmp_path / "ws")
    args = scan_command(ws, shards)
    run = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    records = ws / "cache" / "shards"
    deadline = time.monotonic() + 300
    while len(list(records.glob("*/*.npz"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)  # the run, and any process it started
    run.wait()
    done = len(list(records.glob("*/*.npz")))
    assert 2 <= done < 8
    assert list((ws / "artifacts").iterdir()) == []

    rerun = subprocess.run(args, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert (report["pool_scan"]["from_records"], report["pool_scan"]["scanned"]) == (done, 8 - done)
    assert report["embedding"]["search"]["method"] == "two-stage"
    (artifacts,) = (ws / "artifacts").iterdir()
    assert read_rows(artifacts / "flagged_pairs.jsonl") == read_rows(
        whole_run / "flagged_pairs.jsonl"
    )
    assert any("embed" in row["channels"] for row in read_rows(artifacts / "flagged_pairs.jsonl"))


@WITH_THE_DISTILLED
@pytest.mark.slow
def test_another_scoring_model_gets_a_prefilter_distilled_from_it(distilled, tmp_path):
    source = Path(identify_model(None).path)
    other = tmp_path / "cls"
    shutil.copytree(source, other, ignore=shutil.ignore_patterns("model.safetensors"))
    os.symlink(source / "model.safetensors", other / "model.safetensors")
    pooling = other / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(
        json.dumps({**config, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    root = with_prefilter_of(distilled["root"], tmp_path / "ws")
    outcome = scan_in(root, sample_config(model_path=str(other), cosine_threshold=0.8))
    made = outcome.report["embedding"]["search"]["prefilter"]
    first = distilled["first"].report["embedding"]["search"]["prefilter"]
    assert made["distilled_by_this_scan"] is True
    assert made["distilled_from"] == identify_model(other).identity != first["distilled_from"]
    assert made["path"] != first["path"]
    assert sorted(p.name for p in (root / "cache" / "prefilter").iterdir()) == sorted(
        [Path(first["path"]).name, Path(made["path"]).name]
    )


@pytest.mark.parametrize(
    ("options", "field", "reason"),
    [
        (["--no-embed", "--prefilter-k", "5"], "prefilter-k", "--no-embed turns off"),
        (["--embed-exhaustive", "--embed-two-stage"], "embed-two-stage", "replaces"),
        (["--embed-exhaustive", "--prefilter-k", "5"], "prefilter-k", "replaces"),
        (["--embed-exhaustive", "--numbers-lane", "5"], "numbers-lane", "replaces"),
    ],
)
def test_a_search_option_the_scan_would_ignore_is_refused_in_one_line(
    sealdesk_main, ws, options, field, reason
):
    proc = sealdesk_main(
        *scan_args(
            SAMPLE / "eval.jsonl",
            SAMPLE / "pool.jsonl",
            "--text-field",
            "question",
            "--pool-text-field",
            "text",
            *options,
        ),
        workspace=ws,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert field in line and reason in line, line
    assert not (ws / "artifacts").exists() or list((ws / "artifacts").iterdir()) == []
    assert not (ws / "cache" / "prefilter").exists()


@pytest.mark.slow
@WITH_THE_DISTILLED
def test_two_stage_on_ray_flags_what_it_flags_on_local_shards(distilled, tmp_path):
    pytest.importorskip("ray")
    from engine.contamination.inputs.shards import sharded_pool

    split_into(tmp_path / "shards", read_rows(SAMPLE / "pool.jsonl"), ["p-0.jsonl", "p-1.jsonl"])

    def on(backend: str) -> ScanConfig:
        return ScanConfig.of(
            eval=resolve_source(
                "eval", str(SAMPLE / "eval.jsonl"), text_field="question", id_field="id"
            ),
            pool=sharded_pool(str(tmp_path / "shards" / "p-*"), text_field="text", id_field="id"),
            embed_two_stage=True,
            backend=backend,
            jobs=1,
            ray_num_cpus=2,
        )

    local = scan_in(with_prefilter_of(distilled["root"], tmp_path / "local"), on("local"))
    remote = scan_in(with_prefilter_of(distilled["root"], tmp_path / "ray"), on("ray"))
    assert remote.report["pool_scan"]["backend"] == "ray"
    for outcome in (local, remote):
        search = outcome.report["embedding"]["search"]
        assert search["method"] == "two-stage"
        assert search["prefilter"]["distilled_by_this_scan"] is False
    assert any("embed" in row["channels"] for row in remote.rows)
    assert remote.rows == local.rows


def test_a_small_sharded_pool_is_counted_first_and_searched_exhaustively(tmp_path):
    # Parquet footers hold their row counts and line shards are counted as they stream,
    # so a small sharded pool never pays for distilling the prefilter.
    from engine.contamination.inputs.shards import sharded_pool

    rows = read_rows(SAMPLE / "pool.jsonl")
    split_into(tmp_path / "shards", rows, ["p-0.parquet", "p-1.jsonl.gz", "p-2.jsonl"])
    pool = sharded_pool(str(tmp_path / "shards" / "p-*"), text_field="text", id_field="id")
    sharded = scan_in(
        tmp_path / "ws",
        ScanConfig.of(eval=sample_config().eval, pool=pool, jobs=1),
    )
    search = sharded.report["embedding"]["search"]
    assert search["method"] == "exhaustive"
    assert search["chosen"].startswith(f"pool of {len(rows)} documents in 3 shard(s), ")
    assert not (tmp_path / "ws" / "cache" / "prefilter").exists()
    whole = scan_in(tmp_path / "whole", sample_config(embed_two_stage=False))

    def embedded(outcome) -> list[tuple[int, int]]:
        return [
            (row["test_idx"], row["pool_idx"])
            for row in outcome.rows
            if row["channel"] != "internal" and "embed" in row["channels"]
        ]

    assert embedded(sharded) and embedded(sharded) == embedded(whole)


def test_counting_a_large_sharded_pool_stops_at_the_limit(tmp_path):
    from engine.contamination.inputs.shards import count_rows_up_to, sharded_pool

    rows = [{"id": f"d{k}", "text": f"document {k}"} for k in range(3000)]
    split_into(tmp_path, rows, ["a.jsonl", "b.jsonl.gz", "c.parquet"])
    pool = sharded_pool(str(tmp_path / "*"), text_field="text", id_field="id")
    assert count_rows_up_to(pool, 10_000) == 3000
    assert count_rows_up_to(pool, 1500) == 1500  # at least that many: the rest unread
    assert count_rows_up_to(pool, 2500) == 2500
    (tmp_path / "b.jsonl.gz").write_bytes(b"not gzip")
    assert count_rows_up_to(pool, 10_000) is None  # the scan itself will name the shard


def _lookalike_config(data, **options) -> ScanConfig:
    return ScanConfig.of(
        eval=resolve_source("eval", str(data.eval_path), text_field="question", id_field="id"),
        pool=resolve_source("pool", str(data.pool_path), text_field="text", id_field="id"),
        embed_two_stage=True,
        **options,
    )


@WITH_THE_DISTILLED
def test_a_leak_among_its_renumbered_copies_is_found_and_kept_first(distilled, tmp_path):
    # Every look-alike-half item has three renumbered copies in the pool: its own words,
    # other numbers, nearer to it than its paraphrase under either model. With two
    # nearest candidates they take both slots; the numbers lane keeps the paraphrase.
    from engine.contamination.bench.paraphrase_data import make_paraphrase_data

    data = make_paraphrase_data(tmp_path / "data", 600, 24, 600)
    planted = set(data.planted)

    def found(outcome) -> set[tuple[int, int]]:
        return {
            (row["test_idx"], row["pool_idx"])
            for row in outcome.rows
            if row["channel"] != "internal" and "embed" in row["channels"]
        }

    root = with_prefilter_of(distilled["root"], tmp_path / "ws")
    without = scan_in(root, _lookalike_config(data, prefilter_k=2, numbers_lane=0))
    lane = scan_in(root, _lookalike_config(data, prefilter_k=2, numbers_lane=5))
    among = {(e, p) for e, p in planted if e in data.lookalike_items}
    lost_without = among - found(without)
    assert len(lost_without) >= len(among) // 2, "the copies no longer crowd the nearest"
    assert among <= found(lane)
    assert lane.report["embedding"]["search"]["numbers_lane_per_item"] == 5

    # a bound of one match per item keeps the paraphrase, not a nearer renumbered copy
    one = scan_in(root, _lookalike_config(data, prefilter_k=4, numbers_lane=5, top_k=1))
    assert among <= found(one)
    assert one.report["embedding"]["matches_over_bound"] > 0
