"""The numbers a text states, and how many of one text's numbers another keeps.

A rephrased leak keeps the numbers of the item it copies, whatever the
words around them; a template sibling keeps the story and changes them.
So the numbers of both texts, and the share of the eval item's numbers the
match keeps, are the best single hint of which of the two a match is.

A number is read in any of the forms a word problem writes it: digits with
a decimal point or thousands separators (``1,200``, ``3.75``, ``.5``),
negatives (``-4``, ``−4``, ``minus 4``), fractions (``3/4``, ``2 1/2``),
clock times (``3:30``), a currency sign or a unit after it (``$34``,
``12 km``, ``45%``), a scale word (``1.5 million``, ``3 dozen``), and number
words: cardinals (``three``, ``twenty-five``, ``one hundred and five``,
``a thousand``), ``a dozen``, ``half``, ``a third``, ``two thirds``,
``three quarters``, ``one and a half``, and the multipliers ``twice``,
``thrice``, ``double``, ``triple``, ``quadruple``. Ordinals (``third day``,
``21st``) are positions, not quantities, and are left out.

Two numbers are the same when their values are equal and their units agree
(the same unit, or one of them has none: a rephrasing may drop "minutes"), or
when one is a percentage, an amount in cents or a duration in minutes and the
other is that value over 100 or 60 in the larger unit (``50%`` and ``half``,
``150 cents`` and ``$1.50``, ``90 minutes`` and ``1.5 hours``, ``30 minutes``
and ``half an hour``, but not ``30 minutes`` and a bare ``half``).

Not every kept number says as much. A sibling of "3 apples, 7 pears, 8 plums"
keeps a 3 and an 8 by chance far more often than a sibling of "$1,250 at
3.75%" keeps either number: small counting numbers (zero to ten, twelve, and
the common fractions ``half``, ``a third``, ``a quarter``) and values that many
documents state are weak evidence. ``NumberRarity`` weighs each number by how
few documents of a collection state its value (``weight``), and
``number_overlap`` reports the share of the eval text's number *weight* the
match keeps beside the plain share.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

_ONES = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALES = {"thousand": 1000, "million": 10**6, "billion": 10**9}
_MULTIPLIERS = {"twice": 2, "thrice": 3, "double": 2, "triple": 3, "quadruple": 4}
# Denominators of word fractions ("a third", "two fifths"); "second" is never one.
_PARTS = {
    "half": 2,
    "halves": 2,
    "third": 3,
    "thirds": 3,
    "quarter": 4,
    "quarters": 4,
    "fourth": 4,
    "fourths": 4,
    "fifth": 5,
    "fifths": 5,
    "sixth": 6,
    "sixths": 6,
    "eighth": 8,
    "eighths": 8,
    "tenth": 10,
    "tenths": 10,
}
# Unit words as a problem writes them, to the one name a reader is shown.
_UNITS = {
    "%": "%",
    "percent": "%",
    "per cent": "%",
    "cent": "cents",
    "cents": "cents",
    "dollar": "$",
    "dollars": "$",
    "euro": "€",
    "euros": "€",
    "pound": "lb",
    "pounds": "lb",
    "minute": "min",
    "minutes": "min",
    "min": "min",
    "mins": "min",
    "hour": "h",
    "hours": "h",
    "hr": "h",
    "hrs": "h",
    "second": "s",
    "seconds": "s",
    "day": "days",
    "days": "days",
    "week": "weeks",
    "weeks": "weeks",
    "month": "months",
    "months": "months",
    "year": "years",
    "years": "years",
    "km": "km",
    "kilometre": "km",
    "kilometres": "km",
    "kilometer": "km",
    "kilometers": "km",
    "m": "m",
    "metre": "m",
    "metres": "m",
    "meter": "m",
    "meters": "m",
    "cm": "cm",
    "mm": "mm",
    "mile": "miles",
    "miles": "miles",
    "foot": "ft",
    "feet": "ft",
    "inch": "in",
    "inches": "in",
    "kg": "kg",
    "kilogram": "kg",
    "kilograms": "kg",
    "g": "g",
    "gram": "g",
    "grams": "g",
    "lb": "lb",
    "lbs": "lb",
    "ounce": "oz",
    "ounces": "oz",
    "oz": "oz",
    "l": "l",
    "litre": "l",
    "litres": "l",
    "liter": "l",
    "liters": "l",
    "ml": "ml",
    "gallon": "gal",
    "gallons": "gal",
    "degree": "°",
    "degrees": "°",
    "°": "°",
    "°c": "°C",
    "°f": "°F",
    "mph": "mph",
    "km/h": "km/h",
}
# Units whose amounts are also written in a larger unit: 50% is half, 150 cents
# are $1.50, 90 minutes are 1.5 hours.
_ALSO_OVER = {"%": 100, "cents": 100, "min": 60}
# ...and the unit the amount has in that larger unit: 50% is a bare half, 150 cents are
# $1.50, 90 minutes are 1.5 hours (not a bare 1.5: "30 minutes" is not "half").
_OVER_UNIT: dict[str, str | None] = {"%": None, "cents": "$", "min": "h"}
_CURRENCY = {"$": "$", "€": "€", "£": "£", "¥": "¥"}

_TOKEN = re.compile(
    r"(?P<time>\d{1,2}:\d{2})(?!\d)"
    r"|(?P<digits>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
    r"|(?P<word>[A-Za-z]+(?:-[A-Za-z]+)*)"
    r"|(?P<sign>[-−–$€£¥%°/])"
    r"|(?P<other>\S)",
)


@dataclass(frozen=True)
class Quantity:
    """One number as a text states it: its value, unit, the words it was written in, where."""

    value: Fraction
    unit: str | None
    text: str
    start: int
    end: int

    def keys(self) -> frozenset[Fraction]:
        """Gives the values this number is the same as (its own, and in a larger unit)."""
        keys = {self.value}
        over = _ALSO_OVER.get(self.unit or "")
        if over:
            keys.add(self.value / over)
        return frozenset(keys)

    def same_as(self, other: Quantity) -> bool:
        """Says whether two numbers are the same: equal values with units that agree (one
        may have none), or one is the other written in the larger unit."""
        if self.value == other.value and (
            self.unit is None or other.unit is None or self.unit == other.unit
        ):
            return True
        for small, large in ((self, other), (other, self)):
            over = _ALSO_OVER.get(small.unit or "")
            if (
                over
                and small.value / over == large.value
                and large.unit == _OVER_UNIT[small.unit or ""]
            ):
                return True
        return False

    def shown(self) -> str:
        """Gives the number as a reader is shown it: the words as written."""
        return self.text


def value_text(value: Fraction) -> str:
    """Gives a value in plain decimal notation: 1200, 0.5, 0.3333, -4."""
    if value.denominator == 1:
        return str(value.numerator)
    text = f"{float(value):.4f}".rstrip("0").rstrip(".")
    return text


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    start: int
    end: int


def _tokens(text: str) -> list[_Tok]:
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        out.append(_Tok(kind, m.group(), m.start(), m.end()))
    return out


def _digits_value(tok: _Tok) -> Fraction:
    return Fraction(tok.text.replace(",", ""))


def _adjacent(text: str, a: _Tok, b: _Tok) -> bool:
    """Says whether b follows a with nothing between them (no space)."""
    return a.end == b.start


def _spaced(text: str, a: _Tok, b: _Tok) -> bool:
    """Says whether only spaces (no line break, no punctuation) separate a from b."""
    gap = text[a.end : b.start]
    return gap == "" or (gap.strip(" \t") == "" and len(gap) <= 3)


class _Reader:
    """Walks the tokens of one text and collects its quantities."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.found: list[Quantity] = []

    def word(self, k: int) -> str | None:
        if 0 <= k < len(self.toks) and self.toks[k].kind == "word":
            return self.toks[k].text.lower()
        return None

    def linked(self, k: int) -> bool:
        """Says whether token k+1 follows token k after at most spaces."""
        return k + 1 < len(self.toks) and _spaced(self.text, self.toks[k], self.toks[k + 1])

    def run(self) -> list[Quantity]:
        while self.i < len(self.toks):
            start = self.i
            if not (self._digits() or self._words()):
                self.i = start + 1
        return self.found

    # -- digits -------------------------------------------------------------
    def _digits(self) -> bool:
        toks, k = self.toks, self.i
        tok = toks[k]
        if tok.kind == "time":
            h, m = tok.text.split(":")
            self._add(Fraction(int(h) * 60 + int(m), 60), "h", k, k, unit_from_next=False)
            return True
        if tok.kind != "digits":
            return False
        before = toks[k - 1] if k > 0 else None
        if before is not None and before.kind == "word" and _adjacent(self.text, before, tok):
            return False  # part of a code or a name: "A4", "B12"
        after = toks[k + 1] if k + 1 < len(toks) else None
        if after is not None and after.kind == "word" and _adjacent(self.text, tok, after):
            unit = _UNITS.get(after.text.lower())
            if unit is None:
                self.i = k + 2
                return True  # an ordinal or a code: "21st", "3rd", "4x4"
        value = _digits_value(tok)
        first = k
        negative = False
        if before is not None and before.kind == "sign" and before.text in "-−–":
            two_back = toks[k - 2] if k > 1 else None
            if _adjacent(self.text, before, tok) and (
                two_back is None or not _adjacent(self.text, two_back, before)
            ):
                negative, first = True, k - 1
        elif self.word(k - 1) in ("minus", "negative") and self.linked(k - 1):
            negative, first = True, k - 1
        currency = None
        if before is not None and before.text in _CURRENCY and _adjacent(self.text, before, tok):
            currency, first = _CURRENCY[before.text], k - 1
            if k > 1 and toks[k - 2].text in "-−–" and _adjacent(self.text, toks[k - 2], before):
                negative, first = True, k - 2
        last = k
        # a fraction "3/4" or a mixed number "2 1/2"
        if (
            last + 2 < len(toks)
            and toks[last + 1].text == "/"
            and toks[last + 2].kind == "digits"
            and _adjacent(self.text, tok, toks[last + 1])
            and _adjacent(self.text, toks[last + 1], toks[last + 2])
            and "." not in tok.text
            and "." not in toks[last + 2].text
            and int(toks[last + 2].text.replace(",", "")) != 0
        ):
            value = value / _digits_value(toks[last + 2])
            last += 2
            prev = self.found[-1] if self.found else None
            if (
                prev is not None
                and prev.value.denominator == 1
                and prev.unit is None
                and prev.end == tok.start - 1
                and self.text[prev.end] == " "
            ):
                # "2 1/2": fold the whole part read just before into one number
                self.found.pop()
                value += prev.value
                first_start = prev.start
                self.i = last
                self._add_span(value, None, first_start, toks[last].end, last)
                return True
        # a scale word after the digits: "1.5 million", "3 dozen"
        nxt = self.word(last + 1)
        if nxt is not None and self.linked(last):
            if nxt in _SCALES or nxt == "hundred":
                value *= _SCALES.get(nxt, 100)
                last += 1
            elif nxt in ("dozen", "dozens"):
                value *= 12
                last += 1
        if negative:
            value = -value
        self._add(value, currency, first, last, unit_from_next=currency is None)
        return True

    # -- words --------------------------------------------------------------
    def _words(self) -> bool:
        k = self.i
        w = self.word(k)
        if w is None:
            return False
        if w in _MULTIPLIERS:
            self._add(Fraction(_MULTIPLIERS[w]), None, k, k, unit_from_next=False)
            return True
        negative = False
        first = k
        if w in ("minus", "negative") and self.linked(k) and self._cardinal(k + 1) is not None:
            negative, k = True, k + 1
            w = self.word(k)
        # "a" / "an" before a scale, "dozen" or a fraction word: one of it
        if w in ("a", "an"):
            nxt = self.word(k + 1) if self.linked(k) else None
            if nxt in ("hundred", "thousand", "million", "billion", "dozen"):
                value, last = self._scaled(Fraction(1), k + 1)
                self._add(-value if negative else value, None, first, last, unit_from_next=True)
                return True
            if nxt in _PARTS and not nxt.endswith("s"):
                # "a third", "a quarter", "a half"; a bare "third" is an ordinal
                value, last = self._dozen_after(Fraction(1, _PARTS[nxt]), k + 1)
                self._add(value, None, first, last, unit_from_next=True)
                return True
            return False
        if w == "one" and not self._one_counts(k):
            return False
        if w == "half":
            value, last = self._dozen_after(Fraction(1, 2), k)
            self._add(value, None, first, last, unit_from_next=True)
            return True
        got = self._cardinal(k)
        if got is None:
            return False
        value, last = got
        # "one and a half", "two and a quarter"
        if (
            self.word(last + 1) == "and"
            and self.linked(last)
            and self.word(last + 2) in ("a", "an")
            and self.linked(last + 1)
            and self.word(last + 3) in ("half", "quarter", "third")
            and self.linked(last + 2)
        ):
            value += Fraction(1, _PARTS[self.word(last + 3) or "half"])
            last += 3
        # "two thirds", "three quarters", "one fifth"
        elif (
            self.word(last + 1) in _PARTS
            and self.linked(last)
            and self.word(last + 1) not in ("half", "halves")
            and value.denominator == 1
            and 1 <= value <= 20
            and (value == 1) != (self.word(last + 1) or "").endswith("s")
        ):
            value = value / _PARTS[self.word(last + 1) or ""]
            last += 1
        if negative:
            value = -value
        self._add(value, None, first, last, unit_from_next=True)
        return True

    def _cardinal(self, k: int) -> tuple[Fraction, int] | None:
        """Gives (value, last token) of the number words starting at k, or None."""
        w = self.word(k)
        if w is None:
            return None
        parts = w.split("-")
        if len(parts) > 1 and parts[-1] not in _ONES:
            # "fifty-question", "two-point", "twenty-five-page": the number before the noun
            head = self._small_words(parts[:-1])
            return None if head is None else (Fraction(head), k)
        if not all(p in _ONES or p in _TENS for p in parts) or len(parts) > 2:
            return None
        if len(parts) == 2 and not (parts[0] in _TENS and _ONES.get(parts[1], 0) in range(1, 10)):
            return None
        total = 0
        current = sum(_ONES.get(p, 0) + _TENS.get(p, 0) for p in parts)
        last = k
        while True:
            nxt = self.word(last + 1)
            if nxt is None or not self.linked(last):
                break
            if nxt == "hundred" and current < 100 and current > 0:
                current *= 100
                last += 1
            elif nxt in _SCALES and current > 0:
                total += current * _SCALES[nxt]
                current = 0
                last += 1
            elif nxt == "and" and (current >= 100 or total) and self._small(last + 2):
                last += 1  # "one hundred and five": the next words add on
            elif self._small(last + 1) and (current >= 100 or (total and current == 0)):
                small = self._small(last + 1)
                assert small is not None
                current += small
                last += 1
            elif current in _TENS.values() and _ONES.get(nxt, 0) in range(1, 10) and nxt != "zero":
                current += _ONES[nxt]  # "twenty five"
                last += 1
            else:
                break
        value, last = self._dozen_after(Fraction(total + current), last)
        return value, last

    def _one_counts(self, k: int) -> bool:
        """Says whether the word "one" at k is a quantity: only as part of a larger number
        or a fraction ("one hundred", "one third", "one and a half"). Alone it is mostly a
        pronoun ("one of them", "each one"), which a rephrasing keeps or drops at will."""
        nxt = self.word(k + 1) if self.linked(k) else None
        if nxt in ("hundred", "thousand", "million", "billion", "dozen") or nxt in _PARTS:
            return True
        return nxt == "and" and self.word(k + 2) in ("a", "an")

    @staticmethod
    def _small_words(parts: list[str]) -> int | None:
        """Gives the value of a hyphen-joined number under 100 ("fifty", "twenty-five")."""
        if len(parts) == 1 and parts[0] in _ONES and parts[0] not in ("zero", "one"):
            return _ONES[parts[0]]
        if len(parts) == 1 and parts[0] in _TENS:
            return _TENS[parts[0]]
        if len(parts) == 2 and parts[0] in _TENS and _ONES.get(parts[1], 0) in range(1, 10):
            return _TENS[parts[0]] + _ONES[parts[1]]
        return None

    def _small(self, k: int) -> int | None:
        """Gives the value of a one-word number below 100 at k ("five", "forty-two")."""
        w = self.word(k)
        if w is None:
            return None
        parts = w.split("-")
        if len(parts) == 1 and (w in _ONES or w in _TENS) and w != "zero":
            return _ONES.get(w, 0) + _TENS.get(w, 0)
        if len(parts) == 2 and parts[0] in _TENS and _ONES.get(parts[1], 0) in range(1, 10):
            return _TENS[parts[0]] + _ONES[parts[1]]
        return None

    def _scaled(self, value: Fraction, k: int) -> tuple[Fraction, int]:
        """Gives value times the scale word at k ("hundred", "thousand", "dozen")."""
        w = self.word(k) or ""
        if w == "dozen":
            return value * 12, k
        factor = 100 if w == "hundred" else _SCALES[w]
        return value * factor, k

    def _dozen_after(self, value: Fraction, last: int) -> tuple[Fraction, int]:
        """Gives value times a dozen when "dozen" (or "a dozen") follows: "half a dozen"."""
        if self.word(last + 1) == "dozen" and self.linked(last):
            return value * 12, last + 1
        if (
            self.word(last + 1) == "a"
            and self.word(last + 2) == "dozen"
            and self.linked(last)
            and self.linked(last + 1)
        ):
            return value * 12, last + 2
        return value, last

    # -- recording ----------------------------------------------------------
    def _add(
        self, value: Fraction, unit: str | None, first: int, last: int, *, unit_from_next: bool
    ):
        end_tok = last
        if unit is None and unit_from_next:
            unit, end_tok = self._unit_after(last)
        self._add_span(value, unit, self.toks[first].start, self.toks[end_tok].end, last)

    def _add_span(self, value: Fraction, unit: str | None, start: int, end: int, last: int) -> None:
        self.found.append(Quantity(value, unit, self.text[start:end], start, end))
        self.i = last + 1

    def _unit_after(self, last: int) -> tuple[str | None, int]:
        """Gives the unit written right after a number and the token it ends at."""
        k = last + 1
        if k >= len(self.toks):
            return None, last
        tok = self.toks[k]
        if not _spaced(self.text, self.toks[last], tok):
            return None, last
        if tok.text in ("%", "°"):
            if tok.text == "°" and k + 1 < len(self.toks):
                nxt = self.toks[k + 1]
                if nxt.text.lower() in ("c", "f") and _adjacent(self.text, tok, nxt):
                    return f"°{nxt.text.upper()}", k + 1
            return _UNITS[tok.text], k
        word = self.word(k)
        if word is None:
            return None, last
        if word == "per" and self.word(k + 1) == "cent" and self.linked(k):
            return "%", k + 1
        if (
            word in ("a", "an")
            and self.word(last) in ("half", "quarter", "third")
            and self.linked(k)
            and self.word(k + 1) in ("hour", "day", "week", "month", "year", "minute")
        ):
            return _UNITS[self.word(k + 1) or ""], k + 1  # "half an hour", "half a day"
        unit = _UNITS.get(word)
        if unit is None:
            return None, last
        # "per hour": a rate's unit is not the number's ("5 dollars per hour" is $)
        return unit, k


