"""One contamination scan, end to end: check, find, write, ingest.

Order matters for "bad input writes nothing": the cheap checks (calibration
file, model weights, probe flags) come first, then the eval set, then the
pool is streamed; only when every channel is done are the artifacts
written (atomically, with sidecars) and the items ingested.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from engine.artifacts import write_json_artifact, write_jsonl_artifact
from engine.canonical import sha256_hex
from engine.contamination.channels import internal as internal_dups
from engine.contamination.channels.calibration import (
    DEFAULT_CALIBRATION,
    calibrate,
    read_calibration,
)
from engine.contamination.channels.embedding import (
    EmbedCounts,
    Embedder,
    EmbeddingCache,
    TopK,
    embed_texts,
    identify_model,
)
from engine.contamination.channels.minhash import Signatures
from engine.contamination.channels.ngram import EvalIndex, NgramSettings
from engine.contamination.channels.probe import (
    ChatClient,
    ProbeItem,
    completions_url,
    run_probe,
    sample_indexes,
)
from engine.contamination.channels.shingles import shingle_set
from engine.contamination.inputs.canonical_text import canonical
from engine.contamination.inputs.evalset import EvalSet, load_eval
from engine.contamination.inputs.pool_hash import ID_HASH_METHOD
from engine.contamination.inputs.shards import ShardedPool
from engine.contamination.inputs.sources import Source, count_rows
from engine.contamination.pool.base import Backend, run_shards
from engine.contamination.pool.local import LocalBackend
from engine.contamination.pool.merge import PoolDoc, PoolScan, check_ids, merge
from engine.contamination.pool.records import ShardRecords, scan_key
from engine.contamination.pool.shard_scan import EmbedPlan, ShardJob
from engine.contamination.pool.stream import scan_pool, start_workers_early
from engine.contamination.report.findings import (
    Findings,
    PoolPair,
    backlog_items,
    build_report,
    flagged_rows,
)
from engine.errors import InputError
from engine.workspace import BacklogItem, IngestResult, Workspace

REPORT = "contamination_report.json"
PAIRS = "flagged_pairs.jsonl"
EVAL_ITEMS = "eval_items.jsonl"
ITEMS = "flagged_items.jsonl"


@dataclass(frozen=True)
class ScanConfig:
    """Everything a scan needs to know; defaults are the seed's settings."""

    eval: Source
    pool: Source | ShardedPool
    ngram: NgramSettings = NgramSettings()
    embed: bool = True
    model_path: str | None = None
    model_sha256: str | None = None
    cosine_threshold: float | None = None
    calibration: Path | None = None
    top_k: int = 3
    probe_endpoint: str | None = None
    probe_model: str | None = None
    probe_answer_field: str = "answer"
    probe_sample: int = 100
    jobs: int | None = None  # workers: processes (local) or actors (ray)
    batch_size: int = 2048
    backend: str = "local"  # "local" or "ray"
    ray_address: str | None = None  # "auto", "ray://HOST:PORT", or None: start one
    ray_num_cpus: int | None = None
    shard_retries: int = 2
    resume: bool = True  # reuse the workspace's records of finished shards
    embed_cache: Path | None = None  # default: workspace/cache/embeddings.sqlite


@dataclass(frozen=True)
class ScanOutcome:
    """What a scan wrote and ingested."""

    run_id: str
    run_dir: Path
    report: dict[str, Any]
    rows: list[dict[str, Any]]
    items: list[BacklogItem]
    ingest: IngestResult
    artifacts: dict[str, str] = field(default_factory=dict)


@dataclass
class _Embedding:
    embedder: Embedder
    cache: EmbeddingCache
    threshold: float
    report: dict[str, Any]
    counts: EmbedCounts
    eval_vectors: Any = None


