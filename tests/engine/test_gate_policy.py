"""The ssh gate's policy: one object decides for the gate, the jobs panel and every
sealdesk process they start.

The decisions are checked on every parameter of every real sealdesk command
(the tree is walked, so a new option is covered by itself), then through the
real CLI and the real job supervisor with ``$SEALDESK_GATE`` set as the gate
sets it, and through the review app's jobs panel driven by key presses.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest

from engine import jobs
from engine.canonical import canonical_json
from engine.cli import gate_policy
from engine.cli.gate_policy import GatePolicy, inventory, param_name
from engine.workspace import BacklogItem
from reviewer.main import tree
from tests.support.ssh import (
    REVIEW_RECORDS,
    gate_command,
    wait_for,
)

# The whole program's tree (the app's commands included): what the gate judges.
TREE = tree()
PARAMS = [(path, param) for path, param, _kind in inventory(TREE) if path]
# Every top-level command but the gate itself, so that only the parameter rules decide;
# read from the command tree, so that a command added later is judged too.
EVERYTHING = tuple(sorted({path[0] for path, _param in PARAMS} - set(gate_policy.NEVER_ALLOWED)))


def _id(case) -> str:
    path, param = case
    return " ".join(path) + " " + param_name(param)


@pytest.fixture
def gated(tmp_path):
    """Gives (policy allowing every command, its workspace root) with inputs/ holding a
    file, a pool shard and a link out of the inputs."""
    root = tmp_path / "ws"
    (root / "inputs").mkdir(parents=True)
    (root / "inputs" / "items.jsonl").write_text("{}\n")
    (root / "inputs" / "pool-1.jsonl").write_text("{}\n")
    (root / "inputs" / "escape.jsonl").symlink_to(tmp_path / "outside.jsonl")
    (tmp_path / "outside.jsonl").write_text("{}\n")
    return GatePolicy.for_workspace(root, EVERYTHING), root


def argv_with(path, param, value=None) -> list[str]:
    """Gives the argv that gives one parameter a value (a flag: just the flag)."""
    if isinstance(param, click.Argument):
        return [*path, value or "x"]
    if param.is_flag:
        return [*path, param.opts[0]]
    return [*path, param.opts[0], value or "x"]


def verdict(policy, root, argv, scope="request", cwd=None):
    """Gives the policy's verdict on argv, run from a directory inside the workspace."""
    return policy.check(
        ["--workspace", str(root), *argv], scope, root=TREE, cwd=cwd or root / "work"
    )


# -- the inventory -------------------------------------------------------------------


@pytest.mark.parametrize("case", PARAMS, ids=[_id(c) for c in PARAMS])
def test_every_parameter_of_every_command_is_classified(case):
    # An option added later without a kind is refused under the gate (see below); this
    # test names it so that it gets one.
    path, param = case
    assert gate_policy.classify(param).kind != gate_policy.UNKNOWN, _id(case)


def test_every_name_the_policy_classifies_is_a_parameter_of_some_command():
    names = {param_name(p) for _path, p, _kind in inventory(TREE)}
    assert set(gate_policy.NAMED) - names == set()


