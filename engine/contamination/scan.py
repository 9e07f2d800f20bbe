"""One contamination scan, end to end: check, find, write, ingest.

Order matters for "bad input writes nothing": every option is checked first
(``options.check``, from ``scan_config``), then the cheap reads (the
registered channels' own, such as the judge's config; the calibration file,
the model weights), then the registered channels' preflights, then the eval
set, then the pool is streamed; then the registered channels run
(``channels.registry``: found, not named here); only when every channel is
done are the artifacts written (atomically, with sidecars) and the items
ingested.
"""

from __future__ import annotations

import functools
import shutil
import sqlite3
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from engine.artifacts import write_json_artifact, write_jsonl_artifact
from engine.backlog import BacklogItem
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
from engine.contamination.channels.kept_numbers import LANE_NUMBERS, KeptNumbers, number_tokens
from engine.contamination.channels.minhash import Signatures
from engine.contamination.channels.ngram import EvalIndex, NgramSettings
from engine.contamination.channels.prefilter import (
    NEAREST_WITH_NUMBERS,
    CandidateHeap,
    StaticEncoder,
    cached_prefilter,
    eval_vectors_sha256,
    given_prefilter,
    load_static,
    prefilter_cached,
    rerank,
)
from engine.contamination.channels.registry import (
    Channel,
    ChannelRun,
    Context,
    PoolHit,
    registered,
)
from engine.contamination.channels.shingles import shingle_set
from engine.contamination.inputs.canonical_text import canonical
from engine.contamination.inputs.evalset import EvalSet, load_eval
from engine.contamination.inputs.fields import with_fields
from engine.contamination.inputs.pool_hash import ID_HASH_METHOD
from engine.contamination.inputs.shards import (
    ShardedPool,
    count_rows_up_to,
    is_sharded,
    sharded_pool,
)
from engine.contamination.inputs.sources import Source, count_rows, resolve_source
from engine.contamination.options import ScanOptions, check, settled
from engine.contamination.pool.base import Backend, run_shards
from engine.contamination.pool.local import LocalBackend
from engine.contamination.pool.merge import PoolDoc, PoolScan, check_ids, merge
from engine.contamination.pool.records import ShardRecords, scan_key
from engine.contamination.pool.shard_scan import EmbedPlan, PoolReader, ShardJob, pool_readers
from engine.contamination.pool.stream import scan_pool, start_workers_early
from engine.contamination.report.findings import (
    Findings,
    PoolPair,
    backlog_items,
    build_report,
    flagged_pairs,
    flagged_rows,
)
from engine.errors import InputError
from engine.workspace import IngestResult, Workspace

REPORT = "contamination_report.json"
PAIRS = "flagged_pairs.jsonl"
EVAL_ITEMS = "eval_items.jsonl"
ITEMS = "flagged_items.jsonl"


@dataclass(frozen=True)
class ScanConfig:
    """Everything a scan needs to know: its options, settled (``options.settled``: an
    option not given holds the value the scan takes for it), and what they resolved to,
    the eval set and the pool and how their text and id fields were chosen."""

    eval: Source
    pool: Source | ShardedPool
    options: ScanOptions
    # how each dataset's text and id fields were chosen (inputs.fields), for the report
    fields: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 2048  # pool documents a worker reads at a time

    @classmethod
    def of(cls, eval: Source, pool: Source | ShardedPool, **options: Any) -> ScanConfig:
        """Gives the config of a scan of sources already resolved, with the options given
        by name (the others at their declared defaults); checks none of them."""
        given = ScanOptions(eval_spec=eval.label, pool_spec=pool.label, **options)
        return cls(eval=eval, pool=pool, options=settled(given))

    @property
    def ngram(self) -> NgramSettings:
        """Gives the n-gram channels' settings."""
        o = self.options
        return NgramSettings(
            n=o.ngram_n, jaccard=o.jaccard, containment=o.containment, num_perm=o.num_perm
        )


def _n(count: int | None) -> int:
    """Gives a settled count option as an int (settled, it is never None)."""
    assert count is not None
    return count


