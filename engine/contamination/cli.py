"""``sealdesk scan contamination`` and ``sealdesk contamination clean``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from engine.cli_context import run_key_option
from engine.contamination.options import ScanOptions, scan_options
from engine.outputs import OutputFile
from engine.terminal_text import json_text, visible


@click.command("contamination")
@run_key_option
@scan_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def scan_contamination(ctx: Any, options: ScanOptions, as_json: bool) -> None:
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
    from engine.contamination.inputs.fields import describe
    from engine.contamination.scan import run_scan, scan_config
    from engine.progress import reporter

    # Every option is checked before anything is read, then the inputs are resolved.
    config = scan_config(options)
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
    click.echo(visible(describe("eval", config.fields["eval"])))
    click.echo(visible(describe("pool", config.fields["pool"])))
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