@pytest.mark.parametrize("case", PARAMS, ids=[_id(c) for c in PARAMS])
def test_the_gate_decides_each_parameter_by_its_kind(case, gated, tmp_path):
    policy, root = gated
    path, param = case
    kind = gate_policy.classify(param)
    name = param_name(param)
    if path[0] in gate_policy.NEVER_ALLOWED:
        v = verdict(policy, root, argv_with(path, param), "job")
        assert not v.allowed and f"'sealdesk {path[0]}' is not allowed" in v.reason
        return
    nested = gate_policy.NESTED_ALLOWED.get(path[0])
    if nested is not None and len(path) > 1 and path[1] not in nested:
        for scope in gate_policy.SCOPES:  # e.g. checkpoint witness: only export passes
            v = verdict(policy, root, argv_with(path, param), scope)
            assert not v.allowed and f"only 'sealdesk {path[0]} " in v.reason, v.reason
        return
    for scope in gate_policy.SCOPES:
        bare = verdict(policy, root, list(path), scope)

        def judged(value, scope=scope):
            return verdict(policy, root, argv_with(path, param, value), scope)

        def refused_naming_it(value):
            v = judged(value)
            return not v.allowed and name in v.reason

        if kind.kind in (gate_policy.CREDENTIAL, gate_policy.NETWORK):
            assert refused_naming_it(str(root / "inputs" / "items.jsonl")), (scope, name)
            assert refused_naming_it("x"), (scope, name)
        elif kind.kind in (gate_policy.PLAIN, gate_policy.NOTE):
            # A value that names nothing changes nothing; a URL passes only in a note.
            assert judged("1").allowed == bare.allowed, (scope, name, judged("1").reason)
            if not (isinstance(param, click.Option) and param.is_flag):
                url = judged("http://127.0.0.1:9/x")
                assert (
                    (url.allowed == bare.allowed)
                    if kind.kind == gate_policy.NOTE
                    else refused_naming_it("http://127.0.0.1:9/x")
                ), (scope, name)
        elif kind.kind in (gate_policy.INPUT, gate_policy.DATASET):
            inside = judged(str(root / "inputs" / "items.jsonl"))
            assert inside.allowed == bare.allowed, (scope, name, inside.reason)
            for outside in (
                str(tmp_path / "outside.jsonl"),
                "/etc/passwd",
                str(root / "inputs" / ".." / "sealdesk.db"),
                str(root / "inputs" / "escape.jsonl"),
                "file:///etc/passwd",
            ):
                assert refused_naming_it(outside), (scope, name, outside)
            if kind.stream:
                assert judged("-").allowed == bare.allowed, (scope, name)
            else:  # '-' would be a file of that name where the command runs
                assert refused_naming_it("-"), (scope, name)
        elif kind.kind == gate_policy.OUTPUT:
            written = judged(str(root / "exports" / "out.jsonl"))
            if scope == "request":
                assert refused_naming_it(str(root / "exports" / "out.jsonl")), name
            else:
                assert written.allowed == bare.allowed, (name, written.reason)
            for elsewhere in (
                str(tmp_path / "home" / ".ssh" / "authorized_keys"),
                str(root / "sealdesk.db"),
                str(root / "trust" / "x"),
                str(root / "artifacts" / "x"),
                str(root / "inputs" / "x"),
                str(root / "jobs" / "x"),
                str(root / "exports" / ".." / ".."),
                "s3://bucket/x",
            ):
                assert refused_naming_it(elsewhere), (scope, name, elsewhere)
            if kind.stream:
                assert judged("-").allowed == bare.allowed, (scope, name)
        else:
            raise AssertionError(f"{name}: no expectation for kind {kind.kind}")


# -- rules beyond a single parameter -------------------------------------------------


@pytest.mark.parametrize(
    "argv, why",
    [
        (["export", "--out", "-"], "'sealdesk export' is not allowed"),
        (["ingest", "/etc/shadow"], "'sealdesk ingest' is not allowed"),
        (["ssh-gate"], "'sealdesk ssh-gate' is not allowed"),
        (["checkpoint"], "only 'sealdesk checkpoint export' is allowed"),
        (["decide", "--frobnicate"], "option '--frobnicate' is not allowed"),
        (["decide", "--queue", "flagged_pairs", "--", "--key", "k"], "unexpected argument"),
        (["--debug", "verify"], "option '--debug' is not allowed before the command"),
        (["review", "--config=/home/lena/.config/sealdesk/config.toml"], "--config is refused"),
        (["review", "--key", "/home/lena/.ssh/id_ed25519"], "--key is refused"),
        (
            ["checkpoint", "export", "--out=/home/lena/.ssh/authorized_keys"],
            "--out may only be '-'",
        ),
    ],
)
def test_a_narrow_gate_refuses_and_says_why(argv, why, tmp_path):
    policy = GatePolicy.for_workspace(tmp_path, ("review", "decide", "checkpoint"))
    v = policy.check(["--workspace", str(tmp_path), *argv], "request", root=TREE)
    assert not v.allowed and why in v.reason


def test_a_value_no_file_can_be_named_is_refused_not_crashed_on(tmp_path):
    policy = GatePolicy.for_workspace(tmp_path, ("verify",))
    for argv in (["verify", "--checkpoint", "in\x00puts"], ["-w", "ws\x00", "verify"]):
        v = policy.check(["--workspace", str(tmp_path), *argv], "job", root=TREE)
        assert not v.allowed and "is not a path (embedded null byte)" in v.reason


