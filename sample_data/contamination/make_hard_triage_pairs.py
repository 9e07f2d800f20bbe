"""Makes labelled triage pairs as hard as real ones: siblings that share small numbers.

Run from the repository root:  python sample_data/contamination/make_hard_triage_pairs.py
Deterministic: the same file every time (the output is committed beside this script as
``triage_pairs_hard.jsonl``; ``sealdesk bench contamination --triage`` reads it).

The shipped triage pairs (``make_triage_pairs.py``) draw a sibling's numbers anew from
wide ranges, so a sibling rarely keeps a number. Real template siblings do: GSM8K's
train set restates "3 friends", "twice as many", "half", "20 minutes" and "$5" over and
over. Here, from 16 stories that the shipped pairs do not use, each with its own
numbers:

- a **sibling** is the same story (or one of the same shape) with another name and
  new numbers, except that each counting slot (people, days, items in a pack: 2 to
  12) keeps the eval item's count half of the time and is drawn again from its small
  range otherwise, so most siblings share one to three small numbers with it,
  some written as words ("Twelve", "three"); two in five also keep one larger
  number of the eval item (a price, a rate), as siblings written from one source do.
- a **leak** is the eval item rephrased with its numbers kept: reordered, other words,
  small numbers spelled out, durations changed unit ("90 minutes" -> "1.5 hours"),
  cents for dollars, "half" for 50%, and sometimes a number folded into words
  ("a dozen" for 12); some sit in a forum post that adds numbers of its own.

Stories are split by story: every third is ``holdout``, the rest ``tune``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from make_triage_pairs import pair_row, write_pairs  # beside this script

HERE = Path(__file__).resolve().parent
OUT = HERE / "triage_pairs_hard.jsonl"
ROUNDS = 8

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def words(n: int) -> str:
    """Gives an integer under 1000 in English words: 42 -> forty-two."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    rest = n % 100
    return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + words(rest))


def hours(minutes: int) -> str:
    """Gives 90 as "1.5 hours", 60 as "1 hour", 45 as "0.75 hours"."""
    value = minutes / 60
    return f"{value:g} hour" + ("" if value == 1 else "s")


def money(x: float) -> str:
    return f"{x:,.2f}" if x != int(x) else f"{int(x):,}"


Slot = Callable[[random.Random], Any]


def small(lo: int = 2, hi: int = 12) -> Slot:
    return lambda rng: rng.randint(lo, hi)


def ranged(lo: int, hi: int, step: int = 1) -> Slot:
    return lambda rng: rng.randrange(lo, hi + 1, step)


def price(lo: float, hi: float, step: float) -> Slot:
    n = round((hi - lo) / step)
    return lambda rng: round(lo + step * rng.randint(0, n), 2)


@dataclass(frozen=True)
class Story:
    key: str
    small: dict[str, Slot]  # counting slots: redrawn for a sibling from a small range
    large: dict[str, Slot]  # the rest: a sibling keeps one of them a third of the time
    question: str
    rephrasings: tuple[str, ...]
    shapes: tuple[str, ...]


