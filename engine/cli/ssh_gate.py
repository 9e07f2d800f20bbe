"""``sealdesk ssh-gate``: a forced command that lets an SSH key do review work only.

Put it in the review host's ``authorized_keys`` so that a key can run the
review app, decide, verify and sign off on one workspace, and nothing else:

    command="sealdesk --workspace /srv/review ssh-gate",restrict,pty,agent-forwarding ssh-ed25519 AAAA... lena@laptop

sshd runs the gate whatever the client asked for and passes the request in
``SSH_ORIGINAL_COMMAND``. The gate splits it into words (no shell ever parses
it), lets ``engine.cli.gate_policy`` judge ``sealdesk [--workspace W] SUBCOMMAND ...``
(W this workspace, SUBCOMMAND allowed, no key or config file, no address, files
read only from the workspace's ``inputs/`` and ``artifacts/``, output only
to stdout), then sets
``SEALDESK_GATE`` so the same policy governs the sealdesk it becomes and every
background run started from there, and replaces itself with that sealdesk
command. A bare ``ssh -A reviewhost`` opens the review app.
"""  # noqa: E501 - the authorized_keys line above must stay one line to be copied

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engine.cli.gate_policy import DEFAULT_ALLOWED, ENV_VAR, NEVER_ALLOWED, GatePolicy
from engine.errors import PermissionRefused

if TYPE_CHECKING:
    from engine.cli_context import Ctx

__all__ = ["DEFAULT_ALLOWED", "gate_argv", "ssh_gate"]
_PROGRAMS = ("sealdesk",)


def _refuse(reason: str) -> PermissionRefused:
    return PermissionRefused(f"ssh-gate: {reason}")


def gate_argv(
    original: str | None,
    workspace: str,
    allowed: tuple[str, ...] = DEFAULT_ALLOWED,
    *,
    root: click.Group,
) -> list[str]:
    """Gives the sealdesk arguments to run for an SSH request in the command tree
    ``root``, or raises PermissionRefused."""
    policy = GatePolicy.for_workspace(workspace, allowed)
    where = str(policy.workspace)
    words = ["sealdesk"]
    if original is not None and original.strip():
        try:
            words = shlex.split(original)
        except ValueError as exc:
            raise _refuse(f"cannot parse the command ({exc})") from exc
    if os.path.basename(words[0]) not in _PROGRAMS:
        raise _refuse(f"only sealdesk runs here, not {words[0]!r}")
    verdict = policy.enforce(["--workspace", where, *words[1:]], "request", root=root)
    if verdict.top_flag is not None:
        return ["--workspace", where, verdict.top_flag]
    if not verdict.command:  # a bare login
        verdict = policy.enforce(["--workspace", where, "review"], "request", root=root)
    return ["--workspace", where, *verdict.args]


class _Allowed(click.ParamType):
    """A subcommand the gate may let through: one of sealdesk's own, never the gate."""

    name = "subcommand"

    def convert(self, value, param, ctx):  # noqa: ANN001 - click's signature
        root = ctx.find_root() if ctx is not None else None
        known = (
            root.command.list_commands(root)
            if root is not None and isinstance(root.command, click.Group)
            else None
        )
        if value in NEVER_ALLOWED or (known is not None and value not in known):
            self.fail(f"{value!r} is not a sealdesk subcommand the gate can allow", param, ctx)
        return value


@click.command("ssh-gate")
@click.option(
    "--allow",
    "allow",
    multiple=True,
    type=_Allowed(),
    help="A subcommand to allow; repeat. Default: "
    + ", ".join(f"{name} (export)" if name == "checkpoint" else name for name in DEFAULT_ALLOWED)
    + ".",
)
@click.pass_context
def ssh_gate(cctx: click.Context, allow: tuple[str, ...]) -> None:
    """Forced command for authorized_keys: only sealdesk review work on one workspace.

    \b
    In ~/.ssh/authorized_keys on the review host (one line):
      command="sealdesk --workspace /srv/review ssh-gate",restrict,pty,agent-forwarding ssh-ed25519 AAAA... lena@laptop
    Then from the laptop:
      ssh -A -t reviewhost sealdesk review
      ssh -A reviewhost sealdesk signoff --yes
      ssh reviewhost sealdesk checkpoint export > checkpoint.txt
      ssh reviewhost sealdesk verify --checkpoint - < checkpoint.txt

    \b
    What a gated key may run, and the jobs panel (b) of the app it opens too:
      only the allowed subcommands, on this workspace only;
      no --key, --config or other option naming a key, trust or config file
      (keys stay in the forwarded ssh-agent);
      no address to connect to (--ray-address, --probe-endpoint, URLs);
      files are read only from the workspace's inputs: WORKSPACE/inputs/,
      which someone with a shell on this host fills, and the sealed results
      of earlier runs in WORKSPACE/artifacts/ (or '-' for stdin where an
      option reads it);
      output goes to '-' (stdout) only; a background job may also write a
      path inside the workspace, but not its database, trust/, artifacts/,
      inputs/ or jobs/;
      an option the gate does not know is refused.
    The rules travel in $SEALDESK_GATE to every sealdesk process started from
    here, which applies them again.
    """  # noqa: E501 - the authorized_keys line above must stay one line to be copied
    ctx: Ctx = cctx.obj
    # The tree this gate was reached through (the engine's, or an app's composition of
    # it) judges the request, and is the program the gate becomes.
    tree = cctx.find_root().command
    assert isinstance(tree, click.Group)
    workspace = str(Path(ctx.path).resolve())
    allowed = tuple(allow) or DEFAULT_ALLOWED
    argv = gate_argv(os.environ.get("SSH_ORIGINAL_COMMAND"), workspace, allowed, root=tree)
    os.environ[ENV_VAR] = GatePolicy.for_workspace(workspace, allowed).to_env("request")
    sys.stdout.flush()
    # Replace the gate, so signals, the terminal and the exit code are sealdesk's own.
    # -P: sshd runs this in the login directory, whose files must never be imported.
    module = getattr(tree, "module", "engine.cli")
    os.execv(sys.executable, [sys.executable, "-P", "-m", module, *argv])
