"""One decision on many items, never blind: every item shown, then one key signs them all.

The dialog lists what ``engine.bulk.plan`` found for each item (its title and
hash, the decision standing on it and what deciding would do to it) and the
members of a duplicate cluster that are not items of this queue. ``a``, ``x``
or space is the one confirmation: it gives the decision back to the review
screen, which signs one record per item in one transaction with exactly the
overrules listed here. Enter on a row goes to that item instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from engine.bulk import BulkPlan, Planned
from engine.terminal_text import visible
from reviewer.actions import bindings
from reviewer.panes.common import CARRIED_MARK, STATUS_GLYPH


@dataclass(frozen=True)
class Member:
    """A member of a duplicate cluster: the eval item, and its backlog item if held."""

    label: str  # the eval item's id (and index)
    text: str
    item_id: str | None  # None: no item of this queue and run is about it


@dataclass(frozen=True)
class BulkChoice:
    """What the person chose: a decision for every item, or an item to go to."""

    decision: str | None = None
    goto: str | None = None


def cluster_members(payload: Any) -> list[dict[str, Any]]:
    """Gives the members an item's payload lists for its duplicate cluster ([] for none):
    ``cluster`` as a list of members or as ``{"members": [...]}``, or ``members``."""
    if not isinstance(payload, dict):
        return []
    cluster = payload.get("cluster")
    members = cluster.get("members") if isinstance(cluster, dict) else cluster
    if not isinstance(members, list):
        members = payload.get("members")
    if not isinstance(members, list):
        return []
    return [m if isinstance(m, dict) else {"id": m} for m in members]


def _standing(p: Planned) -> str:
    s = p.standing
    if s is None:
        return "undecided"
    made_on = f" on {s['carried_from']}, carried" if s.get("carried_from") else ""
    return visible(f"{s['decision']} by {s['principal']} ({s['role']}) #{s['seq']}{made_on}")


_EFFECT = {
    "decide": "",
    "overrule": "  → OVERRULES it",
    "refused": "  → left as it is: decided in a higher role",
    "absent": "  → not an item of this queue",
}


# A title longer than this is not kept whole anyway: the list shows it on one line.
_TITLE_CHARS = 200


def _title(text: str) -> str:
    """Gives a title (or an eval text) as one line of words, at most _TITLE_CHARS."""
    line = " ".join(visible(text).split())
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"


class Prompt:
    """An option of the bulk list, the same way for every row: a title line stays on one
    line, cut with an ellipsis at the list's width (never broken mid-word onto a line of
    its own); any other line wraps at word boundaries under its own indent, so nothing
    it says (an overrule above all) is cut. ``str()`` gives its whole text."""

    def __init__(self) -> None:
        self.lines: list[tuple[Text, bool]] = []  # (line, whether it is a title)

    def title(self, line: Text) -> Prompt:
        self.lines.append((line, True))
        return self

    def line(self, line: Text) -> Prompt:
        self.lines.append((line, False))
        return self

    def __str__(self) -> str:
        return "\n".join(line.plain for line, _ in self.lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for line, is_title in self.lines:
            indent = len(line.plain) - len(line.plain.lstrip(" "))
            if is_title or width - indent < 10:
                one = line.copy()
                one.no_wrap, one.overflow = True, "ellipsis"
                yield one
                continue
            for part in line[indent:].wrap(console, width - indent):
                yield Text(" " * indent) + part


def _rows(p: Planned, prompt: Prompt, indent: str = "") -> Prompt:
    """Adds an item's lines to a prompt: its title, then the decision standing on it and
    what deciding would do to it."""
    status = p.standing["decision"] if p.standing else "undecided"
    carried = CARRIED_MARK if p.standing and p.standing.get("carried_from") else ""
    head = Text(f"{indent}{STATUS_GLYPH.get(status, '?')}{carried} ")
    head.append(visible(p.item_id), style="bold")
    head.append(f"  {_title(p.title)}")
    standing = Text(f"    {_standing(p)}")
    if p.item_sha256:
        standing.append(f" · sha256 {p.item_sha256[:12]}")
    effect = _EFFECT[p.effect]
    if effect:
        standing.append(effect, style="bold reverse" if p.effect != "decide" else "")
    return prompt.title(head).line(standing)


def summary_line(plan: BulkPlan) -> Text:
    """Gives how many items a confirmation signs, overrules and leaves out."""
    out = Text(f"{len(plan.signable)} item(s) will be signed", style="bold")
    out.append(visible(f" as {plan.principal} ({plan.role})") if plan.principal else "")
    if plan.count("overrule"):
        out.append(f", {plan.count('overrule')} of them overruling another's decision")
    left = plan.count("refused") + plan.count("absent")
    if left:
        out.append(f"; {left} left out (listed)")
    out.append(" · one signed record per item, all in one transaction")
    return out


class BulkScreen(ModalScreen[BulkChoice | None]):
    """Shows a bulk decision in full; gives the decision chosen, an item to visit, or None."""

    SCOPE = "bulk"
    BINDINGS = bindings(SCOPE)
    AUTO_FOCUS = "#bulk-items"

    def __init__(self, title: str, plan: BulkPlan, members: list[Member] | None = None) -> None:
        super().__init__()
        self.title_text, self.plan = title, plan
        self.members = members or []

    def compose(self) -> ComposeResult:
        by_id = {p.item_id: p for p in self.plan.items}
        options: list[Option] = []
        if self.members:
            for m in self.members:
                planned = by_id.get(m.item_id) if m.item_id else None
                head = Text(visible(m.label), style="bold")
                if m.text:
                    head.append(f": {_title(m.text)}")
                prompt = Prompt().title(head)
                if planned is not None:
                    _rows(planned, prompt, indent="  ")
                else:
                    prompt.line(
                        Text("  no item of this queue and run: not decided here", style="italic")
                    )
                options.append(Option(prompt, id=m.item_id, disabled=planned is None))
        else:
            options = [Option(_rows(p, Prompt()), id=p.item_id) for p in self.plan.items]
        with Vertical(classes="dialog bulk"):
            yield Label(Text(visible(self.title_text), style="bold"))
            yield Static(summary_line(self.plan), id="bulk-summary")
            yield OptionList(*options, id="bulk-items")
            yield Static(Text(self._keys_line()), id="bulk-keys")
            yield Static("", id="bulk-error")

    def _keys_line(self) -> str:
        # The keys as bound now: a keymap may have moved them.
        key_for = getattr(self.app, "key_for", None)

        def key(binding_id: str, default: str) -> str:
            return key_for(binding_id) if key_for is not None else default

        return (
            f"{key('bulk.accept', 'a')} accept all · {key('bulk.reject', 'x')} reject all · "
            f"{key('bulk.skip', 'space')} skip all · Enter goes to the item · "
            f"{key('bulk.cancel', 'Esc')} cancels: nothing signed"
        )

    def action_decide(self, decision: str) -> None:
        if not self.plan.signable:
            self.query_one("#bulk-error", Static).update(
                Text("nothing to sign: every item here is left out", style="bold")
            )
            return
        self.dismiss(BulkChoice(decision=decision))

    @on(OptionList.OptionSelected)
    def _go(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.dismiss(BulkChoice(goto=event.option.id))

    def action_move(self, step: int) -> None:
        move_cursor(self.query_one(OptionList), step)

    def action_cancel(self) -> None:
        self.dismiss(None)


def move_cursor(options: OptionList, step: int) -> None:
    """Moves an option list's cursor one down (step > 0) or one up: a list screen's j/k."""
    if step > 0:
        options.action_cursor_down()
    else:
        options.action_cursor_up()
