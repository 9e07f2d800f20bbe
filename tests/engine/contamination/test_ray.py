"""The Ray backend on a local Ray (2 CPUs, one session for the module): same answers as local."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from engine.workspace import Workspace
from tests.conftest import REPO
from tests.support.contamination_shards import (
    ShardServer,
    children,
    pool_rows,
    read_rows,
    scan,
    split_into,
    synthetic_pool,
)
from tests.support.pool_channel import (
    DECLARES_WORD_BAG,
    channel_module,
    with_shuffled_copies,
)
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args

SAMPLE = REPO / "sample_data" / "contamination"
# one Ray per module: with `pytest -n 2 --dist loadgroup` these tests share a worker
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray for every test here; scans in this process use it as it is."""
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=96 * 1024 * 1024,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("ray")
    eval_path, pool_path = synthetic_pool(root / "data")
    rows = read_rows(pool_path)
    split_into(root / "four", rows, ["p-0.jsonl", "p-1.jsonl.zst", "p-2.parquet", "p-3.jsonl"])
    split_into(root / "seven", rows, [f"p-{k}.jsonl" for k in range(7)])
    split_into(root / "one", rows, ["p-0.jsonl.gz"])
    local = scan(root / "ws-local", eval_path, str(root / "four" / "p-*"), jobs=1)
    single = scan(root / "ws-single", eval_path, str(pool_path), sharded=False, jobs=1)
    return {
        "root": root,
        "eval": eval_path,
        "pool": pool_path,
        "rows": rows,
        "local": local,
        "single": single,
    }


def items_of(outcome) -> list[str]:
    return sorted(item.item_id for item in outcome.items)


def test_ray_finds_the_pairs_and_items_local_finds_for_the_same_shards(ray_session, data, tmp_path):
    on_ray = scan(tmp_path / "ws", data["eval"], str(data["root"] / "four" / "p-*"), backend="ray")
    local = data["local"]
    assert on_ray.report["pool_scan"]["backend"] == "ray"
    assert on_ray.report["pool_scan"]["workers"] == 2
    assert on_ray.rows == local.rows and len(pool_rows(local)) > 10
    assert on_ray.report["pool"] == local.report["pool"]
    assert items_of(on_ray) == items_of(local)


@pytest.mark.parametrize("layout", ["one", "seven"])
def test_one_shard_or_seven_on_ray_give_the_pairs_of_the_single_file(
    ray_session, data, tmp_path, layout
):
    single = data["single"]
    on_ray = scan(tmp_path / "ws", data["eval"], str(data["root"] / layout / "p-*"), backend="ray")
    assert on_ray.report["pool"]["shards"] == (1 if layout == "one" else 7)
    assert pool_rows(on_ray) == pool_rows(single)
    for key in ("n", "content_sha256_blocks"):
        assert on_ray.report["pool"][key] == single.report["pool"][key]
    if layout == "one":  # one stream: the flat content hash, as for the single file
        assert on_ray.report["pool"]["content_sha256"] == single.report["pool"]["content_sha256"]


def test_a_shard_whose_read_fails_once_is_retried_on_another_attempt(ray_session, data, tmp_path):
    server = ShardServer(data["root"] / "four")
    try:
        server.failures["p-2.parquet"] = 1
        on_ray = scan(tmp_path / "ws", data["eval"], f"{server.url}/p-*", backend="ray")
    finally:
        server.close()
    assert on_ray.report["pool_scan"]["retries"] == {f"{server.url}/p-2.parquet": 1}
    assert pool_rows(on_ray) == pool_rows(data["local"])