def scan_config(options: ScanOptions) -> ScanConfig:
    """Gives the scan's config from the options: every option checked (``check``) before
    anything is read, then the eval set and the pool resolved and their fields chosen
    (the first rows are read last)."""
    check(options)
    o = options
    eval_source = resolve_source(
        "eval",
        o.eval_spec,
        text_field=o.text_field or "text",
        id_field=o.id_field,
        split=o.eval_split,
        revision=o.eval_revision,
        config=o.eval_config,
    )
    pool_text, pool_id = o.pool_text_field or o.text_field or "text", o.pool_id_field or o.id_field
    pool_source: Any  # a Source or a ShardedPool (with_fields takes either, not the union)
    if is_sharded(o.pool_spec) or (o.backend == "ray" and Path(o.pool_spec).is_file()):
        pool_source = sharded_pool(o.pool_spec, text_field=pool_text, id_field=pool_id)
    else:
        pool_source = resolve_source(
            "pool",
            o.pool_spec,
            text_field=pool_text,
            id_field=pool_id,
            split=o.pool_split,
            revision=o.pool_revision,
            config=o.pool_config,
        )
        if o.backend == "ray":
            raise InputError(
                "a hub dataset is read as one stream; --backend ray scans "
                "files: download its Parquet files and pass them as a pattern",
                path=o.pool_spec,
                field="backend",
            )
    # Fields last: every cheaper check of the options has passed before a row is read.
    eval_source, eval_fields = with_fields(
        eval_source, o.text_field, o.id_field, options=("--text-field", "--id-field")
    )
    pool_source, pool_fields = with_fields(
        pool_source,
        o.pool_text_field,
        o.pool_id_field,
        options=("--pool-text-field", "--pool-id-field"),
        fallback=(o.text_field, o.id_field),
    )
    return ScanConfig(
        eval=eval_source,
        pool=pool_source,
        options=settled(o),
        fields={"eval": eval_fields, "pool": pool_fields},
    )


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
    prefilter: StaticEncoder | None = None  # None: --embed-exhaustive
    kept: KeptNumbers | None = None  # the eval set's numbers: which documents keep them
    prefilter_eval: Any = None  # the eval set under the static model


def _embedding_inputs(config: ScanConfig, embedder: Embedder | None) -> tuple[Any, Any]:
    """Gives (calibration pairs or None, model identity): read before the eval set."""
    if not config.options.embed:
        return None, None
    calibration = None
    if config.options.cosine_threshold is None:
        path = config.options.calibration or DEFAULT_CALIBRATION
        calibration = (read_calibration(path), path)
    info = (
        embedder.info
        if embedder is not None
        else identify_model(config.options.model_path, config.options.model_sha256)
    )
    return calibration, info


# The paraphrase search's costs, in full-model embeddings (about a hundred texts a
# second on two cores; docs/benchmarks.md has the measured figures). Distilling the
# prefilter passes the model's whole vocabulary through it once, about as much work as
# embedding five thousand documents, and is paid once per workspace and model; the
# static model embeds a document some fifty times faster than the full one.
DISTILL_COST = 5_000
STATIC_COST = 0.02
# Two-stage must promise to cost at most this share of exhaustive: when the two are
# close, exhaustive wins, since it cannot lose a pair to the prefilter.
TWO_STAGE_SHARE = 0.8


@dataclass(frozen=True)
class SearchCost:
    """What each paraphrase search is estimated to cost, in full-model embeddings."""

    pool: int | None  # documents (None: not known before the scan)
    eval_items: int | None
    candidates_bound: int | None  # eval items x (K + numbers lane): the rerank's most
    distilled: bool  # the workspace holds the prefilter already

    def exhaustive(self) -> float | None:
        return float(self.pool) if self.pool is not None else None

    def two_stage(self) -> float | None:
        if self.pool is None or self.candidates_bound is None:
            return None
        rerank = min(self.pool, self.candidates_bound)
        return (0 if self.distilled else DISTILL_COST) + STATIC_COST * self.pool + rerank

    def crossover(self) -> int | None:
        """Gives the pool size from which two-stage is chosen."""
        if self.candidates_bound is None:
            return None
        fixed = (0 if self.distilled else DISTILL_COST) + self.candidates_bound
        return int(fixed / (TWO_STAGE_SHARE - STATIC_COST)) + 1


