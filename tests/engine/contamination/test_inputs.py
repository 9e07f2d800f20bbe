"""Bad input: one line naming file, line and field; nothing written. Good input in every format."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.contamination.inputs.sources import resolve_source
from engine.contamination.scan import ScanConfig, run_scan
from engine.errors import InputError
from engine.workspace import Workspace
from tests.support.scan_cli import scan_args

QUESTION = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many "
    "clips in May. How many clips did Natalia sell altogether in April and May?"
)


def write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return path


@pytest.fixture
def good(tmp_path) -> tuple[Path, Path]:
    ev = write_jsonl(
        tmp_path / "eval.jsonl",
        [{"id": "q1", "text": QUESTION}, {"id": "q2", "text": "A different question."}],
    )
    pool = write_jsonl(
        tmp_path / "pool.jsonl",
        [{"id": "d1", "text": "Intro. " + QUESTION}, {"id": "d2", "text": "Unrelated words."}],
    )
    return ev, pool


def scan(sealdesk, ws, ev, pool, *extra):
    return sealdesk(
        *scan_args(ev, pool, "--id-field", "id", "--no-embed", *extra),
        workspace=ws,
    )


def refused(ws: Path, ev, pool, *, jobs: int = 1, **source_options) -> InputError:
    """Runs a scan in this process; gives the InputError it must raise."""
    with Workspace.open(ws) as opened, pytest.raises(InputError) as caught:
        config = ScanConfig.of(
            eval=resolve_source(
                "eval", str(ev), text_field="text", id_field="id", **source_options
            ),
            pool=resolve_source("pool", str(pool), text_field="text", id_field="id"),
            embed=False,
            jobs=jobs,
        )
        run_scan(opened, config)
    assert_nothing_written(ws)
    return caught.value


def assert_nothing_written(ws: Path) -> None:
    with Workspace.open(ws) as opened:
        assert opened.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
        assert opened.conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0
    assert list((ws / "artifacts").iterdir()) == []


def where(error: InputError) -> tuple[str | None, int | None, str | None]:
    return error.path, error.line, error.field


def assert_refused(proc, ws: Path, expected_prefix: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"sealdesk: error: {expected_prefix}"), lines[0]
    assert_nothing_written(ws)


def test_a_missing_text_field_names_file_line_and_field(sealdesk, ws, tmp_path, good):
    ev = write_jsonl(
        tmp_path / "e.jsonl",
        [{"id": "a", "text": QUESTION}, "", {"id": "b", "body": "no text here"}],
    )
    assert_refused(scan(sealdesk, ws, ev, good[1]), ws, f"{ev}:3: field 'text': missing")


def test_an_empty_pool_text_names_its_line(sealdesk, ws, tmp_path, good):
    pool = write_jsonl(
        tmp_path / "p.jsonl", [{"id": "d1", "text": "fine"}, {"id": "d2", "text": " \n\t "}]
    )
    error = refused(ws, good[0], pool)
    assert where(error) == (str(pool), 2, "text") and error.reason.startswith("empty text")


def test_a_non_string_text_is_refused(sealdesk, ws, tmp_path, good):
    pool = write_jsonl(
        tmp_path / "p.jsonl", [{"id": "d1", "text": "fine"}, {"id": "d2", "text": 42}]
    )
    error = refused(ws, good[0], pool)
    assert where(error) == (str(pool), 2, "text") and "must be a string" in error.reason


def test_non_utf8_bytes_name_line_and_field(sealdesk, ws, tmp_path, good):
    pool = tmp_path / "p.jsonl"
    pool.write_bytes(b'{"id": "d1", "text": "fine"}\n{"id": "d2", "text": "caf\xe9 au lait"}\n')
    error = refused(ws, good[0], pool)
    assert where(error) == (str(pool), 2, "text") and error.reason.startswith(
        "not UTF-8 (byte 0xe9"
    )


def test_duplicate_eval_ids_name_the_second_line_and_the_first(sealdesk, ws, tmp_path, good):
    ev = write_jsonl(
        tmp_path / "e.jsonl",
        [
            {"id": "q1", "text": "one two"},
            {"id": "q2", "text": "three"},
            {"id": "q1", "text": "four"},
        ],
    )
    error = refused(ws, ev, good[1])
    assert where(error) == (str(ev), 3, "id")
    assert error.reason == "duplicate id 'q1' (first at line 1)"


def test_duplicate_pool_ids_are_refused(sealdesk, ws, tmp_path, good):
    pool = write_jsonl(
        tmp_path / "p.jsonl",
        [{"id": "d1", "text": "a"}, {"id": "d2", "text": "b"}, {"id": "d1", "text": "c"}],
    )
    error = refused(ws, good[0], pool)
    assert where(error) == (str(pool), 3, "id") and error.reason.startswith("duplicate id 'd1'")


def test_a_bad_row_deep_in_a_pool_read_by_worker_processes_names_its_line(
    sealdesk, ws, tmp_path, good
):
    rows = [{"id": f"d{i}", "text": f"document number {i}"} for i in range(5000)]
    rows[4321]["text"] = ""
    pool = write_jsonl(tmp_path / "p.jsonl", rows)
    error = refused(ws, good[0], pool, jobs=2)
    assert where(error) == (str(pool), 4322, "text")


def test_a_hub_dataset_without_a_revision_is_refused_as_unpinned(sealdesk, ws, good):
    proc = scan(sealdesk, ws, "openai/gsm8k", good[1], "--eval-split", "test")
    assert_refused(proc, ws, "openai/gsm8k: field 'revision': unpinned")


@pytest.mark.parametrize("revision", ["main", "v1.0", "e53f048"])
def test_a_branch_tag_or_short_sha_is_refused_with_the_reason(revision):
    with pytest.raises(InputError) as caught:
        resolve_source(
            "eval",
            "openai/gsm8k",
            text_field="text",
            id_field=None,
            split="test",
            revision=revision,
        )
    assert where(caught.value) == ("openai/gsm8k", None, "revision")
    assert caught.value.reason.startswith(f"'{revision}' is not a 40-hex commit sha")
    assert "a branch or tag moves" in caught.value.reason


def test_an_unreadable_file_is_named(tmp_path):
    missing = tmp_path / "nowhere.jsonl"
    with pytest.raises(InputError) as caught:
        resolve_source("pool", str(missing), text_field="text", id_field=None)
    assert where(caught.value) == (str(missing), None, None)
    assert caught.value.reason == "cannot read: No such file or directory"


def test_malformed_json_names_its_line(sealdesk, ws, tmp_path, good):
    pool = write_jsonl(tmp_path / "p.jsonl", [{"id": "d1", "text": "fine"}, '{"id": "d2", "text":'])
    error = refused(ws, good[0], pool)
    assert (error.path, error.line) == (str(pool), 2) and error.reason.startswith("not valid JSON")


def test_csv_and_parquet_inputs_are_read_through_datasets(sealdesk, ws, tmp_path):
    ev = tmp_path / "eval.csv"
    ev.write_text(f'id,text\nq1,"{QUESTION}"\nq2,42\n', encoding="utf-8")
    pool = tmp_path / "pool.parquet"
    pq.write_table(pa.table({"id": ["d1", "d2"], "text": ["Intro. " + QUESTION, "other"]}), pool)
    proc = scan(sealdesk, ws, ev, pool, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["test"]["n"] == 2 and report["pool"]["n"] == 2
    assert report["counts"]["containment_overlap_items"] == 1


def test_a_null_parquet_text_names_its_row(sealdesk, ws, tmp_path, good):
    pool = tmp_path / "pool.parquet"
    pq.write_table(pa.table({"id": ["d1", "d2"], "text": ["fine", None]}), pool)
    error = refused(ws, good[0], pool)
    assert where(error) == (str(pool), 2, "text") and error.reason.startswith("missing")


def test_an_empty_csv_cell_names_its_line(sealdesk, ws, tmp_path, good):
    pool = tmp_path / "pool.csv"
    pool.write_text('id,text\nd1,"two\nlines"\nd2,\n', encoding="utf-8")
    error = refused(ws, good[0], pool)
    assert where(error) == (str(pool), 4, "text") and error.reason.startswith("empty text")


@pytest.mark.parametrize("which", ["eval", "pool"])
def test_an_empty_file_is_named_as_empty_not_as_a_parser_exception(
    sealdesk, ws, tmp_path, good, which
):
    empty = tmp_path / f"{which}-empty.jsonl"
    empty.touch()
    ev, pool = (empty, good[1]) if which == "eval" else (good[0], empty)
    what = "eval set" if which == "eval" else "pool"
    assert_refused(
        scan(sealdesk, ws, ev, pool), ws, f"{empty}: the file is empty: the {what} has no rows"
    )


@pytest.mark.parametrize("which", ["eval", "pool"])
def test_a_csv_whose_rows_are_wider_than_its_header_is_refused_not_shifted(
    ws, tmp_path, good, which
):
    wide = tmp_path / f"{which}.csv"
    wide.write_text(
        f'id,text\nd1,"{QUESTION}",extra\nd2,"more words here",extra\n', encoding="utf-8"
    )
    ev, pool = (wide, good[1]) if which == "eval" else (good[0], wide)
    error = refused(ws, ev, pool)
    assert where(error) == (str(wide), 2, None)
    assert error.reason == "expected 2 fields (as the header), got 3"


def test_a_scan_whose_run_cannot_be_recorded_leaves_no_artifacts(sealdesk, ws, good):
    import sqlite3

    conn = sqlite3.connect(ws / "sealdesk.db", isolation_level=None)
    conn.execute(
        "CREATE TRIGGER jam BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    )
    conn.close()
    proc = scan(sealdesk, ws, *good)
    assert proc.returncode == 2 and "disk says no" in proc.stderr, proc.stderr
    assert list((ws / "artifacts").iterdir()) == []


def _scan_named_nothing(sealdesk, ws, ev, pool):
    return sealdesk(
        "scan", "contamination", "--eval", ev, "--pool", pool, "--no-embed", workspace=ws
    )


def test_unnamed_text_and_id_fields_are_detected_and_reported(sealdesk, ws, tmp_path):
    ev = write_jsonl(
        tmp_path / "e.jsonl",
        [{"qid": "a1", "question": QUESTION, "answer": 72}, {"qid": "a2", "question": "Why?"}],
    )
    pool = write_jsonl(tmp_path / "p.jsonl", [{"text": "Intro. " + QUESTION, "src": "web"}])
    proc = _scan_named_nothing(sealdesk, ws, ev, pool)
    assert proc.returncode == 0, proc.stderr
    assert "eval: text 'question' (detected: the row's only string field besides ids)" in (
        proc.stdout
    )
    assert "id 'qid' (detected" in proc.stdout
    assert "pool: text 'text' (detected: the one conventional text name among src, text)" in (
        proc.stdout
    )
    with Workspace.open(ws) as opened:
        (payload,) = [json.loads(p) for (p,) in opened.conn.execute("SELECT payload FROM items")]
    assert payload["eval"]["id"] == "a1"


def test_two_text_candidates_are_refused_naming_both(sealdesk, ws, tmp_path, good):
    ev = write_jsonl(tmp_path / "e.jsonl", [{"question": QUESTION, "prompt": "Solve it."}])
    assert_refused(
        _scan_named_nothing(sealdesk, ws, ev, good[1]),
        ws,
        f"{ev}:1: field 'text-field': which field holds the text? several fields could hold "
        "the text (prompt, question)",
    )


def test_a_named_field_missing_from_the_first_row_lists_its_string_fields(
    sealdesk, ws, tmp_path, good
):
    ev = write_jsonl(tmp_path / "e.jsonl", [{"qid": "a1", "question": QUESTION}])
    proc = sealdesk(
        *scan_args(ev, good[1], "--text-field", "body", "--no-embed"),
        workspace=ws,
    )
    assert_refused(
        proc,
        ws,
        f"{ev}:1: field 'body': not in the first row, whose string fields are qid, question",
    )


# A row nested 100,000 deep: Arrow's JSON parser, which reads the inputs, crashed the
# whole scan on it (a segmentation fault), and Python's parser raises RecursionError.
DEEP_ROW = '{"id": "deep", "text": "fine", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}"
# Rows that each open a few brackets, so that a block of the file holds far more
# brackets than any row may nest: each line of it is then looked at.
BRACKETED = [
    {"id": f"d{i}", "text": f"document {i}", "tags": [[i], {"k": [i]}]} for i in range(3000)
]


@pytest.mark.parametrize(
    "where_deep, line",
    [("eval", 1), ("eval", 2), ("pool", 2), ("pool", 2999), ("shard", 2)],
    ids=["eval-first-row", "eval", "pool", "pool-after-bracketed-rows", "pool-shard-gz"],
)
def test_a_deeply_nested_row_is_refused_naming_file_line_and_field(
    sealdesk, ws, tmp_path, good, where_deep, line
):
    rows: list[dict | str]
    if where_deep == "eval":
        path = tmp_path / "e.jsonl"
        rows = [{"id": "q1", "text": QUESTION}] if line == 2 else []
        write_jsonl(path, [*rows, DEEP_ROW])
        ev, pool, named = path, good[1], str(path)
    else:
        rows = list(BRACKETED[: line - 1]) if line > 2 else [{"id": "d1", "text": "fine"}]
        path = write_jsonl(tmp_path / "p.jsonl", [*rows, DEEP_ROW, {"id": "z", "text": "z"}])
        ev, pool, named = good[0], path, str(path)
        if where_deep == "shard":
            shards = tmp_path / "shards"
            shards.mkdir()
            first = write_jsonl(shards / "pool-0.jsonl", [{"id": "s0", "text": "shard zero"}])
            with open(path, "rb") as raw, gzip.open(shards / "pool-1.jsonl.gz", "wb") as out:
                out.write(raw.read())
            assert first.exists()
            pool, named = f"{shards}/pool-*.jsonl*", str(shards / "pool-1.jsonl.gz")
    assert_refused(
        scan(sealdesk, ws, ev, pool),
        ws,
        f"{named}:{line}: field 'meta': not valid JSON: nested too deeply to parse",
    )


ANSWER = "In May she sold 48 / 2 = 24 clips, so 48 + 24 = 72 clips in all."


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_several_text_fields_are_joined_in_order_and_the_choice_is_reported(
    sealdesk, ws, tmp_path, fmt
):
    # the eval item is a pool document's answer: only the joined text holds it, so only
    # the joined scan flags it
    ev = write_jsonl(tmp_path / "e.jsonl", [{"id": "q1", "text": "Worked answer: " + ANSWER}])
    rows = {"id": ["d1", "d2"], "question": [QUESTION, "Other."], "answer": [ANSWER, "None."]}
    if fmt == "jsonl":
        records = [dict(zip(rows, c, strict=True)) for c in zip(*rows.values(), strict=True)]
        pool = write_jsonl(tmp_path / "p.jsonl", records)
    elif fmt == "csv":
        pool = tmp_path / "p.csv"
        lines = ["id,question,answer"] + [
            f'{i},"{q}","{a}"' for i, q, a in zip(*rows.values(), strict=True)
        ]
        pool.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        pool = tmp_path / "p.parquet"
        pq.write_table(pa.table(rows), pool)
    alone = scan(sealdesk, ws, ev, pool, "--text-field", "text", "--pool-text-field", "question")
    assert alone.returncode == 0, alone.stderr
    assert "  flagged (pending review): 0 of 1" in alone.stdout
    joined = scan(
        sealdesk,
        ws,
        ev,
        pool,
        "--text-field",
        "text",
        "--pool-text-field",
        "question,answer",
        "--json",
    )
    assert joined.returncode == 0, joined.stderr
    report = json.loads(joined.stdout)
    assert report["counts"]["containment_overlap_items"] == 1
    assert report["fields"]["pool"]["text"] == {
        "field": "question,answer",
        "how": "given: question + answer, joined in this order",
    }


def test_a_joined_field_missing_from_the_first_row_is_named(sealdesk, ws, tmp_path, good):
    pool = write_jsonl(tmp_path / "p.jsonl", [{"id": "d1", "question": QUESTION}])
    proc = scan(
        sealdesk, ws, good[0], pool, "--text-field", "text", "--pool-text-field", "question,answer"
    )
    assert_refused(
        proc, ws, f"{pool}:1: field 'answer': not in the first row, whose string fields are"
    )


def test_a_row_missing_one_joined_field_names_its_line(sealdesk, ws, tmp_path, good):
    pool = write_jsonl(
        tmp_path / "p.jsonl",
        [{"id": "d1", "question": "Q?", "answer": "A."}, {"id": "d2", "question": "Q2?"}],
    )
    proc = scan(
        sealdesk, ws, good[0], pool, "--text-field", "text", "--pool-text-field", "question,answer"
    )
    assert_refused(proc, ws, f"{pool}:2: field 'question,answer': missing")