def quantities(text: str) -> list[Quantity]:
    """Gives every number the text states, in order, with its value and unit."""
    return _Reader(text).run()


# Counting numbers a word problem states in passing ("3 friends", "twice", "half"): a
# sibling shares them by chance, so they never weigh more than SMALL_WEIGHT.
SMALL_VALUES = frozenset(
    [Fraction(n) for n in (*range(11), 12)]
    + [Fraction(1, 2), Fraction(1, 3), Fraction(2, 3), Fraction(1, 4), Fraction(3, 4)]
)
SMALL_WEIGHT = 0.25
# Fewer documents than this give no document frequency worth the name: every value that
# is not small weighs 1.
MIN_DOCS = 20


@dataclass(frozen=True)
class NumberRarity:
    """How many of ``docs`` documents state each number value (its document frequency)."""

    docs: int
    counts: dict[Fraction, int]

    @classmethod
    def of_texts(cls, texts: Iterable[str], only: set[Fraction] | None = None) -> NumberRarity:
        """Gives the document frequency of every value the texts state (of ``only``'s, when
        given: a bounded count over, say, the values an eval set states)."""
        counts: Counter[Fraction] = Counter()
        docs = 0
        for text in texts:
            docs += 1
            values = {v for q in quantities(text) for v in q.keys()}
            counts.update(values if only is None else values & only)
        return cls(docs, dict(counts))

    def weight(self, q: Quantity) -> float:
        """Gives how much keeping this number says, from 0 to 1: an inverse document
        frequency, log(docs / df) / log(docs), at most SMALL_WEIGHT for a small counting
        number; 1 for other numbers when there are fewer than MIN_DOCS documents."""
        small = q.value in SMALL_VALUES
        if self.docs < MIN_DOCS:
            return SMALL_WEIGHT if small else 1.0
        df = max(1, self.counts.get(q.value, 0))
        idf = math.log(self.docs / df) / math.log(self.docs)
        return max(0.01, min(idf, SMALL_WEIGHT if small else 1.0))