def _check_embedding(config: ScanConfig, embedder: Embedder | None) -> tuple[Any, Any]:
    """Gives (calibration pairs or None, model identity): the cheap checks, done first."""
    if not config.embed:
        return None, None
    calibration = None
    if config.cosine_threshold is None:
        path = config.calibration or DEFAULT_CALIBRATION
        calibration = (read_calibration(path), path)
    elif not 0 < config.cosine_threshold <= 1:
        raise InputError("must lie in (0, 1]", field="cosine-threshold")
    info = (
        embedder.info
        if embedder is not None
        else identify_model(config.model_path, config.model_sha256)
    )
    return calibration, info


def _prepare_embedding(
    config: ScanConfig, ws: Workspace, embedder: Embedder | None, calibration_pairs: Any, info: Any
) -> _Embedding | None:
    if not config.embed:
        return None
    # the cache first: a bad --embed-cache is said before the model loads
    cache = EmbeddingCache(config.embed_cache or ws.root / "cache" / "embeddings.sqlite")
    if embedder is None:
        try:
            embedder = Embedder(info)
        except BaseException:
            cache.close()
            raise
    counts = EmbedCounts()
    described = embedder.info.to_json()
    if calibration_pairs is not None:
        (pairs, sha), path = calibration_pairs
        calibration_counts = EmbedCounts()
        result = calibrate(
            pairs,
            sha,
            str(path),
            lambda texts: embed_texts(embedder, cache, texts, calibration_counts),
            embedder.info.sha256,
        )
        threshold = result.threshold
        report = {
            "enabled": True,
            "model": described,
            "threshold_source": "calibrated",
            "calibration": result.to_json(),
        }
    else:
        # _check_embedding reads calibration pairs whenever no threshold is given
        assert config.cosine_threshold is not None
        threshold = float(config.cosine_threshold)
        report = {"enabled": True, "model": described, "threshold_source": "given"}
    report["top_k"] = config.top_k
    return _Embedding(embedder, cache, threshold, report, counts)


def _probe(config: ScanConfig, evalset: EvalSet, rep: Any):
    if not config.probe_endpoint:
        return None
    client = ChatClient(config.probe_endpoint, config.probe_model or "default")
    try:
        chosen = sample_indexes(len(evalset.items), config.probe_sample)
        items = [
            ProbeItem(
                i,
                evalset.items[i].id,
                evalset.items[i].text,
                evalset.items[i].row[config.probe_answer_field],
            )
            for i in chosen
        ]
        stage = rep.stage("behavioral probe", total=len(items), unit="items") if rep else None
        result = run_probe(client, items, stage)
        if stage is not None:
            stage.finish()
        return result
    finally:
        client.close()


def _pool_pairs(
    scan: PoolScan,
    topk: TopK | None,
    emb: _Embedding | None,
    index: EvalIndex,
    signatures: Signatures,
) -> tuple[list[PoolPair], dict[int, PoolDoc]]:
    docs = dict(scan.docs)
    exact = {(p.eval_index, p.doc): p for p in scan.pairs}
    cosines: dict[tuple[int, int], float] = {}
    if topk is not None:
        for e, j, score in topk.flagged():
            cosines[(e, j)] = score
            if j not in docs:
                ident, text = topk.docs[j]
                docs[j] = PoolDoc(j, ident, text)
    keys = sorted(set(exact) | set(cosines))
    vectors: dict[int, np.ndarray] = {}
    if emb is not None:
        need = sorted({j for e, j in keys if (e, j) not in cosines})
        if need:
            texts = [canonical(docs[j].text) for j in need]
            found = embed_texts(emb.embedder, emb.cache, texts, EmbedCounts())
            vectors = dict(zip(need, found, strict=True))
    eval_vectors = topk.eval if topk is not None else None
    n = index.settings.n
    out = []
    for e, j in keys:
        doc_text = canonical(docs[j].text)
        doc_set = shingle_set(doc_text, n)
        if (e, j) in exact:
            p = exact[(e, j)]
            shared, a, b = p.shared, p.eval_shingles, p.doc_shingles
        else:
            eval_set = index.shingles[e]
            shared, a, b = len(eval_set & doc_set), len(eval_set), len(doc_set)
        cosine = cosines.get((e, j))
        if cosine is None and eval_vectors is not None and j in vectors:
            cosine = float(np.dot(eval_vectors[e], vectors[j]))
        estimate = signatures.jaccard(f"e{e}", index.shingles[e], f"p{j}", doc_set)
        out.append(PoolPair(e, j, shared, a, b, estimate, cosine, (e, j) in cosines))
    return out, docs


