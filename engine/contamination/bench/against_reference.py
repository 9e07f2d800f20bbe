"""``sealdesk bench contamination``: sealdesk's n-gram channels against the reference pass.

Both sides read the same generated files (an eval set and a pool with
planted leaks) and each runs in its own subprocess, so that each peak RSS
is its own: the reference (datasketch MinHash + MinHashLSH over the
pool, estimate decides) and sealdesk (eval index, pool streamed over every
core, exact Jaccard and containment decide). Timing starts after imports
and covers reading both sets, indexing and every pair found.

Run a side alone:
  python -m engine.contamination.bench.against_reference --side sealdesk --eval E --pool P
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import click

from engine.outputs import InputFile


def _rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_reference(eval_path: str, pool_path: str, limit: int | None) -> dict[str, Any]:
    """Gives the reference pass's flags, time and peak RSS (pool cut at ``limit`` docs)."""
    import datasketch

    from engine.contamination.bench.reference import reference_scan
    from engine.contamination.inputs.canonical_text import canonical
    from engine.contamination.inputs.sources import iter_batches, resolve_source

    assert datasketch.MinHashLSH  # imported before the clock starts

    started = time.perf_counter()
    eval_source = resolve_source("eval", eval_path, text_field="question", id_field=None)
    pool_source = resolve_source("pool", pool_path, text_field="text", id_field=None)
    eval_texts = [canonical(t) for b in iter_batches(eval_source, 4096) for t in b.texts]
    # the reference pass loads the whole pool, canonicalized, into a list
    pool_texts: list[str] = []
    with closing(iter_batches(pool_source, 2048)) as batches:
        for batch in batches:
            pool_texts.extend(canonical(t) for t in batch.texts)
            if limit is not None and len(pool_texts) >= limit:
                del pool_texts[limit:]
                break
    result = reference_scan(eval_texts, pool_texts)
    seconds = time.perf_counter() - started
    return {
        "side": "reference",
        "pool_docs": len(pool_texts),
        "seconds": seconds,
        "peak_rss_kb": _rss_kb(),
        "processes": 1,
        "ngram_pairs": [[e, p] for e, p, _ in result.pool_hits],
        "estimates": [[e, p, est] for e, p, est in result.pool_hits],
        "internal_pairs": [[a, b] for a, b, _ in result.internal_hits],
    }


def run_sealdesk(eval_path: str, pool_path: str, jobs: int | None) -> dict[str, Any]:
    """Gives sealdesk's exact flags, time and peak RSS (main plus every worker)."""
    from engine.contamination.channels import internal
    from engine.contamination.channels.ngram import EvalIndex, NgramSettings
    from engine.contamination.inputs.evalset import load_eval
    from engine.contamination.inputs.sources import quiet_datasets, resolve_source
    from engine.contamination.pool.stream import scan_pool, start_workers_early

    quiet_datasets()  # the import, not the work, before the clock starts
    started = time.perf_counter()
    pool_source = resolve_source("pool", pool_path, text_field="text", id_field="id")
    start_workers_early(pool_source, jobs)
    settings = NgramSettings()
    evalset = load_eval(resolve_source("eval", eval_path, text_field="question", id_field="id"))
    texts = [item.canonical for item in evalset.items]
    index = EvalIndex(texts, settings)
    internal_pairs = internal.ngram_pairs(index)
    scan = scan_pool(pool_source, index, jobs=jobs)
    seconds = time.perf_counter() - started
    jaccard = sorted([p.eval_index, p.doc] for p in scan.pairs if p.jaccard >= settings.jaccard)
    containment = sorted(
        [p.eval_index, p.doc] for p in scan.pairs if p.containment >= settings.containment
    )
    exact = {f"{p.eval_index},{p.doc}": p.jaccard for p in scan.pairs}
    return {
        "side": "sealdesk",
        "pool_docs": scan.n,
        "seconds": seconds,
        "main_peak_rss_kb": _rss_kb(),
        "worker_peak_rss_kb": scan.worker_peak_rss_kb,
        "peak_rss_kb": _rss_kb()
        + sum(v for pid, v in scan.worker_peak_rss_kb.items() if pid != os.getpid()),
        "processes": scan.jobs + (1 if scan.jobs > 1 else 0),
        "ngram_pairs": jaccard,
        "containment_pairs": containment,
        "exact_jaccard": exact,
        "candidates": scan.candidates,
        "internal_pairs": sorted(
            [a, b] for (a, b), p in internal_pairs.items() if p.jaccard >= settings.jaccard
        ),
    }


