"""Every action the review app offers, in one table: its id, default key, what it does, where.

Three things read this table and nothing else, so they cannot disagree:

- each screen's (and the queue list's) ``BINDINGS`` are built from its rows
  (``bindings(scope)``), so ``App.set_keymap`` rebinds a row by its id;
- the config file's ``[keymap]`` may name any id here that has a key
  (``binding_ids``), and the help screen lists every such row with the key
  the keymap binds it to now;
- the command palette offers every row with a palette title, on the screen
  it acts on, and runs it as its key would (``Screen.run_action``).

A row's ``scope`` names where it is bound: a screen's ``SCOPE`` attribute
(``review``, ``signoff``, ...), ``queue`` for the queue list, ``app`` for the
app itself. Ids and default keys are what users' keymaps and the tests
name: change neither.

This module imports no Textual at import time (``bindings`` does, when a
screen class is built), so the config loader can read the ids cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.binding import BindingType


@dataclass(frozen=True)
class Action:
    """One thing the app does: bound to a key, offered in the palette, or both."""

    id: str  # the binding id a keymap names; unique
    key: str | None  # default key(s), comma-separated; None: palette only
    action: str  # the Textual action run on the scope's screen
    description: str  # in the key line at the bottom and in help
    scope: str  # where it is bound (a screen's SCOPE, "queue", "app")
    show: bool = True  # shown in the key line
    priority: bool = False  # checked before the focused widget's own keys
    title: str | None = None  # its command palette title; None: not in the palette
    palette_help: str = ""  # the palette's second line


def _queue_rows() -> tuple[Action, ...]:
    keys = {
        "flagged_pairs": ("1", "review.queue_pairs", "Flagged pairs"),
        "adjudication": ("2", "review.queue_adjudication", "Adjudication"),
        "weak_categories": ("3", "review.queue_weak", "Weak categories"),
    }
    return tuple(
        Action(
            bid,
            key,
            f"queue('{queue}')",
            description,
            "review",
            show=False,
            title=f"Queue: {queue}",
            palette_help="show this backlog",
        )
        for queue, (key, bid, description) in keys.items()
    )


SORTS = (
    ("score_desc", "score ↓"),
    ("score_asc", "score ↑"),
    ("id_asc", "id ↑"),
    ("id_desc", "id ↓"),
)
STATUSES = ("undecided", "accept", "reject", "skip")

ACTIONS: tuple[Action, ...] = (
    # -- the review screen ------------------------------------------------------
    Action(
        "review.accept",
        "a",
        "decide('accept')",
        "Accept",
        "review",
        title="Accept item",
        palette_help="sign an accept and move on",
    ),
    Action(
        "review.reject",
        "x",
        "decide('reject')",
        "Reject",
        "review",
        title="Reject item",
        palette_help="sign a reject and move on",
    ),
    Action(
        "review.skip",
        "space",
        "decide('skip')",
        "Skip",
        "review",
        title="Skip item",
        palette_help="sign a skip and move on",
    ),
    Action(
        "review.undo",
        "u",
        "undo",
        "Undo",
        "review",
        title="Undo",
        palette_help="retract the decision",
    ),
    Action(
        "review.note",
        "n",
        "note",
        "Note",
        "review",
        title="Note",
        palette_help="sign a note on the item",
    ),
    Action(
        "review.search",
        "slash",
        "search",
        "Search",
        "review",
        title="Search",
        palette_help="free text over titles, ids, tags and payloads",
    ),
    Action(
        "review.filter",
        "f",
        "filters",
        "Filter",
        "review",
        title="Filter",
        palette_help="status, decided by, tag/channel, score range",
    ),
    Action("review.status", "s", "cycle_status", "Status filter", "review", show=False),
    Action("review.sort", "o", "cycle_sort", "Sort", "review"),
    *_queue_rows(),
    Action(
        "review.next_queue",
        "right_square_bracket",
        "step_queue(1)",
        "Next queue",
        "review",
        show=False,
    ),
    Action(
        "review.prev_queue",
        "left_square_bracket",
        "step_queue(-1)",
        "Previous queue",
        "review",
        show=False,
    ),
    Action("review.detail_down", "ctrl+d", "detail_scroll(1)", "Detail down", "review", show=False),
    Action("review.detail_up", "ctrl+u", "detail_scroll(-1)", "Detail up", "review", show=False),
    Action(
        "review.jobs",
        "b",
        "jobs",
        "Jobs",
        "review",
        title="Jobs",
        palette_help="start an engine run, see progress",
    ),
    Action(
        "review.signoff",
        "S",
        "signoff",
        "Sign-off",
        "review",
        title="Sign-off",
        palette_help="the lead's summary of everything, then sign it off",
    ),
    Action(
        "review.resolve_exam",
        "R",
        "resolve_exam",
        "Resolve exam",
        "review",
        show=False,
        title="Resolve the exam",
        palette_help="offer exam resolve as a background job once its candidates are decided",
    ),
    Action(
        "review.mark",
        "m",
        "mark",
        "Mark",
        "review",
        show=False,
        title="Mark item",
        palette_help="mark or unmark the highlighted item for one bulk decision",
    ),
    Action(
        "review.mark_shown",
        "M",
        "mark_shown",
        "Mark all shown",
        "review",
        show=False,
        title="Mark every item shown",
        palette_help="mark every item the filter shows (again: unmark them)",
    ),
    Action(
        "review.decide_marked",
        "D",
        "decide_marked",
        "Decide marked",
        "review",
        show=False,
        title="Decide the marked items",
        palette_help="show every marked item, then one key decides them all",
    ),
    Action(
        "review.cluster",
        "c",
        "cluster",
        "Cluster",
        "review",
        show=False,
        title="Duplicate cluster",
        palette_help="the highlighted item's cluster: visit each member or decide them all",
    ),
    Action(
        "review.show_marked",
        None,
        "show_marked",
        "Show marked only",
        "review",
        title="Show the marked items only",
        palette_help="filter the queue to what is marked",
    ),
    Action(
        "review.clear_marks",
        None,
        "clear_marks",
        "Clear marks",
        "review",
        title="Clear the marks",
        palette_help="unmark every item of this queue",
    ),
    Action(
        "review.calibration",
        "C",
        "calibration",
        "Calibration",
        "review",
        show=False,
        title="Calibration",
        palette_help="flagged pairs: each channel's score histogram against its threshold, "
        "Enter lists the borderline band; weak categories: recall and FPR against the policy",
    ),
    Action("review.clear_search", "escape", "clear_search", "Clear search", "review", show=False),
    Action(
        "review.clear_filters",
        None,
        "clear_filters",
        "Clear filters",
        "review",
        title="Clear filters",
        palette_help="show the whole queue",
    ),
    *(
        Action(
            f"review.sort_{sort}",
            None,
            f"set_sort('{sort}')",
            f"Sort by {label}",
            "review",
            title=f"Sort by {label}",
            palette_help="order the queue",
        )
        for sort, label in SORTS
    ),
    *(
        Action(
            f"review.show_{status}",
            None,
            f"show_status('{status}')",
            f"Show status: {status}",
            "review",
            title=f"Show status: {status}",
            palette_help="filter by effective decision",
        )
        for status in STATUSES
    ),
    # -- the queue list (a widget on the review screen) ------------------------
    Action("queue.down", "j,down", "cursor_down", "Down", "queue", show=False),
    Action("queue.up", "k,up", "cursor_up", "Up", "queue", show=False),
    Action("queue.page_down", "pagedown", "page_down_rows", "Page down", "queue", show=False),
    Action("queue.page_up", "pageup", "page_up_rows", "Page up", "queue", show=False),
    Action("queue.first", "g,home", "first", "First", "queue", show=False),
    Action("queue.last", "G,end", "last", "Last", "queue", show=False),
    # -- dialogs over the review -----------------------------------------------
    Action("overrule.yes", "y", "answer(True)", "Overrule", "overrule"),
    Action("overrule.no", "n,escape", "answer(False)", "Cancel", "overrule"),
    Action("note.cancel", "escape", "cancel", "Cancel", "note"),
    Action("filter.cancel", "escape", "cancel", "Cancel", "filter"),
    Action("filter.clear", "ctrl+r", "clear", "Clear all", "filter"),
    Action("bulk.accept", "a", "decide('accept')", "Accept all", "bulk"),
    Action("bulk.reject", "x", "decide('reject')", "Reject all", "bulk"),
    Action("bulk.skip", "space", "decide('skip')", "Skip all", "bulk"),
    Action("bulk.down", "j", "move(1)", "Down", "bulk", show=False),
    Action("bulk.up", "k", "move(-1)", "Up", "bulk", show=False),
    Action("bulk.cancel", "escape", "cancel", "Cancel", "bulk"),
    Action("jobs.close", "escape", "close", "Close", "jobs"),
    Action("jobs.cancel", "ctrl+k", "cancel_newest", "Cancel newest running job", "jobs"),
    # -- the lead's sign-off -----------------------------------------------------
    Action(
        "signoff.sign",
        "s",
        "sign(False)",
        "Sign off",
        "signoff",
        title="Sign off",
        palette_help="sign the tree head as lead (refused while items are undecided)",
    ),
    Action(
        "signoff.sign_exceptions",
        "e",
        "sign(True)",
        "Sign with exceptions",
        "signoff",
        title="Sign off with exceptions",
        palette_help="sign although items are undecided; each is listed in the record",
    ),
    Action(
        "signoff.refresh",
        "r",
        "reread",
        "Read again",
        "signoff",
        title="Read the summary again",
        palette_help="counts, status, tree head",
    ),
    Action(
        "signoff.close",
        "escape",
        "close",
        "Back to review",
        "signoff",
        title="Back to review",
        palette_help="close the sign-off screen",
    ),
    Action("signoff.confirm_cancel", "escape", "cancel", "Cancel", "signoff.confirm"),
    Action("help.close", "escape,question_mark,q", "close", "Close", "help"),
    # -- the calibration view ----------------------------------------------------
    Action("calibration.next", "j,down", "step(1)", "Channel", "calibration"),
    Action("calibration.prev", "k,up", "step(-1)", "Previous channel", "calibration", show=False),
    Action("calibration.band", "enter", "band", "Band's items", "calibration"),
    Action("calibration.wider", "plus", "widen(1)", "Wider", "calibration"),
    Action("calibration.narrower", "minus", "widen(-1)", "Narrower", "calibration", show=False),
    Action("calibration.close", "escape", "close", "Back", "calibration"),
    Action("rates.close", "escape", "close", "Back", "rates"),
    # -- the app, on every screen (last: its keys close the key line) ----------
    Action(
        "app.help",
        "question_mark",
        "help",
        "Help",
        "app",
        title="Keys",
        palette_help="every key and its binding id",
    ),
    Action("app.theme", "t", "cycle_theme", "Theme", "app"),
    Action("app.quit", "q", "quit", "Quit", "app"),
    Action("app.palette", "ctrl+p", "command_palette", "Palette", "app", show=False, priority=True),
)


def bindings(scope: str) -> list[BindingType]:
    """Gives the Textual bindings of one scope's keyed actions, in table order."""
    from textual.binding import Binding

    return [
        Binding(a.key, a.action, a.description, show=a.show, priority=a.priority, id=a.id)
        for a in ACTIONS
        if a.scope == scope and a.key is not None
    ]