S = Story
STORIES = [
    S(
        "laps",
        {"d": small(3, 7)},
        {"m": ranged(20, 120, 5), "k": ranged(2, 9)},
        "{name} swims for {m} minutes a day, {d} days a week, and covers {k} laps every 10 "
        "minutes. How many laps does {she} swim in a week?",
        (
            "Each week {name} goes swimming on {d:w} days, spending {m:h} in the pool each "
            "time. If {she} manages {k} laps per 10 minutes, how many laps is that weekly?",
            "At a pace of {k} laps every ten minutes, how many laps does {name} swim in a week "
            "of {d} sessions lasting {m} minutes each?",
        ),
        (
            "{name} jogs for {m} minutes a day, {d} days a week, and runs {k} km every 10 "
            "minutes. How far does {she} run in a week?",
        ),
    ),
    S(
        "tickets",
        {"a": small(2, 8), "c": small(2, 6)},
        {"p": price(8, 45, 0.5), "f": ranged(3, 15)},
        "{name} buys {a} adult tickets at ${p} each and {c} child tickets at half price, plus "
        "a ${f} booking fee. How much does {she} pay?",
        (
            "Adult tickets cost ${p} and children's tickets cost 50% of that. {name} gets {a:w} "
            "adult and {c:w} child tickets and pays a booking fee of {f} dollars. What is the "
            "total?",
            "With a booking fee of ${f}, what does {name} pay for {a} adult tickets priced at "
            "${p} each and {c} half-price child tickets?",
        ),
        (
            "{name} buys {a} concert tickets at ${p} each and {c} parking passes at half "
            "price, plus a ${f} service charge. How much does {she} spend?",
        ),
    ),
    S(
        "bakery",
        {"t": small(2, 6), "h": small(3, 10)},
        {"n": ranged(24, 180, 6), "c": ranged(35, 95, 5)},
        "A bakery bakes {n} rolls every hour for {h} hours. It sells them in bags of {t} for "
        "{c} cents a bag. How much money does it make if it sells every roll?",
        (
            "Over {h:w} hours a bakery turns out {n} rolls per hour, which it packs {t:w} to a "
            "bag and sells at ${c:d} per bag. If all are sold, what is the revenue?",
            "How much does a bakery earn selling all the rolls it makes in {h} hours, at {n} "
            "rolls an hour, in bags of {t} costing {c} cents each?",
        ),
        (
            "A bakery bakes {n} muffins every hour for {h} hours. It sells them in boxes of "
            "{t} for {c} cents a box. How much does it make?",
        ),
    ),
    S(
        "garden",
        {"r": small(3, 10)},
        {"p": ranged(12, 48), "w": ranged(15, 90, 5)},
        "{name} plants {r} rows of tomatoes with {p} plants in each row. Each plant needs {w} "
        "minutes of care a week. How many hours a week does the garden need?",
        (
            "There are {r:w} rows in {name}'s tomato patch, {p} plants per row, and every plant "
            "takes {w:h} of care weekly. How many hours of work is that each week?",
            "If each of {name}'s {p}-plant rows of tomatoes ({r} rows in all) needs {w} minutes "
            "per plant per week, how many hours does {she} spend weekly?",
        ),
        (
            "{name} plants {r} rows of peppers with {p} plants in each row. Each plant gives "
            "{w} peppers. How many peppers does {she} pick?",
        ),
    ),
    S(
        "fuel",
        {"d": small(2, 7)},
        {"k": ranged(120, 480, 10), "e": ranged(18, 42), "g": price(2.5, 4.8, 0.05)},
        "{name} drives {k} miles on each of {d} days. {Her} car goes {e} miles per gallon and "
        "gas costs ${g} a gallon. How much does {she} spend on gas?",
        (
            "Gas is ${g} per gallon and {name}'s car manages {e} miles to the gallon. What does "
            "{she} pay for gas to drive {k} miles a day for {d:w} days?",
            "For {d} days {name} drove {k} miles daily in a car that gets {e} mpg. At ${g} a "
            "gallon, how much did the gas cost?",
        ),
        (
            "{name} drives {k} miles on each of {d} days. {Her} van uses one gallon per {e} "
            "miles. How many gallons does {she} use?",
        ),
    ),
    S(
        "library",
        {"w": small(2, 8), "b": small(2, 5)},
        {"n": ranged(150, 900, 25), "f": price(0.1, 0.75, 0.05)},
        "A library lends {n} books a week. {b} out of every 10 come back late and the fine is "
        "${f} per late book. How much does it collect in fines over {w} weeks?",
        (
            "Every week {n} books leave a library, and {b:w} in ten of them are returned late, "
            "at a fine of {f:c} cents each. What are the fines over {w:w} weeks?",
            "Over {w} weeks, how much in late fines does a library take if it lends {n} books "
            "weekly, {b} in every 10 are late, and each late book costs ${f}?",
        ),
        (
            "A library lends {n} books a week. {b} out of every 10 are children's books. How "
            "many children's books does it lend in {w} weeks?",
        ),
    ),
    S(
        "paint",
        {"c": small(2, 4), "r": small(3, 9)},
        {"a": ranged(180, 650, 10), "q": ranged(250, 450, 25), "p": price(18, 64, 0.5)},
        "{name} paints {r} rooms with {a} square feet of wall each, {c} coats per room. A can "
        "covers {q} square feet and costs ${p}. How much does the paint cost?",
        (
            "Each of the {r:w} rooms {name} is painting has {a} square feet of wall and needs "
            "{c:w} coats. At ${p} for a can that covers {q} square feet, what is the paint bill?",
            "How much paint money does {name} need for {c} coats on {r} rooms of {a} sq ft each "
            "if a ${p} can covers {q} sq ft?",
        ),
        (
            "{name} tiles {r} rooms with {a} square feet of floor each. A box covers {q} square "
            "feet and costs ${p}. How much do the tiles cost?",
        ),
    ),
    S(
        "carpool",
        {"k": small(3, 8), "d": small(4, 6)},
        {"m": ranged(15, 75, 5), "t": price(1.25, 6.5, 0.25)},
        "{k} friends share a car to work {d} days a week. The trip takes {m} minutes each way "
        "and tolls are ${t} each way, split evenly. How much does each friend pay in tolls a "
        "week?",
        (
            "A carpool of {k:w} friends drives to work {d:w} days a week; each leg is {m:h} long "
            "and has a toll of ${t}, which they split equally. What is each friend's weekly toll "
            "cost?",
            "Splitting ${t} tolls each way evenly, what does each of {k} carpooling friends pay "
            "per week for {d} round trips of {m} minutes per leg?",
        ),
        (
            "{k} friends share a taxi {d} days a week. The ride takes {m} minutes each way and "
            "costs ${t} a mile. How many minutes do they ride in a week?",
        ),
    ),
    S(
        "crafts",
        {"b": small(2, 12), "s": small(3, 10)},
        {"n": ranged(30, 240, 6), "c": price(0.2, 2.5, 0.05)},
        "{name} makes {n} bracelets. Each bracelet uses {b} beads and {s} inches of string. "
        "Beads cost ${c} each. How much do the beads cost?",
        (
            "{name} is making {n} bracelets with {b:w} beads and {s:w} inches of string apiece. "
            "At {c:c} cents a bead, what do the beads cost?",
            "What is the bead bill for {n} bracelets if each takes {b} beads priced at ${c} and "
            "{s} inches of string?",
        ),
        (
            "{name} makes {n} necklaces. Each necklace uses {b} charms and {s} inches of chain. "
            "How many charms does {she} need?",
        ),
    ),
    S(
        "shifts",
        {"s": small(3, 6), "b": small(2, 4)},
        {"h": ranged(6, 11), "w": price(12, 31, 0.25), "x": ranged(40, 200, 10)},
        "{name} works {s} shifts of {h} hours a week at ${w} an hour, and takes {b} breaks of "
        "15 minutes each shift unpaid. {She} also earns a ${x} bonus. What is {her} weekly pay?",
        (
            "Paid ${w} per hour, {name} works {s:w} {h}-hour shifts weekly, with {b:w} unpaid "
            "quarter-hour breaks per shift, and gets a {x} dollar bonus. What does {she} earn "
            "each week?",
            "What is {name}'s weekly pay from {s} shifts of {h} hours at ${w} an hour, less {b} "
            "unpaid 15-minute breaks a shift, plus a ${x} bonus?",
        ),
        (
            "{name} works {s} shifts of {h} hours a week at ${w} an hour. How much does {she} "
            "earn in {b} weeks?",
        ),
    ),
    S(
        "aquarium",
        {"f": small(3, 12)},
        {"g": ranged(20, 120, 5), "l": ranged(5, 40, 5), "d": ranged(10, 60, 5)},
        "An aquarium holds {g} gallons. {name} drains {l}% of the water each week and keeps "
        "{f} fish that each need {d} square inches of surface. How many gallons does {she} "
        "replace in a month of four weeks?",
        (
            "{name}'s {g}-gallon tank has {f:w} fish needing {d} square inches of surface each. "
            "If {she} changes {l} percent of the water weekly, how many gallons are replaced in "
            "four weeks?",
            "How many gallons does {name} replace over 4 weeks, draining {l}% of a {g}-gallon "
            "tank each week that houses {f} fish, each needing {d} square inches?",
        ),
        (
            "A pond holds {g} gallons. {name} adds {l}% more water each week and keeps {f} "
            "ducks. How much water is in the pond after a month?",
        ),
    ),
    S(
        "orchard",
        {"t": small(4, 12), "d": small(2, 7)},
        {"a": ranged(40, 160, 5), "p": price(0.25, 1.5, 0.05)},
        "{name} picks {a} apples from each of {t} trees every day for {d} days and sells them "
        "at ${p} each. How much does {she} earn?",
        (
            "Over {d:w} days, {name} picks {a} apples a day from each of {t:w} trees. Selling "
            "them at {p:c} cents apiece, what does {she} make?",
            "How much money does {name} earn selling apples at ${p} each after picking {a} from "
            "each of {t} trees daily for {d} days?",
        ),
        (
            "{name} picks {a} pears from each of {t} trees every day for {d} days. How many "
            "pears does {she} pick?",
        ),
    ),
    S(
        "commute",
        {"d": small(3, 6)},
        {"m": ranged(25, 150, 5), "s": ranged(20, 65, 5)},
        "{name} commutes {m} minutes each way, {d} days a week, at {s} miles per hour. How many "
        "miles does {she} commute a week?",
        (
            "Driving at {s} mph, {name} spends {m:h} getting to work and the same getting home, "
            "{d:w} days a week. How many miles is that weekly?",
            "At {s} miles an hour, how far does {name} travel in a week of {d} workdays with a "
            "{m}-minute trip each way?",
        ),
        (
            "{name} cycles {m} minutes each way, {d} days a week. How many hours does {she} "
            "cycle in a week?",
        ),
    ),
    S(
        "fundraiser",
        {"k": small(2, 10), "c": small(2, 5)},
        {"n": ranged(60, 400, 10), "p": price(1.5, 12, 0.5), "g": ranged(500, 3000, 50)},
        "A class of {n} students sells candy bars at ${p} each. Each student sells {k} boxes "
        "of {c} dozen bars. How far past their ${g} goal do they get?",
        (
            "{n} students each sell {k:w} boxes holding {c:w} dozen candy bars, at ${p} per "
            "bar. By how much do they beat their goal of {g:m} dollars?",
            "How much over a ${g:m} goal does a class raise if each of its {n} students sells "
            "{k} boxes of {c} dozen bars at ${p} a bar?",
        ),
        (
            "A club of {n} members sells raffle tickets at ${p} each. Each member sells {k} "
            "books of {c} dozen tickets. How much do they raise?",
        ),
    ),
    S(
        "printer",
        {"c": small(2, 8)},
        {"p": ranged(12, 60, 2), "n": ranged(150, 900, 50), "s": ranged(5, 45, 5)},
        "A printer prints {p} pages a minute. {name} needs {c} copies of a {n}-page report and "
        "the printer pauses {s} seconds after each copy. How many minutes does the job take?",
        (
            "How long, in minutes, does it take to print {c:w} copies of a {n}-page report on a "
            "{p}-page-per-minute printer that pauses {s} seconds between copies?",
            "{name}'s printer does {p} pages per minute and stops for {s} seconds after every "
            "copy. What is the time for {c} copies of {n} pages each?",
        ),
        (
            "A printer prints {p} pages a minute. {name} needs {c} copies of a {n}-page "
            "booklet. How many pages are printed?",
        ),
    ),
    S(
        "marathon",
        {"w": small(4, 12), "r": small(3, 6)},
        {"k": ranged(4, 18), "m": ranged(35, 150, 5)},
        "{name} trains for {w} weeks, running {r} times a week. Each run is {k} km and takes "
        "{m} minutes. How many hours does {she} run in training?",
        (
            "Over a {w}-week plan {name} runs {r:w} times weekly, {k} km a run, each taking {m:h}. "
            "What is {her} total training time in hours?",
            "How many hours of running does {name} log in {w} weeks of {r} runs a week if every "
            "run is {k} km in {m} minutes?",
        ),
        (
            "{name} trains for {w} weeks, cycling {r} times a week. Each ride is {k} km. How "
            "many km does {she} cycle in training?",
        ),
    ),
]