NO_RARITY = NumberRarity(0, {})


@dataclass(frozen=True)
class NumberOverlap:
    """The numbers of an eval text and of its match, and which of them both state."""

    eval: tuple[Quantity, ...]
    match: tuple[Quantity, ...]
    shared: int  # eval numbers the match also states (each match number used once)
    kept: float | None  # shared / eval numbers; None when the eval text states none
    weights: tuple[float, ...] = ()  # each eval number's weight (NumberRarity.weight)
    kept_mask: tuple[bool, ...] = ()  # which eval numbers the match keeps

    @property
    def weighted_kept(self) -> float | None:
        """Gives the share of the eval numbers' weight that the match keeps."""
        total = sum(self.weights)
        if not self.eval or total <= 0:
            return self.kept
        return sum(w for w, k in zip(self.weights, self.kept_mask, strict=True) if k) / total

    @property
    def kept_weight(self) -> float:
        """Gives the summed weight of the eval numbers the match keeps."""
        return sum(w for w, k in zip(self.weights, self.kept_mask, strict=True) if k)

    def to_json(self) -> dict[str, Any]:
        """Gives the payload's account: both sides as written, the count and share kept,
        and the share of the eval numbers' weight kept."""
        weighted = self.weighted_kept
        return {
            "eval": [q.shown() for q in self.eval],
            "match": [q.shown() for q in self.match],
            "shared": self.shared,
            "kept": None if self.kept is None else round(self.kept, 4),
            "weights": [round(w, 4) for w in self.weights],
            "weighted_kept": None if weighted is None else round(weighted, 4),
        }


