"""A file the user names with --out never replaces the workspace's own files, a
device, a pipe or a link: the atomic rename would replace whatever sits there."""

from __future__ import annotations

import json
import os
import stat

import pytest

from engine.artifacts import atomic_write
from engine.errors import InputError
from tests.support.cli_workspace import decide_args, enrol_args
from tests.support.refusals import one_line_error


def _workspace_files(ws):
    return {p: p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "command,target,owner",
    [
        (("export", "--out"), "sealdesk.db", "sealdesk.db"),
        (("export", "--out"), "trust/allowed_signers", "trust/"),
        (("checkpoint", "export", "--out"), "sealdesk.db-wal", "sealdesk.db-wal"),
        (("contamination", "clean", "--out"), "artifacts/run-1/clean.jsonl", "artifacts/"),
        (
            (
                "coverage",
                "holdout",
                "--rows",
                "rows.jsonl",
                "--holdout-id",
                "h",
                "--version",
                "1",
                "--out",
            ),
            "sealdesk.db",
            "sealdesk.db",
        ),
    ],
)
def test_an_output_naming_a_workspace_file_is_refused_before_any_work(
    cli_ws, sealdesk_main, tmp_path, command, target, owner
):
    ws, _ = cli_ws
    before = _workspace_files(ws)
    # Reached through a path that does not start with the workspace's own spelling.
    roundabout = tmp_path / "elsewhere" / ".." / "ws" / target
    (tmp_path / "elsewhere").mkdir()
    err = one_line_error(sealdesk_main(*command, roundabout, workspace=ws))
    assert err.startswith("sealdesk: error: ") and "--out" in err, err
    assert f"workspace's own {owner}" in err, err
    assert _workspace_files(ws) == before
    assert not list((ws / "artifacts").glob("*clean*"))
    assert sealdesk_main("verify", workspace=ws).returncode == 0


def test_an_output_through_a_link_into_the_workspace_is_refused(cli_ws, sealdesk_main, tmp_path):
    ws, _ = cli_ws
    link = tmp_path / "records.jsonl"
    link.symlink_to(ws / "sealdesk.db")
    before = (ws / "sealdesk.db").read_bytes()
    err = one_line_error(sealdesk_main("export", "--out", link, workspace=ws))
    assert "workspace's own sealdesk.db" in err
    assert (ws / "sealdesk.db").read_bytes() == before and link.is_symlink()


@pytest.mark.parametrize("kind", ["pipe", "directory", "link to a pipe"])
def test_an_output_that_exists_and_is_not_a_regular_file_is_left_alone(
    cli_ws, sealdesk_main, tmp_path, kind
):
    ws, _ = cli_ws
    target = tmp_path / "out"
    if kind == "pipe":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    else:
        os.mkfifo(tmp_path / "pipe")
        target.symlink_to(tmp_path / "pipe")
    err = one_line_error(sealdesk_main("checkpoint", "export", "--out", target, workspace=ws))
    assert str(target) in err and "--out" in err and "not a regular file" in err
    assert {"pipe": stat.S_ISFIFO, "directory": stat.S_ISDIR, "link to a pipe": stat.S_ISLNK}[kind](
        os.lstat(target).st_mode
    )


def test_an_output_through_a_link_replaces_its_target_and_the_link_stays(
    cli_ws, sealdesk_main, tmp_path
):
    ws, _ = cli_ws
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "records.jsonl").write_text("stale\n")
    link = tmp_path / "records.jsonl"
    link.symlink_to(shared / "records.jsonl")
    sealdesk_main("export", "--out", link, workspace=ws, check=True)
    exported = [json.loads(line) for line in (shared / "records.jsonl").read_text().splitlines()]
    assert link.is_symlink() and [r["kind"] for r in exported] == ["genesis", "enrol"]
    assert sorted(p.name for p in shared.iterdir()) == ["records.jsonl"]  # no temp file left


def test_keys_add_writes_through_a_linked_trust_file(cli_ws, sealdesk_main, keygen, tmp_path):
    ws, keys = cli_ws
    shared = tmp_path / "allowed_signers.shared"
    (ws / "trust" / "allowed_signers").rename(shared)
    (ws / "trust" / "allowed_signers").symlink_to(shared)
    sealdesk_main(
        *enrol_args("adam", "adjudicator", keys["adam"], keys["founder"]), workspace=ws, check=True
    )
    assert (ws / "trust" / "allowed_signers").is_symlink()
    principals = [
        line.split()[0]
        for line in shared.read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert principals == ["founder", "rita", "adam"]


def test_an_old_export_is_replaced_and_stdout_still_works(cli_ws, sealdesk, tmp_path):
    ws, keys = cli_ws
    out = tmp_path / "records.jsonl"
    out.write_text("stale\n")
    decided = sealdesk(*decide_args(keys["rita"], "item-0"), workspace=ws, check=True)
    seq = int(decided.stdout.split()[0].lstrip("#"))  # after the genesis and the enrolment
    sealdesk("export", "--out", out, workspace=ws, check=True)
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["seq"] for r in exported] == list(range(1, seq + 1))
    assert exported[-1]["kind"] == "decision"
    proc = sealdesk("checkpoint", "export", "--out", "-", workspace=ws)
    assert (
        "--out" not in proc.stderr
    )  # '-' passes the path check: the error is the missing sign-off
    assert "sign-off" in proc.stderr


def test_an_internal_atomic_write_never_replaces_a_pipe(tmp_path):
    pipe = tmp_path / "result.json"
    os.mkfifo(pipe)
    with pytest.raises(InputError, match="is a pipe"):
        atomic_write(pipe, b"{}")
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temp file left