PEOPLE = [
    ("Lena", "she", "her"),
    ("Ruth", "she", "her"),
    ("Mei", "she", "her"),
    ("Ada", "she", "her"),
    ("Nadia", "she", "her"),
    ("Carla", "she", "her"),
    ("Felix", "he", "his"),
    ("Arjun", "he", "his"),
    ("Pablo", "he", "his"),
    ("Yusuf", "he", "his"),
    ("Oscar", "he", "his"),
    ("Bruno", "he", "his"),
]

WRAPPERS = [
    "Stuck on problem {x} of my homework: {text} Any hints?",
    "My son brought this home (worksheet {x}, question {y}): {text}",
    "{text} The book says {x} but I keep getting {y}.",
]


class Writer:
    """Fills a template: ``{a}`` as digits (or words, by chance), ``{a:w}`` words, ``{m:h}``
    minutes as hours, ``{p:c}`` dollars as cents, ``{c:d}`` cents as dollars, ``{g:m}`` money
    with a thousands separator."""

    def __init__(self, rng: random.Random, spell: float) -> None:
        self.rng, self.spell = rng, spell

    def fill(self, template: str, values: dict[str, Any]) -> str:
        def one(m: re.Match[str]) -> str:
            name, spec = m.group(1), m.group(2) or ""
            if name in ("name", "she", "She", "her", "Her"):
                return str(values[name])
            v = values[name]
            if spec == "w":
                return words(int(v)) if v == int(v) and v < 1000 else money(v)
            if spec == "h":
                return hours(int(v))
            if spec == "c":
                return f"{round(v * 100)}"
            if spec == "d":
                return f"{v / 100:.2f}"
            if spec == "m":
                return money(v)
            if isinstance(v, int) and v <= 20 and self.rng.random() < self.spell:
                return words(v)
            return money(v) if isinstance(v, float) else str(v)

        text = re.sub(r"\{(\w+)(?::(\w))?\}", one, template)
        return text[0].upper() + text[1:]


