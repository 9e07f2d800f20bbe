"""What a key behind ``sealdesk ssh-gate`` may run: one policy for the gate, the jobs
panel of an app it opened, and every sealdesk process either of them starts.

A ``GatePolicy`` holds the workspace and the subcommands the key may use. Given an
argv (the words after ``sealdesk``) it parses them with the real click commands'
own parsers, so it reads ``--out=x``, ``-wDIR`` and ``--`` exactly as the command
will, and then judges every parameter that got a value by its kind:

``plain``       a flag, a choice, a number, or text that names no file and no
                host (ids, field names, digests); a URL there is still refused
``note``        free text a person writes (``--note``): anything goes
``input``       a file or directory the command reads: it must resolve, through
                links, inside the workspace's inputs (below)
``output``      a file or directory the command writes (see the scopes below)
``dataset``     a scan's ``--eval``/``--pool``: an existing file in the inputs (or
                a pattern whose every match is one), never a hub name or a URL
``credential``  names a signing key, a trust anchor or a config file (a config
                can name a key file or a model endpoint): refused
``network``     an address to connect to (a Ray cluster, a model endpoint): refused
``workspace``   the top-level ``--workspace``: it must name the gate's workspace
``unknown``     anything this module does not classify: refused, so an option
                added to a command later is refused until it is classified here

The kind comes from the option's click type where that settles it
(``InputFile``, ``OutputFile``, flags, choices, numbers), else from the names
below; plain text and bare ``click.Path`` options must be named here.

**The workspace's inputs** are the files in ``WORKSPACE/inputs/``, which an
operator with a shell on the review host fills for gated keys to work on, and
the sealed artifacts of earlier runs in ``WORKSPACE/artifacts/`` (which later
steps such as ``exam resolve --artifact`` read). No gated command writes into
either by a path it names, so a key cannot make its own inputs.

Two scopes:

``request``  what the SSH client asked for (the gate itself, and the sealdesk
             process it becomes): an output may only be ``-`` (standard output),
             and only where the option takes ``-``; files on the host are not
             written for the client.
``job``      a background run started from the jobs panel of an app under the
             gate: an output may also be a path that resolves inside the
             workspace, but not onto its own files (``sealdesk.db`` and its
             journals, ``trust/``, ``artifacts/``), nor into ``inputs/`` or
             ``jobs/``.

The policy travels in the environment variable ``SEALDESK_GATE`` (the gate sets
it before it becomes sealdesk; sshd's ``restrict`` keeps a client from setting
environment), and ``engine.cli.main`` applies it to every invocation while it is
set: the command the client asked for, and each background run again.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from engine.cli_context import GATE_ENV_VAR as ENV_VAR
from engine.errors import PermissionRefused

SCOPES = ("request", "job")
INPUTS_DIR = "inputs"
# Where a gated command may read: the operator's inputs and sealdesk's own sealed artifacts.
READABLE_DIRS = (INPUTS_DIR, "artifacts")
DEFAULT_ALLOWED = (
    "review",
    "signoff",
    "verify",
    "items",
    "decide",
    "undo",
    "prove",
    "checkpoint",
    "plan",
    "gold",
    "claim",
    "agreement",
)
# Groups of which only these subcommands may be reached through the gate.
NESTED_ALLOWED = {"checkpoint": ("export",)}
# Never reachable through the gate, whatever --allow says.
NEVER_ALLOWED = ("ssh-gate",)
# Besides the database and trust/ and artifacts/ (engine.outputs guards those for
# every command), a gated job may not write where gated keys read their inputs or
# where job outcomes are recorded.
_GUARDED_DIRS = (INPUTS_DIR, "jobs")

PLAIN, NOTE, INPUT, OUTPUT, DATASET, CREDENTIAL, NETWORK, WORKSPACE, UNKNOWN = (
    "plain",
    "note",
    "input",
    "output",
    "dataset",
    "credential",
    "network",
    "workspace",
    "unknown",
)


@dataclass(frozen=True)
class ParamKind:
    """How the gate treats one parameter: its kind, and whether '-' means stdin/stdout."""

    kind: str
    stream: bool = False


# Parameters whose click type does not settle their kind, by option name (an
# argument by its upper-case name). Text a command turns into a path component
# (run ids) is plain here because the command checks it against RUN_ID itself.
NAMED: dict[str, ParamKind] = {
    # text that names no file and no host
    **{
        name: ParamKind(PLAIN)
        for name in (
            "--principal",
            "--of",
            "--item",
            "--theme",
            "--run",
            "--run-id",
            "--out-run-id",
            "--store-id",
            "--candidate-version",
            "--holdout-id",
            "--version",
            "--created-at",
            "--expires-in",
            "--detector-version",
            "--evaluation-set-id",
            "--text-field",
            "--id-field",
            "--pool-text-field",
            "--pool-id-field",
            "--eval-split",
            "--eval-revision",
            "--eval-config",
            "--pool-split",
            "--pool-revision",
            "--pool-config",
            "--probe-model",
            "--probe-answer-field",
            "--workers",
            "--sizes",
            "--allow",
            "RECORD",
            "RUN_IDS",  # runs sign: the runs whose records are signed
            "--lead",
            "--valid-before",
        )
    },
    "--note": ParamKind(NOTE),
    # keys revoke: why, kept in the record; decide: a reason code, checked against the
    # queue's codes before anything is signed
    "--reason": ParamKind(NOTE),
    "--rationale": ParamKind(NOTE),  # decide: why, signed in the decision
    "--workspace": ParamKind(WORKSPACE),
    # read
    "--checkpoint": ParamKind(INPUT, stream=True),  # verify, prove: '-' reads stdin
    "--consistency": ParamKind(INPUT, stream=True),  # prove: the older checkpoint
    "--receipts": ParamKind(INPUT, stream=True),  # verify: receipts; '-' reads stdin
    "--witness": ParamKind(INPUT),  # verify: a witness directory
    "--answers": ParamKind(INPUT, stream=True),  # gold commit: '-' reads stdin
    "--sealed": ParamKind(INPUT, stream=True),  # gold reveal: '-' reads stdin
    "--reading-from": ParamKind(INPUT),  # bench review: a workspace whose pairs are read
    "--model": ParamKind(INPUT),  # a model directory
    "--prefilter-model": ParamKind(INPUT),  # a static model directory
    "--eval": ParamKind(DATASET),
    "--pool": ParamKind(DATASET),
    # written
    "--out": ParamKind(OUTPUT),  # also a bare click.Path --out
    "--out-dir": ParamKind(OUTPUT),
    "--store": ParamKind(OUTPUT),  # the lineage store is updated
    "--embed-cache": ParamKind(OUTPUT),
    "--data-dir": ParamKind(OUTPUT),
    "--embed-data": ParamKind(OUTPUT),  # bench: read, and its workspace made inside it
    "--dir": ParamKind(OUTPUT),
    "DIRECTORY": ParamKind(OUTPUT),  # checkpoint witness add: pushed to
    "DEST": ParamKind(OUTPUT),  # backup: the new copy's directory
    # keys, trust anchors, configs
    **{
        name: ParamKind(CREDENTIAL)
        for name in (
            "--key",
            "--keys",
            "--benchmark-key",
            "--trust-root",
            "--config",
            "--adjudicator-config",
            "--labelers-config",
        )
    },
    # addresses
    "--probe-endpoint": ParamKind(NETWORK),
    "--ray-address": ParamKind(NETWORK),
}
# Words of an option's name that mark it whatever its type, so that an option added
# later that names a key or an address is refused even before it is classified.
_CREDENTIAL_WORDS = {
    "key",
    "keys",
    "config",
    "trust",
    "secret",
    "token",
    "password",
    "identity",
    "credential",
    "credentials",
}
_NETWORK_WORDS = {"endpoint", "address", "addr", "url", "uri", "host", "port", "server", "proxy"}
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_PLAIN_TYPES = (
    click.types.BoolParamType,
    click.Choice,
    click.types.IntParamType,
    click.types.FloatParamType,
    click.DateTime,
    click.types.UUIDParameterType,
)


def param_name(param: click.Parameter) -> str:
    """Gives the name a parameter goes by here: its first long option, or an argument's
    upper-case name."""
    if isinstance(param, click.Argument):
        return param.human_readable_name.upper()
    longs = [o for o in param.opts if o.startswith("--")]
    return (longs or param.opts)[0]


def classify(param: click.Parameter) -> ParamKind:
    """Gives how the gate treats a parameter of a real click command."""
    from engine.outputs import InputFile, OutputFile

    if isinstance(param, click.Option) and param.is_flag:
        return ParamKind(PLAIN)  # a flag carries no path and no address
    name = param_name(param)
    kind = param.type
    if name in NAMED:
        named = NAMED[name]
        # '-' is a stream where the table says so or where the type itself takes it.
        stream = named.stream or bool(
            getattr(kind, "allow_stdout", False) or getattr(kind, "allow_dash", False)
        )
        return ParamKind(named.kind, stream)
    words = set(name.lstrip("-").lower().split("-"))
    if words & _CREDENTIAL_WORDS:
        return ParamKind(CREDENTIAL)
    if words & _NETWORK_WORDS:
        return ParamKind(NETWORK)
    if isinstance(kind, OutputFile):
        return ParamKind(OUTPUT, stream=kind.allow_stdout)
    if isinstance(kind, InputFile):
        return ParamKind(INPUT, stream=bool(kind.allow_dash))
    if isinstance(kind, click.File):
        return ParamKind(OUTPUT if any(c in kind.mode for c in "wax+") else INPUT, stream=True)
    if isinstance(kind, _PLAIN_TYPES):
        return ParamKind(PLAIN)
    if words & {"sha256"} and isinstance(kind, click.types.StringParamType):
        return ParamKind(PLAIN)  # a hex digest names nothing
    return ParamKind(UNKNOWN)


@dataclass(frozen=True)
class Verdict:
    """What the policy says of one argv: allowed or not and why, and what it runs."""

    allowed: bool
    reason: str | None
    command: tuple[str, ...]  # the subcommand path, e.g. ("checkpoint", "export")
    args: tuple[str, ...]  # the argv from the subcommand on (top-level options gone)
    top_flag: str | None = None  # --help or --version given before any subcommand


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class GatePolicy:
    """The gate's rules for one workspace and one list of allowed subcommands."""

    workspace: Path
    allowed: tuple[str, ...] = DEFAULT_ALLOWED

    @classmethod
    def for_workspace(
        cls, workspace: str | Path, allowed: tuple[str, ...] | list[str] = DEFAULT_ALLOWED
    ) -> GatePolicy:
        """Gives the policy for a workspace (resolved through links)."""
        return cls(Path(os.path.realpath(workspace)), tuple(allowed))

    @property
    def inputs(self) -> Path:
        """Gives the directory gated commands may read files from."""
        return self.workspace / INPUTS_DIR

    # -- carrying the policy to the processes it governs -----------------------------

    def to_env(self, scope: str) -> str:
        """Gives the value of SEALDESK_GATE that makes sealdesk apply this policy."""
        if scope not in SCOPES:
            raise ValueError(scope)
        return json.dumps(
            {"workspace": str(self.workspace), "allow": list(self.allowed), "scope": scope},
            sort_keys=True,
        )

    # -- judging ---------------------------------------------------------------------

    def check(
        self,
        argv: list[str] | tuple[str, ...],
        scope: str = "request",
        *,
        root: click.Group,
        cwd: str | Path | None = None,
    ) -> Verdict:
        """Gives the verdict on running ``sealdesk ARGV`` under this policy in a scope.

        ``root`` is the command tree that will run it (the caller's: the gate judges
        no tree of its own); relative paths are taken from ``cwd`` (default: this
        process's), where the command will run.
        """
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}")
        try:
            return self._check(list(argv), scope, root, Path(cwd or os.getcwd()))
        except _Refused as refused:
            return Verdict(False, refused.reason, (), tuple(argv))

    def enforce(
        self,
        argv: list[str] | tuple[str, ...],
        scope: str = "request",
        *,
        root: click.Group,
    ) -> Verdict:
        """Gives the verdict when argv may run in the tree ``root``; else raises
        PermissionRefused saying why."""
        verdict = self.check(argv, scope, root=root)
        if not verdict.allowed:
            raise PermissionRefused(f"ssh-gate: {verdict.reason}")
        return verdict

    def _check(self, argv: list[str], scope: str, root: click.Group, cwd: Path) -> Verdict:
        ctx = click.Context(root, info_name="sealdesk", **root.context_settings)
        opts, rest, order = _parse(root, ctx, argv, "before the command")
        top_flag = None
        for param in _unique(order):
            if classify(param).kind == WORKSPACE:
                continue
            if isinstance(param, click.Option) and param.is_flag and not param.expose_value:
                top_flag = "--version" if param.name == "version" else "--help"
                continue
            raise _Refused(f"option {param_name(param)!r} is not allowed before the command")
        flag = opts.get("workspace")
        if not flag:  # as Ctx does: $SEALDESK_WORKSPACE, else ./workspace
            from engine.workspace import resolve_path

            flag = str(resolve_path(None))
        if _real(cwd, flag) != self.workspace:
            raise _Refused(f"this key may only use the workspace {self.workspace}")
        if top_flag is not None or not rest:
            return Verdict(True, None, (), tuple(rest), top_flag)
        name, args = rest[0], rest[1:]
        if name in NEVER_ALLOWED or name not in self.allowed:
            raise _Refused(
                f"'sealdesk {name}' is not allowed through this key (allowed: "
                f"{', '.join(self.allowed) or 'nothing'})"
            )
        command = root.get_command(ctx, name)
        if command is None:
            raise _Refused(f"no command 'sealdesk {name}'")
        path = [name]
        while True:
            ctx = click.Context(command, info_name=path[-1], parent=ctx, **command.context_settings)
            opts, args, order = _parse(command, ctx, args, f"in 'sealdesk {' '.join(path)}'")
            for param in _unique(order):
                self._judge(param, opts.get(param.name), scope, cwd, path)
            self._judge_defaults(command, ctx, order, scope, cwd, path)
            if not isinstance(command, click.Group):
                if args:
                    raise _Refused(
                        f"unexpected argument(s) to 'sealdesk {' '.join(path)}': {' '.join(args)}"
                    )
                return Verdict(True, None, tuple(path), tuple(rest))
            nested = NESTED_ALLOWED.get(path[0]) if len(path) == 1 else None
            if not args:
                if nested:
                    raise _Refused(f"only 'sealdesk {path[0]} {'|'.join(nested)}' is allowed")
                return Verdict(True, None, tuple(path), tuple(rest))
            sub_name, args = args[0], args[1:]
            if nested and sub_name not in nested:
                raise _Refused(f"only 'sealdesk {path[0]} {'|'.join(nested)}' is allowed")
            sub = command.get_command(ctx, sub_name)
            if sub is None:
                raise _Refused(f"no command 'sealdesk {' '.join(path)} {sub_name}'")
            command = sub
            path.append(sub_name)

    def _judge_defaults(
        self,
        command: click.Command,
        ctx: click.Context,
        given: list,
        scope: str,
        cwd: Path,
        path: list[str],
    ) -> None:
        # A path a command falls back on (say, a benchmark's working directory ".")
        # is held to the same rules as one typed.
        seen = {id(p) for p in given}
        for param in command.get_params(ctx):
            if id(param) in seen or callable(param.default):
                continue
            if isinstance(param.default, (str, os.PathLike)) and classify(param).kind in (
                INPUT,
                OUTPUT,
                DATASET,
            ):
                self._judge(param, os.fspath(param.default), scope, cwd, path, default=True)

    def _judge(
        self,
        param: click.Parameter,
        value: Any,
        scope: str,
        cwd: Path,
        path: list[str],
        *,
        default: bool = False,
    ) -> None:
        kind = classify(param)
        name = param_name(param)
        where = f"{name} of 'sealdesk {' '.join(path)}'"
        if kind.kind == UNKNOWN:
            raise _Refused(
                f"{where} is not one the gate knows; it is refused until it is "
                "classified in engine/cli/gate_policy.py"
            )
        if kind.kind == CREDENTIAL:
            raise _Refused(
                f"{name} is refused: it names a key, trust or config file on this "
                "host; sign with the key in your forwarded ssh-agent (ssh -A)"
            )
        if kind.kind == NETWORK:
            raise _Refused(
                f"{name} is refused: it names an address to connect to, and "
                "nothing started through this key connects out"
            )
        for text in _values(value):
            if kind.kind == NOTE:
                continue
            if _URL.match(text):
                raise _Refused(
                    f"{name} {text!r}: a URL is refused here; nothing started "
                    "through this key connects out"
                )
            if kind.kind == PLAIN:
                continue
            if text == "-" and kind.stream:
                continue
            shown = f"(default {text!r})" if default else repr(text)
            if kind.kind == OUTPUT:
                self._judge_output(name, text, shown, scope, cwd)
            elif kind.kind == DATASET:
                self._judge_dataset(name, text, cwd)
            else:
                self._judge_input(name, text, shown, cwd)

    def readable(self, path: Path) -> bool:
        """Says whether a resolved path is among the workspace's inputs."""
        return any(_inside(path, self.workspace / d) for d in READABLE_DIRS)

    def _judge_input(self, name: str, text: str, shown: str, cwd: Path) -> None:
        if not self.readable(_real(cwd, text)):
            raise _Refused(
                f"{name} {shown} is not in the workspace's inputs "
                f"({self.inputs}/ or artifacts/); only files placed there are "
                "read for you"
            )

    def _judge_dataset(self, name: str, text: str, cwd: Path) -> None:
        if glob.has_magic(text):
            matches = glob.glob(str(cwd / text), recursive=True)
            if (
                not self.readable(_real(cwd, text))
                or not matches
                or not all(self.readable(_real(cwd, m)) for m in matches)
            ):
                raise _Refused(
                    f"{name} {text!r} must match only files in the workspace's "
                    f"inputs ({self.inputs}/ or artifacts/)"
                )
            return
        real = _real(cwd, text)
        if not (self.readable(real) and os.path.isfile(real)):
            raise _Refused(
                f"{name} {text!r} is not a file in the workspace's inputs "
                f"({self.inputs}/ or artifacts/); hub datasets and URLs are not "
                "fetched for you"
            )

    def _judge_output(self, name: str, text: str, shown: str, scope: str, cwd: Path) -> None:
        if scope == "request":
            raise _Refused(
                f"{name} may only be '-' here (stdout, where the option takes it), "
                f"not {shown}; files on the review host are not written for you"
            )
        from engine.outputs import workspace_owner

        real = _real(cwd, text)
        if not _inside(real, self.workspace):
            raise _Refused(
                f"{name} {shown} is outside the workspace ({self.workspace}); a "
                "job writes only inside it"
            )
        owner = workspace_owner(real, self.workspace)
        if owner is None:
            guarded = next((d for d in _GUARDED_DIRS if _inside(real, self.workspace / d)), None)
            owner = None if guarded is None else guarded + "/"
        if owner is not None:
            raise _Refused(
                f"{name} {shown} is the workspace's own {owner}; write elsewhere in the workspace"
            )


