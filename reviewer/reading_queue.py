"""A queue of flagged pairs as a contamination scan hands them over, for reading: the
queue ``sealdesk bench review --throughput --reading`` works at 80x24.

Each item is a grade-school word problem (30 to 120 words, built from a few
hundred sentence frames with names, things and numbers filled in) and one match
of the kind a reviewer meets, in these shares:

- a copy (10%), the same problem with new numbers (30%), a paraphrase (25%: verbs
  and phrasings swapped, a clause moved), the problem inside a longer document
  (20%: a numbered heading before it, a worked answer after it): leaks, accepted;
- a template sibling (15%): the same frames with other names, things and numbers,
  a different problem: rejected.

Every pair carries the facts a scan gives (channels, scores against thresholds,
the numbers of both sides and how many the match keeps), so the facts take the
room on screen they take on real items.
"""

from __future__ import annotations

import random
import re
from typing import Any

from engine.roles import FLAGGED_PAIRS

QUEUE = FLAGGED_PAIRS
THRESHOLDS = {"containment": 0.5, "cosine": 0.7972, "jaccard": 0.8, "ngram_n": 13}
_NAMES = (
    "Natalia Weng Betty Julie James Mark Albert Ken Alexis Tina Lena Rita Omar Priya "
    "Sofia Diego Hannah Marcus Ivy Theo Farah Jonas Mei Kofi"
).split()
_THINGS = (
    "clips apples stickers marbles cupcakes pencils tickets books shells cookies "
    "bracelets candles plants stamps postcards muffins"
).split()
_PLACES = "market school fair bakery library garage shop park".split()
_OPENERS = (
    "{a} sold {n1} {t} to friends in April, and then sold half as many {t} in May.",
    "{a} has {n1} {t} in a box and buys {n2} more at the {pl}.",
    "{a} makes {n1} {t} every day for {n2} days.",
    "There are {n1} {t} on the shelves of the {pl}, and {a} counts {n2} more in the back.",
    "{a} earns ${n1} an hour and works {n2} hours at the {pl} this week.",
    "A pack of {t} costs ${n1}, and {a} wants to buy {n2} packs.",
)
_MIDDLES = (
    "{b} gives {a} {n3} more {t} the next day.",
    "On the way home, {a} loses {n3} of the {t}.",
    "Each of the {t} weighs {n3} grams.",
    "{b} takes twice as many {t} as {a} gave away.",
    "The {pl} charges ${n3} for every bag of {t}.",
    "After lunch, {a} shares {n3} {t} equally among {n4} friends.",
    "Later, {b} brings {n4} boxes with {n3} {t} in each box.",
    "A third of the {t} are red and the rest are blue.",
    "{a} keeps {n4} of them for a school project.",
)
_QUESTIONS = (
    "How many {t} does {a} have now?",
    "How many {t} did {a} sell altogether in April and May?",
    "How much money does {a} spend in all?",
    "How many {t} are left at the end of the day?",
    "How many grams do all the {t} weigh together?",
)
# A paraphrase swaps phrasings (first match of each, case kept) and may move a clause.
_SWAPS = (
    ("buys", "purchases"),
    ("gives", "hands"),
    ("How many", "What number of"),
    ("How much money", "What amount of money"),
    ("the next day", "a day later"),
    ("On the way home", "While walking home"),
    ("in all", "in total"),
    ("altogether", "in total"),
    ("shares", "splits"),
    ("wants to", "would like to"),
    ("counts", "finds"),
    ("takes", "picks up"),
    ("every day", "each day"),
    ("Later", "Afterwards"),
    ("keeps", "saves"),
)
_NUMBER = re.compile(r"\$?\d+(?:\.\d+)?")


def _fill(rnd: random.Random, frames: tuple[str, ...], slots: dict[str, Any]) -> str:
    return rnd.choice(frames).format(**slots)


def _slots(rnd: random.Random) -> dict[str, Any]:
    a, b = rnd.sample(_NAMES, 2)
    return {
        "a": a,
        "b": b,
        "t": rnd.choice(_THINGS),
        "pl": rnd.choice(_PLACES),
        **{f"n{k}": rnd.randint(2, 90) for k in range(1, 5)},
    }