@pytest.mark.parametrize(
    "flag", [["--workspace", "{other}"], ["-w{other}"], ["--workspace={ws}/../other"]]
)
def test_only_the_gates_own_workspace_is_used(flag, tmp_path):
    (tmp_path / "other").mkdir()
    policy = GatePolicy.for_workspace(tmp_path / "ws", ("verify",))
    words = [f.format(other=tmp_path / "other", ws=tmp_path / "ws") for f in flag]
    v = policy.check(["--workspace", str(tmp_path / "ws"), *words, "verify"], "request", root=TREE)
    assert not v.allowed and "may only use the workspace" in v.reason


def test_a_pool_pattern_must_match_only_files_in_the_inputs(gated):
    policy, root = gated
    base = ["scan", "contamination", "--eval", str(root / "inputs" / "items.jsonl")]
    ok = verdict(policy, root, [*base, "--pool", str(root / "inputs" / "pool-*.jsonl")], "job")
    assert ok.allowed, ok.reason
    # escape.jsonl links out of the inputs: a pattern that matches it is refused.
    bad = verdict(policy, root, [*base, "--pool", str(root / "inputs" / "*.jsonl")], "job")
    assert not bad.allowed and "--pool" in bad.reason
    hub = verdict(
        policy,
        root,
        [*base, "--pool", "org/pool", "--pool-revision", "a" * 40, "--pool-split", "train"],
        "job",
    )
    assert not hub.allowed and "hub datasets and URLs are not fetched" in hub.reason


def test_a_default_path_is_held_to_the_same_rules_as_a_typed_one(gated):
    policy, root = gated
    # bench ledger works in "." unless told otherwise: here the workspace root itself.
    v = verdict(policy, root, ["bench", "ledger"], "job", cwd=root)
    assert not v.allowed and "--dir (default '.')" in v.reason
    ok = verdict(policy, root, ["bench", "ledger", "--dir", str(root / "bench")], "job", cwd=root)
    assert ok.allowed, ok.reason


def test_an_option_added_later_is_refused_until_it_is_classified(tmp_path):
    from engine.outputs import InputFile

    @click.group()
    @click.option("--workspace")
    def root(workspace):
        """A sealdesk of tomorrow."""

    @root.command()
    @click.option("--target", help="Where to send the report.")
    @click.option("--rows", type=InputFile())
    @click.option("--mirror-endpoint")
    @click.option("--signing-key-file", type=InputFile())
    @click.option("--limit", type=int)
    def publish(target, rows, mirror_endpoint, signing_key_file, limit):
        """Publishes somewhere."""

    policy = GatePolicy.for_workspace(tmp_path, ("publish",))

    def check(*argv):
        return policy.check(["--workspace", str(tmp_path), "publish", *argv], "request", root=root)

    v = check("--target", "somewhere")
    assert not v.allowed and "--target of 'sealdesk publish' is not one the gate knows" in v.reason
    assert "names an address" in check("--mirror-endpoint", "x").reason
    assert "names a key" in check("--signing-key-file", "k").reason
    # Types that settle the kind need no entry: an input file, a number.
    assert check("--rows", str(tmp_path / "inputs" / "r.csv")).allowed
    assert "not in the workspace's inputs" in check("--rows", "/etc/passwd").reason
    assert check("--limit", "3").allowed


def test_the_review_command_itself_refuses_a_config_file_under_the_gate(
    workspace, tmp_path, monkeypatch
):
    from engine.errors import PermissionRefused

    config = tmp_path / "review.toml"
    config.write_text('theme = "light"\n')
    monkeypatch.setenv(
        "SEALDESK_GATE", GatePolicy.for_workspace(workspace.root, ("review",)).to_env("request")
    )
    # Straight to the click command, past main()'s own check: the command holds too.
    with pytest.raises(PermissionRefused, match="^ssh-gate: --config is refused"):
        TREE.main(
            ["--workspace", str(workspace.root), "review", "--config", str(config)],
            standalone_mode=False,
        )


def test_a_damaged_policy_in_the_environment_lets_nothing_run(sealdesk, workspace):
    proc = sealdesk("items", workspace=workspace.root, env={"SEALDESK_GATE": "{not json"})
    assert proc.returncode == 3
    assert proc.stderr.startswith("sealdesk: error: ssh-gate: $SEALDESK_GATE cannot be read")


