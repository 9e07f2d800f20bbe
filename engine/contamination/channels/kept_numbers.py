"""Which pool documents keep an eval item's numbers, fast enough to ask of every document.

A rephrased leak of a word problem keeps its numbers; the same-template
look-alikes around it (renumbered copies, other problems of the family) do
not. Sentence models, and the static model most of all, barely tell
numbers apart, so among dozens of look-alikes a leak can rank far below
them. This module finds, for each pool document, the eval items whose
numbers it keeps, without comparing it with every eval item: every eval
item is indexed by each *pair* of distinct numbers it states, and a
document looks up each pair of its own numbers. Only a document that keeps
at least two of an item's numbers can be found, and a pair of numbers is
rare enough that the look-ups stay few (a document with many numbers is
read for its first ``MAX_NUMBERS``).

How much of an item a document keeps is the weighted share of the item's
distinct numbers it states: a small counting number (an integer up to ten)
weighs ``SMALL_WEIGHT``, every other number 1, so keeping "3" and "7" of a
problem that also states "1,250" and "3.75" says little and keeping the
last two says a lot. Numbers are read as digits here (``1,250``, ``3.75``,
``$40``); number words are left to the triage, which reads every form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import combinations

import numpy as np

_DIGITS = re.compile(r"(?<![\d.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
# a run of digits, dots and commas: every number above lies inside one, and the
# character before a run is never a digit or a dot, so reading each run alone finds
# the same numbers as reading the whole text, several times faster (most runs are
# plain digits, taken as they are)
_RUNS = re.compile(r"[\d.][\d,.]*")
MAX_NUMBERS = 40  # numbers of one text read: pairs grow as their square
SMALL_WEIGHT = 0.3  # an integer up to ten says little on its own
SMALL_LIMIT = 10
LANE_NUMBERS = 2  # an item stating this many distinct numbers or more has a numbers lane


def _normal(found: str) -> str:
    """Gives one written number's normal form ("1,250" as "1250", "3.50" as "3.5")."""
    plain = found.replace(",", "")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    plain = plain.lstrip("0") or "0"
    if plain.startswith("."):
        plain = "0" + plain
    return plain


# written form -> normal form, for the forms met so far: a pool of millions of documents
# writes far fewer distinct numbers, so most look-ups skip the string work
_NORMAL: dict[str, str] = {}
_NORMAL_LIMIT = 1 << 16


def number_tokens(text: str) -> list[str]:
    """Gives the distinct numbers a text writes in digits, in order of first use, normalised
    ("1,250" and "1250" alike, "3.50" as "3.5", "4.0" as "4")."""
    found: list[str] = []
    for run in _RUNS.findall(text):
        if run.isdigit():
            found.append(run)
        else:
            found.extend(_DIGITS.findall(run))
    if not found:
        return []
    normal = _NORMAL
    plain: list[str] = []
    for written in found:
        form = normal.get(written)
        if form is None:
            form = _normal(written)
            if len(normal) < _NORMAL_LIMIT:
                normal[written] = form
        plain.append(form)
    # the first MAX_NUMBERS distinct ones, in order of first use
    return list(dict.fromkeys(plain))[:MAX_NUMBERS]


def weight(number: str) -> float:
    """Gives how much keeping a number says: a small counting integer weighs little."""
    if "." not in number and len(number) <= 2 and int(number) <= SMALL_LIMIT:
        return SMALL_WEIGHT
    return 1.0


class KeptNumbers:
    """The eval set's numbers, indexed by pairs, asked which items a document keeps."""

    def __init__(self, eval_texts: Iterable[str]) -> None:
        self.numbers: list[frozenset[str]] = []
        self.totals: list[float] = []
        self._pairs: dict[tuple[str, str], list[int]] = {}
        for e, text in enumerate(eval_texts):
            found = number_tokens(text)
            self.numbers.append(frozenset(found))
            self.totals.append(sum(weight(n) for n in found))
            for pair in combinations(sorted(found), 2):
                self._pairs.setdefault(pair, []).append(e)

    def __len__(self) -> int:
        return len(self.numbers)

    def share(self, e: int, text: str) -> float:
        """Gives the weighted share of eval item ``e``'s numbers that a text keeps."""
        if not self.totals[e]:
            return 0.0
        kept = self.numbers[e].intersection(number_tokens(text))
        return sum(weight(n) for n in kept) / self.totals[e]

    def keepers(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gives (eval items, documents, shares) for every document of ``texts`` that keeps
        at least two numbers of an eval item; documents are positions in ``texts``."""
        items: list[int] = []
        docs: list[int] = []
        shares: list[float] = []
        pairs = self._pairs
        for d, text in enumerate(texts):
            found = number_tokens(text)
            if len(found) < 2:
                continue
            hit: set[int] = set()
            for pair in combinations(sorted(found), 2):
                hit.update(pairs.get(pair, ()))
            if not hit:
                continue
            mine = set(found)
            for e in sorted(hit):
                kept = self.numbers[e] & mine
                items.append(e)
                docs.append(d)
                shares.append(sum(weight(n) for n in kept) / self.totals[e])
        return (
            np.asarray(items, dtype=np.int64),
            np.asarray(docs, dtype=np.int64),
            np.asarray(shares, dtype=np.float64),
        )

    def shares_of(self, items: np.ndarray, texts: list[str]) -> np.ndarray:
        """Gives the share each eval item of ``items`` keeps in the text beside it."""
        return np.asarray(
            [self.share(int(e), t) for e, t in zip(items, texts, strict=True)], dtype=np.float64
        )