def _pairing(a: list[Quantity], b: list[Quantity], order: list[int]) -> set[int]:
    """Gives which of a's numbers a largest one-to-one pairing with equal b's pairs, a's
    taken in ``order`` (heaviest first, so the pairing also keeps the most weight)."""
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j, other in enumerate(b):
            if j in seen or not a[i].same_as(other):
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in order:
        place(i, set())
    return set(owner.values())


def number_overlap(
    eval_text: str, match_text: str, rarity: NumberRarity = NO_RARITY
) -> NumberOverlap:
    """Gives both texts' numbers, how many of the eval text's the match keeps, and each
    eval number's weight from ``rarity``.

    A bare 1 of the eval text is left out: a rephrasing writes "1 slice" as "a slice" or
    "one slice", and the reader does not count a lone "one" (mostly a pronoun)."""
    a = [q for q in quantities(eval_text) if not (q.value == 1 and q.unit is None)]
    b = quantities(match_text)
    weights = [rarity.weight(q) for q in a]
    kept = _pairing(a, b, sorted(range(len(a)), key=lambda i: -weights[i]))
    share = len(kept) / len(a) if a else None
    mask = tuple(i in kept for i in range(len(a)))
    return NumberOverlap(tuple(a), tuple(b), len(kept), share, tuple(weights), mask)
