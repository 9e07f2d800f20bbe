"""``sealdesk bench contamination --embed``: the two-stage paraphrase channel against exhaustive.

On generated word problems with planted paraphrases (``paraphrase_data``),
every channel on, each run a full scan in its own subprocess (artifacts and
backlog written, as ``sealdesk scan contamination`` does):

1. the exhaustive reference (``--embed-exhaustive``: the full model embeds
   every document) and the two-stage channel on the same pool subset, in
   the same run: paraphrase recall of each, the difference, docs/s, peak RSS;
2. the two-stage channel on the whole pool.

Each scan starts with an empty embedding cache of its own, so no run
profits from another's vectors; the distilled prefilter is made once, before
the clock starts, and its time is reported apart. Peak RSS is sampled over
the scan's whole process tree (the driver and every worker together).

Run a side alone:
  python -m engine.contamination.bench.paraphrase --side two-stage --eval E --pool P --workspace W
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
from pathlib import Path
from typing import Any

import click


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _tree_rss_kb(root: int) -> int:
    """Gives the resident memory of a process and all its descendants, in KiB."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm") as handle:
                total += int(handle.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
        except OSError:
            continue
        todo.extend(_children(pid))
    return total


def run_side(
    side: str,
    eval_path: str,
    pool_path: str,
    workspace: str,
    cache: str,
    jobs: int | None,
    prefilter_k: int = 50,
) -> dict[str, Any]:
    """Gives one scan's flagged pairs, time and search report (run in this process)."""
    from engine.contamination.inputs.sources import quiet_datasets, resolve_source
    from engine.contamination.scan import ScanConfig, run_scan
    from engine.workspace import Workspace

    quiet_datasets()
    started = time.perf_counter()
    config = ScanConfig.of(
        eval=resolve_source("eval", eval_path, text_field="question", id_field="id"),
        pool=resolve_source("pool", pool_path, text_field="text", id_field="id"),
        embed_exhaustive=side == "exhaustive",
        embed_two_stage=side == "two-stage",  # a subset is smaller than the size rule's bound
        embed_cache=Path(cache),
        jobs=jobs,
        prefilter_k=prefilter_k,
    )
    with Workspace.open(workspace) as ws:
        outcome = run_scan(ws, config)
    seconds = time.perf_counter() - started
    pairs = [
        [row["test_idx"], row["pool_idx"], "embed" in row["channels"]]
        for row in outcome.rows
        if row["channel"] != "internal"
    ]
    report = outcome.report
    return {
        "side": side,
        "pool_docs": report["pool"]["n"],
        "seconds": seconds,
        "main_peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "pairs": pairs,
        "search": report["embedding"].get("search"),
        "threshold": (report["embedding"].get("calibration") or {}).get("threshold"),
        "top_k": report["embedding"].get("top_k"),
        "texts_embedded": report["embedding"].get("texts_embedded"),
        "matches_over_bound": report["embedding"].get("matches_over_bound"),
        "device": report["embedding"].get("device"),
    }


def distill(workspace: str) -> dict[str, Any]:
    """Gives how the workspace's prefilter was had: distilled now (and how long) or cached."""
    from engine.contamination.channels.embedding import identify_model
    from engine.contamination.channels.prefilter import cached_prefilter

    info = cached_prefilter(Path(workspace) / "cache" / "prefilter", identify_model(None))
    return {"distilled_now": info.distilled_now, "seconds": round(info.seconds, 1)}


def _side(args: list[str]) -> dict[str, Any]:
    """Gives a side's result, run in a subprocess whose whole tree's RSS is sampled."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine.contamination.bench.paraphrase", *args],
            stdout=out,
            stderr=err,
        )
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _tree_rss_kb(proc.pid))
            time.sleep(0.25)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise click.ClickException(f"benchmark side failed:\n{err.read()[-2000:]}")
        result = json.loads(out.read().strip().splitlines()[-1])
    result["peak_rss_kb"] = max(peak, result.get("main_peak_rss_kb", 0))
    return result


def _recall(
    result: dict[str, Any], planted: list[tuple[int, int]], lookalike_items: frozenset[int]
) -> dict[str, Any]:
    embed = {(e, p) for e, p, by_embed in result["pairs"] if by_embed}
    anyone = {(e, p) for e, p, _ in result["pairs"]}
    wanted = set(planted)
    among = {(e, p) for e, p in wanted if e in lookalike_items}
    free = wanted - among

    def percent(found: set[tuple[int, int]], of: set[tuple[int, int]]) -> float:
        return round(100 * len(found & of) / max(len(of), 1), 2)

    return {
        "planted": len(wanted),
        "found_by_embedding": len(wanted & embed),
        "found_by_any_channel": len(wanted & anyone),
        "embedding_recall": percent(embed, wanted),
        "any_channel_recall": percent(anyone, wanted),
        # the two halves of the eval set: families with look-alikes in the pool, and without
        "planted_among_lookalikes": len(among),
        "embedding_recall_among_lookalikes": percent(embed, among),
        "planted_lookalike_free": len(free),
        "embedding_recall_lookalike_free": percent(embed, free),
    }


def _agreement(exhaustive: dict[str, Any], two: dict[str, Any]) -> dict[str, int]:
    """Gives how many embedding-flagged pairs both searches, or only one, flag."""
    ex = {(e, p) for e, p, by_embed in exhaustive["pairs"] if by_embed}
    tw = {(e, p) for e, p, by_embed in two["pairs"] if by_embed}
    return {"both": len(ex & tw), "only_exhaustive": len(ex - tw), "only_two_stage": len(tw - ex)}


def _summary(
    result: dict[str, Any],
    planted: list[tuple[int, int]],
    docs: int,
    lookalike_items: frozenset[int],
) -> dict[str, Any]:
    search = result.get("search") or {}
    return {
        "pool_docs": docs,
        "seconds": round(result["seconds"], 1),
        "docs_per_s": round(docs / result["seconds"], 1),
        "peak_rss_mb": round(result["peak_rss_kb"] / 1024, 1),
        "flagged_pairs": len(result["pairs"]),
        "texts_embedded_by_full_model": result.get("texts_embedded"),
        "candidates_scored": search.get("candidates_scored"),
        "rerank_seconds": search.get("rerank_seconds"),
        "matches_over_bound": result.get("matches_over_bound"),
        **_recall(result, planted, lookalike_items),
    }


def bench_paraphrase(
    pool_size: int,
    eval_size: int,
    subset: int,
    data_dir: str | None,
    jobs: int | None,
    as_json: bool,
    prefilter_k: int = 50,
) -> None:
    """Runs the paraphrase benchmark and prints (or gives as JSON) its result."""
    from engine.contamination.bench.paraphrase_data import make_paraphrase_data
    from engine.workspace import Workspace

    subset = min(subset, pool_size)
    if pool_size < 2 * eval_size:
        raise click.BadParameter(
            f"the pool holds two paraphrases of each of {eval_size} eval items: give at "
            f"least {2 * eval_size} documents",
            param_hint="'--pool-size'",
        )
    root = Path(data_dir) if data_dir else Path(tempfile.gettempdir()) / "sealdesk-bench-paraphrase"
    # v2: a look-alike half (same-family problems, renumbered copies) and a free half
    directory = root / f"v2-pool{pool_size}-eval{eval_size}-subset{subset}"
    click.echo(f"generating the eval set and pool in {directory} ...", err=True)
    started = time.perf_counter()
    data = make_paraphrase_data(directory, pool_size, eval_size, subset)
    click.echo(f"  generated in {time.perf_counter() - started:.1f} s", err=True)
    workspace = directory / "workspace"
    if not workspace.exists():
        Workspace.init(workspace).close()
    common = ["--eval", str(data.eval_path), "--workspace", str(workspace)]
    common += ["--jobs", str(jobs)] if jobs else []
    side_options = ["--prefilter-k", str(prefilter_k)]

    def scan(side: str, pool: Path, label: str) -> dict[str, Any]:
        click.echo(f"  {label} ...", err=True)
        with tempfile.TemporaryDirectory(prefix="sealdesk-bench-cache-") as cache:
            return _side(
                ["--side", side, "--pool", str(pool), "--cache", f"{cache}/e.sqlite"]
                + [*common, *side_options]
            )

    click.echo("  prefilter: distilling (or taking it from the workspace cache) ...", err=True)
    made = _side(["--side", "distill", *common])
    exhaustive = scan("exhaustive", data.subset_path, f"exhaustive on the first {subset} docs")
    two_subset = scan("two-stage", data.subset_path, f"two-stage on the first {subset} docs")
    full = None
    if pool_size > subset:
        full = scan("two-stage", data.pool_path, f"two-stage on all {pool_size} docs")
    halves = data.lookalike_items
    ex = _summary(exhaustive, data.planted_in_subset, subset, halves)
    two = _summary(two_subset, data.planted_in_subset, subset, halves)
    result = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "cpus": os.cpu_count(),
        "pool_size": pool_size,
        "eval_size": eval_size,
        "subset": subset,
        "prefilter": made,
        "prefilter_k": (two_subset.get("search") or {}).get("candidates_per_item"),
        "threshold": exhaustive.get("threshold"),
        "device": exhaustive.get("device"),
        "top_k": exhaustive.get("top_k"),
        "subset_exhaustive": ex,
        "subset_two_stage": two,
        "subset_recall_difference_points": round(
            two["embedding_recall"] - ex["embedding_recall"], 2
        ),
        "subset_speedup": round(two["docs_per_s"] / ex["docs_per_s"], 1),
        "subset_embedding_pairs": _agreement(exhaustive, two_subset),
        "full_two_stage": _summary(full, data.planted, pool_size, halves) if full else None,
    }
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    _print(result)


def _read_ids(path: Path, what: str) -> dict[str, int]:
    ids: dict[str, int] = {}
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            try:
                ident = json.loads(line)["id"]
            except (ValueError, KeyError, TypeError):
                raise click.ClickException(
                    f"{path}:{line_no}: id: a {what} row needs an id"
                ) from None
            ids[str(ident)] = line_no - 1
    return ids


def bench_given(directory: Path, jobs: int | None, as_json: bool, prefilter_k: int) -> None:
    """Runs both searches on a given eval set and pool and prints the recall of each on
    the given true pairs: ``eval.jsonl`` ({id, question}), ``pool.jsonl`` ({id, text}),
    ``planted.jsonl`` ({eval_id, pool_id}) in ``directory``."""
    from engine.workspace import Workspace

    eval_path, pool_path = directory / "eval.jsonl", directory / "pool.jsonl"
    truth_path = directory / "planted.jsonl"
    for path in (eval_path, pool_path, truth_path):
        if not path.is_file():
            raise click.ClickException(f"{path}: not found (--embed-data needs it)")
    evals, pool = _read_ids(eval_path, "eval"), _read_ids(pool_path, "pool")
    planted = []
    with open(truth_path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            row = json.loads(line)
            for field in ("eval_id", "pool_id"):
                known = evals if field == "eval_id" else pool
                if str(row.get(field)) not in known:
                    raise click.ClickException(
                        f"{truth_path}:{line_no}: {field}: {row.get(field)!r} is not an id of "
                        f"{'eval' if field == 'eval_id' else 'pool'}.jsonl"
                    )
            planted.append((evals[str(row["eval_id"])], pool[str(row["pool_id"])]))
    workspace = directory / "workspace"
    if not workspace.exists():
        Workspace.init(workspace).close()
    common = ["--eval", str(eval_path), "--workspace", str(workspace)]
    common += ["--jobs", str(jobs)] if jobs else []
    common += ["--prefilter-k", str(prefilter_k)]
    click.echo("  prefilter: distilling (or taking it from the workspace cache) ...", err=True)
    made = _side(["--side", "distill", *common])
    sides = {}
    for side in ("exhaustive", "two-stage"):
        click.echo(f"  {side} on all {len(pool)} docs ...", err=True)
        with tempfile.TemporaryDirectory(prefix="sealdesk-bench-cache-") as cache:
            sides[side] = _side(
                ["--side", side, "--pool", str(pool_path), "--cache", f"{cache}/e.sqlite"] + common
            )
    everyone = frozenset(e for e, _ in planted)
    ex = _summary(sides["exhaustive"], planted, len(pool), everyone)
    two = _summary(sides["two-stage"], planted, len(pool), everyone)
    result = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "cpus": os.cpu_count(),
        "data": str(directory),
        "eval_items": len(evals),
        "pool_docs": len(pool),
        "planted": len(planted),
        "prefilter": made,
        "threshold": sides["exhaustive"].get("threshold"),
        "device": sides["exhaustive"].get("device"),
        "exhaustive": ex,
        "two_stage": two,
        "recall_difference_points": round(two["embedding_recall"] - ex["embedding_recall"], 2),
        "embedding_pairs": _agreement(sides["exhaustive"], sides["two-stage"]),
    }
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    click.echo(
        f"paraphrase search on {directory}: {len(evals)} eval items, {len(pool)} pool docs, "
        f"{len(planted)} true pairs; {result['cpus']} cpus, full model on {result['device']}, "
        f"cosine threshold {result['threshold']}, {result['date']}"
    )
    click.echo(f"{'search':12} {'seconds':>8} {'recall %':>9} {'found':>11} {'flagged':>8}")
    for name, s in (("exhaustive", ex), ("two-stage", two)):
        click.echo(
            f"{name:12} {s['seconds']:>8.1f} {s['embedding_recall']:>9.2f} "
            f"{s['found_by_embedding']:>5}/{s['planted']:<5} {s['flagged_pairs']:>8}"
        )
    pairs = result["embedding_pairs"]
    click.echo(
        f"two-stage minus exhaustive: {result['recall_difference_points']:+.2f} points; "
        f"embedding-flagged pairs: both {pairs['both']}, only exhaustive "
        f"{pairs['only_exhaustive']}, only two-stage {pairs['only_two_stage']}"
    )


def bench_sizes(
    sizes: list[int], eval_size: int, data_dir: str | None, jobs: int | None, as_json: bool
) -> None:
    """Runs both searches at each pool size (the prefilter cached, as on a second scan)
    and prints their times, where two-stage became the faster, and the scan's estimate."""
    from engine.contamination.bench.paraphrase_data import make_paraphrase_data
    from engine.contamination.scan import SearchCost, candidates_bound
    from engine.workspace import Workspace

    root = Path(data_dir) if data_dir else Path(tempfile.gettempdir()) / "sealdesk-bench-paraphrase"
    largest = max(sizes)
    directory = root / f"v2-pool{largest}-eval{eval_size}-subset{largest}"
    click.echo(f"generating the eval set and pool in {directory} ...", err=True)
    data = make_paraphrase_data(directory, largest, eval_size, largest)
    workspace = directory / "workspace"
    if not workspace.exists():
        Workspace.init(workspace).close()
    common = ["--eval", str(data.eval_path), "--workspace", str(workspace)]
    common += ["--jobs", str(jobs)] if jobs else []
    click.echo("  prefilter: distilling (or taking it from the workspace cache) ...", err=True)
    made = _side(["--side", "distill", *common])
    rows = []
    for size in sorted(sizes):
        pool = directory / f"pool-first-{size}.jsonl"
        if not pool.is_file():
            with open(data.pool_path, encoding="utf-8") as whole, open(pool, "w") as part:
                for _, line in zip(range(size), whole, strict=False):
                    part.write(line)
        timed = {}
        for side in ("exhaustive", "two-stage"):
            click.echo(f"  {side} on the first {size} docs ...", err=True)
            with tempfile.TemporaryDirectory(prefix="sealdesk-bench-cache-") as cache:
                got = _side(
                    ["--side", side, "--pool", str(pool), "--cache", f"{cache}/e.sqlite"] + common
                )
            timed[side] = round(got["seconds"], 1)
        rows.append({"pool_docs": size, **timed})
    faster = [r["pool_docs"] for r in rows if r["two-stage"] < r["exhaustive"]]
    with open(data.eval_path, encoding="utf-8") as handle:
        questions = [json.loads(line)["question"] for line in handle if line.strip()]
    estimate = SearchCost(None, eval_size, candidates_bound(questions, 50, 20), True).crossover()
    result = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "cpus": os.cpu_count(),
        "eval_size": eval_size,
        "prefilter": made,
        "runs": rows,
        "two_stage_faster_from": min(faster) if faster else None,
        "scan_estimate_crossover": estimate,
    }
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    click.echo(
        f"paraphrase search by pool size: {eval_size} eval items, prefilter cached, "
        f"{result['cpus']} cpus, {result['date']}"
    )
    click.echo(f"{'pool docs':>10} {'exhaustive s':>13} {'two-stage s':>12} {'ratio':>6}")
    for r in rows:
        ratio = r["exhaustive"] / r["two-stage"] if r["two-stage"] else float("inf")
        click.echo(
            f"{r['pool_docs']:>10} {r['exhaustive']:>13.1f} {r['two-stage']:>12.1f} {ratio:>6.2f}"
        )
    measured = result["two_stage_faster_from"]
    click.echo(
        "two-stage faster from "
        + (f"{measured} documents" if measured else "none of these sizes")
        + f" here; the scan's estimate switches at {estimate} (two-stage chosen only when "
        "it promises at most 80% of exhaustive's cost)"
    )


