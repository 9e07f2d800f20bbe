"""A sharded pool on the local backend.

It gives the same pairs and hash as one file; refusals, retries and resume.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import zlib
from itertools import pairwise
from pathlib import Path

import pytest

from engine.contamination.inputs.canonical_text import canonical, content_sha256
from engine.contamination.inputs.pool_hash import PieceBuilder, PoolHasher, pool_sha256
from engine.workspace import Workspace
from tests.support.contamination_shards import (
    ShardServer,
    children,
    pool_rows,
    read_rows,
    scan,
    split_into,
    synthetic_pool,
    write_shard,
)
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args

MIXED = [
    "pool-00.jsonl",
    "pool-01.jsonl.gz",
    "pool-02.jsonl.zst",
    "pool-03.parquet",
    "pool-04.jsonl",
]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    """A synthetic eval set and pool, the pool also as five shards of mixed formats."""
    root = tmp_path_factory.mktemp("shards")
    eval_path, pool_path = synthetic_pool(root / "data")
    rows = read_rows(pool_path)
    split_into(root / "mixed", rows, MIXED)
    single = scan(root / "ws-single", eval_path, str(pool_path), sharded=False, jobs=2)
    return {"root": root, "eval": eval_path, "pool": pool_path, "rows": rows, "single": single}


@pytest.fixture(scope="module")
def big(data) -> dict:
    """Eight shards of 4,500 rows: long enough that a run can be stopped midway."""
    root = data["root"] / "big"
    rows = [{**row, "id": f"{k}"} for k, row in enumerate(data["rows"] * 12)]
    split_into(root, rows, [f"p-{k}.jsonl" for k in range(8)])
    whole = scan(data["root"] / "ws-big", data["eval"], str(root / "p-*.jsonl"), jobs=1)
    return {"pattern": str(root / "p-*.jsonl"), "whole": whole, "eval": data["eval"]}


def cut_text(prefix: str) -> str:
    """Gives a text whose CRC-32 has its low ten bits zero (it ends a block)."""
    for k in range(1 << 16):
        text = f"{prefix} {k}"
        if zlib.crc32(text.encode()) & 0x3FF == 0:
            return text
    raise AssertionError("no cut text found")


def test_with_no_item_ending_a_block_the_pool_hash_is_the_flat_digest_hashed_once_more():
    texts = [
        t for t in (f"document number {k}" for k in range(50)) if zlib.crc32(t.encode()) & 0x3FF
    ][:20]
    assert pool_sha256(texts) == hashlib.sha256(bytes.fromhex(content_sha256(texts))).hexdigest()


def test_an_item_whose_crc32_ends_in_ten_zero_bits_closes_a_block():
    first, cut, last = "alpha beta", cut_text("gamma"), "delta"
    assert zlib.crc32(first.encode()) & 0x3FF and zlib.crc32(last.encode()) & 0x3FF
    block_1 = hashlib.sha256(f"{first}\0{cut}\0".encode()).digest()
    block_2 = hashlib.sha256(f"{last}\0".encode()).digest()
    assert pool_sha256([first, cut, last]) == hashlib.sha256(block_1 + block_2).hexdigest()


def test_any_split_of_the_items_into_shards_and_batches_gives_the_same_pool_hash():
    rng = random.Random(5)
    texts = [
        f"item {k} " + " ".join(rng.choice("ab cd ef gh".split()) for _ in range(4))
        for k in range(6000)
    ]
    expected = pool_sha256(texts)
    for _ in range(10):
        cuts = sorted(rng.sample(range(1, len(texts)), rng.randrange(0, 12)))
        hasher = PoolHasher()
        for a, b in pairwise([0, *cuts, len(texts)]):
            builder = PieceBuilder()
            start = a
            while start < b:
                stop = min(b, start + rng.randrange(1, 900))
                builder.add_stream(
                    "".join(f"{t}\0" for t in texts[start:stop]).encode(), stop - start
                )
                start = stop
            hasher.add(builder.piece())
        assert hasher.hexdigest() == expected


def test_shards_in_mixed_formats_give_the_pairs_and_hash_of_the_concatenated_file(data, tmp_path):
    sharded = scan(tmp_path / "ws", data["eval"], str(data["root"] / "mixed" / "pool-*"), jobs=2)
    single = data["single"]
    assert pool_rows(sharded) == pool_rows(single) and len(pool_rows(single)) > 10
    pool, one = sharded.report["pool"], single.report["pool"]
    assert (
        pool["content_sha256_blocks"]
        == one["content_sha256_blocks"]
        == pool_sha256(canonical(row["text"]) for row in data["rows"])
    )
    # several shards are named by the block hash; the one file by the flat hash
    assert (pool["content_hash"], pool["content_sha256"]) == (
        "sha256-blocks-v1",
        pool["content_sha256_blocks"],
    )
    assert one["content_sha256"] == content_sha256(r["text"] for r in data["rows"])
    assert pool["n"] == one["n"] == len(data["rows"]) and pool["shards"] == 5
    shards = sharded.report["pool_shards"]
    assert [Path(s["url"]).name for s in shards] == MIXED
    assert [s["first_index"] for s in shards] == [0, 600, 1200, 1800, 2400]
    # each shard also carries the flat content hash of its own items
    assert shards[3]["content_sha256"] == content_sha256(r["text"] for r in data["rows"][1800:2400])
    assert single.report["pool_shards"][0]["content_sha256"] == content_sha256(
        r["text"] for r in data["rows"]
    )


def test_shards_are_taken_in_sorted_order_of_their_names(data, tmp_path):
    # written in reverse so that the directory lists them out of order
    rows = data["rows"]
    for name, part in (
        ("b.jsonl", rows[1000:]),
        ("a-2.jsonl", rows[500:1000]),
        ("a-1.jsonl", rows[:500]),
    ):
        write_shard(tmp_path / name, part)
    outcome = scan(tmp_path / "ws", data["eval"], str(tmp_path / "*.jsonl"), jobs=1)
    assert [Path(s["url"]).name for s in outcome.report["pool_shards"]] == [
        "a-1.jsonl",
        "a-2.jsonl",
        "b.jsonl",
    ]
    assert pool_rows(outcome) == pool_rows(data["single"])


def test_a_file_url_pattern_reads_the_same_pool(data, tmp_path):
    pattern = "file://" + str(data["root"] / "mixed" / "pool-0[0-2]*")
    outcome = scan(tmp_path / "ws", data["eval"], pattern, jobs=2)
    assert [s["url"] for s in outcome.report["pool_shards"]] == [
        "file://" + str(data["root"] / "mixed" / n) for n in MIXED[:3]
    ]
    assert outcome.report["pool"]["n"] == 1800


def one_line_refusal(proc, workspace: Path, prefix: str, code: int = 2) -> str:
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"sealdesk: error: {prefix}"), lines[0]
    with Workspace.open(workspace) as ws:
        assert ws.conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0
    assert list((workspace / "artifacts").iterdir()) == []
    return lines[0]


def cli_scan(sealdesk, workspace: Path, eval_path: Path, pool: str, *extra: str):
    return sealdesk(
        *scan_args(eval_path, pool, *SAMPLE_FIELDS, "--no-embed", *extra),
        workspace=workspace,
    )


def test_a_pattern_naming_no_file_is_refused_in_one_line(sealdesk, ws, data, tmp_path):
    proc = cli_scan(sealdesk, ws, data["eval"], str(tmp_path / "none-*.jsonl"))
    one_line_refusal(
        proc, ws, f"{tmp_path / 'none-*.jsonl'}: field 'pool': the pattern names no files"
    )


def test_a_malformed_pool_url_is_refused_in_one_line(sealdesk, ws, data):
    proc = cli_scan(sealdesk, ws, data["eval"], "https://[::1/x.jsonl")
    one_line_refusal(proc, ws, "https://[::1/x.jsonl: field 'pool': cannot list: Invalid IPv6 URL")


def refused(workspace: Path, eval_path: Path, pattern: str) -> str:
    """Runs a scan in this process (one worker); gives its one-line InputError."""
    from engine.errors import InputError

    with pytest.raises(InputError) as caught:
        scan(workspace, eval_path, pattern, jobs=1)
    with Workspace.open(workspace) as opened:
        assert opened.conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0
    assert list((workspace / "artifacts").iterdir()) == []
    return caught.value.one_line()


def test_a_bad_row_in_a_compressed_shard_names_the_shard_its_line_and_field(ws, data, tmp_path):
    rows = [dict(r) for r in data["rows"][:900]]
    rows[700]["text"] = "   "
    shards = split_into(tmp_path / "bad", rows, ["p-0.jsonl", "p-1.jsonl.gz", "p-2.jsonl"])
    assert refused(ws, data["eval"], str(tmp_path / "bad" / "p-*")).startswith(
        f"{shards[2]}:101: field 'text': empty text"
    )


def test_of_two_bad_shards_the_first_in_pool_order_is_named(ws, data, tmp_path):
    rows = [dict(r) for r in data["rows"][:1200]]
    rows[1100]["text"] = None
    rows[450]["text"] = 7
    split_into(tmp_path / "bad", rows, [f"p-{k}.jsonl" for k in range(4)])
    assert refused(ws, data["eval"], str(tmp_path / "bad" / "p-*.jsonl")).startswith(
        f"{tmp_path / 'bad' / 'p-1.jsonl'}:151: field 'text': must be a string"
    )


def test_an_id_repeated_in_another_shard_names_both_places(ws, data, tmp_path):
    rows = [dict(r) for r in data["rows"][:900]]
    rows[850]["id"] = rows[120]["id"]
    split_into(tmp_path / "dup", rows, ["p-0.jsonl", "p-1.parquet", "p-2.jsonl.zst"])
    assert refused(ws, data["eval"], str(tmp_path / "dup" / "p-*")) == (
        f"{tmp_path / 'dup' / 'p-2.jsonl.zst'}:251: field 'id': duplicate id 'd120' (first at "
        f"{tmp_path / 'dup' / 'p-0.jsonl'}:121)"
    )


def test_an_id_repeated_within_one_shard_names_its_first_line(ws, data, tmp_path):
    rows = [dict(r) for r in data["rows"][:600]]
    rows[500]["id"] = rows[420]["id"]
    split_into(tmp_path / "dup", rows, ["p-0.jsonl", "p-1.jsonl"])
    assert refused(ws, data["eval"], str(tmp_path / "dup" / "p-*")) == (
        f"{tmp_path / 'dup' / 'p-1.jsonl'}:201: field 'id': duplicate id 'd420' (first at line 121)"
    )


def test_a_corrupt_compressed_shard_is_refused_as_bad_input(ws, data, tmp_path):
    split_into(tmp_path / "c", data["rows"][:600], ["p-0.jsonl", "p-1.jsonl.gz"])
    whole = (tmp_path / "c" / "p-1.jsonl.gz").read_bytes()
    (tmp_path / "c" / "p-1.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    assert refused(ws, data["eval"], str(tmp_path / "c" / "p-*")).startswith(
        f"{tmp_path / 'c' / 'p-1.jsonl.gz'}: field 'pool': cannot be decompressed as gzip"
    )


@pytest.fixture
def served(data):
    server = ShardServer(data["root"] / "mixed")
    yield server
    server.close()


def test_a_shard_whose_read_fails_once_is_retried_and_the_scan_completes(data, served, tmp_path):
    served.failures["pool-02.jsonl.zst"] = 1
    outcome = scan(tmp_path / "ws", data["eval"], f"{served.url}/pool-*", jobs=2)
    assert outcome.report["pool_scan"]["retries"] == {f"{served.url}/pool-02.jsonl.zst": 1}
    assert pool_rows(outcome) == pool_rows(data["single"])
    assert (
        outcome.report["pool"]["content_sha256_blocks"]
        == data["single"].report["pool"]["content_sha256_blocks"]
    )


def test_a_shard_that_keeps_failing_is_named_and_a_rerun_scans_only_it(ws, data, served):
    from engine.contamination.pool.base import ShardFailed

    served.failures["pool-03.parquet"] = -1
    pattern = f"{served.url}/pool-*"
    with pytest.raises(ShardFailed) as caught:
        scan(ws, data["eval"], pattern, jobs=1, shard_retries=1)
    line = caught.value.one_line()
    assert line.startswith(f"pool shard {served.url}/pool-03.parquet failed 2 time(s): ")
    assert "500" in line and "4 finished shard(s) are recorded" in line
    assert caught.value.exit_code == 6 and served.gets["pool-03.parquet"] == 2
    with Workspace.open(ws) as opened:
        assert opened.conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0
    assert list((ws / "artifacts").iterdir()) == []
    served.failures.clear()
    rerun = scan(ws, data["eval"], pattern, jobs=1)
    run = rerun.report["pool_scan"]
    assert (run["scanned"], run["from_records"]) == (1, 4)
    assert (
        rerun.report["pool"]["content_sha256_blocks"]
        == data["single"].report["pool"]["content_sha256_blocks"]
    )
    assert rerun.rows == data["single"].rows


def test_the_same_scan_again_takes_every_shard_from_its_record_unless_told_not_to(data, tmp_path):
    pattern = str(data["root"] / "mixed" / "pool-*")
    first = scan(tmp_path / "ws", data["eval"], pattern, jobs=1)
    again = scan(tmp_path / "ws", data["eval"], pattern, jobs=1)
    fresh = scan(tmp_path / "ws", data["eval"], pattern, jobs=1, resume=False)
    assert (
        first.report["pool_scan"]["scanned"],
        again.report["pool_scan"]["from_records"],
        fresh.report["pool_scan"]["scanned"],
    ) == (5, 5, 5)
    assert first.rows == again.rows == fresh.rows
    assert first.report["pool"] == again.report["pool"] == fresh.report["pool"]


def test_records_are_not_reused_when_a_setting_changes_the_answer(data, tmp_path):

    pattern = str(data["root"] / "mixed" / "pool-*")
    scan(tmp_path / "ws", data["eval"], pattern, jobs=1)
    other = scan(tmp_path / "ws", data["eval"], pattern, jobs=1, containment=0.9)
    assert other.report["pool_scan"]["scanned"] == 5


def test_progress_counts_shards_and_documents_for_the_jobs_panel(sealdesk, ws, data, tmp_path):
    progress = tmp_path / "progress.jsonl"
    proc = sealdesk(
        *scan_args(
            data["eval"], str(data["root"] / "mixed" / "pool-*"), *SAMPLE_FIELDS, "--no-embed"
        ),
        workspace=ws,
        env={"SEALDESK_PROGRESS_FILE": str(progress)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "pool: 5 shard(s) on local x" in proc.stdout
    lines = read_rows(progress)
    shards = [line for line in lines if line["stage"] == "pool shards"]
    docs = [line for line in lines if line["stage"] == "scanning pool"]
    assert shards[0]["total"] == 5 and shards[-1]["done"] == 5 and shards[-1]["finished"]
    assert docs[-1]["done"] == docs[-1]["total"] == 3000 and docs[-1]["finished"]
    assert all(line["rate"] >= 0 for line in docs)


def test_without_ray_installed_the_ray_backend_is_refused_in_one_line(sealdesk, ws, data, tmp_path):
    shim = tmp_path / "no-ray"
    (shim / "ray").mkdir(parents=True)
    (shim / "ray" / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(shim), os.environ["PYTHONPATH"]])}
    proc = sealdesk(
        *scan_args(
            data["eval"],
            str(data["root"] / "mixed" / "pool-*"),
            "--text-field",
            "question",
            "--pool-text-field",
            "text",
            "--no-embed",
            "--backend",
            "ray",
        ),
        workspace=ws,
        env=env,
    )
    one_line_refusal(proc, ws, "--backend ray needs Ray: pip install 'sealdesk[ray]'")


@pytest.mark.slow
def test_a_killed_run_resumes_with_only_the_shards_left(data, big, ws):
    args = [
        sys.executable,
        "-m",
        "engine.cli",
        "--workspace",
        str(ws),
        *scan_args(
            str(data["eval"]), big["pattern"], *SAMPLE_FIELDS, "--no-embed", "--jobs", "1", "--json"
        ),
    ]
    run = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    records = ws / "cache" / "shards"
    deadline = time.monotonic() + 120
    while len(list(records.glob("*/*.npz"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)  # the run, and any process it started
    run.wait()
    done = len(list(records.glob("*/*.npz")))
    assert 2 <= done < 8
    assert list((ws / "artifacts").iterdir()) == []
    rerun = subprocess.run(args, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert (report["pool_scan"]["from_records"], report["pool_scan"]["scanned"]) == (done, 8 - done)
    (artifacts,) = (ws / "artifacts").iterdir()
    assert read_rows(artifacts / "flagged_pairs.jsonl") == big["whole"].rows
    assert report["pool"] == big["whole"].report["pool"]


def test_gzip_members_written_apart_read_as_one_shard(data, tmp_path):
    rows = data["rows"][:400]
    lines = [json.dumps(r) + "\n" for r in rows]
    # two gzip members back to back, as `cat a.gz b.gz` makes
    (tmp_path / "p.jsonl.gz").write_bytes(
        gzip.compress("".join(lines[:150]).encode()) + gzip.compress("".join(lines[150:]).encode())
    )
    outcome = scan(tmp_path / "ws", data["eval"], str(tmp_path / "p.jsonl.gz"), jobs=1)
    assert outcome.report["pool"]["n"] == 400


def test_the_scan_imports_ray_only_when_the_ray_backend_runs():
    code = (
        "import sys, engine.contamination.scan, engine.contamination.cli, "
        "engine.contamination.pool.base; print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


@pytest.mark.slow
def test_a_worker_killed_mid_scan_costs_a_retry_not_the_scan(big, tmp_path):
    import threading

    killed: list[int] = []
    records = tmp_path / "ws" / "cache" / "shards"

    def kill_a_worker() -> None:
        # once a shard is done, the others are in flight: stop one worker, a child
        # of the fork server, itself a child of this process
        deadline = time.monotonic() + 60
        while not list(records.glob("*/*.npz")) and time.monotonic() < deadline:
            time.sleep(0.005)
        for server in children(os.getpid()):
            if b"forkserver" in Path(f"/proc/{server}/cmdline").read_bytes():
                for worker in children(server):
                    os.kill(worker, signal.SIGKILL)
                    killed.append(worker)
                    return

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    outcome = scan(tmp_path / "ws", big["eval"], big["pattern"], jobs=2)
    killer.join()
    assert killed
    assert outcome.report["pool_scan"]["retries"]  # the shards in flight were tried again
    assert outcome.rows == big["whole"].rows


def test_a_pool_file_whose_name_looks_like_a_pattern_is_read_as_itself(sealdesk, tmp_path):
    from engine.workspace import Workspace

    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    ev = tmp_path / "eval.jsonl"
    ev.write_text(
        json.dumps(
            {
                "id": "q1",
                "text": "how many clips did natalia sell in april and may altogether this year",
            }
        )
        + "\n"
    )
    pool = tmp_path / "pool[1].jsonl"
    pool.write_text(
        json.dumps(
            {
                "id": "d1",
                "text": "how many clips did natalia sell in april and may altogether this year",
            }
        )
        + "\n"
    )
    (tmp_path / "pool1.jsonl").write_text(json.dumps({"id": "other", "text": "unrelated"}) + "\n")
    done = sealdesk(
        *scan_args(ev, pool, "--id-field", "id", "--no-embed", "--json"),
        workspace=ws,
    )
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)["pool"]
    plain = tmp_path / "plain.jsonl"  # the same bytes under a plain name, for comparison
    plain.write_bytes(pool.read_bytes())
    same = json.loads(
        sealdesk(
            *scan_args(ev, plain, "--id-field", "id", "--no-embed", "--json"),
            workspace=ws,
            check=True,
        ).stdout
    )["pool"]
    assert read["name"] == str(pool) and read["n"] == 1
    assert read["content_sha256"] == same["content_sha256"]  # not pool1.jsonl's "unrelated"
