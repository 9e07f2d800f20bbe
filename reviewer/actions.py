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

from engine import item_query
from engine.roles import ADJUDICATION, FLAGGED_PAIRS, WEAK_CATEGORIES

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
    rank: int = 3  # how much the key line needs it: 0 always shown, higher dropped first


def _queue_rows() -> tuple[Action, ...]:
    keys = {
        FLAGGED_PAIRS: ("1", "review.queue_pairs", "Flagged pairs"),
        ADJUDICATION: ("2", "review.queue_adjudication", "Adjudication"),
        WEAK_CATEGORIES: ("3", "review.queue_weak", "Weak categories"),
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
STATUSES = item_query.STATUSES  # the engine's one list

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
        rank=1,
    ),
    Action(
        "review.reject",
        "x",
        "decide('reject')",
        "Reject",
        "review",
        title="Reject item",
        palette_help="sign a reject and move on",
        rank=1,
    ),
    Action(
        "review.accept_reason",
        "A",
        "decide_with_reason('accept')",
        "Accept, why",
        "review",
        show=False,  # in help and the palette; the key line keeps its room for a, x, space
        title="Accept item, with a reason",
        palette_help="pick the reason (1-9) and sign the accept",
    ),
    Action(
        "review.reject_reason",
        "X",
        "decide_with_reason('reject')",
        "Reject, why",
        "review",
        show=False,  # in help and the palette; the key line keeps its room for a, x, space
        title="Reject item, with a reason",
        palette_help="pick the reason (1-9) and sign the reject",
    ),
    Action(
        "review.skip",
        "space",
        "decide('skip')",
        "Skip",
        "review",
        title="Skip item",
        palette_help="sign a skip and move on",
        rank=1,
    ),
    Action(
        "review.undo",
        "u",
        "undo",
        "Undo",
        "review",
        title="Undo",
        palette_help="retract the decision",
        rank=2,
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
        rank=2,
    ),
    Action(
        "review.filter",
        "f",
        "filters",
        "Filter",
        "review",
        title="Filter",
        palette_help="status, decided by, tag/channel, score range",
        rank=2,
    ),
    Action("review.status", "s", "cycle_status", "Status filter", "review", show=False),
    Action("review.sort", "o", "cycle_sort", "Sort", "review", rank=4),
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
    Action(
        "review.texts",
        "w",
        "toggle_texts",
        "Whole texts",
        "review",
        show=False,
        title="Whole texts / word diff",
        palette_help="a flagged pair's two texts whole, side by side, or as one word diff",
    ),
    Action(
        "review.zoom",
        "z",
        "toggle_zoom",
        "Zoom detail",
        "review",
        show=False,
        title="Zoom the detail / list as before",
        palette_help="narrow the queue list to status and score, so the detail takes the width",
    ),
    Action("review.detail_down", "ctrl+d", "detail_scroll(1)", "Detail down", "review", show=False),
    Action("review.detail_up", "ctrl+u", "detail_scroll(-1)", "Detail up", "review", show=False),
    Action(
        "review.next_match",
        "full_stop",
        "detail_jump('next_match')",
        "Next match",
        "review",
        show=False,
        title="Next match",
        palette_help="scroll the detail to the item's next match",
    ),
    Action(
        "review.prev_match",
        "comma",
        "detail_jump('prev_match')",
        "Previous match",
        "review",
        show=False,
        title="Previous match",
        palette_help="scroll the detail to the item's previous match",
    ),
    Action(
        "review.history",
        "h",
        "detail_jump('history')",
        "History",
        "review",
        show=False,
        title="History",
        palette_help="scroll the detail to the item's decisions and notes",
    ),
    Action(
        "review.detail_top",
        "less_than_sign",
        "detail_jump('top')",
        "Detail top",
        "review",
        show=False,
        title="Top of the detail",
        palette_help="the item's header and first facts",
    ),
    Action(
        "review.detail_end",
        "greater_than_sign",
        "detail_jump('end')",
        "Detail end",
        "review",
        show=False,
        title="End of the detail",
        palette_help="the last lines of the item's detail",
    ),
    Action(
        "review.jobs",
        "b",
        "jobs",
        "Jobs",
        "review",
        title="Jobs",
        palette_help="start an engine run, see progress",
        rank=4,
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
        "review.next_undecided",
        "enter",
        "next_undecided",
        "Next undecided",
        "review",
        show=False,
        title="Next undecided item",
        palette_help="the next item to decide here, else the next queue you decide",
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
        "review.disputed",
        "d",
        "disputed",
        "Disputed",
        "review",
        show=False,
        title="Disputed items",
        palette_help="under a review plan: the items whose decisions disagree, most disputed "
        "first, to resolve",
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
    Action(
        "review.all_runs",
        "v",
        "toggle_runs",
        "All runs",
        "review",
        show=False,
        title="Every run's items / newest only",
        palette_help="one row per subject (its newest item) or every item of every run",
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
    *(
        Action(
            f"reason.pick_{n}",
            str(n),
            f"pick({n})",
            f"Reason {n}",
            "reason",
            show=False,
            palette_help="sign the decision with the reason listed under this number",
        )
        for n in range(1, 10)
    ),
    Action(
        "reason.none",
        "enter",
        "none",
        "No reason",
        "reason",
        palette_help="sign the decision without a reason (so does its own key again)",
    ),
    Action("reason.cancel", "escape", "cancel", "Cancel", "reason"),
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
    Action("disputed.down", "j,down", "move(1)", "Down", "disputed", show=False),
    Action("disputed.up", "k,up", "move(-1)", "Up", "disputed", show=False),
    Action("disputed.close", "escape", "close", "Close", "disputed"),
    # -- the app, on every screen (last: its keys close the key line) ----------
    Action(
        "app.help",
        "question_mark",
        "help",
        "Help",
        "app",
        title="Keys",
        palette_help="every key and its binding id",
        rank=0,
    ),
    Action("app.theme", "t", "cycle_theme", "Theme", "app", rank=4),
    Action("app.quit", "q", "quit", "Quit", "app", rank=2),
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


# Which keys are live together. On a screen, beside its own keys: those of the
# widgets that take focus on it, and the app's. Over a dialog the app's quit,
# theme and help keys give way to the dialog's (ReviewApp.check_action), so a
# dialog may reuse those keys; a dialog with a text field takes every printable
# key as text.
FOCUS_SCOPES: dict[str, tuple[str, ...]] = {"review": ("queue",)}
DIALOGS = frozenset(
    {"overrule", "note", "reason", "filter", "jobs", "signoff.confirm", "help", "bulk"}
)
OFF_OVER_DIALOGS = frozenset({"quit", "cycle_theme", "help"})
TEXT_FIELDS = frozenset({"note", "filter", "jobs", "signoff.confirm"})


@dataclass(frozen=True)
class Clash:
    """Two actions a keymap gives one key where both are live, or a key a text field eats."""

    binding_id: str  # the binding to rebind (one the keymap names)
    message: str


def _canonical_keys(keys: str) -> list[tuple[str, str]]:
    """Gives (key as Textual reads it, key as written) for each of a binding's keys."""
    # Textual's own reading: "?" is question_mark, ctrl+m is enter.
    from textual.keys import KEY_ALIASES, _character_to_key

    alias_of = {alias: key for key, aliases in KEY_ALIASES.items() for alias in aliases}
    out = []
    for written in (k.strip() for k in keys.split(",")):
        key = _character_to_key(written) if len(written) == 1 else written
        out.append((alias_of.get(key, key), written))
    return out


def _printable(key: str) -> bool:
    from textual.keys import REPLACED_KEYS, key_to_character

    character = key_to_character(REPLACED_KEYS.get(key, key))
    return character is not None and (character.isprintable() or key == "space")


def keymap_clashes(keymap: dict[str, str]) -> list[Clash]:
    """Gives every clash the keymap makes (none for the default keys), in table order."""
    keys_of = {a.id: _canonical_keys(keymap.get(a.id, a.key or "")) for a in keyed()}
    written_as = {(bid, key): written for bid, keys in keys_of.items() for key, written in keys}
    order = list(keymap)
    clashes: dict[tuple[str, str], Clash] = {}
    scopes = {a.scope for a in ACTIONS} - {"app", *(s for v in FOCUS_SCOPES.values() for s in v)}
    for scope in sorted(scopes):
        live = {scope, *FOCUS_SCOPES.get(scope, ())}
        group = [
            a
            for a in keyed()
            if a.scope in live
            or (a.scope == "app" and not (scope in DIALOGS and a.action in OFF_OVER_DIALOGS))
        ]
        holder: dict[str, Action] = {}
        for action in group:
            for key, written in keys_of[action.id]:
                if scope in TEXT_FIELDS and action.scope == scope and _printable(key):
                    clashes.setdefault(
                        (action.id, key),
                        Clash(
                            action.id,
                            f"key {written!r} types into the {scope} dialog's text field, so "
                            f"{action.id} ({action.description}) would never run there",
                        ),
                    )
                first = holder.setdefault(key, action)
                if first is action:
                    continue
                # Blame the binding the keymap moved (the later one when it moved both).
                a, b = sorted(
                    (first, action),
                    key=lambda x: order.index(x.id) if x.id in keymap else -1,
                )
                clashes.setdefault(
                    (b.id, key),
                    Clash(
                        b.id,
                        f"key {written_as[b.id, key]!r} is bound to both {b.id} "
                        f"({b.description}) and {a.id} ({a.description}) on the {scope} "
                        "screen; give one of them another key",
                    ),
                )
    return list(clashes.values())


# -- the key table, for `sealdesk review --help` and the docs -----------------------

# Where each scope's keys work, as people call it.
SCOPE_NAMES = {
    "review": "review",
    "queue": "queue list",
    "overrule": "overrule dialog",
    "note": "note dialog",
    "reason": "reason picker",
    "filter": "filter dialog",
    "bulk": "bulk decision",
    "jobs": "jobs panel",
    "signoff": "sign-off",
    "signoff.confirm": "sign-off confirmation",
    "help": "help",
    "calibration": "calibration",
    "rates": "category rates",
    "disputed": "disputed items",
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
    "full_stop": ".",
    "comma": ",",
    "less_than_sign": "<",
    "greater_than_sign": ">",
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
