"""Bad input to the foundation's commands: one line naming what is wrong, nothing written."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from engine.workspace import BacklogItem
from tests.conftest import REPO
from tests.support.backlog import make_items, write_items_file
from tests.support.cli_workspace import decide_args, enrol_args
from tests.support.refusals import one_line_error, snapshot
from tests.support.scan_cli import scan_args


def test_ingesting_several_files_writes_nothing_when_a_later_one_conflicts(
    cli_ws, sealdesk_main, tmp_path
):
    ws, _ = cli_ws
    fresh = tmp_path / "fresh.jsonl"
    write_items_file(fresh, make_items(6, run_id="run-2")[4:])
    clash = tmp_path / "clash.jsonl"
    write_items_file(clash, [BacklogItem.make("flagged_pairs", "item-1", "run-3", {"x": 1})])
    before = snapshot(ws)
    err = one_line_error(sealdesk_main("ingest", fresh, clash, workspace=ws))
    assert "item-1 already exists with different bytes" in err and "clash.jsonl" in err
    assert snapshot(ws) == before


def test_two_files_giving_one_item_id_different_bytes_are_refused_naming_both(
    cli_ws, sealdesk_main, tmp_path
):
    ws, _ = cli_ws
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    write_items_file(first, [BacklogItem.make("flagged_pairs", "new-1", "run-4", {"x": 1})])
    write_items_file(second, [BacklogItem.make("flagged_pairs", "new-1", "run-4", {"x": 2})])
    before = snapshot(ws)
    err = one_line_error(sealdesk_main("ingest", first, second, workspace=ws))
    assert f"{second}:1:" in err and "first.jsonl" in err and "field 'item_id'" in err
    assert snapshot(ws) == before


def test_bulk_decide_signs_nothing_when_one_id_is_unknown(cli_ws, sealdesk):
    ws, keys = cli_ws
    before = snapshot(ws)
    err = one_line_error(
        sealdesk(*decide_args(keys["rita"], "-"), input="item-0\nitem-1\nnope\n", workspace=ws)
    )
    assert err.startswith("sealdesk: error: <stdin>:3: field 'item': ")
    assert "nope" in err
    assert snapshot(ws) == before


def test_bulk_decide_refuses_ids_that_are_not_utf8(cli_ws, sealdesk, tmp_path):
    import subprocess

    from tests.conftest import SEALDESK

    ws, keys = cli_ws
    before = snapshot(ws)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [
            *SEALDESK,
            "--workspace",
            str(ws),
            "decide",
            "--queue",
            "flagged_pairs",
            "--item",
            "-",
            "--decision",
            "accept",
            "--key",
            str(keys["rita"]),
        ],
        input=b"item-0\n\xff\xfe\n",
        capture_output=True,
        env=env,
    )
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("sealdesk: error: <stdin>:2: ") and "UTF-8" in lines[0]
    assert snapshot(ws) == before


def test_export_into_a_directory_that_cannot_be_made_is_one_line(cli_ws, sealdesk_main, tmp_path):
    ws, _ = cli_ws
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    err = one_line_error(sealdesk_main("export", "--out", blocker / "records.jsonl", workspace=ws))
    assert str(blocker / "records.jsonl") in err


def test_export_of_a_mangled_record_names_its_seq(cli_ws, sealdesk_main, tmp_path):
    ws, keys = cli_ws
    decided = sealdesk_main(*decide_args(keys["rita"], "item-0"), workspace=ws, check=True)
    seq = int(decided.stdout.split()[0].lstrip("#"))  # after the genesis and the enrolment
    conn = sqlite3.connect(ws / "sealdesk.db", isolation_level=None)
    conn.execute("DROP TRIGGER records_no_update")
    conn.execute(
        "UPDATE records SET message='garbage', record_hash=? WHERE seq=?",
        (hashlib.sha256(b"garbage").hexdigest(), seq),
    )
    conn.close()
    out = tmp_path / "records.jsonl"
    err = one_line_error(sealdesk_main("export", "--out", out, workspace=ws))
    assert f"record {seq}" in err and "sealdesk verify" in err
    assert not out.exists()


def test_a_database_without_the_ledger_table_is_refused_in_one_line(cli_ws, sealdesk_main):
    ws, _ = cli_ws
    conn = sqlite3.connect(ws / "sealdesk.db", isolation_level=None)
    conn.execute("DROP TABLE records")
    conn.close()
    for command in (("verify",), ("items",), ("export", "--out", "x.jsonl")):
        err = one_line_error(sealdesk_main(*command, workspace=ws))
        assert "records" in err and "sealdesk.db" in err


def test_a_database_error_while_appending_is_one_line_and_writes_nothing(cli_ws, sealdesk_main):
    ws, keys = cli_ws
    conn = sqlite3.connect(ws / "sealdesk.db", isolation_level=None)
    conn.execute(
        "CREATE TRIGGER jam BEFORE INSERT ON records BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    )
    conn.close()
    before = snapshot(ws)
    err = one_line_error(sealdesk_main(*decide_args(keys["rita"], "item-0"), workspace=ws))
    assert "disk says no" in err and "sealdesk.db" in err
    assert snapshot(ws) == before


@pytest.mark.parametrize(
    "args,named",
    [
        (("ingest", "{tmp}"), "is a directory"),
        (("decide", "--queue", "flagged_pairs", "--item", "item-0"), "--decision"),
        (("decide", "--queue", "nope", "--item", "x", "--decision", "accept"), "nope"),
        (("exam", "adjudicate", "--corpus", "{tmp}"), "is a directory"),
        (("exam", "adjudicate", "--corpus", "/dev/zero"), "/dev/zero: is a device, not a file"),
        (("ingest", "/dev/zero"), "/dev/zero: is a device, not a file"),
        (("verify", "--jobs", "0"), "--jobs"),
        (("verify", "--jobs", "-1"), "--jobs"),
        (("bench", "ledger", "-n", "0", "--dir", "{tmp}"), "--records"),
        (("checkpoint", "export", "--signoff", "0"), "--signoff"),
        (
            (*scan_args("{tmp}/e.jsonl", "{tmp}/p.jsonl", "--jobs", "0"),),
            "--jobs",
        ),
        (
            (*scan_args("{tmp}/e.jsonl", "{tmp}/p.jsonl", "--num-perm", "100000000"),),
            "--num-perm",
        ),
        (
            (
                "bench",
                "contamination",
                "--backend",
                "local",
                "--pool-size",
                "5",
                "--shards",
                "100",
                "--data-dir",
                "{tmp}",
            ),
            "--shards",
        ),
    ],
)
def test_usage_errors_are_one_line_naming_the_option(cli_ws, sealdesk_main, tmp_path, args, named):
    ws, _ = cli_ws
    before = snapshot(ws)
    err = one_line_error(sealdesk_main(*[a.format(tmp=tmp_path) for a in args], workspace=ws))
    assert err.startswith("sealdesk: error: ") and named in err and "--help" in err
    assert snapshot(ws) == before


@pytest.mark.parametrize(
    "extra,field",
    [
        (("--no-embed", "--model", "{tmp}"), "model"),
        (("--no-embed", "--cosine-threshold", "0.8"), "cosine-threshold"),
        (("--model-sha256", "deadbeef"), "model-sha256"),
        (("--model-sha256", "ab" * 32), "model-sha256"),  # no --model: the default is pinned
        (("--cosine-threshold", "0.8", "--calibration", "{tmp}/e.jsonl"), "calibration"),
        (("--probe-endpoint", " "), "probe-endpoint"),
        (("--probe-model", "qwen"), "probe-model"),
        (("--text-field", ""), "text-field"),
        (("--pool-id-field", " "), "pool-id-field"),
    ],
)
def test_a_scan_option_that_would_be_ignored_is_refused(
    cli_ws, sealdesk_main, tmp_path, extra, field
):
    ws, _ = cli_ws
    for name in ("e.jsonl", "p.jsonl"):
        (tmp_path / name).write_text('{"id":"a","text":"some words"}\n')
    before = snapshot(ws)
    err = one_line_error(
        sealdesk_main(
            *scan_args(
                tmp_path / "e.jsonl", tmp_path / "p.jsonl", *[a.format(tmp=tmp_path) for a in extra]
            ),
            workspace=ws,
        )
    )
    assert err.startswith(f"sealdesk: error: field '{field}': "), err
    assert snapshot(ws) == before


def test_a_database_without_its_workspace_id_is_refused_in_one_line(cli_ws, sealdesk_main):
    ws, _ = cli_ws
    conn = sqlite3.connect(ws / "sealdesk.db", isolation_level=None)
    conn.execute("DELETE FROM meta WHERE key='workspace_id'")
    conn.close()
    err = one_line_error(sealdesk_main("items", workspace=ws))
    assert "workspace_id" in err and "sealdesk.db" in err


@pytest.mark.parametrize("how", ["flags", "stdin"])
def test_decide_refuses_an_item_given_twice_and_signs_nothing(cli_ws, sealdesk, how):
    ws, keys = cli_ws
    before = snapshot(ws)
    if how == "flags":
        args = ("--item", "item-0", "--item", "item-1", "--item", "item-0")
        proc = sealdesk(
            "decide",
            "--queue",
            "flagged_pairs",
            *args,
            "--decision",
            "accept",
            "--key",
            keys["rita"],
            workspace=ws,
        )
        where = "field 'item': item 'item-0' is given twice (first at --item #1)"
    else:
        proc = sealdesk(
            *decide_args(keys["rita"], "-"), input="item-0\nitem-1\n\nitem-1\n", workspace=ws
        )
        where = "<stdin>:4: field 'item': item 'item-1' is given twice (first at line 2)"
    err = one_line_error(proc)
    assert where in err, err
    assert snapshot(ws) == before


def test_decide_with_nothing_on_stdin_is_an_error_not_zero_decisions(cli_ws, sealdesk):
    ws, keys = cli_ws
    err = one_line_error(sealdesk(*decide_args(keys["rita"], "-"), input="\n", workspace=ws))
    assert "<stdin>: field 'item': no item ids on stdin; nothing was signed" in err


@pytest.mark.parametrize(
    "principal,why",
    [
        ("#lena", "must not start with '#'"),
        ("-lena", "must not start with '-'"),
        ("le\x1bna", "control characters"),
    ],
)
def test_keys_add_refuses_a_principal_the_trust_file_would_misread(
    cli_ws, sealdesk_main, principal, why
):
    ws, keys = cli_ws
    before = snapshot(ws)  # no enrol record in the ledger, no line in the generated file
    err = one_line_error(
        sealdesk_main(*enrol_args(principal, "lead", keys["adam"], keys["founder"]), workspace=ws)
    )
    assert "field 'principal'" in err and why in err, err
    assert snapshot(ws) == before


def test_keys_add_refuses_a_key_file_holding_two_keys(cli_ws, sealdesk_main, tmp_path):
    ws, keys = cli_ws
    two = tmp_path / "two.pub"
    two.write_text(
        Path(f"{keys['adam']}.pub").read_text() + Path(f"{keys['rita']}.pub").read_text()
    )
    before = snapshot(ws)
    err = one_line_error(
        sealdesk_main(
            "keys",
            "add",
            "--principal",
            "adam",
            "--role",
            "adjudicator",
            "--key",
            two,
            "--lead-key",
            keys["founder"],
            workspace=ws,
        )
    )
    assert f"{two}: holds 2 key lines" in err, err
    assert snapshot(ws) == before


@pytest.mark.parametrize(
    "command",
    [
        ("keys", "add", "--principal", "zed", "--role", "reviewer", "--key", "/dev/zero"),
        decide_args("/dev/zero", "item-0"),
        ("verify", "--checkpoint", "/dev/zero"),
    ],
)
def test_an_endless_file_named_as_a_key_or_checkpoint_is_refused_not_read(
    cli_ws, sealdesk_main, command
):
    ws, _ = cli_ws
    before = snapshot(ws)
    err = one_line_error(sealdesk_main(*command, workspace=ws))
    assert "/dev/zero: is a device, not a file" in err, err
    assert snapshot(ws) == before