def keyed() -> list[Action]:
    """Gives every action bound to a key, in table order (what help lists)."""
    return [a for a in ACTIONS if a.key is not None]


def binding_ids() -> set[str]:
    """Gives every binding id the keymap may name."""
    return {a.id for a in keyed()}


def in_palette(scope: str) -> list[Action]:
    """Gives the actions of one scope the command palette offers, in table order."""
    return [a for a in ACTIONS if a.scope == scope and a.title is not None]


# -- the key table, for `sealdesk review --help` and the docs -----------------------

# Where each scope's keys work, as people call it.
SCOPE_NAMES = {
    "review": "review",
    "queue": "queue list",
    "overrule": "overrule dialog",
    "note": "note dialog",
    "filter": "filter dialog",
    "bulk": "bulk decision",
    "jobs": "jobs panel",
    "signoff": "sign-off",
    "signoff.confirm": "sign-off confirmation",
    "help": "help",
    "calibration": "calibration",
    "rates": "category rates",
    "app": "everywhere",
}

# Textual's key names as a keyboard labels them.
_KEY_LABELS = {
    "slash": "/",
    "space": "space",
    "escape": "Esc",
    "enter": "Enter",
    "question_mark": "?",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "pagedown": "PgDn",
    "pageup": "PgUp",
    "home": "Home",
    "end": "End",
    "plus": "+",
    "minus": "-",
    "up": "↑",
    "down": "↓",
}


