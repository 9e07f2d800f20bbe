"""Sharded pools for the tests: shards in every format, a flaky HTTP shard server, scans.

The HTTP server is a real server on 127.0.0.1 (Python's http.server), read
by the scan through fsspec like any remote store; it can answer 500 to the
first GETs of a file, or to all of them, which is how a shard whose read
fails (once, or for good) is made.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections import Counter
from dataclasses import replace
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.contamination.bench.synthetic import make_synthetic
from engine.contamination.inputs.shards import sharded_pool
from engine.contamination.inputs.sources import resolve_source
from engine.contamination.scan import ScanConfig, ScanOutcome, run_scan
from engine.workspace import Workspace


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_shard(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Writes rows as the file name says: .jsonl, .jsonl.gz, .jsonl.zst or .parquet."""
    if path.name.endswith(".parquet"):
        pq.write_table(pa.table({key: [row[key] for row in rows] for key in rows[0]}), path)
        return path
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    elif path.name.endswith(".zst"):
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as stream:
            stream.write(data)
        data = sink.getvalue().to_pybytes()
    path.write_bytes(data)
    return path


def split_into(directory: Path, rows: list[dict[str, Any]], names: list[str]) -> list[Path]:
    """Writes consecutive equal parts of the rows, one per name, in the names' order."""
    directory.mkdir(parents=True, exist_ok=True)
    bounds = [len(rows) * k // len(names) for k in range(len(names) + 1)]
    return [
        write_shard(directory / name, rows[a:b])
        for name, (a, b) in zip(names, pairwise(bounds), strict=True)
    ]


def synthetic_pool(
    directory: Path, pool_size: int = 3000, eval_size: int = 300
) -> tuple[Path, Path]:
    """Gives (eval.jsonl, pool.jsonl): small pool with planted verbatim, edited, embedded copies."""
    data = make_synthetic(directory, pool_size=pool_size, eval_size=eval_size)
    return data.eval_path, data.pool_path


def config(eval_path: Path, pool: str, *, sharded: bool = True, **options: Any) -> ScanConfig:
    """Gives the scan config of the synthetic data (question/text fields, ids), n-gram only."""
    if sharded:
        source: Any = sharded_pool(pool, text_field="text", id_field="id")
    else:
        source = resolve_source("pool", pool, text_field="text", id_field="id")
    options.setdefault("embed", False)
    return ScanConfig.of(
        eval=resolve_source("eval", str(eval_path), text_field="question", id_field="id"),
        pool=source,
        **options,
    )


def scan(
    root: Path, eval_path: Path, pool: str, batch_size: int | None = None, **options: Any
) -> ScanOutcome:
    """Runs a scan in this process on the workspace at root (made if absent); a
    ``batch_size`` reads the pool that many documents at a time."""
    scan_config = config(eval_path, pool, **options)
    if batch_size is not None:
        scan_config = replace(scan_config, batch_size=batch_size)
    with Workspace.open(root) if root.exists() else Workspace.init(root) as ws:
        return run_scan(ws, scan_config)


def pool_rows(outcome: ScanOutcome) -> list[dict[str, Any]]:
    """Gives the flagged rows that concern the pool, as written."""
    return [row for row in outcome.rows if row["channel"] != "internal"]


class _Handler(SimpleHTTPRequestHandler):
    def __init__(self, *args: Any, server_state: ShardServer, **kwargs: Any) -> None:
        self.state = server_state
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        name = self.path.rsplit("/", 1)[-1]
        self.state.gets[name] += 1
        left = self.state.failures.get(name, 0)
        if left:
            if left > 0:
                self.state.failures[name] = left - 1
            self.send_error(500, "the store failed this read")
            return
        super().do_GET()

    def log_message(self, *args: Any) -> None:
        pass


class ShardServer:
    """A real HTTP server on 127.0.0.1 serving a directory, failing reads on request."""

    def __init__(self, root: Path) -> None:
        self.failures: dict[str, int] = {}  # file name -> GETs to fail (-1: every one)
        self.gets: Counter[str] = Counter()
        handler = partial(_Handler, server_state=self, directory=str(root))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def children(pid: int) -> list[int]:
    """Gives the ids of a process's children (from /proc): the processes a test may stop."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found