def candidates_bound(eval_texts: list[str], k: int, lane: int) -> int:
    """Gives the most candidates the rerank can get: an eval item that states two numbers
    or more sends its NEAREST_WITH_NUMBERS nearest and its numbers lane, any other its K
    nearest (it has no numbers lane)."""
    numeric = sum(1 for text in eval_texts if len(number_tokens(text)) >= LANE_NUMBERS)
    return numeric * (min(k, NEAREST_WITH_NUMBERS) + lane) + (len(eval_texts) - numeric) * k


def search_method(
    config: ScanConfig, distilled: bool = False, eval_texts: list[str] | None = None
) -> tuple[bool, str]:
    """Gives (whether the paraphrase search is two-stage, why): an option, else the cost.

    Exhaustive embeds every pool document with the full model; two-stage
    embeds each with the static model, then the candidates (at most eval
    items x (K + numbers lane), fewer when items share them) with the full
    one, after distilling the static model unless the workspace holds it. A
    pool whose size is not cheap to know (a hub dataset, a remote shard) is
    taken as large.
    """
    if config.options.embed_exhaustive:
        return False, "--embed-exhaustive"
    if config.options.embed_two_stage:
        return True, "--embed-two-stage"
    if config.options.prefilter_model is not None:
        return True, "--prefilter-model"
    items: int | None
    bound: int | None
    if eval_texts is not None:  # the scan has read them: each item's own bound
        items = len(eval_texts)
        bound = candidates_bound(
            eval_texts, _n(config.options.prefilter_k), _n(config.options.numbers_lane)
        )
    else:
        items = count_rows(config.eval) if isinstance(config.eval, Source) else None
        bound = (
            items * (_n(config.options.prefilter_k) + _n(config.options.numbers_lane))
            if items is not None
            else None
        )
    cost = SearchCost(None, items, bound, distilled)
    limit = cost.crossover()
    where = ""
    if isinstance(config.pool, Source):
        rows = count_rows(config.pool)
    else:
        where = f" in {len(config.pool.shards)} shard(s)"
        # counting stops at the crossover (None: the eval set's size is not known)
        rows = count_rows_up_to(config.pool, limit) if limit is not None else None
    if rows is None or limit is None:
        unknown = "pool" if rows is None else "eval set"
        return True, f"{unknown} size not known before the scan: taken as large"
    cost = SearchCost(rows, items, bound, distilled)
    ex, two = cost.exhaustive(), cost.two_stage()
    assert ex is not None and two is not None
    estimate = (
        f"pool of {rows}{'+' if rows >= limit and where else ''} documents{where}, "
        f"{items} eval items: exhaustive ~{ex:,.0f} full-model embeddings, two-stage "
        f"~{two:,.0f} ({'' if distilled else 'distilling, '}static pass, at most "
        f"{min(rows, bound or 0):,} candidates); two-stage from {limit:,} documents"
    )
    return rows >= limit, estimate


def _prepare_embedding(
    config: ScanConfig,
    ws: Workspace,
    embedder: Embedder | None,
    calibration_pairs: Any,
    info: Any,
    rep: Any = None,
    eval_texts: list[str] | None = None,
) -> _Embedding | None:
    if not config.options.embed:
        return None
    # the cache first: a bad --embed-cache is said before the model loads
    cache = EmbeddingCache(config.options.embed_cache or ws.root / "cache" / "embeddings.sqlite")
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
        # _embedding_inputs reads calibration pairs whenever no threshold is given
        assert config.options.cosine_threshold is not None
        threshold = float(config.options.cosine_threshold)
        report = {"enabled": True, "model": described, "threshold_source": "given"}
    report["top_k"] = config.options.top_k
    # where the full model ran: a CUDA device when torch sees one, else the CPU
    report["device"] = getattr(embedder, "device_description", None)
    found = _Embedding(embedder, cache, threshold, report, counts)
    distilled = prefilter_cached(ws.root / "cache" / "prefilter", embedder.info)
    two_stage, why = search_method(config, distilled, eval_texts)
    if not two_stage:
        report["search"] = {"method": "exhaustive", "chosen": why}
        return found
    try:
        if config.options.prefilter_model is not None:
            info = given_prefilter(config.options.prefilter_model)
        else:
            info = cached_prefilter(
                ws.root / "cache" / "prefilter",
                embedder.info,
                (lambda: rep.stage("distilling prefilter", total=None, unit="models"))
                if rep is not None
                else None,
            )
        found.prefilter = load_static(Path(info.path))
    except BaseException:
        cache.close()
        raise
    report["search"] = {
        "method": "two-stage",
        "chosen": why,
        "prefilter": info.to_json(),
        "candidates_per_item": _n(config.options.prefilter_k),
        "numbers_lane_per_item": _n(config.options.numbers_lane),
    }
    return found


