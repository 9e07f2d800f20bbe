"""The disputed items: the planned items of a queue whose independent decisions
disagree, most disputed first, with who said what. It is an adjudicator's work list:
Enter goes to an item (the queue then lists only the disputed ones, the way a band or
a cluster is shown), and the adjudicator's decision there resolves it."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from engine.terminal_text import visible
from reviewer.actions import bindings
from reviewer.bulk_screen import Prompt, move_cursor

# A title is cut to one line of the list.
_TITLE_CHARS = 120


def disputed_prompt(row: dict[str, Any]) -> Prompt:
    """Gives a disputed item's lines: its id and title, then each decision on it."""
    head = Text(visible(row["item_id"]), style="bold")
    title = " ".join(visible(row["title"]).split())[:_TITLE_CHARS]
    if title:
        head.append(f"  {title}")
    said = " · ".join(f"{who} {decision}" for who, decision in row["ratings"].items())
    ratings = Text(visible(f"    {said} ({len(row['ratings'])} of {row['k']} in)"))
    return Prompt().title(head).line(ratings)


class DisputedScreen(ModalScreen[str | None]):
    """Lists disputed items; gives the one chosen, or None."""

    SCOPE = "disputed"
    BINDINGS = bindings(SCOPE)
    AUTO_FOCUS = "#disputed-items"

    def __init__(self, title: str, rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.title_text, self.rows = title, rows

    def compose(self) -> ComposeResult:
        options = [Option(disputed_prompt(r), id=r["item_id"]) for r in self.rows]
        with Vertical(classes="dialog bulk"):
            yield Label(Text(visible(self.title_text), style="bold"))
            yield OptionList(*options, id="disputed-items")
            yield Static(Text(self._keys_line()), id="disputed-keys")

    def _keys_line(self) -> str:
        key_for = getattr(self.app, "key_for", None)
        close = key_for("disputed.close") if key_for is not None else "Esc"
        return f"Enter goes to the item (the queue then lists only these) · {close} closes"

    @on(OptionList.OptionSelected)
    def _go(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_move(self, step: int) -> None:
        move_cursor(self.query_one(OptionList), step)

    def action_close(self) -> None:
        self.dismiss(None)