def _people(person: tuple[str, str, str]) -> dict[str, str]:
    name, she, her = person
    return {"name": name, "she": she, "She": she.capitalize(), "her": her, "Her": her.capitalize()}


def _draw(slots: dict[str, Slot], rng: random.Random) -> dict[str, Any]:
    return {name: make(rng) for name, make in slots.items()}


def main() -> None:
    rng = random.Random(20261206)
    rows: list[dict[str, Any]] = []
    for s_index, story in enumerate(STORIES):
        split = "holdout" if s_index % 3 == 2 else "tune"
        for rnd in range(ROUNDS):
            person = rng.choice(PEOPLE)
            values = {**_draw(story.small, rng), **_draw(story.large, rng), **_people(person)}
            original = Writer(rng, 0.0).fill(story.question, values)
            leak = Writer(rng, 0.3).fill(story.rephrasings[rnd % len(story.rephrasings)], values)
            form = "rephrased"
            if rng.random() < 0.15:
                leak = rng.choice(WRAPPERS).format(
                    text=leak, x=rng.randint(2, 40), y=rng.randint(2, 400)
                )
                form = "rephrased_in_post"
            rows.append(pair_row(story.key, rnd, split, "leak", form, original, leak))
            other = rng.choice([p for p in PEOPLE if p[0] != person[0]])
            fresh = {**_draw(story.large, rng), **_people(other)}
            for name in story.small:  # a count a sibling restates (3 days, 4 friends)...
                fresh[name] = values[name] if rng.random() < 0.5 else story.small[name](rng)
            form = "same_template"
            if rng.random() < 0.4:
                keep = rng.choice(sorted(story.large))
                fresh[keep] = values[keep]
                form += "_keeping_one_number"
            template = story.question if rng.random() < 0.6 else story.shapes[0]
            if template != story.question:
                form = form.replace("same_template", "same_shape")
            sibling = Writer(rng, 0.3).fill(template, fresh)
            rows.append(pair_row(story.key, rnd, split, "sibling", form, original, sibling))
    write_pairs(rows, OUT, len(STORIES))


if __name__ == "__main__":
    main()