def _run_channels(
    findings: Findings,
    config: ScanConfig,
    prepared: dict[str, Any],
    rep: Any,
    timing: dict[str, float],
    hits: dict[str, list[PoolHit]],
) -> Findings:
    """Gives the findings with what each enabled registered channel found, run in the
    registry's order; each reads the pairs as the findings stand when it runs, and a
    pool channel its own matches."""
    runs = list(findings.channels)
    for at, run in enumerate(runs):
        if run.channel.name not in prepared:
            continue  # not enabled
        clock = time.perf_counter()
        context = Context(
            config.options,
            findings.eval,
            prepared[run.channel.name],
            rep,
            functools.partial(flagged_pairs, findings),
            tuple(hits.get(run.channel.key, ())),
        )
        runs[at] = ChannelRun(run.channel, run.channel.run(context))
        findings = replace(findings, channels=tuple(runs))
        timing[run.channel.key] = time.perf_counter() - clock
    return findings


def _pool_pairs(
    scan: PoolScan,
    topk: TopK | None,
    emb: _Embedding | None,
    index: EvalIndex,
    signatures: Signatures,
    channels: list[Channel],
) -> tuple[list[PoolPair], dict[int, PoolDoc]]:
    """Gives every pool pair some channel flagged, with every measure sealdesk has for it:
    the exact n-gram counts, the MinHash estimate, the cosine when the embedding channel
    is on, and each registered pool channel's score, by its name."""
    docs = dict(scan.docs)
    matched: dict[tuple[int, int], dict[str, float]] = {}
    for channel in channels:
        for e, j, score in scan.hits.get(channel.key, ()):
            matched.setdefault((e, j), {})[channel.name] = score
    exact = {(p.eval_index, p.doc): p for p in scan.pairs}
    cosines: dict[tuple[int, int], float] = {}
    if topk is not None:
        for e, j, score in topk.flagged():
            cosines[(e, j)] = score
            if j not in docs:
                ident, text = topk.docs[j]
                docs[j] = PoolDoc(j, ident, text)
    keys = sorted(set(exact) | set(cosines) | set(matched))
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
        out.append(
            PoolPair(
                e, j, shared, a, b, estimate, cosine, (e, j) in cosines, matched.get((e, j), {})
            )
        )
    return out, docs


def _consumer(emb: _Embedding, topk: TopK, stage: Any):
    """Gives the pool-batch consumer that embeds each batch and merges it into the top-k."""

    def consume(batch, ids, canonical_texts):
        vectors = embed_texts(emb.embedder, emb.cache, canonical_texts, emb.counts, stage)
        topk.add(vectors, batch.start, ids, batch.texts)

    return consume


def _prefilter_consumer(encoder: StaticEncoder, heap: CandidateHeap, stage: Any):
    """Gives the pool-batch consumer that embeds each batch statically into the candidate heap."""

    def consume(batch, ids, canonical_texts):
        texts = batch.texts
        heap.add(encoder.encode(canonical_texts), batch.start, ids, texts)
        if stage is not None:
            stage.advance(len(texts))

    return consume