def _consumer(emb: _Embedding, topk: TopK, stage: Any):
    """Gives the pool-batch consumer that embeds each batch and merges it into the top-k."""

    def consume(batch, ids):
        texts = batch.texts
        vectors = embed_texts(
            emb.embedder, emb.cache, [canonical(t) for t in texts], emb.counts, stage
        )
        topk.add(vectors, batch.start, ids, texts)

    return consume


def _write(ws: Workspace, findings: Findings, timing: dict[str, float]) -> ScanOutcome:
    """Gives the outcome after writing the artifacts and ingesting the items."""
    evalset = findings.eval
    now = datetime.now(UTC)
    inputs_tag = sha256_hex(
        f"{evalset.provenance['content_sha256']}"
        f"{findings.pool_provenance['content_sha256']}".encode()
    )[:8]
    run_id = f"contam-{now.strftime('%Y%m%dT%H%M%S%fZ')}-{inputs_tag}"
    rows = flagged_rows(findings)
    report = build_report(findings, rows, run_id, now.isoformat(timespec="seconds"), timing)
    items = backlog_items(findings, run_id)
    eval_rows = [
        {"index": it.index, "id": it.id, "text": it.text, "row": it.row} for it in evalset.items
    ]
    run_dir = ws.run_dir(run_id)
    artifacts = {
        REPORT: write_json_artifact(run_dir / REPORT, report),
        PAIRS: write_jsonl_artifact(run_dir / PAIRS, rows),
        EVAL_ITEMS: write_jsonl_artifact(run_dir / EVAL_ITEMS, eval_rows),
        # the items as ingested: clean reads its item ids from here, since an
        # item unchanged since an earlier scan keeps that scan's run id
        ITEMS: write_jsonl_artifact(run_dir / ITEMS, [item.to_json() for item in items]),
    }
    manifest = {
        "kind": "contamination-scan",
        "artifacts": artifacts,
        "inputs": {"eval": evalset.provenance, "pool": findings.pool_provenance},
        "thresholds": report["thresholds"],
    }
    try:
        ingest = ws.ingest(items, runs={run_id: manifest}, source=f"scan {run_id}")
    except Exception:
        _drop_unrecorded(ws, run_id, run_dir)
        raise
    return ScanOutcome(run_id, run_dir, report, rows, items, ingest, artifacts)


def _drop_unrecorded(ws: Workspace, run_id: str, run_dir: Path) -> None:
    """Removes a new run's artifacts when recording the run failed (locked, full,
    refused): a run the database does not hold must not stay half there. A run
    that is held, or that cannot be checked, is left alone."""
    try:
        held = ws.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    except sqlite3.Error:
        return
    if held is None:
        shutil.rmtree(run_dir, ignore_errors=True)


def _scan_stream(
    config: ScanConfig, index: EvalIndex, emb: _Embedding | None, rep: Any
) -> tuple[PoolScan, TopK | None]:
    """Gives the scan of one stream (a plain file or a hub dataset) read by this process."""
    assert isinstance(config.pool, Source)
    topk = consumer = embed_stage = None
    pool_rows = count_rows(config.pool) if rep is not None else None
    if emb is not None:
        topk = TopK(emb.eval_vectors, config.top_k, emb.threshold)
        embed_stage = rep.stage("embedding pool", total=pool_rows, unit="texts") if rep else None
        consumer = _consumer(emb, topk, embed_stage)
    pool_stage = rep.stage("scanning pool", total=pool_rows, unit="docs") if rep else None
    scan = scan_pool(
        config.pool,
        index,
        jobs=config.jobs,
        batch_size=config.batch_size,
        consumer=consumer,
        stage=pool_stage,
    )
    for stage in (pool_stage, embed_stage):
        if stage is not None:
            stage.finish()
    return scan, topk