def _print(result: dict[str, Any]) -> None:
    click.echo(
        f"contamination paraphrase bench: {result['eval_size']} eval items, every channel on "
        f"(no probe), {result['cpus']} cpus, full model on {result['device']}, {result['date']}"
    )
    made = result["prefilter"]
    click.echo(
        f"prefilter: K={result['prefilter_k']}, "
        + (f"distilled in {made['seconds']} s" if made["distilled_now"] else "from the cache")
        + f"; cosine threshold {result['threshold']}"
    )
    click.echo(
        f"{'run':28} {'docs':>9} {'seconds':>8} {'docs/s':>9} {'peak RSS MB':>12} "
        f"{'recall %':>9} {'found':>11} {'look-alike half %':>18} {'free half %':>12} "
        f"{'full-model texts':>17}"
    )
    rows = [
        (f"exhaustive, first {result['subset']}", result["subset_exhaustive"]),
        (f"two-stage, first {result['subset']}", result["subset_two_stage"]),
    ]
    if result["full_two_stage"]:
        rows.append((f"two-stage, all {result['pool_size']}", result["full_two_stage"]))
    for name, s in rows:
        click.echo(
            f"{name:28} {s['pool_docs']:>9} {s['seconds']:>8.1f} {s['docs_per_s']:>9.1f} "
            f"{s['peak_rss_mb']:>12.1f} {s['embedding_recall']:>9.2f} "
            f"{s['found_by_embedding']:>5}/{s['planted']:<5} "
            f"{s['embedding_recall_among_lookalikes']:>18.2f} "
            f"{s['embedding_recall_lookalike_free']:>12.2f} "
            f"{s['texts_embedded_by_full_model']:>17}"
        )
    click.echo(
        f"on the subset: two-stage {result['subset_speedup']}x the exhaustive docs/s; recall "
        f"difference {result['subset_recall_difference_points']:+.2f} points (embedding "
        "channel)"
    )
    pairs = result["subset_embedding_pairs"]
    click.echo(
        f"embedding-flagged pairs on the subset: both {pairs['both']}, only exhaustive "
        f"{pairs['only_exhaustive']} (beyond the prefilter's candidates), only two-stage "
        f"{pairs['only_two_stage']} (a pair the exhaustive bound of {result['top_k']} per item "
        "turned away)"
    )


def _main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m engine.contamination.bench.paraphrase")
    parser.add_argument("--side", choices=["exhaustive", "two-stage", "distill"], required=True)
    parser.add_argument("--eval", required=True)
    parser.add_argument("--pool", default=None)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--cache", default=None)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--prefilter-k", type=int, default=50)
    args = parser.parse_args(argv)
    if args.side == "distill":
        result = distill(args.workspace)
    else:
        result = run_side(
            args.side, args.eval, args.pool, args.workspace, args.cache, args.jobs, args.prefilter_k
        )
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    _main(sys.argv[1:])
