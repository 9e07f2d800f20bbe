"""What the sign-off screen draws: the engine's SignoffSummary and a signed record, as Rich.

Display only: every figure comes from ``engine.signoff.summary.signoff_summary``
or from the record ``sign_off`` gave back; nothing here decides anything.
Emphasis is by weight and reverse video, never by hue alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, JustifyMethod, RenderableType
from rich.table import Table
from rich.text import Text

from engine.signoff.review import review_lines
from engine.signoff.run_status import (
    ContaminationStatus,
    CoverageStatus,
    ExamStatus,
    contamination_words,
)
from engine.signoff.summary import SignoffSummary
from engine.terminal_text import visible
from reviewer.panes.common import number

PENDING_SHOWN = 200
# Below this width the two halves of the summary are stacked.
WIDE = 120
CHECKPOINT_HINT = (
    "keep the checkpoint off this host:",
    "  sealdesk checkpoint export > checkpoint.txt",
    "  from your laptop: ssh reviewhost sealdesk checkpoint export > checkpoint.txt",
    "check the host against it later: sealdesk verify --checkpoint checkpoint.txt",
)


def _head(title: str) -> Text:
    # Styled as a span, not as the Text's base style, so what follows is plain.
    return Text.assemble((title, "bold underline"))


def _label(text: str, width: int = 9) -> Text:
    return Text.assemble((f"  {text:<{width}}", "bold"))


def readiness(
    s: SignoffSummary,
    sign_key: str,
    exceptions_key: str,
    holds: Sequence[str] | None = None,
) -> Text:
    """Gives the one line that says whether a sign-off would be accepted, and with which key.

    READY only when nothing is undecided and no hold stands: ``holds`` are the
    reasons besides undecided items (the summary's own, by default: an exam still
    PENDING_ADJUDICATION), each named on the line. Once the newest record is a
    sign-off, nothing is left to sign: the line says who signed it, not READY.
    """
    blocker = s.blocker(with_exceptions=True)
    if blocker is not None:
        return Text(f" BLOCKED: {visible(blocker)}", style="bold reverse")
    last = s.last_signoff
    if last is not None and last.seq == s.tree.size:
        extra = f", with {last.exceptions} exception(s)" if last.with_exceptions else ""
        return Text(
            f" SIGNED OFF: #{last.seq} by {visible(last.principal)}{extra} is the newest "
            "record; nothing new to sign",
            style="bold",
        )
    reasons = ([f"{len(s.pending)} item(s) undecided"] if s.pending else []) + list(
        s.holds if holds is None else holds
    )
    if reasons:
        return Text(
            f" NOT READY: {visible('; '.join(reasons))}; {exceptions_key} signs "
            "with exceptions, listed in the record",
            style="bold reverse",
        )
    return Text(f" READY: every item is accepted or rejected; {sign_key} signs off", style="bold")


def tree_section(s: SignoffSummary) -> Text:
    """Gives the tree head that would be signed and the last sign-off."""
    out = Text()
    out.append_text(_head("Tree head to sign"))
    out.append("\n")
    out.append_text(_label("size"))
    out.append(f"{s.tree.size} record(s)\n")
    out.append_text(_label("root"))
    out.append(f"{s.tree.root_hex}\n")
    out.append_text(_label("base64"))
    out.append(f"{s.tree.root_b64}\n")
    out.append_text(_label("origin"))
    out.append(f"{visible(s.tree.origin)}\n")
    out.append_text(_label("last"))
    last = s.last_signoff
    if last is None:
        out.append("no sign-off yet")
    else:
        extra = f", with {last.exceptions} exception(s)" if last.with_exceptions else ""
        out.append(
            f"sign-off #{last.seq} by {visible(last.principal)} at {last.time} over "
            f"{last.tree.size} record(s){extra}"
        )
    return out


def queues_table(s: SignoffSummary) -> Table:
    """Gives per queue: total, decided, accepted, rejected, skipped, undecided."""
    table = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False)
    table.add_column(Text("  queue"), no_wrap=True)
    for name in ("total", "decided", "accepted", "rejected", "skipped", "undecided"):
        table.add_column(Text(name), justify="right", no_wrap=True)
    for q in s.queues:
        # Styled as a span: a base style would paint the cell's padding too.
        undecided = Text.assemble((str(q.undecided), "bold reverse" if q.undecided else ""))
        table.add_row(
            Text(f"  {q.queue}"),
            str(q.total),
            str(q.decided),
            str(q.accepted),
            str(q.rejected),
            str(q.skipped),
            undecided,
        )
    return table


def subjects_lines(s: SignoffSummary) -> list[Text]:
    """Gives, per queue whose re-runs asked some subject again, how many subjects its
    items span (``  flagged_pairs: 15 subject(s) over 30 items``); none otherwise."""
    return [Text(f"  {q.queue}: {span}") for q in s.queues if (span := q.span())]


def contamination_section(c: ContaminationStatus) -> Text:
    """Gives the confirmed leakage rate beside what the scan flagged, and the power cost."""
    out = _head("Contamination")
    out.append(f"  {c.state}")
    if c.state == "not run":
        return out
    flagged, leakage = contamination_words(c)
    out.append("\n")
    out.append_text(_label("review"))
    out.append(leakage, style="bold" if c.state == "cleaned" else "")
    out.append("\n")
    out.append_text(_label("scan"))
    out.append(flagged)
    counts = [
        f"dropped {c.dropped_items}" if c.dropped_items is not None else "",
        (
            f"eval size {number(c.eval_size_before)} → {number(c.eval_size_after)}"
            if c.eval_size_before is not None or c.eval_size_after is not None
            else ""
        ),
    ]
    if any(counts):
        out.append("\n")
        out.append_text(_label("items"))
        out.append(" · ".join(x for x in counts if x))
    for p in c.power:
        out.append("\n")
        out.append_text(_label("power"))
        out.append(f"{p.name} {number(p.before, 4)} → {number(p.after, 4)}")
    if c.state == "cleaned" and not c.power:
        out.append("\n")
        out.append_text(_label("power"))
        out.append("consequence not found in the clean-set report")
    return out


_VERDICT = {True: ("pass", ""), False: ("FAIL", "bold reverse"), None: ("?", "")}


def exam_section(e: ExamStatus) -> RenderableType:
    """Gives the exam status and each gate with its value, threshold and verdict."""
    head = _head("Exam")
    head.append("  ")
    head.append(
        visible(e.state),
        style="bold reverse" if e.state in ("FAIL", "PENDING_ADJUDICATION") else "bold",
    )
    if e.adjudication:
        head.append(f" (adjudication {visible(e.adjudication)})")
    if not e.gates:
        return head
    table = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("  gate", "left"),
        ("value", "right"),
        ("threshold", "left"),
        ("verdict", "left"),
    )
    for name, justify in columns:
        table.add_column(Text(name), justify=justify, no_wrap=True)
    for g in e.gates:
        verdict, style = _VERDICT[g.passed]
        table.add_row(
            Text(f"  {visible(g.name)}"),
            Text(number(g.value)),
            Text(visible(g.threshold or "")),
            Text.assemble((verdict, style)),
        )
    return Group(head, table)


def coverage_section(v: CoverageStatus) -> RenderableType:
    """Gives coverage ELIGIBLE/HOLD overall and per category, with HOLD's findings."""
    head = _head("Coverage")
    head.append("  ")
    head.append(v.state, style="bold reverse" if v.state == "HOLD" else "bold")
    if not v.categories:
        return head
    table = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False, show_header=False)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column()
    table.add_column()
    for k in v.categories:
        table.add_row(
            Text(f"  {visible(k.category)}"),
            Text.assemble((k.eligibility, "bold reverse" if k.eligibility == "HOLD" else "")),
            Text(", ".join(visible(f) for f in k.findings)),
            Text(" ".join(visible(t) for t in k.threats), style="italic"),
        )
    if v.attribution:
        return Group(
            head,
            table,
            Text(f"  attribution of the reviewed misses: {visible(v.attribution)}", style="bold"),
        )
    return Group(head, table)