def backend_for(config: ScanConfig) -> Backend:
    """Gives the execution backend the config names (Ray is imported only for ``ray``)."""
    if config.backend == "ray":
        from engine.contamination.pool.ray import RayBackend

        return RayBackend(config.ray_address, config.ray_num_cpus, config.jobs)
    return LocalBackend(config.jobs)


def _scan_shards(
    ws: Workspace,
    config: ScanConfig,
    evalset: EvalSet,
    index: EvalIndex,
    emb: _Embedding | None,
    rep: Any,
) -> tuple[PoolScan, TopK | None]:
    """Gives the scan of a sharded pool, its shards spread over the backend's workers."""
    pool = config.pool
    assert isinstance(pool, ShardedPool)
    started = time.perf_counter()
    plan = None
    settings: dict[str, Any] = {
        "eval_content_sha256": evalset.provenance["content_sha256"],
        "ngram": [config.ngram.n, config.ngram.jaccard, config.ngram.containment],
        "text_field": pool.text_field,
        "id_field": pool.id_field,
        "id_hash": ID_HASH_METHOD if pool.id_field else None,
        "embed": None,
    }
    if emb is not None:
        plan = EmbedPlan(
            emb.embedder.info,
            emb.embedder.dim,
            str(emb.cache.path),
            emb.eval_vectors,
            config.top_k,
            emb.threshold,
        )
        settings["embed"] = {
            "model": emb.embedder.info.identity,
            "top_k": config.top_k,
            "threshold": emb.threshold,
            "eval_vectors": sha256_hex(emb.eval_vectors.tobytes()),
        }
    key = scan_key(settings)
    records = ShardRecords(ws.root, key)
    job = ShardJob(
        index,
        pool.text_field,
        pool.id_field,
        key,
        config.batch_size,
        plan,
        records.names() if config.resume else frozenset(),
    )
    backend = backend_for(config)
    outcomes, counts = run_shards(
        backend, job, list(pool.shards), records, retries=config.shard_retries, rep=rep
    )
    if pool.id_field:
        check_ids(outcomes, list(pool.shards), pool.text_field, pool.id_field)
    topk = TopK(emb.eval_vectors, config.top_k, emb.threshold) if emb is not None else None
    seconds = time.perf_counter() - started
    scanned_docs = sum(o.n for o in outcomes if not o.from_record)
    run = {
        "backend": backend.name,
        "workers": backend.workers,
        "shards": counts.shards,
        "scanned": counts.scanned,
        "from_records": counts.from_records,
        "retries": counts.retries,
        "records": str(records.directory.relative_to(ws.root)),
        "docs_scanned": scanned_docs,
        "startup_s": round(counts.startup_seconds, 3),
        "scan_s": round(counts.scan_seconds, 3),
        "docs_per_s": round(scanned_docs / counts.scan_seconds, 1)
        if scanned_docs and counts.scan_seconds
        else None,
    }
    scan = merge(
        outcomes,
        pool.provenance(),
        seconds=seconds,
        jobs=backend.workers,
        topk=topk,
        run=run,
        pool_sha256=counts.pool_sha256,
    )
    if emb is not None:
        for outcome in outcomes:
            if outcome.topk is not None:
                emb.counts.embedded += outcome.topk.embedded
                emb.counts.cached += outcome.topk.cached
    return scan, topk


