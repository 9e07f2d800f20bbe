"""The engine's command tree: the root group, the core commands, and the rest by name.

Thin: each command parses, calls the engine and prints. Subcommands of the
backlog producers, the sign-off and the benchmarks live in their own packages
and are loaded only when used (the ``*_LAZY`` tables), so ``sealdesk --help``
and ``sealdesk decide`` start fast. Those modules take the workspace from
``engine.cli_context``, never from here, so nothing the tree loads imports the
tree back.

The tree names only the engine. Commands of other packages (the review app's
``review`` and ``bench review``) are added from the outside: ``with_commands``
gives a copy of the tree with more commands by name, which is how an app
composes the program it runs, and ``installed_commands`` reads those an
installed package declares in the ``sealdesk.commands`` entry-point group
(``python -m engine.cli`` runs ``installed_tree()``). Either way a command is
imported only when it runs or ``--help`` lists it.

``engine.cli.main`` runs a tree behind the ssh gate's policy and turns errors
into exit codes; ``engine.cli.gate_policy`` is handed the tree to judge a
command line before it runs.
"""

from __future__ import annotations

import copy
import importlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from engine import __version__
from engine.cli_context import Ctx, pass_ctx
from engine.ledger.records import DECISIONS, STATUSES
from engine.outputs import InputFile, OutputFile
from engine.roles import QUEUES, ROLES
from engine.terminal_text import json_text, visible

# name -> ("module:attribute" of a click command, its line in --help), loaded on first
# use; a help line of None is read from the command itself when --help lists it. A
# command whose module is not installed is simply not offered.
TOP_LEVEL_LAZY = {
    "init": (
        "engine.cli.keys:init",
        "Create a workspace whose ledger starts with the founding lead's genesis.",
    ),
    "keys": (
        "engine.cli.keys:keys",
        "Who may sign, in which role: enrol, revoke, list, migrate (lead-signed).",
    ),
    "reasons": (
        "engine.cli.reasons:reasons",
        "Reason codes a decision may give, per queue: list; a lead sets them.",
    ),
    "guidelines": (
        "engine.cli.reasons:guidelines",
        "Guidelines per queue, bound into each decision: show; a lead sets them.",
    ),
    "agreement": (
        "engine.cli.agreement:agreement",
        "How far reviewers agree (kappa, alpha, AC1 with intervals), from signed decisions.",
    ),
    "plan": (
        "engine.cli.plan:plan",
        "Review plan (lead-signed): k blind decisions on a seeded share; progress, disputes.",
    ),
    "claim": (
        "engine.cli.claims:claim",
        "Claim the next undecided items for a while, so nobody else is given them.",
    ),
    "gold": (
        "engine.cli.gold:gold",
        "Gold items: known answers committed by hash before review, revealed after.",
    ),
    "contamination": (
        "engine.contamination.cli:contamination",
        "After review: write the clean eval set and its power check.",
    ),
    "exam": ("engine.exam.cli:exam", "Blind two-lane exam: adjudicate, resolve, score."),
    "coverage": (
        "engine.coverage.cli:coverage",
        "Detector coverage by category: report, evidence, weak categories.",
    ),
    "signoff": (
        "engine.signoff.cli:signoff",
        "Lead sign-off: bind a Merkle tree head over every record.",
    ),
    "checkpoint": (
        "engine.signoff.cli:checkpoint",
        "Export the latest signed tree head as a checkpoint file.",
    ),
    "prove": (
        "engine.signoff.cli:prove",
        "Print an inclusion proof of a record against a signed tree head.",
    ),
    "receipts": (
        "engine.cli.receipts:receipts",
        "Your receipts: where they are kept, and keeping those a gated host printed.",
    ),
    "runs": (
        "engine.signoff.cli:runs",
        "Producer runs and who signed them: list, sign (the author of each number).",
    ),
    "ssh-gate": (
        "engine.cli.ssh_gate:ssh_gate",
        "Forced command for authorized_keys: review work on one workspace only.",
    ),
}
SCAN_LAZY = {
    "contamination": (
        "engine.contamination.cli:scan_contamination",
        "Flag eval items that leak from a training pool or repeat each other.",
    ),
}
BENCH_LAZY = {
    "ledger": (
        "engine.bench.ledger:bench_ledger",
        "Append and verify signed records; compare with raw Ed25519.",
    ),
    "contamination": (
        "engine.contamination.bench.against_reference:bench_contamination",
        "sealdesk's n-gram channels against the reference datasketch MinHash-LSH pass.",
    ),
}