def key_label(key: str) -> str:
    """Gives one Textual key name as a keyboard labels it (``ctrl+d`` -> ``Ctrl+D``)."""
    if key.startswith("ctrl+"):
        return "Ctrl+" + key_label(key[len("ctrl+") :]).upper()
    return _KEY_LABELS.get(key, key)


@dataclass(frozen=True)
class KeyRow:
    """One row of the key table: where a key works, its keys as labelled, the action."""

    where: str
    keys: tuple[str, ...]
    description: str
    palette_help: str
    binding_id: str


def key_rows() -> list[KeyRow]:
    """Gives a row per keyed action, in table order: the key table of ``review --help``
    and of the docs."""
    return [
        KeyRow(
            SCOPE_NAMES[a.scope],
            tuple(key_label(k.strip()) for k in (a.key or "").split(",")),
            a.description,
            a.palette_help,
            a.id,
        )
        for a in keyed()
    ]


def key_table_markdown() -> str:
    """Gives the key table as Markdown, the docs' table between its generated markers."""
    lines = ["| where | key | does | binding id |", "|---|---|---|---|"]
    for row in key_rows():
        keys = " ".join(f"`{k}`" for k in row.keys)
        does = f"{row.description}: {row.palette_help}" if row.palette_help else row.description
        lines.append(f"| {row.where} | {keys} | {does} | `{row.binding_id}` |")
    return "\n".join(lines) + "\n"


def key_table_text() -> str:
    """Gives the key table as plain text, a block per screen, for ``review --help``."""
    out: list[str] = []
    where = None
    for row in key_rows():
        if row.where != where:
            out.append(f"{row.where}:")
            where = row.where
        out.append(f"  {' '.join(row.keys):<16}{row.description:<28}{row.binding_id}")
    return "\n".join(out)