def run_scan(
    ws: Workspace, config: ScanConfig, *, embedder: Embedder | None = None, rep: Any = None
) -> ScanOutcome:
    """Gives the outcome of a full scan: artifacts written, items ingested."""
    if config.probe_endpoint and not config.probe_model:
        raise InputError("--probe-endpoint needs --probe-model", field="probe-model")
    if config.probe_endpoint:
        completions_url(config.probe_endpoint)  # a malformed URL is said before any reading
    if config.top_k < 1:
        raise InputError("must be at least 1", field="top-k")
    if config.shard_retries < 0:
        raise InputError("must be 0 or more", field="shard-retries")
    if config.backend not in ("local", "ray"):
        raise InputError(f"unknown backend {config.backend!r}: local or ray", field="backend")
    if config.backend == "ray":
        from engine.contamination.pool.ray import check_reachable, import_ray

        import_ray()  # a missing extra, or a cluster nobody runs, is said before any reading
        if config.ray_address and config.ray_address != "auto":
            check_reachable(config.ray_address)
    sharded = isinstance(config.pool, ShardedPool)
    timing: dict[str, float] = {}
    clock = time.perf_counter()
    calibration_pairs, model_info = _check_embedding(config, embedder)
    if not sharded:
        start_workers_early(config.pool, config.jobs)  # type: ignore[arg-type]
    required = (config.probe_answer_field,) if config.probe_endpoint else ()
    evalset = load_eval(config.eval, require_fields=required)
    texts = [item.canonical for item in evalset.items]
    index = EvalIndex(texts, config.ngram)
    internal = internal_dups.ngram_pairs(index)
    timing["eval_and_index"] = time.perf_counter() - clock

    clock = time.perf_counter()
    emb = _prepare_embedding(config, ws, embedder, calibration_pairs, model_info)
    timing["embedding_setup"] = time.perf_counter() - clock
    try:
        if emb is not None:
            clock = time.perf_counter()
            stage = rep.stage("embedding eval set", total=len(texts), unit="texts") if rep else None
            emb.eval_vectors = embed_texts(emb.embedder, emb.cache, texts, emb.counts, stage)
            if stage is not None:
                stage.finish()
            internal = internal_dups.with_cosines(
                internal, emb.eval_vectors, emb.threshold, index.shingles
            )
            timing["embedding_eval"] = time.perf_counter() - clock

        clock = time.perf_counter()
        if sharded:
            scan, topk = _scan_shards(ws, config, evalset, index, emb, rep)
        else:
            scan, topk = _scan_stream(config, index, emb, rep)
        timing["pool"] = time.perf_counter() - clock

        clock = time.perf_counter()
        probe = _probe(config, evalset, rep)
        timing["probe"] = time.perf_counter() - clock

        signatures = Signatures(config.ngram.num_perm)
        pool_pairs, docs = _pool_pairs(scan, topk, emb, index, signatures)
    finally:
        if emb is not None:
            emb.cache.close()
    internal_list = sorted(internal.values(), key=lambda p: (p.a, p.b))
    internal_minhash = {
        (p.a, p.b): signatures.jaccard(
            f"e{p.a}", index.shingles[p.a], f"e{p.b}", index.shingles[p.b]
        )
        for p in internal_list
    }
    embedding_report: dict[str, Any] = {"enabled": False}
    if emb is not None:
        embedding_report = {
            **emb.report,
            "texts_embedded": emb.counts.embedded,
            "texts_from_cache": emb.counts.cached,
            "cache": str(emb.cache.path),
        }
    findings = Findings(
        eval=evalset,
        pool_provenance=scan.provenance,
        settings=config.ngram,
        pool_pairs=pool_pairs,
        pool_docs=docs,
        internal=internal_list,
        internal_minhash=internal_minhash,
        cosine_threshold=emb.threshold if emb is not None else None,
        top_k=config.top_k,
        probe=probe,
        embedding=embedding_report,
        search={
            "method": "eval 13-gram hash index; pool streamed through it; exact "
            "Jaccard and containment on string shingle sets decide",
            "candidate_docs": scan.candidates,
            "pool_docs": scan.n,
            "workers": scan.jobs,
            "pool_seconds": round(scan.seconds, 3),
            "pool_docs_per_s": round(scan.n / scan.seconds, 1) if scan.seconds else None,
        },
        pool_shards=scan.shards,
        pool_scan=scan.run,
    )
    return _write(ws, findings, timing)