def pending_section(s: SignoffSummary) -> RenderableType:
    """Gives every undecided or skipped item (the first PENDING_SHOWN of them)."""
    head = _head("Undecided")
    if not s.pending:
        head.append("  none: every item is accepted or rejected")
        return head
    head.append(f"  {len(s.pending)} item(s)", style="bold")
    table = Table(
        box=None, pad_edge=False, padding=(0, 1), show_edge=False, show_header=False, expand=True
    )
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
    for p in s.pending[:PENDING_SHOWN]:
        table.add_row(
            Text(f"  {p.queue}/{visible(p.item_id)}"),
            Text(visible(p.status)),
            Text(" ".join(visible(p.title).split())),
        )
    parts: list[RenderableType] = [head, table]
    if len(s.pending) > PENDING_SHOWN:
        parts.append(
            Text(
                f"  … and {len(s.pending) - PENDING_SHOWN} more (sealdesk items --status undecided)"
            )
        )
    return Group(*parts)


def artifacts_section(s: SignoffSummary) -> Text:
    """Gives every artifact and run manifest the record binds, with its full SHA-256."""
    out = _head("Artifacts bound by SHA-256")
    out.append(f"  {len(s.artifacts)}")
    for a in s.artifacts:
        out.append(f"\n  {visible(a.path)}")
        if a.sidecar != "ok":
            out.append(f"  sidecar {a.sidecar}", style="bold reverse")
        out.append(f"\n    {a.sha256}")
    if s.runs:
        out.append("\n")
        out.append_text(_head("Run manifests"))
        out.append(f"  {len(s.runs)}")
        for run_id, sha in s.runs:
            out.append(f"\n  {visible(run_id)}\n    {sha}")
    return out


