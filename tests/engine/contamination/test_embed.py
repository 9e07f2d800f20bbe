"""The embedding channel: verified model, calibrated threshold, cache, top-k, numbers-only flag.

These load all-MiniLM-L6-v2 once per test process and embed only the small
sample (a few dozen texts).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

from engine.contamination.channels.calibration import choose_threshold  # noqa: E402
from engine.contamination.channels.embedding import (
    DEFAULT_WEIGHTS_SHA256,
    Embedder,  # noqa: E402
    EmbeddingCache,
    TopK,
    identify_model,
)
from engine.contamination.inputs.sources import resolve_source  # noqa: E402
from engine.contamination.scan import ScanConfig, run_scan  # noqa: E402
from engine.errors import IntegrityError  # noqa: E402
from engine.workspace import Workspace  # noqa: E402
from tests.conftest import REPO
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args

SAMPLE = REPO / "sample_data" / "contamination"


@pytest.fixture(scope="module")
def embedder():
    return Embedder(identify_model(None))


def cls_pooling_copy(directory: Path) -> Path:
    """Gives a copy of the default model (the same weights, linked) that pools by CLS token."""
    source = Path(identify_model(None).path)
    shutil.copytree(source, directory, ignore=shutil.ignore_patterns("model.safetensors"))
    os.symlink(source / "model.safetensors", directory / "model.safetensors")
    pooling = directory / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(
        json.dumps({**config, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    return directory


def sample_config(**options) -> ScanConfig:
    return ScanConfig.of(
        eval=resolve_source(
            "eval", str(SAMPLE / "eval.jsonl"), text_field="question", id_field="id"
        ),
        pool=resolve_source("pool", str(SAMPLE / "pool.jsonl"), text_field="text", id_field="id"),
        **options,
    )


def test_the_default_model_is_the_pinned_minilm_weights():
    info = identify_model(None)
    assert info.sha256 == DEFAULT_WEIGHTS_SHA256 and info.default
    assert info.weights_file == "model.safetensors"


def test_a_model_whose_weights_do_not_match_the_given_hash_is_refused():
    path = identify_model(None).path
    with pytest.raises(IntegrityError, match="is not the expected"):
        identify_model(path, "0" * 64)


def test_threshold_is_the_middle_of_the_gap_when_calibration_separates():
    threshold, precision, recall, f1 = choose_threshold([0.9, 0.85], [0.3, 0.6])
    assert threshold == pytest.approx(0.725)
    assert (precision, recall, f1) == (1.0, 1.0, 1.0)


def test_threshold_maximises_f1_when_the_labels_overlap():
    # cuts 0.35 (P 2/3, R 1, F1 0.8), 0.55 (F1 0.5), 0.75 (P 1, R 1/2, F1 2/3)
    threshold, precision, recall, f1 = choose_threshold([0.9, 0.5], [0.6, 0.2])
    assert threshold == pytest.approx(0.35)
    assert (precision, recall, f1) == pytest.approx((2 / 3, 1.0, 0.8))


def test_top_k_keeps_the_best_documents_across_batches_and_the_earlier_on_a_tie():
    eval_vectors = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    top = TopK(eval_vectors, k=2, threshold=0.5)
    top.add(np.array([[0.6, 0.8], [1.0, 0.0]], dtype=np.float32), 0, ["a", "b"], ["ta", "tb"])
    top.add(np.array([[0.8, 0.6], [0.6, 0.8]], dtype=np.float32), 2, ["c", "d"], ["tc", "td"])
    assert top.flagged() == [
        (0, 1, 1.0),
        (0, 2, pytest.approx(0.8)),
        (1, 0, pytest.approx(0.8)),
        (1, 3, pytest.approx(0.8)),
    ]
    assert set(top.docs) == {0, 1, 2, 3}


def test_the_cache_gives_back_exactly_what_was_stored_per_model(tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    vector = np.arange(4, dtype=np.float32)
    cache.store("model-a", [("text-1", vector)])
    assert cache.lookup("model-b", ["text-1"]) == {}
    assert cache.lookup("model-a", ["text-1", "text-2"])["text-1"].tolist() == [0, 1, 2, 3]
    cache.close()


@pytest.mark.slow
def test_embedding_channel_on_the_sample_recall_precision_and_numbers_only(tmp_path, embedder):
    with Workspace.init(tmp_path / "ws") as ws:
        outcome = run_scan(ws, sample_config(jobs=1), embedder=embedder)
    report = outcome.report
    calibration = report["embedding"]["calibration"]
    assert report["embedding"]["threshold_source"] == "calibrated"
    ranges = calibration["ranges"]
    # the calibrated threshold lies between the labelled groups it was chosen from
    assert ranges["unrelated"]["min"] < calibration["threshold"] < ranges["paraphrase"]["max"]
    truth = [json.loads(line) for line in open(SAMPLE / "truth.jsonl")]
    every = {(t["eval_id"], t["match_id"]) for t in truth}
    expected = {(t["eval_id"], t["match_id"]) for t in truth if "embed" in t["expected_channels"]}
    flagged = {(r["test_id"], r["pool_id"]) for r in outcome.rows if "embed" in r["channels"]}
    recall = len(flagged & expected) / len(expected)
    precision = len(flagged & every) / len(flagged)
    print(
        f"embed: recall {recall:.2f}, precision {precision:.2f}, threshold "
        f"{calibration['threshold']}"
    )
    assert (recall, precision) == (1.0, 1.0)
    numbers_only = {
        (r["test_id"], r["pool_id"]) for r in outcome.rows if r.get("numbers_only_differ")
    }
    assert numbers_only == {
        (t["eval_id"], t["match_id"]) for t in truth if t["kind"] == "number_changed"
    }


@pytest.mark.slow
def test_a_rescan_of_the_same_pool_embeds_nothing_twice(tmp_path, embedder):
    with Workspace.init(tmp_path / "ws") as ws:
        first = run_scan(ws, sample_config(jobs=1, cosine_threshold=0.8), embedder=embedder)
        second = run_scan(ws, sample_config(jobs=1, cosine_threshold=0.8), embedder=embedder)
    rows = [json.loads(line)["question"] for line in open(SAMPLE / "eval.jsonl")]
    rows += [json.loads(line)["text"] for line in open(SAMPLE / "pool.jsonl")]
    distinct = {" ".join(t.lower().split()) for t in rows}
    assert len(distinct) < len(rows)  # the sample repeats some texts (re-cased copies)
    assert first.report["embedding"]["texts_embedded"] == len(distinct)
    assert second.report["embedding"]["texts_embedded"] == 0
    assert second.report["embedding"]["texts_from_cache"] == len(rows)
    assert second.rows == first.rows


def test_the_model_identity_covers_every_file_not_only_the_weights(tmp_path):
    default = identify_model(None)
    copy = Path(shutil.copytree(default.path, tmp_path / "copy"))
    assert identify_model(copy).identity == default.identity
    cls = identify_model(cls_pooling_copy(tmp_path / "cls"))
    assert cls.sha256 == default.sha256  # the same weights: --model-sha256 still checks these
    assert cls.identity != default.identity
    (copy / "tokenizer_config.json").write_text(
        (copy / "tokenizer_config.json").read_text().replace("true", "false")
    )
    assert identify_model(copy).identity not in (default.identity, cls.identity)
    assert identify_model(copy).to_json()["identity_sha256"] == identify_model(copy).identity


@pytest.mark.slow
def test_a_model_with_the_same_weights_and_another_pooling_reuses_no_cached_vector(
    tmp_path, embedder
):
    cls = Embedder(identify_model(cls_pooling_copy(tmp_path / "cls")))
    with Workspace.init(tmp_path / "shared") as ws:
        first = run_scan(ws, sample_config(jobs=1, cosine_threshold=0.8), embedder=embedder)
        reused = run_scan(ws, sample_config(jobs=1, cosine_threshold=0.8), embedder=cls)
    with Workspace.init(tmp_path / "fresh") as ws:
        fresh = run_scan(ws, sample_config(jobs=1, cosine_threshold=0.8), embedder=cls)
    assert (
        reused.report["embedding"]["texts_embedded"] == first.report["embedding"]["texts_embedded"]
    )
    assert reused.rows == fresh.rows
    assert reused.rows != first.rows  # CLS pooling does flag other pairs than mean pooling


@pytest.mark.slow
@pytest.mark.parametrize(
    "cache, reason",
    [
        ("afile/x.sqlite", "cannot make the folder afile: File exists"),
        ("notes.txt", "file is not a database"),
        ("/dev/null", "not a regular file"),
    ],
)
def test_an_unusable_embed_cache_is_refused_in_one_line_naming_it(
    sealdesk, tmp_path, cache, reason
):
    (tmp_path / "afile").touch()
    (tmp_path / "notes.txt").write_text("hello\n")
    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    proc = sealdesk(
        *scan_args(
            SAMPLE / "eval.jsonl",
            SAMPLE / "pool.jsonl",
            *SAMPLE_FIELDS,
            "--cosine-threshold",
            "0.8",
            "--embed-cache",
            cache,
        ),
        workspace=ws,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    expected = (
        f"sealdesk: error: {cache}: field 'embed-cache': cannot be used as the "
        f"embedding cache (--embed-cache): {reason}"
    )
    assert proc.stderr.splitlines() == [expected]
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    with Workspace.open(ws) as opened:
        assert opened.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    assert sorted(p.name for p in ws.iterdir()) == ["artifacts", "sealdesk.db", "trust"]
    assert list((ws / "artifacts").iterdir()) == []


def test_a_gpu_batch_follows_its_free_memory_within_bounds_and_the_cpu_keeps_its_own():
    from engine.contamination.channels.embedding import (
        ENCODE_BATCH,
        GPU_BATCH_BOUNDS,
        GPU_BYTES_PER_TEXT,
        gpu_batch,
        pick_device,
    )

    low, high = GPU_BATCH_BOUNDS
    assert gpu_batch(0) == low
    assert gpu_batch(2 * 300 * GPU_BYTES_PER_TEXT) == 300
    assert gpu_batch(80 << 30) == high
    device, batch, described = pick_device()
    import torch

    if torch.cuda.is_available():  # pragma: no cover - this machine has no GPU
        assert device == "cuda" and low <= batch <= high
    else:
        assert (device, batch) == ("cpu", ENCODE_BATCH)
        assert described.startswith("cpu (")
