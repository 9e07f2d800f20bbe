"""Input that is valid to a parser but not to a signed, hashed text record: bytes
that are not UTF-8 on the command line, lone surrogate escapes, numbers beyond a
float, nesting deeper than Python recurses, control characters in an id. Each
is one line naming where, and writes nothing."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess

import pytest

from engine.canonical import canonical_json, canonical_sha256
from engine.workspace import BacklogItem
from tests.conftest import REPO, SEALDESK
from tests.support.backlog import write_items_file
from tests.support.cli_workspace import decide_args
from tests.support.refusals import one_line_error, snapshot


def _raw_item_line(payload_json: bytes, item_id: str = "odd-1") -> bytes:
    """An item line whose payload is given as raw JSON text (a parser sees it first)."""
    head = canonical_json({"item_id": item_id, "item_sha256": "0" * 64})[:-1]
    return head + b',"payload":' + payload_json + b',"queue":"flagged_pairs","run_id":"run-1"}\n'


@pytest.mark.parametrize(
    "payload,reason",
    [
        (b'{"text":"\\ud800"}', "lone surrogate"),
        (b'{"text":"ok","x":1e400}', "beyond a 64-bit float"),
        (b'{"deep":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    ],
    ids=["lone-surrogate", "1e400", "deep"],
)
def test_ingest_names_the_line_of_json_no_hash_could_cover(
    cli_ws, sealdesk, tmp_path, payload, reason
):
    ws, _ = cli_ws
    path = tmp_path / "odd.jsonl"
    good = BacklogItem.make("flagged_pairs", "fine-1", "run-1", {"text": "fine"})
    write_items_file(path, [good])
    with open(path, "ab") as handle:
        handle.write(_raw_item_line(payload))
    before = snapshot(ws)
    err = one_line_error(sealdesk("ingest", path, workspace=ws))
    assert err.startswith(f"sealdesk: error: {path}:2: ") and reason in err, err
    assert snapshot(ws) == before


def test_ingest_refuses_a_score_no_float_holds_naming_the_field(cli_ws, sealdesk, tmp_path):
    ws, _ = cli_ws
    path = tmp_path / "huge.jsonl"
    write_items_file(
        path,
        [
            BacklogItem.make(
                "flagged_pairs", "huge-1", "run-1", {"summary": {"title": "t", "score": 10**400}}
            )
        ],
    )
    before = snapshot(ws)
    err = one_line_error(sealdesk("ingest", path, workspace=ws))
    assert f"{path}:1: field 'payload.summary.score'" in err, err
    assert snapshot(ws) == before


@pytest.mark.parametrize("item_id", ["nul\x00id", "esc\x1b[2Jid", "line\nbreak", "c1\x9bid"])
def test_ingest_refuses_control_characters_in_an_item_id(cli_ws, sealdesk, tmp_path, item_id):
    ws, _ = cli_ws
    path = tmp_path / "ctl.jsonl"
    write_items_file(path, [BacklogItem.make("flagged_pairs", item_id, "run-1", {"t": 1})])
    before = snapshot(ws)
    err = one_line_error(sealdesk("ingest", path, workspace=ws))
    assert f"{path}:1: field 'item_id': must not hold control characters" in err, err
    assert snapshot(ws) == before


@pytest.mark.parametrize("option", ["--note", "--principal"])
def test_an_argument_that_is_not_utf8_is_one_line_naming_it(cli_ws, tmp_path, option):
    ws, keys = cli_ws
    before = snapshot(ws)
    env = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONPATH": str(REPO)}
    args = [
        *SEALDESK,
        "--workspace",
        str(ws),
        "decide",
        "--queue",
        "flagged_pairs",
        "--item",
        "item-0",
        "--decision",
        "accept",
        "--key",
        str(keys["rita"]),
    ]
    args = [a.encode() for a in args] + [option.encode(), b"caf\xe9 latin-1"]
    proc = subprocess.run(args, capture_output=True, env=env, cwd=tmp_path)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"argument {len(args) - len(SEALDESK)} (caf\\xe9 latin-1) is not valid UTF-8" in lines[0]
    assert snapshot(ws) == before


def test_verify_names_a_record_rewritten_to_nest_deeper_than_python_recurses(cli_ws, sealdesk):
    ws, keys = cli_ws
    seqs = []
    for item in ("item-0", "item-1"):
        decided = sealdesk(*decide_args(keys["rita"], item), workspace=ws, check=True)
        seqs.append(int(decided.stdout.split()[0].lstrip("#")))
    seq = seqs[1]  # the second decision (after the genesis and the enrolment)
    deep = "[" * 100_000 + "]" * 100_000
    conn = sqlite3.connect(ws / "sealdesk.db", isolation_level=None)
    conn.execute("DROP TRIGGER records_no_update")
    conn.execute(
        "UPDATE records SET message=?, record_hash=? WHERE seq=?",
        (deep, hashlib.sha256(deep.encode()).hexdigest(), seq),
    )
    conn.close()
    proc = sealdesk("verify", "--jobs", "1", workspace=ws)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"FAIL: record {seq}") and "nested too deeply" in proc.stderr


def test_a_lone_surrogate_in_a_value_built_in_python_is_an_input_error():
    from engine.errors import InputError

    with pytest.raises(InputError, match="lone surrogate"):
        canonical_sha256({"note": "\udcff"})
