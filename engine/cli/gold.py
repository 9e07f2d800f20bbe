"""``sealdesk gold``: known-answer items a lead plants, commits to, and reveals."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from engine.cli_context import Ctx, pass_ctx
from engine.errors import InputError
from engine.outputs import InputFile, OutputFile
from engine.roles import QUEUES
from engine.terminal_text import json_text, visible


def _read_json(path: str, what: str) -> Any:
    """Gives the JSON a file (or ``-``, standard input) holds; an error names the file."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not {what} ({exc})", field=what) from None


@click.group("gold")
def gold() -> None:
    """Gold items: known answers, committed before review and revealed after.

    A lead ingests items whose answer is known (a known leak, a known clean
    pair) among a queue's items, looking like any other, then commits to the
    answers by hash in a signed record before anyone decides them; after the
    review the reveal shows the answers, and verify checks they are the ones
    committed to and that nobody decided a gold item before its commit. Each
    reviewer's accuracy on gold is then shown to the lead and in the sign-off
    summary; gold items stay out of the agreement figures.

    \b
      sealdesk gold commit --queue flagged_pairs --answers answers.json --out sealed.json
      sealdesk gold reveal --sealed sealed.json
      sealdesk gold accuracy
    """


@gold.command("commit")
@click.option("--queue", required=True, type=click.Choice(QUEUES))
@click.option(
    "--answers",
    required=True,
    type=InputFile(),
    help='A JSON object of item id to its answer: {"fp-…": "accept", "fp-…": "reject"} '
    "(- reads stdin).",
)
@click.option(
    "--out",
    required=True,
    type=OutputFile(allow_stdout=True),
    help="Where the sealed answers go (answers, salt, the commit's hash; - for stdout): keep "
    "them private until the reveal.",
)
@click.option("--key", default=None, type=InputFile(), help="The lead's key (default: agent).")
@pass_ctx
def commit(ctx: Ctx, queue: str, answers: str, out: str, key: str | None) -> None:
    """Commit to the answers of gold items by hash, before anyone decides them."""
    from engine.artifacts import atomic_write
    from engine.canonical import canonical_json
    from engine.identity import choose_signer
    from engine.roles import SIGNOFF_ROLE

    known = _read_json(answers, "answers")
    if not isinstance(known, dict):
        raise InputError(f"{answers}: not a JSON object of item id to answer", field="answers")
    with ctx.open() as ws:
        signer = choose_signer(key, ws.authority(), (SIGNOFF_ROLE,))
        record, salt = ws.commit_gold(signer, queue, known)
    sealed = {
        "queue": queue,
        "commit": record.record_hash,
        "answers": known,
        "salt": salt,
    }
    if out == "-":  # through the ssh gate: the sealed answers go back to the lead's machine
        click.echo(canonical_json(sealed).decode("utf-8"))
    else:
        atomic_write(Path(out), canonical_json(sealed) + b"\n")
    click.echo(
        err=out == "-",
        message=visible(
            f"gold committed: #{record.body['seq']} {len(known)} answer(s) on {queue}, "
            f"sealed in {out} (reveal it after the review: sealdesk gold reveal --sealed {out})"
        ),
    )


@gold.command("reveal")
@click.option(
    "--sealed",
    required=True,
    type=InputFile(),
    help="What gold commit --out wrote (- reads stdin).",
)
@click.option("--key", default=None, type=InputFile(), help="The lead's key (default: agent).")
@pass_ctx
def reveal(ctx: Ctx, sealed: str, key: str | None) -> None:
    """Reveal committed gold answers: a signed record verify checks against the commit."""
    from engine.identity import choose_signer
    from engine.roles import SIGNOFF_ROLE

    held = _read_json(sealed, "sealed")
    if not isinstance(held, dict) or not {"commit", "answers", "salt"} <= held.keys():
        raise InputError(f"{sealed}: not what gold commit --out wrote", field="sealed")
    with ctx.open() as ws:
        signer = choose_signer(key, ws.authority(), (SIGNOFF_ROLE,))
        record = ws.reveal_gold(signer, held["commit"], held["answers"], held["salt"])
    click.echo(visible(f"gold revealed: #{record.body['seq']} {len(held['answers'])} answer(s)"))


@gold.command("accuracy")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@pass_ctx
def accuracy(ctx: Ctx, as_json: bool) -> None:
    """Each principal's accuracy on the revealed gold items, per queue."""
    from engine.agreement.gold import accuracy as figures
    from engine.agreement.gold import waiting
    from engine.signoff.review import accuracy_lines

    with ctx.open(read_only=True) as ws:
        found, left = figures(ws.conn), waiting(ws.conn)
    if as_json:
        click.echo(json_text({"accuracy": found, "waiting": left}, indent=1))
        return
    for line in accuracy_lines(found, left):
        click.echo(visible(line))