def _rerank(emb: _Embedding, heap: CandidateHeap, config: ScanConfig, rep: Any) -> TopK:
    """Gives the top-k under the full model among the prefilter's candidates (the second stage)."""
    clock = time.perf_counter()
    _, rows = heap.candidates()
    unique = len(set(rows[rows >= 0].tolist()))
    stage = rep.stage("reranking candidates", total=unique, unit="texts") if rep else None
    topk, scored = rerank(
        heap,
        emb.eval_vectors,
        lambda texts: embed_texts(emb.embedder, emb.cache, texts, emb.counts, stage),
        config.options.top_k,
        emb.threshold,
        emb.kept,
    )
    if stage is not None:
        stage.finish()
    emb.report["search"]["candidates_scored"] = scored
    emb.report["search"]["rerank_seconds"] = round(time.perf_counter() - clock, 3)
    return topk


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
    items = backlog_items(findings, run_id)
    report = build_report(findings, rows, run_id, now.isoformat(timespec="seconds"), timing, items)
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
    config: ScanConfig,
    index: EvalIndex,
    emb: _Embedding | None,
    rep: Any,
    readers: tuple[PoolReader, ...],
) -> tuple[PoolScan, TopK | None]:
    """Gives the scan of one stream (a plain file or a hub dataset) read by this process."""
    assert isinstance(config.pool, Source)
    topk: TopK | None = None
    heap = consumer = embed_stage = None
    pool_rows = count_rows(config.pool) if rep is not None else None
    if emb is not None and emb.prefilter is not None:
        heap = CandidateHeap(
            emb.prefilter_eval,
            _n(config.options.prefilter_k),
            emb.kept,
            _n(config.options.numbers_lane),
        )
        embed_stage = rep.stage("prefilter pool", total=pool_rows, unit="texts") if rep else None
        consumer = _prefilter_consumer(emb.prefilter, heap, embed_stage)
    elif emb is not None:
        topk = TopK(emb.eval_vectors, config.options.top_k, emb.threshold, emb.kept)
        embed_stage = rep.stage("embedding pool", total=pool_rows, unit="texts") if rep else None
        consumer = _consumer(emb, topk, embed_stage)
    pool_stage = rep.stage("scanning pool", total=pool_rows, unit="docs") if rep else None
    scan = scan_pool(
        config.pool,
        index,
        jobs=config.options.jobs,
        batch_size=config.batch_size,
        consumer=consumer,
        stage=pool_stage,
        readers=readers,
    )
    for stage in (pool_stage, embed_stage):
        if stage is not None:
            stage.finish()
    if heap is not None:
        assert emb is not None
        topk = _rerank(emb, heap, config, rep)
    return scan, topk


def backend_for(config: ScanConfig) -> Backend:
    """Gives the execution backend the config names (Ray is imported only for ``ray``)."""
    if config.options.backend == "ray":
        from engine.contamination.pool.ray import RayBackend

        return RayBackend(
            config.options.ray_address, config.options.ray_num_cpus, config.options.jobs
        )
    return LocalBackend(config.options.jobs)


