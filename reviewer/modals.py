"""Small screens over the review: a note, a reason, an overrule to confirm, the filters, the
help."""

from __future__ import annotations

from dataclasses import replace

from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select, Static

from engine.item_query import ItemFilter
from engine.reasons import Reason
from engine.terminal_text import visible
from reviewer.actions import bindings

STATUS_CHOICES = [
    ("any status", ""),
    ("undecided", "undecided"),
    ("accepted", "accept"),
    ("rejected", "reject"),
    ("skipped", "skip"),
]
WHO_CHOICES = [("anyone", ""), ("me", "me"), ("others", "others")]


class NoteScreen(ModalScreen[str | None]):
    """Asks for a note; gives its text, or None when cancelled."""

    SCOPE = "note"
    BINDINGS = bindings(SCOPE)
    AUTO_FOCUS = "#note-text"  # focused as the screen is composed: no key slips past it

    def __init__(self, item_label: str) -> None:
        super().__init__()
        self.item_label = item_label

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(
                Text(f"Note on {visible(self.item_label)} (signed; Enter saves, Esc cancels)")
            )
            yield Input(placeholder="why…", id="note-text", compact=True)

    @on(Input.Submitted)
    def save(self, event: Input.Submitted) -> None:
        self.dismiss(event.value if event.value.strip() else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ReasonScreen(ModalScreen[str | None]):
    """Asks for a decision's reason: gives its code, "" for none (Enter, or the decision's
    own key again), or None when cancelled (Esc: nothing is signed)."""

    SCOPE = "reason"
    BINDINGS = bindings(SCOPE)

    def __init__(
        self,
        decision: str,
        item_label: str,
        reasons: tuple[Reason, ...],
        again: frozenset[str],
        guidelines_sha256: str | None = None,
    ) -> None:
        super().__init__()
        self.decision = decision
        self.item_label = item_label
        self.reasons = reasons
        self.again = again  # the keys of the decision itself: no reason
        self.guidelines_sha256 = guidelines_sha256

    def compose(self) -> ComposeResult:
        listed = Text()
        for number, reason in enumerate(self.reasons, start=1):
            listed.append(f"{number} ", style="bold")
            listed.append(visible(f"{reason.code:<20}{reason.label}") + "\n")
        under = (
            f"under guidelines {self.guidelines_sha256[:12]}…"
            if self.guidelines_sha256
            else "no guidelines set"
        )
        with Vertical(classes="dialog"):
            yield Label(Text(f"{self.decision.capitalize()} {visible(self.item_label)}: why?"))
            yield Static(listed, id="reason-list")
            # a Static wraps at the dialog's width; a Label would cut the line at 80 columns
            yield Static(
                f"1-{len(self.reasons)} signs with that reason · Enter or the same key again: "
                f"no reason · Esc cancels, nothing is signed · {under}",
                id="reason-keys",
            )

    def on_key(self, event: events.Key) -> None:
        if event.key in self.again:
            event.stop()
            self.dismiss("")

    def action_pick(self, number: int) -> None:
        if 1 <= number <= len(self.reasons):
            self.dismiss(self.reasons[number - 1].code)
        else:
            self.app.bell()

    def action_none(self) -> None:
        self.dismiss("")

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmOverrule(ModalScreen[bool]):
    """Asks whether to overrule another's standing decision; gives True only for ``y``."""

    SCOPE = "overrule"
    BINDINGS = bindings(SCOPE)

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(Text(visible(self.question)), id="overrule-question")
            # a Static wraps at the dialog's width; a Label would cut the line at 80 columns
            yield Static(
                "y overrules (the signed record names the decision it replaces) · "
                "n or Esc cancels, nothing is signed",
                id="overrule-keys",
            )

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def _parse_score(text: str, field: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{field}: {text!r} is not a number") from None


class FilterScreen(ModalScreen[ItemFilter | None]):
    """Edits the queue's filter; gives the new one, or None when cancelled."""

    SCOPE = "filter"
    BINDINGS = bindings(SCOPE)
    AUTO_FOCUS = "#status"

    def __init__(self, current: ItemFilter, tags: list[str], can_filter_by_me: bool) -> None:
        super().__init__()
        self.current, self.tags, self.can_filter_by_me = current, tags, can_filter_by_me

    def compose(self) -> ComposeResult:
        f = self.current
        # A Select reads a string prompt as markup: tags come from data, drawn as Text.
        tag_choices: list[tuple[Text, str]] = [(Text("any channel/tag"), "")]
        tag_choices += [(Text(visible(t)), t) for t in self.tags]
        if f.tag and f.tag not in self.tags:
            tag_choices.append((Text(visible(f.tag)), f.tag))
        # One line per field (compact widgets), so the whole form fits 80x24.
        fields: list[tuple[str, Select | Input]] = [
            (
                "status",
                Select(
                    STATUS_CHOICES,
                    value=f.status or "",
                    allow_blank=False,
                    id="status",
                    compact=True,
                ),
            ),
        ]
        if self.can_filter_by_me:
            fields.append(
                (
                    "decided by",
                    Select(
                        WHO_CHOICES,
                        value=f.decided_by or "",
                        allow_blank=False,
                        id="decided-by",
                        compact=True,
                    ),
                )
            )
        fields += [
            (
                "channel/tag",
                Select(tag_choices, value=f.tag or "", allow_blank=False, id="tag", compact=True),
            ),
            (
                "score ≥",
                Input(
                    value="" if f.score_min is None else str(f.score_min),
                    placeholder="e.g. 0.8",
                    id="score-min",
                    compact=True,
                ),
            ),
            (
                "score ≤",
                Input(
                    value="" if f.score_max is None else str(f.score_max),
                    placeholder="e.g. 1",
                    id="score-max",
                    compact=True,
                ),
            ),
            ("text", Input(value=f.text or "", placeholder="contains…", id="text", compact=True)),
        ]
        with Vertical(classes="dialog"):
            # Two short lines: one long one is cut at 80 columns.
            yield Label(
                "Filter: Tab moves · Enter applies · Esc cancels · Ctrl+R clears\n"
                "In a list: Space or ↓ opens it, typing jumps, Enter picks"
            )
            for label, widget in fields:
                with Horizontal(classes="field"):
                    yield Label(label, classes="field-label")
                    yield widget
            yield Static("", id="filter-error")

    def _value(self, selector: str) -> str:
        widget = self.query_one(selector)
        value = widget.value if isinstance(widget, (Input, Select)) else None
        return "" if value is Select.BLANK or value is None else str(value)

    @on(Input.Submitted)
    def apply(self) -> None:
        try:
            who = self._value("#decided-by") if self.can_filter_by_me else ""
            new = replace(
                self.current,
                status=self._value("#status") or None,
                decided_by=who or None,
                tag=self._value("#tag") or None,
                score_min=_parse_score(self._value("#score-min"), "score at least"),
                score_max=_parse_score(self._value("#score-max"), "score at most"),
                text=self._value("#text").strip() or None,
            ).validate()
        except Exception as exc:  # noqa: BLE001 - shown to the person, who fixes it
            self.query_one("#filter-error", Static).update(Text(visible(exc), style="bold"))
            return
        self.dismiss(new)

    def key_enter(self, event: events.Key) -> None:
        # Enter on a closed list applies, so the form is one key from any field. In an
        # open list it is the list's: it picks the highlighted choice (so the key is
        # left to the list's own binding), and in a text field Input.Submitted applies.
        if isinstance(self.focused, Select):
            event.stop()  # the Select's own Enter would open its list again
            self.apply()

    def action_clear(self) -> None:
        self.dismiss(
            replace(
                ItemFilter(),
                principal=self.current.principal,
                newest_only=self.current.newest_only,
            )
        )

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key the review offers, as currently bound (keymap applied), with its id."""

    SCOPE = "help"
    BINDINGS = bindings(SCOPE)

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        table = Table(box=None, pad_edge=False, expand=True)
        table.add_column(Text("key"), style="bold", no_wrap=True)
        table.add_column(Text("does"))
        table.add_column(Text("binding id (for [keymap])"), no_wrap=True)
        for key, description, binding_id in self.rows:
            table.add_row(Text(key), Text(description), Text(binding_id))
        with VerticalScroll(classes="dialog help"):
            yield Label(
                Text(
                    "Keys (Esc closes). Rebind them in the config file's [keymap] "
                    "table by binding id."
                )
            )
            yield Static(table)

    def action_close(self) -> None:
        self.dismiss(None)