# -- through the real CLI, as the gate leaves it -------------------------------------


def gate_env(root: Path, allowed, scope="request") -> dict[str, str]:
    return {"SEALDESK_GATE": GatePolicy.for_workspace(root, allowed).to_env(scope)}


def test_the_cli_applies_the_policy_to_every_invocation_while_it_is_set(
    workspace, sealdesk, tmp_path
):
    target = tmp_path / "home" / ".ssh" / "authorized_keys"
    target.parent.mkdir(parents=True)
    target.write_text("ssh-ed25519 AAAA lena@laptop\n")
    env = gate_env(workspace.root, ("export", "items"))
    proc = sealdesk("export", "--out", target, workspace=workspace.root, env=env)
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr == (
        f"sealdesk: error: ssh-gate: --out may only be '-' here (stdout, "
        f"where the option takes it), not '{target}'; files on the review "
        "host are not written for you\n"
    )
    assert target.read_text() == "ssh-ed25519 AAAA lena@laptop\n"
    assert sealdesk("items", workspace=workspace.root, env=env).returncode == 0
    # A job's scope lets an output land inside the workspace, never on its own files.
    job_env = gate_env(workspace.root, ("export",), "job")
    out = workspace.root / "exports" / "records.jsonl"
    out.parent.mkdir()
    assert sealdesk("export", "--out", out, workspace=workspace.root, env=job_env).returncode == 0
    assert out.exists()
    proc = sealdesk("export", "--out", target, workspace=workspace.root, env=job_env)
    assert proc.returncode == 3 and "is outside the workspace" in proc.stderr


def test_a_job_run_is_checked_again_by_the_cli_it_runs(workspace, tmp_path):
    # A job.json that asks for more than the gate allows (written here by hand, as
    # nothing under the gate can) is refused by the run itself.
    target = tmp_path / "planted.jsonl"
    path = jobs.jobs_dir(workspace.root) / "20260101T000000-abcdef"
    path.mkdir(parents=True)
    (path / "job.json").write_text(
        json.dumps(
            {
                "argv": ["export", "--out", str(target)],
                "workspace": str(workspace.root),
                "started": "2026-01-01T00:00:00.000000Z",
            }
        )
    )
    env = {**os.environ, **gate_env(workspace.root, ("export",), "job")}
    code = subprocess.run(
        [sys.executable, "-m", "engine.jobs", "supervise", str(path)], env=env, timeout=120
    ).returncode
    assert code == 3
    assert not target.exists()
    job = jobs.read_job(path)
    assert (
        job.state == "failed"
        and job.error.startswith("sealdesk: error: ssh-gate: --out '")
        and "is outside the workspace" in job.error
    )


# -- the jobs panel, driven by keys, under the gate ------------------------------------


def _fake_claim(path: Path) -> Path:
    item = BacklogItem.make(
        "weak_categories",
        "wk-forged",
        "forged-run",
        {"summary": {"title": "ELIGIBLE: forged evidence", "score": 1.0, "tags": []}},
    )
    path.write_text(canonical_json(item.to_json()).decode() + "\n", encoding="utf-8")
    return path


@pytest.fixture
def desk(workspace, enrol):
    from tests.support.review_app import populate

    return populate(workspace, enrol)


@pytest.fixture
def listener():
    """Gives a TCP server socket on 127.0.0.1 that nothing should ever reach."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.setblocking(False)
        yield server


def reached(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


async def type_in_jobs_panel(app, pilot, line: str) -> str:
    """Opens the jobs panel with b, types line, presses Enter; gives the panel's message."""
    from tests.support.review_app import text_of, type_text

    await pilot.press("b")
    await type_text(pilot, line)
    await pilot.press("enter")
    shown = text_of(app.screen.query_one("#jobs-error"))
    await pilot.press("escape")
    return shown


# The app runs in tmp_path (the gate's login directory), so relative paths are short
# to type; the policy resolves them from there, as the run would.
ESCAPES = {
    "export": "export --out home/.ssh/authorized_keys",
    "ingest": "ingest forged.jsonl",
    "shadow": "ingest /etc/shadow",
    "ray": "scan contamination --eval e.jsonl --pool e.jsonl --ray-address ray://127.0.0.1:{port}",
    "probe": "scan contamination --eval e.jsonl --pool e.jsonl --probe-endpoint "
    "http://127.0.0.1:{port}/v1",
    "pool-url": "scan contamination --eval e.jsonl --pool http://127.0.0.1:{port}/p.jsonl",
}