def test_the_cli_joins_a_running_ray_with_ray_address_and_reports_progress(
    ray_session, data, sealdesk, tmp_path
):
    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    progress = tmp_path / "progress.jsonl"
    address = ray_session.get_runtime_context().gcs_address
    proc = sealdesk(
        *scan_args(
            data["eval"],
            "file://" + str(data["root"] / "four" / "p-*"),
            *SAMPLE_FIELDS,
            "--no-embed",
            "--backend",
            "ray",
            "--ray-address",
            address,
        ),
        workspace=ws,
        env={"SEALDESK_PROGRESS_FILE": str(progress)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "pool: 4 shard(s) on ray x2: 4 scanned, 0 from records" in proc.stdout
    shards = [line for line in read_rows(progress) if line["stage"] == "pool shards"]
    assert shards[-1]["done"] == shards[-1]["total"] == 4 and shards[-1]["finished"]
    (run,) = (ws / "artifacts").iterdir()
    assert read_rows(run / "flagged_pairs.jsonl") == data["local"].rows


@pytest.mark.slow
def test_ray_actors_embed_the_shards_and_a_second_scan_embeds_nothing(ray_session, tmp_path):
    pytest.importorskip("sentence_transformers")
    rows = read_rows(SAMPLE / "pool.jsonl")
    split_into(tmp_path / "shards", rows, ["p-0.jsonl", "p-1.jsonl", "p-2.jsonl"])
    store = tmp_path / "shared" / "embeddings.sqlite"
    # one actor: one model load per scan is enough to show the store is shared
    options = {
        "embed": True,
        "embed_exhaustive": True,  # every document through the actors' full model
        "cosine_threshold": 0.8,
        "embed_cache": store,
        "backend": "ray",
        "jobs": 1,
    }

    def sample_scan(workspace: Path):
        from engine.contamination.inputs.shards import sharded_pool
        from engine.contamination.inputs.sources import resolve_source
        from engine.contamination.scan import ScanConfig, run_scan

        config = ScanConfig.of(
            eval=resolve_source(
                "eval", str(SAMPLE / "eval.jsonl"), text_field="question", id_field="id"
            ),
            pool=sharded_pool(str(tmp_path / "shards" / "p-*"), text_field="text", id_field="id"),
            **options,
        )
        with Workspace.init(workspace) as ws:
            return run_scan(ws, config, embedder=driver_model)

    from engine.contamination.channels.embedding import Embedder, identify_model

    driver_model = Embedder(identify_model(None))  # the driver's; each actor loads its own
    first = sample_scan(tmp_path / "ws-1")
    second = sample_scan(tmp_path / "ws-2")  # another workspace, the same named store
    truth = read_rows(SAMPLE / "truth.jsonl")
    expected = {
        (t["eval_id"], t["match_id"])
        for t in truth
        if "embed" in t["expected_channels"] and t["match_id"].startswith("doc")
    }
    flagged = {(r["test_id"], r["pool_id"]) for r in first.rows if "embed" in r["channels"]}
    assert expected <= flagged
    distinct_pool = {" ".join(r["text"].lower().split()) for r in rows}
    assert first.report["embedding"]["texts_embedded"] >= len(distinct_pool)
    assert second.report["embedding"]["texts_embedded"] == 0
    assert second.report["pool_scan"]["scanned"] == 3  # scanned again, embedded from the store
    assert second.rows == first.rows
    assert first.report["embedding"]["cache"] == str(store)
    assert os.path.getsize(store) > 0
    assert json.dumps(first.report["pool"]) == json.dumps(second.report["pool"])


def test_a_ray_worker_killed_mid_shard_is_replaced_and_its_shard_retried(
    ray_session, data, tmp_path
):
    import signal
    import threading
    import time

    # this session's raylet; its children are the workers it started for our actors
    raylet = ray_session._private.worker._global_node.all_processes["raylet"][0].process.pid
    killed: list[int] = []

    def kill_a_scanning_actor() -> None:
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            for pid in children(raylet):
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if title.startswith(b"ray::ShardActor.scan"):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.005)

    killer = threading.Thread(target=kill_a_scanning_actor)
    killer.start()
    on_ray = scan(tmp_path / "ws", data["eval"], str(data["root"] / "seven" / "p-*"), backend="ray")
    killer.join()
    assert killed
    assert on_ray.report["pool_scan"]["retries"]
    assert pool_rows(on_ray) == pool_rows(data["single"])


def test_a_pool_channel_finds_on_ray_what_it_finds_on_local_workers(
    ray_session, data, tmp_path, monkeypatch
):
    rows = with_shuffled_copies(data["rows"], read_rows(data["eval"]), (5, 17, 42))
    split_into(tmp_path / "shuffled", rows, ["p-0.jsonl", "p-1.parquet", "p-2.jsonl"])
    pattern = str(tmp_path / "shuffled" / "p-*")
    with channel_module(tmp_path / "more_channels", monkeypatch, DECLARES_WORD_BAG):
        on_ray = scan(tmp_path / "ws-ray", data["eval"], pattern, backend="ray")
        local = scan(tmp_path / "ws-local", data["eval"], pattern, jobs=2)
    assert on_ray.report["pool_scan"]["backend"] == "ray"
    assert on_ray.rows == local.rows
    assert on_ray.report["word_bag"] == local.report["word_bag"]
    # the three shuffled copies: found on Ray by this channel alone
    assert on_ray.report["channels"]["items_caught_only_by"]["same_words"] == 3
