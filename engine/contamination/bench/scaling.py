"""``sealdesk bench contamination --backend ray|local``: how the sharded scan scales.

One synthetic pool (``synthetic.py``: 4M documents in 16 shards by default)
is scanned with 1, then 2 (``--workers 1,2``) workers of the chosen
backend, each run in its own subprocess (a fresh local Ray each time), with
no resume records, so every shard is scanned every time. Timing starts when
every worker holds the eval index and stops when the last shard is merged;
the time to start the workers is printed apart. Printed per run: docs/s
and its speed-up over the first run, the per-worker throughput (documents
over the seconds shard tasks took) and the capacity speed-up it implies
(what the workers could give with no driver or scheduling loss), and the
load average around the run; the runs must find the same pairs and the
same pool hash.

Run one side alone:
  python -m engine.contamination.bench.scaling --eval E --pool 'DIR/pool-*.jsonl' --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def run_side(eval_path: str, pool_pattern: str, backend_name: str, workers: int) -> dict[str, Any]:
    """Gives one run's figures: docs/s, startup, the workers' busy time, pairs and hash."""
    from engine.contamination.channels.ngram import EvalIndex, NgramSettings
    from engine.contamination.inputs.evalset import load_eval
    from engine.contamination.inputs.shards import sharded_pool
    from engine.contamination.inputs.sources import resolve_source
    from engine.contamination.pool.base import run_shards
    from engine.contamination.pool.local import LocalBackend
    from engine.contamination.pool.merge import merge
    from engine.contamination.pool.shard_scan import ShardJob

    load_before = _load()
    evalset = load_eval(resolve_source("eval", eval_path, text_field="question", id_field="id"))
    index = EvalIndex([item.canonical for item in evalset.items], NgramSettings())
    pool = sharded_pool(pool_pattern, text_field="text", id_field="id")
    if backend_name == "ray":
        from engine.contamination.pool.ray import RayBackend

        backend: Any = RayBackend(None, num_cpus=workers, workers=workers)
    else:
        backend = LocalBackend(workers)
    job = ShardJob(index, "text", "id", "bench", 2048)
    outcomes, counts = run_shards(backend, job, list(pool.shards), None, retries=0)
    scan = merge(
        outcomes,
        pool.provenance(),
        seconds=counts.scan_seconds,
        jobs=workers,
        pool_sha256=counts.pool_sha256,
    )
    busy = sum(o.seconds for o in outcomes)
    return {
        "backend": backend_name,
        "workers": workers,
        "shards": len(outcomes),
        "docs": scan.n,
        "startup_s": round(counts.startup_seconds, 2),
        "scan_s": round(counts.scan_seconds, 2),
        "docs_per_s": round(scan.n / counts.scan_seconds, 1),
        "per_worker_docs_per_s": round(scan.n / busy, 1),
        "busy_s": round(busy, 2),
        "pairs": len(scan.pairs),
        "pool_sha256": scan.provenance["content_sha256"],
        "pairs_sha256": _pairs_hash(scan.pairs),
        "load_before": load_before,
        "load_after": _load(),
        "peak_rss_mb": {
            str(pid): round(kb / 1024, 1) for pid, kb in scan.worker_peak_rss_kb.items()
        },
    }


def _pairs_hash(pairs: list[Any]) -> str:
    from engine.canonical import canonical_sha256

    return canonical_sha256(
        [[p.eval_index, p.doc, p.shared, p.eval_shingles, p.doc_shingles] for p in pairs]
    )


def _side(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "engine.contamination.bench.scaling", *args],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise click.ClickException(f"benchmark run failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_scaling(
    backend: str,
    pool_size: int,
    eval_size: int,
    shards: int,
    workers: list[int],
    data_dir: str | None,
    as_json: bool,
) -> None:
    """Prints (or gives as JSON) the scaling runs of one backend over a sharded pool."""
    from engine.contamination.bench.synthetic import make_synthetic

    root = Path(data_dir) if data_dir else Path(tempfile.gettempdir()) / "sealdesk-bench-shards"
    directory = root / f"pool{pool_size}-eval{eval_size}-shards{shards}"
    if not (directory / "done").exists():
        click.echo(
            f"generating {pool_size} pool docs in {shards} shards and {eval_size} eval "
            f"items in {directory} ...",
            err=True,
        )
        started = time.perf_counter()
        make_synthetic(directory, pool_size=pool_size, eval_size=eval_size, shards=shards)
        (directory / "done").write_text("")
        click.echo(f"  generated in {time.perf_counter() - started:.1f} s", err=True)
    pattern = str(directory / "pool-*.jsonl")
    runs = []
    for count in workers:
        click.echo(f"running {backend} with {count} worker(s) ...", err=True)
        runs.append(
            _side(
                [
                    "--eval",
                    str(directory / "eval.jsonl"),
                    "--pool",
                    pattern,
                    "--backend",
                    backend,
                    "--workers",
                    str(count),
                ]
            )
        )
    base = runs[0]
    for run in runs:
        run["speedup"] = round(run["docs_per_s"] / base["docs_per_s"], 2)
        # what the workers' own speed allows, had the driver and scheduling cost nothing
        run["capacity_speedup"] = round(
            run["per_worker_docs_per_s"]
            * run["workers"]
            / (base["per_worker_docs_per_s"] * base["workers"]),
            2,
        )
    result = {
        "backend": backend,
        "pool_size": pool_size,
        "eval_size": eval_size,
        "shards": shards,
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "runs": runs,
        "same_results": len({(r["pairs_sha256"], r["pool_sha256"]) for r in runs}) == 1,
    }
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    print_scaling(result)


def print_scaling(result: dict[str, Any]) -> None:
    """Prints the scaling runs as a table."""
    runs, base = result["runs"], result["runs"][0]
    click.echo(
        f"sharded scan, {result['backend']} backend: {result['pool_size']} pool docs in "
        f"{result['shards']} shards x {result['eval_size']} eval items, "
        f"{result['cpus']} cpus, {result['date']} UTC"
    )
    click.echo(
        f"{'workers':>7} {'startup s':>10} {'scan s':>8} {'docs/s':>10} {'speed-up':>9} "
        f"{'per worker':>11} {'capacity':>9} {'load 1m before/after':>21}"
    )
    for run in runs:
        load = (
            f"{run['load_before'][0] if run['load_before'] else '?'}/"
            f"{run['load_after'][0] if run['load_after'] else '?'}"
        )
        click.echo(
            f"{run['workers']:>7} {run['startup_s']:>10.2f} {run['scan_s']:>8.2f} "
            f"{run['docs_per_s']:>10.0f} {run['speedup']:>8.2f}x "
            f"{run['per_worker_docs_per_s']:>11.0f} {run['capacity_speedup']:>8.2f}x "
            f"{load:>21}"
        )
    click.echo(
        f"same pairs and pool hash in every run: "
        f"{'yes' if result['same_results'] else 'NO'} ({base['pairs']} pairs, pool "
        f"{base['pool_sha256'][:16]}...)"
    )
    click.echo(
        "docs/s: documents over wall time once every worker is up; per worker: "
        "documents over the seconds shard tasks ran; capacity: per-worker docs/s times "
        "workers, against the first run (the speed-up with no driver or scheduling "
        "loss; on a shared machine it also shows when other work took the cores)"
    )


def _main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m engine.contamination.bench.scaling")
    parser.add_argument("--eval", required=True)
    parser.add_argument("--pool", required=True)
    parser.add_argument("--backend", choices=["local", "ray"], default="ray")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    result = run_side(args.eval, args.pool, args.backend, args.workers)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    _main(sys.argv[1:])