def _plant(tmp_path: Path) -> None:
    keys = tmp_path / "home" / ".ssh" / "authorized_keys"
    keys.parent.mkdir(parents=True)
    keys.write_text("ssh-ed25519 AAAA lena@laptop\n")
    _fake_claim(tmp_path / "forged.jsonl")
    (tmp_path / "e.jsonl").write_text('{"text": "what is two plus two"}\n')


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize(
    "allowed, expected",
    [
        # The key of the report: review and decide only.
        (
            ("review", "decide"),
            {
                "export": "ssh-gate: 'sealdesk export' is not allowed through this key",
                "ingest": "ssh-gate: 'sealdesk ingest' is not allowed through this key",
                "shadow": "ssh-gate: 'sealdesk ingest' is not allowed through this key",
                "ray": "ssh-gate: 'sealdesk scan' is not allowed through this key",
                "probe": "ssh-gate: 'sealdesk scan' is not allowed through this key",
                "pool-url": "ssh-gate: 'sealdesk scan' is not allowed through this key",
            },
        ),
        # Even a key allowed those commands keeps to the workspace and the host.
        (
            ("review", "export", "ingest", "scan"),
            {
                "export": "ssh-gate: --out 'home/.ssh/authorized_keys' is outside the workspace",
                "ingest": "ssh-gate: FILES 'forged.jsonl' is not in the workspace's inputs",
                "shadow": "ssh-gate: FILES '/etc/shadow' is not in the workspace's inputs",
                "ray": "ssh-gate: --eval 'e.jsonl' is not a file in the workspace's inputs",
                "probe": "ssh-gate: --eval 'e.jsonl' is not a file in the workspace's inputs",
                "pool-url": "ssh-gate: --eval 'e.jsonl' is not a file in the workspace's inputs",
            },
        ),
    ],
)
async def test_the_jobs_panel_under_the_gate_refuses_every_escape(
    desk, tmp_path, listener, monkeypatch, allowed, expected
):
    from reviewer.app import ReviewApp
    from reviewer.session import read_only_session

    _plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    # As the gate leaves the environment of the app it opens.
    monkeypatch.setenv(
        "SEALDESK_GATE", GatePolicy.for_workspace(desk.ws.root, allowed).to_env("request")
    )
    before = desk.ws.count("weak_categories")
    app = ReviewApp(desk.ws, read_only_session("under the gate, for this test"))
    shown = {}
    async with app.run_test(size=(100, 30)) as pilot:
        for name, line in ESCAPES.items():
            shown[name] = await type_in_jobs_panel(
                app, pilot, line.format(port=listener.getsockname()[1])
            )
    for name, why in expected.items():
        assert shown[name].startswith(why), (name, shown[name])
    assert not (desk.ws.root / "jobs").exists()  # nothing started
    assert (
        tmp_path / "home" / ".ssh" / "authorized_keys"
    ).read_text() == "ssh-ed25519 AAAA lena@laptop\n"  # nothing written
    assert desk.ws.count("weak_categories") == before  # nothing ingested
    assert not reached(listener)  # nothing connected


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_jobs_panel_under_the_gate_connects_nowhere(
    desk, tmp_path, listener, monkeypatch
):
    from reviewer.app import ReviewApp
    from reviewer.session import read_only_session

    inputs = desk.ws.root / "inputs"
    inputs.mkdir()
    (inputs / "e.jsonl").write_text('{"text": "what is two plus two"}\n')
    monkeypatch.chdir(inputs)
    monkeypatch.setenv(
        "SEALDESK_GATE",
        GatePolicy.for_workspace(desk.ws.root, ("review", "scan")).to_env("request"),
    )
    port = listener.getsockname()[1]
    expected = {
        "ray": "ssh-gate: --ray-address is refused: it names an address",
        "probe": "ssh-gate: --probe-endpoint is refused: it names an address",
        "pool-url": f"ssh-gate: --pool 'http://127.0.0.1:{port}/p.jsonl': a URL is refused here",
    }
    app = ReviewApp(desk.ws, read_only_session("under the gate, for this test"))
    shown = {}
    async with app.run_test(size=(100, 30)) as pilot:
        for name in expected:
            shown[name] = await type_in_jobs_panel(app, pilot, ESCAPES[name].format(port=port))
    for name, why in expected.items():
        assert shown[name].startswith(why), (name, shown[name])
    assert not (desk.ws.root / "jobs").exists()
    assert not reached(listener)