def _parse(
    command: click.Command, ctx: click.Context, args: list[str], where: str
) -> tuple[dict[str, Any], list[str], list[click.Parameter]]:
    """Gives what click's own parser makes of args: values by name, the rest, the order."""
    try:
        opts, rest, order = command.make_parser(ctx).parse_args(args=list(args))
    except click.NoSuchOption as exc:
        raise _Refused(f"option {exc.option_name!r} is not allowed {where}") from exc
    except click.UsageError as exc:
        raise _Refused(f"{' '.join(exc.format_message().split())} ({where})") from exc
    return opts, list(rest), list(order)


def _unique(order: list[click.Parameter]) -> Iterator[click.Parameter]:
    seen: set[int] = set()
    for param in order:
        if id(param) not in seen:
            seen.add(id(param))
            yield param


def _values(value: Any) -> Iterator[str]:
    """Gives the words a parsed value holds; a flag's constant or click's marker for
    "not given" holds none."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _values(item)
    elif isinstance(value, (str, os.PathLike)):
        yield os.fspath(value)


def _real(cwd: Path, text: str) -> Path:
    try:
        return Path(os.path.realpath(cwd / text))
    except ValueError as exc:  # a NUL byte: no file has that name
        raise _Refused(f"{text!r} is not a path ({exc})") from exc


def _inside(path: Path, directory: Path) -> bool:
    real_dir = Path(os.path.realpath(directory))
    return path == real_dir or real_dir in path.parents


def active() -> tuple[GatePolicy, str] | None:
    """Gives the policy and scope this process runs under (from SEALDESK_GATE), or None.

    A value that cannot be read refuses everything: the variable is only ever set
    by the gate, so a damaged one is no reason to run unguarded.
    """
    raw = os.environ.get(ENV_VAR)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        workspace, allowed, scope = data["workspace"], data["allow"], data["scope"]
        if (
            not isinstance(workspace, str)
            or scope not in SCOPES
            or not all(isinstance(a, str) for a in allowed)
        ):
            raise ValueError(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise PermissionRefused(
            f"ssh-gate: ${ENV_VAR} cannot be read ({exc}); nothing runs "
            "under a gate whose rules are unknown"
        ) from exc
    return GatePolicy.for_workspace(workspace, allowed), scope


def enforce_from_environment(argv: list[str], root: click.Group) -> None:
    """Raises PermissionRefused when SEALDESK_GATE is set and its policy refuses argv
    run in the tree ``root``."""
    found = active()
    if found is not None:
        policy, scope = found
        policy.enforce(argv, scope, root=root)


def inventory(root: click.Group) -> Iterator[tuple[tuple[str, ...], click.Parameter, ParamKind]]:
    """Gives (command path, parameter, kind) for every parameter of every command in the
    tree ``root``, the help options left out."""
    yield from _walk(root, click.Context(root, info_name="sealdesk", **root.context_settings), ())


def _walk(
    command: click.Command, ctx: click.Context, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], click.Parameter, ParamKind]]:
    for param in command.params:
        yield path, param, classify(param)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from _walk(sub, click.Context(sub, info_name=name, parent=ctx), (*path, name))