def _scan_shards(
    ws: Workspace,
    config: ScanConfig,
    evalset: EvalSet,
    index: EvalIndex,
    emb: _Embedding | None,
    rep: Any,
    readers: tuple[PoolReader, ...],
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
    if emb is not None and emb.prefilter is not None:
        plan = EmbedPlan(
            emb.embedder.info,
            emb.embedder.dim,
            str(emb.cache.path),
            emb.eval_vectors,
            config.options.top_k,
            emb.threshold,
            emb.prefilter,
            emb.prefilter_eval,
            _n(config.options.prefilter_k),
            emb.kept,
            _n(config.options.numbers_lane),
        )
        # a shard's candidates depend on the static model, K and the eval set under
        # it, not on the full model or the threshold: a new calibration reuses them
        settings["embed"] = {
            "search": "two-stage",
            "prefilter": emb.report["search"]["prefilter"]["identity_sha256"],
            "candidates": _n(config.options.prefilter_k),
            "numbers_lane": _n(config.options.numbers_lane),
            "prefilter_eval": eval_vectors_sha256(emb.prefilter_eval),
        }
    elif emb is not None:
        plan = EmbedPlan(
            emb.embedder.info,
            emb.embedder.dim,
            str(emb.cache.path),
            emb.eval_vectors,
            config.options.top_k,
            emb.threshold,
            kept=emb.kept,
        )
        settings["embed"] = {
            "model": emb.embedder.info.identity,
            "top_k": config.options.top_k,
            "order": "numbers kept, then cosine",
            "threshold": emb.threshold,
            "eval_vectors": sha256_hex(emb.eval_vectors.tobytes()),
        }
    if readers:  # a scan without pool channels keeps the key its records were made under
        settings["readers"] = {reader.key: reader.settings for reader in readers}
    key = scan_key(settings)
    records = ShardRecords(ws.root, key)
    job = ShardJob(
        index,
        pool.text_field,
        pool.id_field,
        key,
        config.batch_size,
        plan,
        records.names() if config.options.resume else frozenset(),
        readers,
    )
    backend = backend_for(config)
    outcomes, counts = run_shards(
        backend, job, list(pool.shards), records, retries=config.options.shard_retries, rep=rep
    )
    if pool.id_field:
        check_ids(outcomes, list(pool.shards), pool.text_field, pool.id_field)
    heap = None
    topk: Any = None
    if emb is not None and emb.prefilter is not None:
        heap = topk = CandidateHeap(
            emb.prefilter_eval,
            _n(config.options.prefilter_k),
            emb.kept,
            _n(config.options.numbers_lane),
        )
    elif emb is not None:
        topk = TopK(emb.eval_vectors, config.options.top_k, emb.threshold, emb.kept)
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
    if heap is not None:
        assert emb is not None
        topk = _rerank(emb, heap, config, rep)
    return scan, topk


def run_scan(
    ws: Workspace, config: ScanConfig, *, embedder: Embedder | None = None, rep: Any = None
) -> ScanOutcome:
    """Gives the outcome of a full scan: artifacts written, items ingested.

    The options were checked when the config was made (``scan_config``); this makes
    the registered channels' cheap reads (the judge's config), reads the calibration
    pairs and the model, runs the channels' preflights, and only then reads the data."""
    channels = registered()
    enabled = [c for c in channels if c.enabled(config.options)]
    prepared = {c.name: c.prepare(config.options) for c in enabled}
    sharded = isinstance(config.pool, ShardedPool)
    timing: dict[str, float] = {}
    clock = time.perf_counter()
    calibration_pairs, model_info = _embedding_inputs(config, embedder)
    # before the first row is read (the judge's is the exam's preflight)
    for channel in enabled:
        prepared[channel.name] = channel.preflight(config.options, prepared[channel.name])
    if not sharded:
        start_workers_early(config.pool, config.options.jobs)  # type: ignore[arg-type]
    required = tuple(name for c in enabled for name in c.eval_fields(config.options))
    evalset = load_eval(config.eval, require_fields=required)
    texts = [item.canonical for item in evalset.items]
    index = EvalIndex(texts, config.ngram)
    readers = pool_readers(enabled, config.options, texts)
    internal = internal_dups.ngram_pairs(index)
    timing["eval_and_index"] = time.perf_counter() - clock

    clock = time.perf_counter()
    emb = _prepare_embedding(config, ws, embedder, calibration_pairs, model_info, rep, texts)
    timing["embedding_setup"] = time.perf_counter() - clock
    try:
        if emb is not None:
            clock = time.perf_counter()
            stage = rep.stage("embedding eval set", total=len(texts), unit="texts") if rep else None
            emb.eval_vectors = embed_texts(emb.embedder, emb.cache, texts, emb.counts, stage)
            if stage is not None:
                stage.finish()
            emb.kept = KeptNumbers(texts)
            if emb.prefilter is not None:
                emb.prefilter_eval = emb.prefilter.encode(texts)
            internal = internal_dups.with_cosines(
                internal, emb.eval_vectors, emb.threshold, index.shingles
            )
            timing["embedding_eval"] = time.perf_counter() - clock

        clock = time.perf_counter()
        if sharded:
            scan, topk = _scan_shards(ws, config, evalset, index, emb, rep, readers)
        else:
            scan, topk = _scan_stream(config, index, emb, rep, readers)
        timing["pool"] = time.perf_counter() - clock

        signatures = Signatures(config.ngram.num_perm)
        pool_pairs, docs = _pool_pairs(scan, topk, emb, index, signatures, enabled)
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
            # matches at the threshold beyond --top-k for their eval item (none kept
            # fewer numbers than one kept): say so rather than drop them unsaid
            "matches_over_bound": topk.over_bound if topk is not None else 0,
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
        top_k=config.options.top_k,
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
        fields=config.fields,
        channels=tuple(ChannelRun(channel) for channel in channels),
    )
    findings = _run_channels(findings, config, prepared, rep, timing, scan.hits)
    return _write(ws, findings, timing)