def _side(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "engine.contamination.bench.against_reference", *args],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise click.ClickException(f"benchmark side failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _exact_jaccard(eval_path: Path, pool_path: Path, pairs: list[list[int]]) -> dict[str, float]:
    """Gives the exact Jaccard of a few (eval, pool) pairs, read straight from the files."""
    from engine.contamination.channels.shingles import shingle_set
    from engine.contamination.inputs.canonical_text import canonical

    wanted_eval = {e for e, _ in pairs}
    wanted_pool = {p for _, p in pairs}
    evals, pools = {}, {}
    with open(eval_path, encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if i in wanted_eval:
                evals[i] = shingle_set(canonical(json.loads(line)["question"]), 13)
    with open(pool_path, encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if i in wanted_pool:
                pools[i] = shingle_set(canonical(json.loads(line)["text"]), 13)
    return {f"{e},{p}": len(evals[e] & pools[p]) / len(evals[e] | pools[p]) for e, p in pairs}


@click.command("contamination")
@click.option(
    "--pool-size",
    default=100_000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Synthetic pool documents (about 500 bytes each).",
)
@click.option(
    "--eval-size",
    default=1319,
    show_default=True,
    type=click.IntRange(min=1),
    help="Synthetic eval items.",
)
@click.option(
    "--reference-size",
    type=click.IntRange(min=1),
    default=None,
    help="Pool documents the reference pass runs on (default: all, at most "
    "100000; it needs ~11 GB of RSS for 1M). Pairs are compared on this prefix.",
)
@click.option("--no-reference", is_flag=True, help="Run sealdesk only.")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="sealdesk worker processes (default: all).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the generated files live (reused when present).",
)
@click.option(
    "--backend",
    type=click.Choice(["local", "ray"]),
    default=None,
    help="Instead: the sharded scan's scaling on this backend (default pool 4M "
    "docs in 16 shards, 1 then 2 workers).",
)
@click.option(
    "--shards",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="With --backend: pool files.",
)
@click.option(
    "--workers",
    default="1,2",
    show_default=True,
    help="With --backend: worker counts to run, in order.",
)
@click.option(
    "--embed",
    is_flag=True,
    help="Instead: the paraphrase channel, two-stage against --embed-exhaustive on a "
    "subset, then two-stage on the whole pool (default 1,000,000 docs), every channel on.",
)
@click.option(
    "--exhaustive-size",
    type=click.IntRange(min=1),
    default=5_000,
    show_default=True,
    help="With --embed: pool documents both searches run on (the exhaustive one embeds "
    "every one of them with the full model).",
)
@click.option(
    "--prefilter-k",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="With --embed: candidates per eval item the two-stage search keeps (as the "
    "scan's --prefilter-k).",
)
@click.option(
    "--sizes",
    default=None,
    metavar="N,N,...",
    help="With --embed: instead, both searches at each of these pool sizes (the prefilter "
    "cached), their times and where two-stage became the faster, beside the size the "
    "scan's estimate switches at (use a small --eval-size, e.g. 100).",
)
@click.option(
    "--embed-data",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="With --embed: instead of generated data, a folder holding eval.jsonl ({id, "
    "question}), pool.jsonl ({id, text}) and planted.jsonl ({eval_id, pool_id}, the true "
    "paraphrase pairs); both searches run on the whole pool.",
)
@click.option(
    "--triage",
    "triage_file",
    type=InputFile(exists=True, path_type=Path),
    default=None,
    help="Instead: the match triage on a JSONL file of labelled pairs ({eval, match, "
    "label: leak|sibling, split?}), the current rule beside the previous one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def bench_contamination(
    click_ctx: click.Context,
    pool_size: int,
    eval_size: int,
    reference_size: int | None,
    no_reference: bool,
    jobs: int | None,
    data_dir: str | None,
    backend: str | None,
    shards: int,
    workers: str,
    embed: bool,
    exhaustive_size: int,
    prefilter_k: int,
    sizes: str | None,
    embed_data: Path | None,
    triage_file: Path | None,
    as_json: bool,
) -> None:
    """sealdesk's n-gram channels against the reference datasketch MinHash-LSH pass.

    Generates an eval set and a pool with planted leaks (verbatim, one word
    changed, copied inside a longer document), then runs, each in its own
    subprocess on the same files, the reference pass (MinHash + LSH over
    the pool) and sealdesk (exact Jaccard and containment over a streamed
    pool on every core). Prints pool docs/s of each, their ratio, peak RSS
    of each, and whether both flag the same pairs.

    With --backend, measures instead how the sharded scan scales: a pool
    of --pool-size documents (default 4,000,000) in --shards files, scanned
    by 1 then 2 workers (--workers) of that backend, each run in a fresh
    subprocess (a fresh local Ray for ray); prints docs/s, the speed-up,
    per-worker throughput and the load average around each run.

    With --triage FILE, measures instead the match triage on labelled pairs:
    siblings labelled likely leak and leaks labelled likely leak or unclear,
    per split, for the current rule and the previous one (reads FILE only).

    With --embed, measures instead the paraphrase channel on English word
    problems with two planted paraphrases each (one in the first
    --exhaustive-size documents): the two-stage search and the exhaustive
    reference on that subset in the same run (recall of the planted
    paraphrases, the difference, docs/s, peak RSS), then the two-stage
    search on the whole pool (default 1,000,000 documents), every channel on.

    \b
    Examples:
      sealdesk bench contamination                      # 100k docs, both sides
      sealdesk bench contamination --embed              # 1M docs, two-stage vs exhaustive
      sealdesk bench contamination --embed --pool-size 50000 --exhaustive-size 5000
      sealdesk bench contamination --embed --embed-data DIR   # your own true pairs
      sealdesk bench contamination --embed --sizes 2000,5000,10000,20000 --eval-size 100
      sealdesk bench contamination --pool-size 1000000 --reference-size 100000
      sealdesk bench contamination --pool-size 1000000 --no-reference
      sealdesk bench contamination --backend ray        # 4M docs, 16 shards, 1 then 2
      sealdesk bench contamination --backend local --pool-size 400000 --workers 1,2
      sealdesk bench contamination --triage engine/contamination/triage_pairs.jsonl
    """
    if triage_file is not None:
        if embed or backend is not None:
            raise click.BadParameter(
                "--triage measures labelled pairs only; give it alone", param_hint="'--triage'"
            )
        from engine.contamination.bench.triage import measure_file, report_lines

        result = measure_file(triage_file)
        if as_json:
            click.echo(json.dumps(result, indent=1))
        else:
            click.echo("\n".join(report_lines(result)))
        return
    if embed:
        if backend is not None or no_reference or reference_size is not None:
            raise click.BadParameter(
                "--embed runs its own reference (--embed-exhaustive on a subset)",
                param_hint="'--embed'",
            )
        from engine.contamination.bench.paraphrase import (
            bench_given,
            bench_paraphrase,
            bench_sizes,
        )

        if sizes is not None:
            try:
                counts = [int(n) for n in sizes.split(",") if n.strip()]
            except ValueError:
                counts = []
            if not counts or min(counts) < 5 * eval_size:
                raise click.BadParameter(
                    f"give pool sizes like 2000,5000,10000, each at least {5 * eval_size} "
                    "(two paraphrases and three renumbered copies of every eval item)",
                    param_hint="'--sizes'",
                )
            bench_sizes(counts, eval_size, data_dir, jobs, as_json)
            return
        if embed_data is not None:
            bench_given(embed_data, jobs, as_json, prefilter_k)
            return
        source = click_ctx.get_parameter_source("pool_size")
        size = 1_000_000 if source == click.core.ParameterSource.DEFAULT else pool_size
        bench_paraphrase(size, eval_size, exhaustive_size, data_dir, jobs, as_json, prefilter_k)
        return
    if backend is not None:
        from engine.contamination.bench.scaling import bench_scaling

        source = click_ctx.get_parameter_source("pool_size")
        size = 4_000_000 if source == click.core.ParameterSource.DEFAULT else pool_size
        try:
            counts = [int(w) for w in workers.split(",") if w.strip()]
        except ValueError:
            counts = []
        if not counts or min(counts) < 1 or shards < 1:
            raise click.BadParameter("give worker counts like 1,2 and at least one shard")
        if shards > size:  # an empty shard file is no pool: the scan would refuse it
            raise click.BadParameter(
                f"{shards} shards of {size} documents leave some empty; "
                "give at most one shard per document",
                param_hint="'--shards'",
            )
        bench_scaling(backend, size, eval_size, shards, counts, data_dir, as_json)
        return
    from engine.contamination.bench.synthetic import make_synthetic

    root = (
        Path(data_dir) if data_dir else Path(tempfile.gettempdir()) / "sealdesk-bench-contamination"
    )
    directory = root / f"pool{pool_size}-eval{eval_size}"
    if not (directory / "pool.jsonl").exists():
        click.echo(
            f"generating {pool_size} pool docs and {eval_size} eval items in {directory} ...",
            err=True,
        )
        started = time.perf_counter()
        make_synthetic(directory, pool_size=pool_size, eval_size=eval_size)
        click.echo(f"  generated in {time.perf_counter() - started:.1f} s", err=True)
    eval_path, pool_path = directory / "eval.jsonl", directory / "pool.jsonl"

    args = ["--eval", str(eval_path), "--pool", str(pool_path)]
    ours = _side(["--side", "sealdesk", *args] + (["--jobs", str(jobs)] if jobs else []))
    ref = None
    if not no_reference:
        limit = reference_size if reference_size is not None else min(pool_size, 100_000)
        ref = _side(["--side", "reference", *args, "--limit", str(limit)])
    result = _compare(ours, ref, eval_path, pool_path)
    result.update(
        pool_size=pool_size,
        eval_size=eval_size,
        date=time.strftime("%Y-%m-%d", time.gmtime()),
        cpus=os.cpu_count(),
    )
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    _print(result)


def _compare(
    ours: dict[str, Any], ref: dict[str, Any] | None, eval_path: Path, pool_path: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {"sealdesk": _summary(ours), "reference": None}
    out["sealdesk"]["containment_pairs"] = len(ours["containment_pairs"])
    out["sealdesk"]["candidates"] = ours["candidates"]
    if ref is None:
        return out
    out["reference"] = _summary(ref)
    limit = ref["pool_docs"]
    mine = {tuple(p) for p in ours["ngram_pairs"] if p[1] < limit}
    theirs = {tuple(p) for p in ref["ngram_pairs"]}
    only_ref = sorted(theirs - mine)
    exact = _exact_jaccard(eval_path, pool_path, [list(p) for p in only_ref])
    out["comparison"] = {
        "docs_per_s_ratio": round(
            out["sealdesk"]["docs_per_s"] / out["reference"]["docs_per_s"], 1
        ),
        "compared_on_pool_prefix": limit,
        "same_ngram_pairs": mine == theirs,
        "both": len(mine & theirs),
        "only_sealdesk": [list(p) for p in sorted(mine - theirs)],
        "only_reference": [
            {"pair": list(p), "exact_jaccard": round(exact[f"{p[0]},{p[1]}"], 4)} for p in only_ref
        ],
        "containment_pairs_reference_cannot_see": len(
            {tuple(p) for p in ours["containment_pairs"] if p[1] < limit} - theirs
        ),
        "same_internal_pairs": sorted(map(tuple, ours["internal_pairs"]))
        == sorted(map(tuple, ref["internal_pairs"])),
    }
    return out


def _summary(side: dict[str, Any]) -> dict[str, Any]:
    return {
        "pool_docs": side["pool_docs"],
        "seconds": round(side["seconds"], 2),
        "docs_per_s": round(side["pool_docs"] / side["seconds"], 1),
        "peak_rss_mb": round(side["peak_rss_kb"] / 1024, 1),
        "processes": side["processes"],
        "ngram_pairs": len(side["ngram_pairs"]),
    }


def _print(result: dict[str, Any]) -> None:
    click.echo(
        f"contamination n-gram bench: {result['pool_size']} pool docs x "
        f"{result['eval_size']} eval items, {result['cpus']} cpus, {result['date']}"
    )
    click.echo(
        f"{'side':10} {'docs':>9} {'seconds':>9} {'docs/s':>10} {'peak RSS MB':>12} "
        f"{'procs':>6} {'ngram pairs':>12}"
    )
    for name in ("reference", "sealdesk"):
        s = result[name]
        if s is None:
            continue
        click.echo(
            f"{name:10} {s['pool_docs']:>9} {s['seconds']:>9.2f} {s['docs_per_s']:>10.1f} "
            f"{s['peak_rss_mb']:>12.1f} {s['processes']:>6} {s['ngram_pairs']:>12}"
        )
    click.echo(
        f"sealdesk also flags {result['sealdesk']['containment_pairs']} containment "
        f"pair(s) (exact, >= 0.5)"
    )
    c = result.get("comparison")
    if c:
        click.echo(f"ratio: sealdesk {c['docs_per_s_ratio']}x the reference's pool docs/s")
        verdict = "yes" if c["same_ngram_pairs"] else "no"
        click.echo(
            f"same Jaccard pairs on the first {c['compared_on_pool_prefix']} docs: "
            f"{verdict} (both {c['both']}, only sealdesk {len(c['only_sealdesk'])}, "
            f"only reference {len(c['only_reference'])}); containment pairs the "
            f"reference cannot see: {c['containment_pairs_reference_cannot_see']}; "
            f"same internal pairs: {'yes' if c['same_internal_pairs'] else 'no'}"
        )
        for item in c["only_reference"][:5]:
            click.echo(
                f"  reference-only {item['pair']}: exact Jaccard {item['exact_jaccard']} "
                "(a MinHash estimate error)"
            )


def _main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m engine.contamination.bench.against_reference")
    parser.add_argument("--side", choices=["reference", "sealdesk"], required=True)
    parser.add_argument("--eval", required=True)
    parser.add_argument("--pool", required=True)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args(argv)
    if args.side == "reference":
        result = run_reference(args.eval, args.pool, args.limit)
    else:
        result = run_sealdesk(args.eval, args.pool, args.jobs)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    _main(sys.argv[1:])