def problem(rnd: random.Random) -> tuple[str, list[int]]:
    """Gives a word problem of 30 to 120 words and the frame choices that made it (so a
    template sibling can reuse them)."""
    while True:
        slots = _slots(rnd)
        n_middle = rnd.randint(2, 8)
        picks = [rnd.randrange(len(_OPENERS))]
        picks += rnd.sample(range(len(_MIDDLES)), min(n_middle, len(_MIDDLES)))
        picks.append(rnd.randrange(len(_QUESTIONS)))
        text = _render(picks, slots)
        if 30 <= len(text.split()) <= 120:
            return text, picks


def _render(picks: list[int], slots: dict[str, Any]) -> str:
    parts = [_OPENERS[picks[0]], *(_MIDDLES[p] for p in picks[1:-1]), _QUESTIONS[picks[-1]]]
    return " ".join(p.format(**slots) for p in parts)


def _renumbered(rnd: random.Random, text: str) -> str:
    def new(m: re.Match[str]) -> str:
        dollar = "$" if m.group().startswith("$") else ""
        old = int(float(m.group().lstrip("$")))
        return f"{dollar}{rnd.choice([n for n in range(2, 120) if n != old])}"

    return _NUMBER.sub(new, text)


def _paraphrase(rnd: random.Random, text: str) -> str:
    for old, new in _SWAPS:
        if old in text and rnd.random() < 0.8:
            text = text.replace(old, new, 1)
    sentences = re.split(r"(?<=[.?])\s+", text)
    if len(sentences) > 3 and rnd.random() < 0.5:
        i = rnd.randrange(1, len(sentences) - 2)
        sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
    return " ".join(sentences)


def _contained(rnd: random.Random, text: str) -> str:
    numbers = [int(float(n.lstrip("$"))) for n in _NUMBER.findall(text)] or [1]
    steps = " ".join(
        f"{x} + {y} = {x + y}." for x, y in zip(numbers, numbers[1:] + numbers[:1], strict=True)
    )
    return (
        f"Problem {rnd.randint(1, 7000)}. {text} Answer: add the amounts step by step. "
        f"{steps} #### {sum(numbers)}"
    )


def _numbers(text: str) -> list[str]:
    return _NUMBER.findall(text)


def _jaccard(a: str, b: str) -> float:
    sa, sb = set(a.lower().split()), set(b.lower().split())
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def _match(rnd: random.Random, text: str, picks: list[int], index: int) -> tuple[dict, str]:
    """Gives one match of an eval text and its right verdict."""
    kind = rnd.choices(
        ("copy", "renumbered", "paraphrase", "contained", "sibling"), (10, 30, 25, 20, 15)
    )[0]
    if kind == "copy":
        other = text
    elif kind == "renumbered":
        other = _renumbered(rnd, text)
    elif kind == "paraphrase":
        other = _paraphrase(rnd, text)
    elif kind == "contained":
        other = _contained(rnd, text)
    else:
        other = _render(picks, _slots(rnd))
    ours, theirs = _numbers(text), _numbers(other)
    kept = sum(1 for n in ours if n in theirs)
    jaccard = round(_jaccard(text, other), 4)
    containment = round(len(set(text.split()) & set(other.split())) / len(set(text.split())), 4)
    match = {
        "kind": "pool",
        "id": f"doc-{index}",
        "index": index,
        "text": other,
        "channels": ["embed"] if jaccard < THRESHOLDS["jaccard"] else ["ngram", "embed"],
        "scores": {
            "jaccard": jaccard,
            "containment": containment,
            "cosine": round(rnd.uniform(0.80, 0.99), 4),
        },
        "numbers_only_differ": kind == "renumbered",
        "triage": {
            "label": "likely_leak" if kept == len(ours) else "template_sibling",
            "eval": ours,
            "match": theirs,
            "shared": kept,
            "weighted_kept": round(kept / len(ours), 4) if ours else 1.0,
        },
    }
    return match, ("reject" if kind == "sibling" else "accept")


def pairs(n_items: int, seed: int = 20261206) -> list[tuple[str, dict[str, Any], str]]:
    """Gives ``n_items`` (item id, payload, right verdict), one match each."""
    rnd = random.Random(seed)
    out = []
    for i in range(n_items):
        text, picks = problem(rnd)
        match, verdict = _match(rnd, text, picks, 1000 + i)
        payload = {
            "eval": {"id": f"q-{i:04d}", "index": i, "text": text},
            "matches": [match],
            "thresholds": THRESHOLDS,
            "summary": {
                "title": f"q-{i:04d}: {text[:70]}",
                "score": round(max(match["scores"].values()), 4),
                "tags": sorted(match["channels"]),
            },
        }
        out.append((f"fp-read-{i:04d}", payload, verdict))
    return out
