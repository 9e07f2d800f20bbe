"""``sealdesk ssh-gate``: a forced command that lets an SSH key do review work only.

Put it in the review host's ``authorized_keys`` so that a key can run the
review app, decide, verify and sign off on one workspace, and nothing else:

    command="sealdesk --workspace /srv/review ssh-gate",restrict,pty,agent-forwarding ssh-ed25519 AAAA... lena@laptop

sshd runs the gate whatever the client asked for and passes the request in
``SSH_ORIGINAL_COMMAND``. The gate accepts only ``sealdesk [--workspace W]
SUBCOMMAND ...`` with W this workspace and SUBCOMMAND in the allowed list,
refuses ``--key`` (keys stay in the forwarded agent), lets an option that
names a file (``--out``, ``--checkpoint``) only use ``-`` (stdout/stdin), and
then replaces itself with that sealdesk command. No shell ever parses the
request. A bare ``ssh -A reviewhost`` opens the review app.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engine.errors import PermissionRefused

if TYPE_CHECKING:
    from engine.cli import Ctx

DEFAULT_ALLOWED = ("review", "signoff", "verify", "items", "decide", "undo", "prove",
                   "checkpoint")
# Subcommands with sub-subcommands: only these may be reached through the gate.
NESTED_ALLOWED = {"checkpoint": ("export",)}
# Options whose value is a path on the review host: only '-' (stdin/stdout) passes.
STREAM_ONLY = ("--out", "--checkpoint")
FORBIDDEN = ("--key",)
_PROGRAMS = ("sealdesk",)


def _refuse(reason: str) -> PermissionRefused:
    return PermissionRefused(f"ssh-gate: {reason}")


def _same_dir(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def gate_argv(original: str | None, workspace: str,
              allowed: tuple[str, ...] = DEFAULT_ALLOWED) -> list[str]:
    """Gives the sealdesk arguments to run for an SSH request, or raises PermissionRefused."""
    if original is None or not original.strip():
        return ["--workspace", workspace, "review"]
    try:
        words = shlex.split(original)
    except ValueError as exc:
        raise _refuse(f"cannot parse the command ({exc})") from exc
    if os.path.basename(words[0]) not in _PROGRAMS:
        raise _refuse(f"only sealdesk runs here, not {words[0]!r}")
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in ("--workspace", "-w") or option.startswith("--workspace="):
            value = option.split("=", 1)[1] if "=" in option else (rest.pop(0) if rest else "")
            if not _same_dir(value, workspace):
                raise _refuse(f"this key may only use the workspace {workspace}")
        elif option in ("--help", "-h", "--version"):
            return [option]
        else:
            raise _refuse(f"option {option!r} is not allowed before the command")
    if not rest:
        return ["--workspace", workspace, "review"]
    command, args = rest[0], rest[1:]
    if command not in allowed:
        raise _refuse(f"'sealdesk {command}' is not allowed through this key (allowed: "
                      f"{', '.join(allowed)})")
    if command in NESTED_ALLOWED and (not args or args[0] not in NESTED_ALLOWED[command]):
        raise _refuse(f"only 'sealdesk {command} {'|'.join(NESTED_ALLOWED[command])}' is allowed")
    _check_options(args)
    return ["--workspace", workspace, command, *args]


def _check_options(args: list[str]) -> None:
    for position, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if name in FORBIDDEN:
            raise _refuse(f"{name} is refused: sign with the key in your forwarded ssh-agent "
                          "(ssh -A), never a key file on this host")
        if name in STREAM_ONLY:
            value = arg.split("=", 1)[1] if "=" in arg else (
                args[position + 1] if position + 1 < len(args) else "")
            if value != "-":
                raise _refuse(f"{name} may only be '-' here (stdout/stdin); files on the "
                              "review host are not written or read for you")


@click.command("ssh-gate")
@click.option("--allow", "allow", multiple=True,
              help="A subcommand to allow; repeat. Default: review, signoff, verify, items, "
                   "decide, undo, prove, checkpoint (export).")
@click.pass_obj
def ssh_gate(ctx: "Ctx", allow: tuple[str, ...]) -> None:
    """Forced command for authorized_keys: only sealdesk review work on one workspace.

    \b
    In ~/.ssh/authorized_keys on the review host (one line):
      command="sealdesk --workspace /srv/review ssh-gate",restrict,pty,agent-forwarding ssh-ed25519 AAAA... lena@laptop
    Then from the laptop:
      ssh -A -t reviewhost sealdesk review
      ssh -A reviewhost sealdesk signoff --yes
      ssh reviewhost sealdesk checkpoint export > checkpoint.txt
      ssh reviewhost sealdesk verify --checkpoint - < checkpoint.txt
    """
    workspace = str(Path(ctx.path).resolve())
    argv = gate_argv(os.environ.get("SSH_ORIGINAL_COMMAND"), workspace,
                     tuple(allow) or DEFAULT_ALLOWED)
    sys.stdout.flush()
    # Replace the gate, so signals, the terminal and the exit code are sealdesk's own.
    # -P: sshd runs this in the login directory, whose files must never be imported.
    os.execv(sys.executable, [sys.executable, "-P", "-m", "engine.cli", *argv])
