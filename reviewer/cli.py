"""``sealdesk review``: open the review app on the workspace."""

from __future__ import annotations

import inspect
import sys

import click

from engine.outputs import InputFile
from engine.roles import ROLES
from reviewer.actions import key_table_text


def _with_key_table(command: click.Command) -> click.Command:
    """Gives the command with the key table, generated from reviewer.actions, in its help."""
    text = inspect.cleandoc(command.help or "")
    table = key_table_text()
    command.help = f"{text}\n\n\b\nKeys, by screen (key, action, binding id):\n{table}"
    return command


@_with_key_table
@click.command("review")
@click.option(
    "--key",
    default=None,
    type=InputFile(),
    help="OpenSSH private key to sign with. Default: ssh-agent when SSH_AUTH_SOCK "
    "is set, else the config file's key.",
)
@click.option("--principal", default=None, help="When the key is enrolled under several names.")
@click.option(
    "--role",
    default=None,
    type=click.Choice(ROLES),
    help="Sign with the ssh-agent key enrolled in this role (say, lead to sign off "
    "when the agent also holds a reviewer key); refuse to start without it.",
)
@click.option(
    "--read-only",
    is_flag=True,
    help="Browse without signing (no key needed). Automatic when there is no key.",
)
@click.option(
    "--theme",
    default=None,
    help="dark, light, high-contrast, or any Textual theme. Default: $TEXTUAL_THEME, "
    "else the config file's theme, else dark.",
)
@click.option(
    "--config",
    "config_file",
    default=None,
    type=InputFile(),
    help="Config file. Default: $SEALDESK_CONFIG, else "
    "~/.config/sealdesk/config.toml. Refused under ssh-gate, where the "
    "config's key is not used either: keys stay in the forwarded ssh-agent.",
)
@click.pass_obj
def review(
    ctx,
    key: str | None,
    principal: str | None,
    role: str | None,
    read_only: bool,
    theme: str | None,
    config_file: str | None,
) -> None:
    """Review the three backlogs and sign decisions, in the terminal.

    Every decision is signed with your SSH key and appended to the ledger
    before the cursor moves on.

    \b
      sealdesk review                          # ssh-agent key (SSH_AUTH_SOCK)
      sealdesk review --key ~/.ssh/id_ed25519  # a key file
      sealdesk review --role lead              # the agent's lead key, to sign off
      sealdesk review --read-only              # browse, no key
      sealdesk review --theme high-contrast    # 16-colour terminals

    \b
    Config (~/.config/sealdesk/config.toml or $SEALDESK_CONFIG):
      theme = "light"
      key = "~/.ssh/id_ed25519"
      [keymap]
      "review.accept" = "y"     # ids: the table below, or ? in the app
    """
    from pathlib import Path

    from engine.cli.gate_policy import active as gate_active
    from engine.errors import InputError, PermissionRefused
    from reviewer.actions import binding_ids
    from reviewer.app import ReviewApp
    from reviewer.config import load_config
    from reviewer.session import open_session
    from reviewer.theming import choose_theme

    gated = gate_active() is not None
    if gated and config_file:
        # A config can name a key file; under the gate no key file on this host signs.
        raise PermissionRefused(
            "ssh-gate: --config is refused: a config file can name a key "
            "file, and through this key only your forwarded ssh-agent "
            "signs"
        )
    config = load_config(
        Path(config_file) if config_file else None, known_binding_ids=binding_ids()
    )
    if theme:  # a theme typed on the command line is checked now; the config's is told in-app
        from textual.theme import BUILTIN_THEMES

        from reviewer.theming import ALIASES, load_themes, resolve_theme_name

        known = set(BUILTIN_THEMES) | set(load_themes())
        if resolve_theme_name(theme) not in known:
            raise InputError(
                f"no theme named {theme!r} (themes: {', '.join(sorted(set(ALIASES) | known))})",
                field="theme",
            )
    from engine.item_query import ensure_indexes

    # --read-only opens the database without writing a byte, so it also browses a
    # read-only copy of a workspace.
    ws = ctx.open(read_only=read_only)
    with ws:
        # Who signs is settled before any screen is drawn, so a refusal is a
        # plain one-line error in the shell.
        session = open_session(
            ws,
            key=key,
            config_key=None if gated else config.key,
            principal=principal or config.principal,
            read_only=read_only,
            role=role,
        )
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise InputError(
                "sealdesk review needs a terminal (for scripts: sealdesk items "
                "--json and sealdesk decide)"
            )
        # Only now, with nothing left to refuse: a workspace made before the browse
        # index gets it once (a refused start writes nothing, nor does --read-only).
        if not ws.read_only:
            ensure_indexes(ws.conn)
        from reviewer.state import load_state

        saved = load_state(ws.workspace_id)  # the user's own view of this workspace
        app = ReviewApp(
            ws,
            session,
            theme=choose_theme(theme, config.theme, saved.theme),
            keymap=config.keymap,
            saved=saved,
            ask_reason=config.ask_reason,
        )
        app.run()
    if session.principal:
        signed = len(app.review.own_records) if hasattr(app, "_review") else 0
        if gated and signed:
            # Behind the gate this host's state directory is no place for the signer's
            # receipts alone: its insiders could empty it. Each is printed, whole, for
            # the signer to keep on their own machine (sealdesk receipts keep).
            from engine.desk import kept_of, receipt_line
            from engine.errors import SealdeskError

            try:
                mine = kept_of(ws.workspace_id, app.review.own_records, session.principal)
            except (OSError, SealdeskError) as exc:
                mine = []
                click.echo(f"warning: this session's receipts cannot be read: {exc}", err=True)
            for r in mine:
                click.echo(receipt_line(r), err=True)
        click.echo(
            f"sealdesk review: {signed} record(s) signed by {session.principal} this session"
        )
