"""Two texts as one word-level diff: shared runs collapsed, differing words marked.

A flagged pair is mostly the same words; what decides it (new numbers, a swapped
noun, an added sentence) is the few that differ. The diff shows those in place,
with three shared words of context on each side, and folds every longer shared
run into a count (``…13 shared words…``), so a pair of 100-word texts fits the
first screen of an 80-column terminal. Words only the eval item has are written
``[-like this-]``, words only the match has ``{+like this+}`` (git's plain
word-diff markers, readable without colour), each also styled. A one-sided run
longer than ``LONG_RUN`` words (a pool document's surrounding text) shows its
first and last ``RUN_ENDS`` words and how many lie between; the full texts are
one key away in the app.

Words are runs of non-space characters compared exactly (case and punctuation
count); every word is shown through the one sanitiser (``visible``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from rich.text import Text

from engine.terminal_text import visible

EVAL_STYLE = "bold underline"
MATCH_STYLE = "bold reverse"
FOLD_STYLE = "italic"
# Shared words kept beside a change, and the fewest a fold hides (a shorter fold
# costs as much room as the words it would hide).
CONTEXT = 3
MIN_FOLD = 4
LONG_RUN = 40
RUN_ENDS = 10

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Counts:
    """How many words the two texts share, and how many only one side has."""

    shared: int
    eval_only: int
    match_only: int


def words(text: Any) -> list[str]:
    """Gives a text's words: its runs of non-space characters."""
    return _WORD.findall(text if isinstance(text, str) else "" if text is None else str(text))


def _ops(a: list[str], b: list[str]) -> Sequence[tuple[str, int, int, int, int]]:
    return SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


def _counts(wa: list[str], wb: list[str], ops: Sequence[tuple[str, int, int, int, int]]) -> Counts:
    shared = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
    return Counts(shared, len(wa) - shared, len(wb) - shared)


def counts(a: Any, b: Any) -> Counts:
    """Gives the shared and one-sided word counts of two texts."""
    wa, wb = words(a), words(b)
    return _counts(wa, wb, _ops(wa, wb))


def _fold(out: Text, n: int) -> None:
    out.append(f"…{n} shared word{'s' if n != 1 else ''}…", style=FOLD_STYLE)


def _shared(out: Text, run: list[str], first: bool, last: bool) -> None:
    """Adds a shared run: whole when short, else its context words and a fold."""
    keep_head = 0 if first else CONTEXT
    keep_tail = 0 if last else CONTEXT
    hidden = len(run) - keep_head - keep_tail
    if hidden < MIN_FOLD:
        _words_out(out, run, "")
        return
    parts: list[tuple[str, list[str]]] = []
    if keep_head:
        parts.append(("words", run[:keep_head]))
    parts.append(("fold", [str(hidden)]))
    if keep_tail:
        parts.append(("words", run[len(run) - keep_tail :]))
    for n, (kind, chunk) in enumerate(parts):
        if n:
            out.append(" ")
        if kind == "fold":
            _fold(out, hidden)
        else:
            _words_out(out, chunk, "")


def _words_out(out: Text, chunk: list[str], style: str) -> None:
    out.append(" ".join(visible(w) for w in chunk), style=style)


def _one_side(out: Text, run: list[str], side: str) -> None:
    """Adds a run only one text has, in its markers and style; a long run keeps its ends."""
    eval_side = side == "eval"
    opening, closing = ("[-", "-]") if eval_side else ("{+", "+}")
    style = EVAL_STYLE if eval_side else MATCH_STYLE
    out.append(opening, style=style)
    if len(run) > LONG_RUN:
        _words_out(out, run[:RUN_ENDS], style)
        more = len(run) - 2 * RUN_ENDS
        out.append(f" …{more} more words… ", style=FOLD_STYLE)
        _words_out(out, run[-RUN_ENDS:], style)
    else:
        _words_out(out, run, style)
    out.append(closing, style=style)


def render(a: Any, b: Any) -> Text:
    """Gives texts ``a`` (the eval item) and ``b`` (its match) as one word diff."""
    return diff(a, b)[0]


def diff(a: Any, b: Any) -> tuple[Text, Counts]:
    """Gives the word diff of ``a`` (the eval item) and ``b`` (its match) and their word
    counts, from one alignment of the two texts."""
    wa, wb = words(a), words(b)
    out = Text()
    ops = _ops(wa, wb)
    if all(tag == "equal" for tag, *_ in ops):
        out.append(f"the same {len(wa)} words, in the same order", style=FOLD_STYLE)
        return out, _counts(wa, wb, ops)
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        if n:
            out.append(" ")
        if tag == "equal":
            _shared(out, wa[i1:i2], first=n == 0, last=n == len(ops) - 1)
            continue
        if i2 > i1:
            _one_side(out, wa[i1:i2], "eval")
        if j2 > j1:
            if i2 > i1:
                out.append(" ")
            _one_side(out, wb[j1:j2], "match")
    return out, _counts(wa, wb, ops)


def legend(eval_name: str, match_name: str) -> Text:
    """Gives the line that says which marker is which text."""
    out = Text()
    _one_side(out, [eval_name], "eval")
    out.append(" ")
    _one_side(out, [match_name], "match")
    return out