@pytest.mark.anyio
@pytest.mark.slow
async def test_jobs_under_the_gate_run_what_it_allows_and_write_only_inside(
    desk, tmp_path, monkeypatch
):
    from reviewer.app import ReviewApp
    from reviewer.session import read_only_session
    from tests.support.review_app import settle, text_of, type_text

    inputs = desk.ws.root / "inputs"
    inputs.mkdir()
    _fake_claim(inputs / "claims.jsonl")  # placed by someone with a shell on the host
    monkeypatch.setenv(
        "SEALDESK_GATE",
        GatePolicy.for_workspace(desk.ws.root, ("review", "ingest", "export")).to_env("request"),
    )
    out = desk.ws.root / "exports" / "records.jsonl"
    out.parent.mkdir()
    monkeypatch.chdir(desk.ws.root)
    before = desk.ws.count("weak_categories")
    app = ReviewApp(desk.ws, read_only_session("under the gate, for this test"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("b")
        assert text_of(app.screen.query_one("#jobs-gate")).startswith(
            "Under ssh-gate: allowed review, ingest, export; files are read from"
        )
        await type_text(pilot, "ingest inputs/claims.jsonl")
        await pilot.press("enter")
        await type_text(pilot, "export --out exports/records.jsonl")
        await pilot.press("enter")
        body = app.screen.query_one("#jobs-body")
        await settle(pilot, lambda: text_of(body).count("SUCCEEDED") == 2, timeout=60)
        await pilot.press("escape", "b")
        await type_text(pilot, "export --out ../leak.jsonl")
        await pilot.press("enter")
        assert text_of(app.screen.query_one("#jobs-error")).startswith(
            "ssh-gate: --out '../leak.jsonl' is outside the workspace"
        )
    assert not (desk.ws.root.parent / "leak.jsonl").exists()
    assert desk.ws.count("weak_categories") == before + 1
    assert out.exists()
    # Each run got the policy in its job scope (a request-scope run would have refused
    # the export's file).
    for job in jobs.list_jobs(desk.ws.root):
        assert job.state == "succeeded", job.error


# Planted in the login directory by whoever holds a shell on the host: each leaves a
# file behind if Python ever imports it.
PLANTED = {
    "secrets.py": "open(__file__ + '.ran', 'w').close()\n",
    "engine.py": "open(__file__ + '.ran', 'w').close()\n",
}


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_gated_job_imports_nothing_from_the_login_directory(desk, tmp_path, monkeypatch):
    from reviewer.app import ReviewApp
    from reviewer.session import read_only_session
    from tests.support.review_app import settle, text_of, type_text

    login = tmp_path / "login"
    login.mkdir()
    for name, code in PLANTED.items():
        (login / name).write_text(code)
    inputs = desk.ws.root / "inputs"
    inputs.mkdir()
    _fake_claim(inputs / "claims.jsonl")
    monkeypatch.setenv(
        "SEALDESK_GATE",
        GatePolicy.for_workspace(desk.ws.root, ("review", "ingest")).to_env("request"),
    )
    # A relative PYTHONPATH entry would name the login directory too.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([os.environ["PYTHONPATH"], ".", ""]))
    monkeypatch.chdir(login)  # where sshd starts the gate, and so the app
    app = ReviewApp(desk.ws, read_only_session("under the gate, for this test"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("b")
        await type_text(pilot, f"ingest {inputs / 'claims.jsonl'}")
        await pilot.press("enter")
        body = app.screen.query_one("#jobs-body")
        await settle(pilot, lambda: "RUNNING" not in text_of(body), timeout=60)
        shown = text_of(body)
    (job,) = jobs.list_jobs(desk.ws.root)
    assert (job.state, job.error) == ("succeeded", None), shown
    assert sorted(p.name for p in login.iterdir()) == sorted(PLANTED)  # nothing ran


# -- behind a real sshd, as authorized_keys sets the gate up ---------------------------


def narrow_gate(ws) -> str:
    """Gives the forced command of a key that may only review and decide."""
    return f"{gate_command(ws)} --allow review --allow decide"


@pytest.mark.needs_sshd
@pytest.mark.slow
def test_review_with_a_config_file_is_refused_through_the_gate(sshd, agents, review, tmp_path):
    ws, lena = review
    config = tmp_path / "review-home" / "lena.toml"
    config.write_text(f'key = "{lena}"\n')  # a key file on the review host
    sock = agents("lena", lena)
    sshd.authorize(Path(f"{lena}.pub"), command=narrow_gate(ws))
    proc = sshd.run(f"sealdesk review --config {config}", sock)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(
        "sealdesk: error: ssh-gate: --config is refused: it names a "
        "key, trust or config file on this host"
    )
    assert ws.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == REVIEW_RECORDS


@pytest.mark.needs_sshd
@pytest.mark.needs_tmux
@pytest.mark.slow
def test_the_jobs_panel_of_an_app_opened_through_the_gate_cannot_rewrite_authorized_keys(
    sshd, agents, review, tmux
):
    ws, lena = review
    sock = agents("lena", lena)
    sshd.authorize(Path(f"{lena}.pub"), command=narrow_gate(ws))
    keys_before = sshd.authorized_keys.read_text()
    ssh = shlex.join(sshd.argv(f"sealdesk --workspace {ws.root} review", tty=True))
    tmux.new(
        "lena",
        f"{ssh}; echo EXIT=$?; sleep 600",
        width=160,
        height=40,
        env={"SSH_AUTH_SOCK": str(sock)},
    )
    # Each step waits for what the screen shows, never for a time: under load the
    # login, the app's start and every redraw take as long as they take (the deadlines
    # are only there to end a test that hangs, and an ended session fails it at once;
    # they stay under pytest's own limit, so that a wait which fails shows the screen).
    slow = {"timeout": 240, "unless": "EXIT="}
    tmux.wait_for("lena", "lena as lead", **slow)
    tmux.keys("lena", "b")
    tmux.wait_for("lena", "Engine runs", **slow)
    tmux.keys("lena", f"export --out {sshd.authorized_keys}", "Enter")
    shown = tmux.wait_for(
        "lena", "ssh-gate: 'sealdesk export' is not allowed through this key", **slow
    )
    assert "Under ssh-gate: allowed review, decide" in shown
    # The refused line stays in the field to be fixed; ctrl+u clears it.
    tmux.keys("lena", "C-u")
    # Keys reach the app in order, so Enter submits what was typed after ctrl+u; no wait
    # on the field between them (a long path scrolls it, so its whole text may not show).
    tmux.keys("lena", f"ingest {sshd.authorized_keys}")
    tmux.keys("lena", "Enter")
    tmux.wait_for("lena", "ssh-gate: 'sealdesk ingest' is not allowed through this key", **slow)
    tmux.keys("lena", "Escape")
    wait_for(lambda: "Engine runs" not in tmux.screen("lena"), "the jobs panel to close", 240)
    tmux.keys("lena", "q")
    assert "EXIT=0" in tmux.wait_for("lena", "EXIT=", timeout=240)
    assert sshd.authorized_keys.read_text() == keys_before
    assert not (ws.root / "jobs").exists()


@pytest.mark.needs_sshd
@pytest.mark.needs_tmux
@pytest.mark.slow
def test_through_the_gate_the_config_files_key_never_signs(sshd, agents, review, tmux, tmp_path):
    ws, lena = review
    sock = agents("lena", lena)  # only to log in; not forwarded
    config = tmp_path / "review-home" / ".config" / "sealdesk" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'key = "{lena}"\n')  # lena's key file, left on the review host
    sshd.authorize(Path(f"{lena}.pub"), command=narrow_gate(ws))
    ssh = shlex.join(sshd.argv(f"sealdesk --workspace {ws.root} review", tty=True, forward=False))
    tmux.new(
        "lena",
        f"{ssh}; echo EXIT=$?; sleep 600",
        width=160,
        height=40,
        env={"SSH_AUTH_SOCK": str(sock)},
    )
    tmux.wait_for("lena", "READ-ONLY")
    tmux.keys("lena", "q")
    assert "EXIT=0" in tmux.wait_for("lena", "EXIT=")
    assert ws.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == REVIEW_RECORDS