Lazy = dict[str, tuple[str, str | None]]
ENTRY_POINT_GROUP = "sealdesk.commands"


def _resolve(target: str) -> click.Command | None:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            return None
        raise
    return getattr(module, attr, None)


class LazyGroup(click.Group):
    """A group whose extra commands are imported only when invoked."""

    def __init__(
        self,
        *args: Any,
        lazy: Lazy | None = None,
        module: str = "engine.cli",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: Lazy = dict(lazy or {})
        # What ``python -m`` runs to get this tree again (``sealdesk ssh-gate`` becomes
        # that program once it has judged the request).
        self.module = module

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(n for n, (t, _) in self.lazy.items() if _module_exists(t))
        return sorted(names)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cmd = super().get_command(ctx, name)
        if cmd is None and name in self.lazy:
            cmd = _resolve(self.lazy[name][0])
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy and super().get_command(ctx, name) is None:
                target, help_line = self.lazy[name]
                if help_line is not None:
                    rows.append((name, help_line))
                    continue
                cmd = _resolve(target)
            else:
                cmd = super().get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=70)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _module_exists(target: str) -> bool:
    import importlib.util

    module_name = target.partition(":")[0]
    try:
        return importlib.util.find_spec(module_name) is not None
    except ModuleNotFoundError:
        return False


def with_commands(
    root: click.Group,
    added: Mapping[str, str | tuple[str, str | None]],
    *,
    module: str | None = None,
) -> LazyGroup:
    """Gives a copy of the tree ``root`` with more commands, each loaded when used.

    ``added`` maps a command's path, its words joined by dots (``review``,
    ``bench.review``), to ``"module:attribute"`` of the click command, or to that and
    its line in ``--help``. The group each is added to must be a lazy group of the
    tree; ``module`` is what ``python -m`` runs to get the new tree (the gate becomes
    it). ``root`` itself is left as it was.
    """
    by_group: dict[tuple[str, ...], Lazy] = {}
    for path, target in added.items():
        *parent, name = path.split(".")
        entry = (target, None) if isinstance(target, str) else target
        by_group.setdefault(tuple(parent), {})[name] = entry
    tree = _extended(root, (), by_group)
    if module is not None:
        tree.module = module
    return tree


def _extended(
    group: click.Command | None, path: tuple[str, ...], by_group: dict[tuple[str, ...], Lazy]
) -> LazyGroup:
    """Gives a copy of ``group`` (at ``path``) and of each group under it that gains commands."""
    if not isinstance(group, LazyGroup):
        where = " ".join(("sealdesk", *path))
        raise ValueError(f"cannot add commands to '{where}': no such group of the tree")
    new = copy.copy(group)
    new.lazy = {**group.lazy, **by_group.get(path, {})}
    new.commands = dict(group.commands)
    for under in {p[len(path)] for p in by_group if len(p) > len(path) and p[: len(path)] == path}:
        new.commands[under] = _extended(group.commands.get(under), (*path, under), by_group)
    return new