def signers_section(s: SignoffSummary) -> Text:
    """Gives who may sign what now (from the ledger's enrolment records) and the anchor."""
    out = _head("Who may sign")
    out.append(f"  {len(s.signers)}")
    out.append(f"\n  anchor {' '.join(s.anchor) or 'none'}")
    for g in s.signers:
        out.append(f"\n  {visible(g.principal)}  {'/'.join(g.roles)}  since #{g.since}")
        out.append(f"\n    {g.key}")
    for principal, fps in s.multi_key:
        out.append(f"\n  {visible(principal)} signed with {len(fps)} keys", style="bold")
    return out


def review_section(s: SignoffSummary) -> Text | None:
    """Gives how the items were reviewed: the plan's progress and the agreement figures
    with their intervals (what the sign-off binds), or None when there is neither."""
    lines = review_lines(s.review)
    if not lines:
        return None
    out = _head("Review")
    for line in lines:
        out.append("\n" + visible(line))
    return out


def problems_section(s: SignoffSummary) -> Text | None:
    """Gives integrity problems (they block signing) and warnings, or None when there are none."""
    if not s.problems and not s.warnings:
        return None
    out = Text()
    for problem in s.problems:
        if out:
            out.append("\n")
        out.append(f"PROBLEM: {visible(problem)}", style="bold reverse")
    for warning in s.warnings:
        if out:
            out.append("\n")
        out.append(f"warning: {visible(warning)}")
    return out


def render_summary(
    s: SignoffSummary,
    *,
    width: int,
    sign_key: str = "s",
    exceptions_key: str = "e",
    holds: Sequence[str] | None = None,
) -> RenderableType:
    """Gives the whole summary: two columns from WIDE columns up, else one. ``holds``
    as ``readiness`` takes them (by default the summary's own)."""
    blank = Text()
    status = [
        queues_table(s),
        *subjects_lines(s),
        blank,
        contamination_section(s.contamination),
        blank,
        exam_section(s.exam),
        blank,
        coverage_section(s.coverage),
    ]
    problems = problems_section(s)
    if problems is not None:
        status = [problems, blank, *status]
    lists = [pending_section(s), blank, signers_section(s), blank, artifacts_section(s)]
    reviewed = review_section(s)
    if reviewed is not None:
        lists = [reviewed, blank, *lists]
    top = [readiness(s, sign_key, exceptions_key, holds), blank, tree_section(s), blank]
    if width < WIDE:
        return Group(*top, *status, blank, *lists)
    grid = Table.grid(expand=True, padding=(0, 2))
    grid.add_column(ratio=1)
    grid.add_column(ratio=1)
    grid.add_row(Group(*status), Group(*lists))
    return Group(*top, grid)


def render_signed(record: Any) -> Text:
    """Gives what a sign-off record bound (seq, hash, tree, exceptions) and how to export it."""
    body = record.body
    data = body.get("data") or {}
    tree = data.get("tree") or {}
    out = Text.assemble((f" SIGNED OFF: record #{record.seq} ", "bold reverse"))
    out.append(visible(f"by {body.get('principal')} ({body.get('role')}) at {body.get('time')}"))
    out.append_text(Text("\n"))
    out.append_text(_label("hash"))
    out.append(f"{record.record_hash}\n")
    out.append_text(_label("tree"))
    out.append(f"{tree.get('size')} record(s), root {tree.get('root')}\n")
    exceptions = data.get("exceptions") or []
    if exceptions:
        out.append_text(_label("except"))
        out.append(f"{len(exceptions)} item(s) listed in the record: ")
        out.append(
            ", ".join(
                visible(f"{e.get('queue')}/{e.get('item_id')} ({e.get('status')})")
                for e in exceptions[:10]
            )
        )
        if len(exceptions) > 10:
            out.append(f" and {len(exceptions) - 10} more")
        out.append("\n")
    if body.get("note"):
        out.append_text(_label("note"))
        out.append(f"{visible(body['note'], multiline=True)}\n")
    out.append("\n".join(CHECKPOINT_HINT))
    return out