def installed_commands() -> dict[str, str]:
    """Gives the commands installed packages add, from their ``sealdesk.commands``
    entry points: the command's path (words joined by dots) -> ``"module:attribute"``.
    Reading them imports none of them."""
    from importlib.metadata import entry_points

    return {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def installed_tree() -> LazyGroup:
    """Gives the engine's tree with the commands installed packages add."""
    return with_commands(cli, installed_commands())


SESSION: list[Ctx] = []  # this process's Ctx, so a database error can name its file


@click.group(
    cls=LazyGroup,
    lazy=TOP_LEVEL_LAZY,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--workspace",
    "-w",
    metavar="DIR",
    default=None,
    help="Workspace directory. Default: $SEALDESK_WORKSPACE, else ./workspace.",
)
@click.version_option(__version__, prog_name="sealdesk")
@click.pass_context
def cli(ctx: click.Context, workspace: str | None) -> None:
    """sealdesk: review eval contamination, exam adjudication and detector
    coverage, and record every decision as a signed, append-only record.

    \b
    A first session (the lead's key signs the genesis and every enrolment):
      sealdesk init --lead lena --key ~/.ssh/id_ed25519
      sealdesk keys add --principal rita --role reviewer --key rita.pub
      sealdesk scan contamination --eval eval.jsonl --pool pool.jsonl
      sealdesk review                 # or: sealdesk decide ... for scripts
      sealdesk verify
    """
    from engine.run_records import RunSigning

    ctx.obj = Ctx(workspace, RunSigning)
    SESSION[:] = [ctx.obj]


@cli.command()
@click.argument("files", nargs=-1, required=True, type=InputFile())
@pass_ctx
def ingest(ctx: Ctx, files: tuple[str, ...]) -> None:
    """Add backlog items from JSONL files (one canonical item per line).

    Every file is checked before anything is written; an item already held
    with the same bytes is skipped, one with different bytes is refused.
    """
    from engine.backlog import read_items_files
    from engine.progress import reporter

    read = read_items_files(files)
    pairs = [pair for f in read for pair in f.items]
    # A new run's manifest names the first file giving it; a held run keeps its own.
    defaults: dict[str, dict[str, Any]] = {}
    for f in read:
        source = {"kind": "ingest", "source": f.path.name, "source_sha256": f.sha256}
        for item, _ in f.items:
            defaults.setdefault(item.run_id, source)
    with ctx.open() as ws, reporter() as rep:
        stage = rep.stage(
            "ingest " + ", ".join(f.path.name for f in read), total=len(pairs), unit="items"
        )
        # One transaction for every file: a conflict in the last writes nothing of the first.
        result = ws.ingest(
            [item for item, _ in pairs],
            run_defaults=defaults,
            source=", ".join(files),
            origins={(i.queue, i.item_id): w for i, w in reversed(pairs)},
        )
        stage.advance(len(pairs))
        stage.finish()
    click.echo(
        visible(f"{', '.join(files)}: {result.added} added, {result.unchanged} already held")
    )


@cli.command()
@click.option("--queue", type=click.Choice(QUEUES))
@click.option("--status", type=click.Choice(STATUSES))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array (for scripts).")
@click.option(
    "--payload",
    "with_payload",
    is_flag=True,
    help="With --json: include each item's payload (what a decision is about).",
)
@click.option(
    "--all-runs",
    is_flag=True,
    help="List every run's items; by default one row per subject, its newest item.",
)
@click.option(
    "--mine",
    is_flag=True,
    help="Under a review plan: the items assigned to you first (who you are: --key or "
    "the agent's key).",
)
@click.option("--key", default=None, type=InputFile(), help="Who is reading (default: agent).")
@pass_ctx
def items(
    ctx: Ctx,
    queue: str | None,
    status: str | None,
    as_json: bool,
    with_payload: bool,
    all_runs: bool,
    mine: bool,
    key: str | None,
) -> None:
    """List backlog items and their effective decision.

    A re-run (a re-scan, an exam or coverage run again) asks again about the
    same subjects: by default each subject is one row, its newest item, with
    the earlier runs' items folded under it (``earlier`` counts them);
    --all-runs lists them all.

    \b
      sealdesk items --queue adjudication --json --payload \\
        | jq -r '.[] | [.item_id, .payload.candidate.id] | @tsv'
    """
    if with_payload and not as_json:
        from engine.errors import InputError

        raise InputError(
            "--payload needs --json: payloads are printed as JSON only", field="payload"
        )
    with ctx.open(read_only=True) as ws:
        current = ws.plan()
        if current is not None or mine:
            from engine.cli.plan import viewer_of

            ws.viewer = viewer_of(ws, key)
        rows = ws.items(queue=queue, status=status, newest_only=not all_runs)
        if mine and current is not None and ws.viewer is not None:
            me = ws.viewer
            rows.sort(key=lambda r: me not in current.assigned(r["queue"], r["item_id"]))
        held = len(ws.items(queue=queue, status=status)) if not all_runs else len(rows)
        if with_payload:
            for row in rows:
                held = ws.item(row["queue"], row["item_id"])
                row["payload"] = held["payload"] if held else None
    if as_json:
        click.echo(json_text(rows, indent=1))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    folded = any(r["earlier"] for r in rows)
    table = Table("queue", "item", "status", "by", "title", box=None)
    if folded:
        table.add_column("runs")
    for r in rows:
        made = r["decision"] or r["carried_from"]
        by = made["principal"] if made else ""
        state = r["status"]
        if r["carried_from"]:
            state += " (carried)"
        elif r["reopened"]:
            state += " (re-opened)"
        # Text, not markup: a "[" in an id or a title is shown as typed.
        table.add_row(
            r["queue"],
            Text(visible(r["item_id"])),
            state,
            Text(visible(by)),
            Text(visible(r["title"][:60])),
            *([f"+{r['earlier']} earlier" if r["earlier"] else ""] if folded else []),
        )
    Console().print(table)
    if held > len(rows):
        click.echo(
            f"{len(rows)} item(s), one per subject, of {held} held: the newest run's "
            "(--all-runs lists every run's items)"
        )
    else:
        click.echo(f"{len(rows)} item(s)")
    carried = sum(r["carried_from"] is not None for r in rows)
    if carried:
        click.echo(
            f"{carried} carried: decided on an earlier run's item about the same subject "
            "(items --json names it in carried_from)"
        )
    # What re-opened an item is what its reviewer must look at first: said in full.
    for r in rows:
        if r["reopened"]:
            click.echo(visible(f"{r['item_id']}: {r['reopened']['text']}"))


def _signer(ws, key: str | None, queue: str | None = None, role: str | None = None):
    from engine.identity import choose_signer
    from engine.roles import QUEUE_ROLES

    roles = (role,) if role else (QUEUE_ROLES.get(queue, ()) if queue is not None else ())
    return choose_signer(key, ws.authority(), roles)


@cli.command()
@click.option(
    "--queue",
    required=True,
    type=click.Choice(QUEUES),
)
@click.option(
    "--item",
    "item_ids",
    required=True,
    multiple=True,
    help="Item id; repeat for several, or '-' to read ids from stdin.",
)
@click.option("--decision", required=True, type=click.Choice(DECISIONS))
@click.option("--note", default=None, help="Why; kept in the signed record.")
@click.option(
    "--reason",
    "reason",
    default=None,
    metavar="CODE",
    help="One of the queue's reason codes (sealdesk reasons list); signed in the record.",
)
@click.option(
    "--rationale",
    default=None,
    metavar="TEXT",
    help="Why, in your words; signed in the record with the reason.",
)
@click.option(
    "--key",
    default=None,
    type=InputFile(),
    help="OpenSSH private key file. Default: a key from ssh-agent.",
)
@click.option("--principal", default=None, help="When the key is enrolled under several names.")
@click.option("--role", default=None, type=click.Choice(ROLES))
@click.option(
    "--overrule",
    is_flag=True,
    help="Replace another principal's standing decision, saying so in the signed "
    "record (never one made in a role above yours).",
)
@pass_ctx
def decide(
    ctx: Ctx,
    queue: str,
    item_ids: tuple[str, ...],
    decision: str,
    note: str | None,
    reason: str | None,
    rationale: str | None,
    key: str | None,
    principal: str | None,
    role: str | None,
    overrule: bool,
) -> None:
    """Sign and append decisions (the app's signing path, for scripts).

    Several items are decided in one transaction: all are signed or none.
    An item whose standing decision is another principal's is refused unless
    --overrule is given; the record then names the decision it overrules.
    Your own standing decision is changed freely, and deciding it the same
    again signs nothing. --reason (a code of the queue's: sealdesk reasons
    list --queue QUEUE) and --rationale go into the signed record, and so
    does the SHA-256 of the queue's guidelines while a lead has set them.

    \b
      sealdesk decide --queue flagged_pairs --item fp-1a2b --decision accept
      sealdesk decide --queue flagged_pairs --item fp-1a2b --decision reject \\
        --reason different-problem --rationale "only the topic is shared"
      sealdesk items --queue flagged_pairs --status undecided --json \\
        | jq -r '.[].item_id' | sealdesk decide --queue flagged_pairs --item - --decision reject
    """
    from engine.errors import InputError

    ids: list[tuple[str, int | None]]
    if item_ids == ("-",):
        ids = list(_stdin_ids())
    else:
        ids = [(item_id, None) for item_id in item_ids]
    if not ids:
        raise InputError("no item ids on stdin; nothing was signed", path="<stdin>", field="item")
    first_at: dict[str, int | None] = {}
    for number, (item_id, line) in enumerate(ids, start=1):
        if item_id in first_at:  # one decision per item per run: a repeat is a mistake
            earlier = first_at[item_id]
            where = f"line {earlier}" if line else f"--item #{earlier}"
            raise InputError(
                f"item {item_id!r} is given twice (first at {where}); nothing was signed",
                path="<stdin>" if line else None,
                line=line,
                field="item",
            )
        first_at[item_id] = line if line else number
    with ctx.open() as ws:
        if reason is not None:
            from engine.reasons import reason_code

            reason_code(ws.root, queue, reason)  # before any key is asked for
        # Every id is checked before the first signature, naming its line; the
        # batch below is one transaction, so any later refusal signs nothing either.
        for item_id, line in ids:
            if ws.item(queue, item_id) is None:
                raise InputError(
                    f"no item {item_id!r} in queue {queue}; nothing was signed",
                    path="<stdin>" if line else None,
                    line=line,
                    field="item",
                )
        signer = _signer(ws, key, queue, role)
        outcomes = ws.decide_many(
            signer,
            queue,
            [item_id for item_id, _ in ids],
            decision,
            note=note,
            principal=principal,
            role=role,
            overrule=overrule,
            reason=reason,
            rationale=rationale,
        )
        kept = [ws.receipt(o.record) for o in outcomes if o.record is not None]
    for outcome in outcomes:
        rec, where = outcome.record, f"{queue}/{outcome.item_id}"
        if rec is None:
            unsaid = "; the note was not recorded" if note is not None else ""
            click.echo(
                visible(
                    f"already {decision} by you (#{outcome.standing['seq']}): {where}, "
                    f"nothing signed{unsaid}"
                )
            )
            continue
        signed = (
            f"#{rec.seq} {decision} {where} by {rec.body['principal']} as "
            f"{rec.body['role']} {rec.record_hash[:12]}"
        )
        over = outcome.overruled
        under = (rec.body["data"] or {}).get("plan")
        if under is not None and "resolves" in under:
            n = len(under["resolves"])
            signed += f" (resolves the {n} disagreeing decision(s) of the review plan)"
        elif under is not None:
            signed += " (blind, under the review plan)"
        elif over is not None:
            made_on = f" on {over['carried_from']}" if over.get("carried_from") else ""
            signed += (
                f" (overrules {over['decision']} by {over['principal']} as "
                f"{over['role']}, #{over['seq']}{made_on})"
            )
        if outcome.reason is not None:
            signed += f" reason {outcome.reason}"
        click.echo(visible(signed))
    _keep_receipts(kept)


def _keep_receipts(kept: list[dict[str, Any]]) -> None:
    """Keeps receipts in the signer's own state directory and says where (on stderr, so
    that scripts reading the records' lines are not disturbed).

    Behind the ssh gate the signer is not on this host: the state directory is
    the host account's, which the insider a receipt should catch can empty. So
    each whole receipt is also printed to the client, one JSON line, for
    ``sealdesk receipts keep`` (or ``grep``) to keep on the signer's machine.
    """
    import os

    from engine.cli_context import GATE_ENV_VAR
    from engine.errors import DerivedFileNotWritten
    from engine.ledger.receipts import default_dir, keep, receipt_line

    if not kept:
        return
    if os.environ.get(GATE_ENV_VAR) is not None:
        for r in kept:
            click.echo(receipt_line(r), err=True)
    last = kept[-1]
    try:
        path = keep(kept)
    except OSError as exc:
        if os.environ.get(GATE_ENV_VAR) is None:  # the gate printed them already
            for r in kept:
                click.echo(receipt_line(r), err=True)
        seqs = f"#{kept[0]['seq']}" + (f"-#{last['seq']}" if len(kept) > 1 else "")
        raise DerivedFileNotWritten(
            f"{seqs} is in the ledger, but its receipt was not kept in {default_dir()} "
            f"({exc.strerror or exc}); keep the receipt line(s) above with: "
            "sealdesk receipts keep FILE (FILE holding them, or '-' to paste)"
        ) from exc
    yours = (
        "; keep the JSON line(s) above on your machine: see sealdesk receipts --help"
        if os.environ.get(GATE_ENV_VAR) is not None
        else ""
    )
    click.echo(
        f"receipt: #{last['seq']} tree {last['tree_size']} root {last['root'][:16]} "
        f"({len(kept)} kept in {path}{yours})",
        err=True,
    )


def _stdin_ids() -> list[tuple[str, int]]:
    """Gives the item ids on stdin, one a line, with their line numbers."""
    from engine.errors import InputError

    ids = []
    for number, raw in enumerate(sys.stdin.buffer.read().split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not UTF-8 ({exc.reason})", path="<stdin>", line=number, field="item"
            ) from exc
        if text:
            ids.append((text, number))
    return ids


@cli.command()
@click.option(
    "--queue",
    required=True,
    type=click.Choice(QUEUES),
)
@click.option("--item", "item_id", required=True)
@click.option("--note", default=None)
@click.option("--key", default=None, type=InputFile())
@click.option("--principal", default=None)
@pass_ctx
def undo(
    ctx: Ctx, queue: str, item_id: str, note: str | None, key: str | None, principal: str | None
) -> None:
    """Retract an item's standing decision (appends a retract record)."""
    with ctx.open() as ws:
        rec = ws.retract(_signer(ws, key, queue), queue, item_id, note=note, principal=principal)
        kept = [ws.receipt(rec)]
    click.echo(visible(f"#{rec.seq} retracted {rec.body['retracts'][:12]} on {queue}/{item_id}"))
    _keep_receipts(kept)


@cli.command()
@click.option(
    "--checkpoint",
    "checkpoint",
    default=None,
    type=InputFile(),
    help="Also check the workspace against an exported checkpoint.",
)
@click.option(
    "--anchor",
    default=None,
    type=InputFile(),
    help="An allowed_signers file with the lead key(s) you trust (your own copy): "
    "the genesis must be signed by them.",
)
@click.option(
    "--receipts",
    default=None,
    type=click.Path(allow_dash=True),
    help="Signers' receipts (a file, a directory of them, or '-' for stdin): every "
    "receipted record must still be here, unchanged (catches a rollback or a fork). "
    "Your own receipts of this workspace are compared always.",
)
@click.option(
    "--witness",
    "witnesses",
    multiple=True,
    type=click.Path(file_okay=False),
    help="A witness directory of pushed checkpoints (or this workspace's folder in "
    "it): the ledger must extend each one (repeat for several).",
)
@click.option(
    "--jobs",
    default=None,
    type=click.IntRange(min=1),
    help="Worker processes (default: all cores).",
)
@click.option("--quiet", "-q", is_flag=True)
@pass_ctx
def verify(
    ctx: Ctx,
    checkpoint: str | None,
    anchor: str | None,
    receipts: str | None,
    witnesses: tuple[str, ...],
    jobs: int | None,
    quiet: bool,
) -> None:
    """Check every record's hash, link, signature, signer, role and enrolment.

    Who may sign record N is replayed from the genesis and the enrolment
    records before N. The receipts you keep for this workspace (see sealdesk
    receipts), those named and the witnesses' checkpoints must all still be
    honoured; a line says how many of each were compared. Exits 0 when the
    ledger is whole; otherwise names the first bad record (seq and reason)
    and exits 1.
    """
    from engine.errors import InputError
    from engine.signoff.verify import verify_workspace

    receipts_text = None
    if receipts == "-":
        if checkpoint == "-":
            raise InputError(
                "only one of --checkpoint and --receipts can read stdin", field="--receipts"
            )
        receipts_text = sys.stdin.read()
    with ctx.open(read_only=True) as ws:
        report = verify_workspace(
            ws,
            processes=jobs,
            show_progress=not quiet,
            checkpoint=Path(checkpoint) if checkpoint else None,
            anchor=Path(anchor) if anchor else None,
            receipts=Path(receipts) if receipts else None,
            witnesses=tuple(map(Path, witnesses)),
            own_receipts=True,
            receipts_text=receipts_text,
        )
    first = report.first
    if first is None:  # no fault: the ledger verifies
        who = ", ".join(f"{p} {n}" for p, n in sorted(report.signers.items())) or "none"
        click.echo(
            visible(
                f"ok: {report.records} record(s) verified; head {report.head_hash[:16]}; "
                f"signers: {who}"
            )
        )
        for note in report.notes:
            click.echo(f"note: {visible(note.where)}")
        for line in report.compared:
            click.echo(visible(line))
        return
    for note in report.notes:
        click.echo(f"note: {visible(note.where)}", err=True)
    for line in report.compared:
        click.echo(visible(line))
    click.echo(f"FAIL: {visible(first.where)}", err=True)
    if len(report.faults) > 1:
        click.echo(f"({len(report.faults) - 1} further fault(s) after it)", err=True)
    sys.exit(1)


@cli.command()
@click.option(
    "--out", required=True, type=OutputFile(), help="JSONL file to write (one record per line)."
)
@pass_ctx
def export(ctx: Ctx, out: str) -> None:
    """Export every record with its exact signed bytes and SSHSIG.

    \b
    Check any record without sealdesk (jq -j keeps the bytes exact):
      jq -sj '.[0].message'   records.jsonl > msg
      jq -sj '.[0].signature' records.jsonl > msg.sig
      ssh-keygen -Y verify -f workspace/trust/allowed_signers \\
        -I "$(jq -sr '.[0].principal' records.jsonl)" \\
        -n "$(jq -sr '.[0].namespace' records.jsonl)" \\
        -Overify-time="$(jq -sr '.[0].verify_time' records.jsonl)" -s msg.sig < msg
    verify_time is the record's signed time: a key enrolled with valid-before
    is checked as of then, as sealdesk verify does. Under a review plan each
    decision on a planned item also carries its item's outcome (unsigned, what
    the records say together): "review": {"k", "ratings", "outcome"}.
    """
    from engine.ledger.audit import export_records

    with ctx.open(read_only=True) as ws:
        outcomes = ws.review_outcomes()

        def review(body: dict) -> dict:
            key = (body.get("queue"), body.get("item_id"))
            if body.get("kind") != "decision" or key not in outcomes:
                return {}
            return {"review": outcomes[key]}

        n = export_records(ws, Path(out), review)
    click.echo(visible(f"wrote {n} record(s) to {out}"))


@cli.command()
@click.argument("dest", type=click.Path(dir_okay=True, file_okay=False))
@pass_ctx
def backup(ctx: Ctx, dest: str) -> None:
    """Copy the workspace to DEST (a new directory) safely, even while it is in use.

    \b
    The database is copied through SQLite's online backup: one consistent
    snapshot of every committed record, while the app and other commands
    keep working. The copy is verified (every record, signer and bound
    artifact) before it is kept; a copy that does not verify is removed.
    Every other file comes along but cache/ (rebuilt on demand).
    Never copy a workspace in use with cp, rsync or tar: such a copy can
    hold half a write, and lose records that were acknowledged.
    \b
    Restore by pointing sealdesk at the copy (or moving it into place while
    nothing has the workspace open):
      sealdesk --workspace DEST verify
    """
    from engine.backup import backup_workspace

    with ctx.open(read_only=True) as ws:
        done = backup_workspace(ws, dest)
    click.echo(
        f"backed up {done.records} record(s) (head {done.head_hash[:16]}) and "
        f"{done.files} file(s) to {visible(str(done.dest))}; the copy verifies"
    )


@cli.group(cls=LazyGroup, lazy=SCAN_LAZY)
def scan() -> None:
    """Run an engine scan that produces a backlog."""


@cli.group(cls=LazyGroup, lazy=BENCH_LAZY)
def bench() -> None:
    """Benchmarks that compare sealdesk with the reference approach and print ratios."""
