"""Makes the labelled pairs that the match triage (likely leak / template sibling) is measured on.

Run from the repository root:  python sample_data/contamination/make_triage_pairs.py
Deterministic: the same file every time (the output is committed). It is written into
engine/contamination/, since the scan reports the triage rule's precision and recall on
it and so it ships inside the package, like the cosine calibration set.

Each of the 36 stories below is a word problem written the way an eval set writes it, with
its numbers drawn at random from realistic ranges, three rephrasings of it, and two other
problems of the same shape. From every story come 6 rounds of two pairs:

- a **leak**: the eval problem against one of its rephrasings, with the same numbers. The
  rephrasings reorder the sentences, use other words, and sometimes spell numbers out
  ("twelve", "a quarter", "two and a half"), give them in another unit (50% for half,
  cents for dollars) or fold two of them into one (an area for its sides, a product for
  its factors), as people and language models do when they rephrase. Some are wrapped in
  a forum post that adds numbers of its own. Synonyms are swapped at random.
- a **template sibling**: the eval problem against a problem of the same shape (the same
  words, or the other two templates) with another name and numbers drawn anew from the
  same ranges. Small ranges and constants of the story (40 hours, half, 50%) make some
  siblings share numbers, as real ones do.

Stories are split by story, not by pair: every third story is ``holdout``, the rest
``tune``. Thresholds are chosen on ``tune`` alone; ``holdout`` measures them.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "engine" / "contamination" / "triage_pairs.jsonl"
ROUNDS = 6

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def words(n: int) -> str:
    """Gives an integer in English words: 42 -> forty-two, 305 -> three hundred and five."""
    if n < 0:
        return "minus " + words(-n)
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + words(rest))
    rest = n % 1000
    return words(n // 1000) + " thousand" + ("" if rest == 0 else " " + words(rest))


def mixed(x: float) -> str:
    """Gives 2.5 as "2 1/2", 0.75 as "3/4", 3.0 as "3"."""
    whole, part = int(x), round(x - int(x), 4)
    frac = {0.25: "1/4", 0.5: "1/2", 0.75: "3/4"}.get(part)
    if frac is None:
        return f"{x:g}"
    return frac if whole == 0 else f"{whole} {frac}"


def spoken(x: float) -> str:
    """Gives 2.5 as "two and a half", 0.5 as "half a", 3.0 as "three"."""
    whole, part = int(x), round(x - int(x), 4)
    tail = {0.0: "", 0.25: " and a quarter", 0.5: " and a half", 0.75: " and three quarters"}
    return words(whole) + tail[part]


class Writer(string.Formatter):
    """Fills a template; a bare integer field may come out in words (a rephraser's habit)."""

    def __init__(self, rng: random.Random, spell: float) -> None:
        self.rng, self.spell = rng, spell

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "w":
            return words(int(value))
        if format_spec == "mixed":
            return mixed(value)
        if format_spec == "spoken":
            return spoken(value)
        if (
            format_spec == ""
            and isinstance(value, int)
            and 2 <= value <= 100
            and self.rng.random() < self.spell
        ):
            return words(value)
        return super().format_field(value, format_spec)


def I(lo: int, hi: int, step: int = 1) -> Callable[[random.Random, dict], int]:  # noqa: E743
    return lambda rng, v: rng.randrange(lo, hi + 1, step)


def M(lo: float, hi: float, step: float) -> Callable[[random.Random, dict], float]:
    n = round((hi - lo) / step)
    return lambda rng, v: round(lo + step * rng.randint(0, n), 2)


def C(*choices: Any) -> Callable[[random.Random, dict], Any]:
    return lambda rng, v: rng.choice(choices)


class D:
    """A number computed from the others (the pages read today, twice yesterday's)."""

    def __init__(self, fn: Callable[[dict], Any]) -> None:
        self.fn = fn

    def __call__(self, rng: random.Random, values: dict) -> Any:
        return self.fn(values)


@dataclass(frozen=True)
class Story:
    key: str
    slots: dict[str, Callable[[random.Random, dict], Any]]
    question: str
    rephrasings: tuple[str, str, str]
    shapes: tuple[str, str]
    extra: dict[str, Any] = field(default_factory=dict)


S = Story
STORIES = [
    S(
        "clips",
        {"a": I(20, 80, 2)},
        "{name} sold clips to {a} of {her} friends in April, and then {she} sold half as many "
        "clips in May. How many clips did {name} sell altogether in April and May?",
        (
            "In April, {name} managed to sell {a} clips to friends. In May {her} sales were "
            "only half of April's. What is the total number of clips {she} sold over the two "
            "months?",
            "Across April and May, how many clips did {name} sell in total if {she} sold {a} in "
            "April and half that amount in May?",
            "{name}'s friends bought {a} of {her} clips in April; May's sales came to 50% of "
            "that. Find the combined number of clips sold.",
        ),
        (
            "{name} sold {a} cupcakes to {her} classmates on Monday, and then {she} sold half as "
            "many cupcakes on Tuesday. How many cupcakes did {name} sell on the two days?",
            "In March {name} gave {a} stickers to {her} neighbours, and in April {she} gave away "
            "a third as many. How many stickers did {she} give away in both months?",
        ),
    ),
    S(
        "babysitting",
        {"r": I(8, 20), "m": I(20, 110, 5), "h": I(1, 4)},
        "{name} earns ${r} an hour for babysitting. Yesterday, {she} just did {m} minutes of "
        "babysitting. How much did {she} earn?",
        (
            "{name} is paid {r} dollars per hour to babysit. If {she} babysat for {m} minutes "
            "yesterday, how much money did {she} make?",
            "Yesterday {name} babysat for only {m} minutes. Given an hourly rate of ${r}, what "
            "were {her} earnings?",
            "For babysitting, {name} charges ${r} every hour. How much did {she} earn for a "
            "{m}-minute job yesterday?",
        ),
        (
            "{name} earns ${r} an hour for walking dogs. Today, {she} walked dogs for {m} "
            "minutes. How much did {she} earn today?",
            "{name} gets paid ${r} per hour to tutor math. Last week {she} tutored for {h} hours "
            "and {m} minutes. How much did {she} get paid?",
        ),
    ),
    S(
        "wallet",
        {"c": I(60, 200, 2), "p": I(10, 30)},
        "{name} is saving money for a new wallet which costs ${c}. {name} has only half of the "
        "money {she} needs. {Her} parents decided to give {her} ${p} for that purpose, and {her} "
        "grandparents twice as much as {her} parents. How much more money does {name} need to "
        "buy the wallet?",
        (
            "A new wallet costs ${c}, and {name} has saved exactly half of that. {Her} parents "
            "chip in ${p}, and {her} grandparents give double what the parents gave. How much is "
            "{she} still missing?",
            "{name} wants a ${c} wallet. {She} has 50% of the price already. If {her} parents "
            "add {p} dollars and {her} grandparents add twice the parents' amount, how much more "
            "does {she} need?",
            "How much more does {name} need for a wallet priced at ${c} if {she} already has "
            "half the cost, gets ${p} from {her} parents, and gets twice that from {her} "
            "grandparents?",
        ),
        (
            "{name} is saving up for a bike which costs ${c}. {She} has a quarter of the money. "
            "{Her} aunt gives {her} ${p}, and {her} uncle gives three times as much as {her} "
            "aunt. How much more money does {she} need?",
            "{name} wants to buy a guitar that costs ${c}. {She} already has half of the money, "
            "and {her} brother gives {her} ${p}. How much more does {she} need?",
        ),
    ),
    S(
        "reading",
        {"c": I(120, 400, 10), "a": I(10, 30), "a2": D(lambda v: 2 * v["a"])},
        "{name} is reading a {c}-page book. Yesterday, {she} was able to read {a} pages and "
        "today, {she} read twice as many pages as yesterday. If {she} wants to read half of the "
        "remaining pages tomorrow, how many pages should {she} read?",
        (
            "There are {c} pages in the book {name} is reading. {She} read {a} pages yesterday "
            "and double that today. Tomorrow {she} plans to read half of what is left. How many "
            "pages is that?",
            "{name}'s book has {c} pages. After reading {a} pages yesterday and twice that number "
            "today, {she} wants to finish half of the rest tomorrow. How many pages will {she} "
            "read tomorrow?",
            "{name} has a {c}-page novel. {She} read {a} pages yesterday and {a2} pages today. "
            "How many pages must {she} read tomorrow to get through half of the pages that "
            "remain?",
        ),
        (
            "{name} is reading a {c}-page magazine. On Monday {she} read {a} pages and on "
            "Tuesday {she} read three times as many pages. If {she} wants to read a third of the "
            "remaining pages on Wednesday, how many pages should {she} read?",
            "{name} bought a {c}-page comic book. {She} read {a} pages in the morning and twice "
            "as many in the afternoon. How many pages are left?",
        ),
    ),
    S(
        "grove",
        {"a": I(10, 40), "d": I(3, 20), "b": D(lambda v: v["a"] + v["d"])},
        "There are {a} trees in the grove. Grove workers will plant trees in the grove today. "
        "After they are done, there will be {b} trees. How many trees did the grove workers "
        "plant today?",
        (
            "The grove currently has {a} trees. After today's planting it will have {b} trees. "
            "How many trees are the workers planting?",
            "Workers are planting new trees in a grove that has {a} trees. When they finish "
            "there will be {b}. How many did they plant?",
            "How many trees were planted today if a grove went from {a} trees to {b} trees?",
        ),
        (
            "There are {a} cars in the parking lot. More cars arrive during the morning. After "
            "that, there are {b} cars. How many cars arrived?",
            "There were {a} books on the shelf. The librarian added some books, and now there "
            "are {b} books. How many books did the librarian add?",
        ),
    ),
    S(
        "chocolates",
        {"a": I(20, 60), "b": I(20, 60), "c": I(10, 40)},
        "{name} had {a} chocolates and {her} sister had {b}. If they ate {c} pieces, how many "
        "pieces do they have left in total?",
        (
            "Between them, {name} ({a} chocolates) and {her} sister ({b} chocolates) ate {c} "
            "pieces. How many chocolates remain?",
            "{name} has {a} chocolates, {her} sister has {b}. They eat {c} of them together. How "
            "many are left altogether?",
            "After eating {c} chocolates, how many do {name} and {her} sister have left if they "
            "started with {a} and {b} chocolates?",
        ),
        (
            "{name} had {a} candies and {her} brother had {b}. If they gave away {c} candies, "
            "how many candies do they have left?",
            "{name} picked {a} apples and {her} cousin picked {b} apples. They used {c} apples "
            "for a pie. How many apples are left?",
        ),
    ),
    S(
        "toys",
        {"a": I(5, 30), "b": I(2, 8), "b2": D(lambda v: 2 * v["b"])},
        "{name} has {a} toys. For Christmas, {she} got {b} toys each from {her} mom and dad. How "
        "many toys does {she} have now?",
        (
            "{name} owned {a} toys before Christmas. {Her} mom gave {her} {b} toys, and {her} "
            "dad also gave {her} {b} toys. How many toys does {she} have now?",
            "At Christmas {name}'s parents each gave {her} {b} toys. If {she} already had {a}, "
            "how many does {she} have in total?",
            "{name} started with {a} toys and received {b2} new ones at Christmas from {her} "
            "parents. What is {her} toy count now?",
        ),
        (
            "{name} has {a} marbles. On {her} birthday, {she} got {b} marbles each from {her} "
            "two aunts. How many marbles does {she} have now?",
            "{name} has {a} stamps. {She} bought {b} stamps each week for three weeks. How many "
            "stamps does {she} have now?",
        ),
    ),
    S(
        "computers",
        {"a": I(5, 40), "b": I(2, 9), "k": I(3, 7)},
        "There were {a} computers in the server room. {b} more computers were installed each "
        "day, from Monday to Thursday. How many computers are now in the server room?",
        (
            "A server room had {a} computers. From Monday through Thursday, {b} computers were "
            "added every day. How many computers are in the room now?",
            "Over four days, Monday to Thursday, the IT team installed {b} computers per day in "
            "a server room that already had {a}. How many computers does it hold now?",
            "Starting with {a} machines, a server room got {b} new computers daily from Monday "
            "until Thursday. What is the total now?",
        ),
        (
            "There were {a} chairs in the hall. {b} more chairs were brought in each day, from "
            "Monday to Friday. How many chairs are in the hall now?",
            "A library had {a} books. Every day for {k} days, {b} more books were donated. How "
            "many books does the library have now?",
        ),
    ),
    S(
        "cupcakes",
        {
            "a": I(24, 60),
            "b": I(10, 23),
            "p": M(0.75, 3.5, 0.25),
            "pc": D(lambda v: round(v["p"] * 100)),
        },
        "{name} baked {a} cupcakes for the bake sale. {She} sold {b} of them for ${p:.2f} each. "
        "How much money did {she} make?",
        (
            "For a bake sale, {name} made {a} cupcakes and sold {b} at ${p:.2f} apiece. What were "
            "{her} total sales?",
            "{name} sold {b} of the {a} cupcakes {she} baked, charging {p:.2f} dollars each. How "
            "much did {she} earn?",
            "{name} baked {a} cupcakes and sold {b} of them at {pc} cents each. How much money "
            "did {she} raise?",
        ),
        (
            "{name} made {a} cookies for the school fair. {She} sold {b} of them for ${p:.2f} "
            "each. How much money did {she} make?",
            "{name} grew {a} tomatoes and sold {b} of them at the market for ${p:.2f} each. How "
            "much did {she} earn?",
        ),
    ),
    S(
        "train",
        {
            "h": I(2, 6),
            "v": I(30, 80, 5),
            "d": D(lambda v: v["h"] * v["v"]),
            "k": I(3, 10),
            "d2": I(50, 300, 10),
        },
        "A train travels {d} miles in {h} hours. At the same rate, how many miles would it "
        "travel in {k} hours?",
        (
            "If a train covers {d} miles in {h} hours, how far will it go in {k} hours at that "
            "speed?",
            "Moving at a constant speed, a train goes {d} miles every {h} hours. What distance "
            "does it cover in {k} hours?",
            "A train covers {d} miles in {h} hours, that is {v} miles per hour. How many miles "
            "does it travel in {k} hours?",
        ),
        (
            "A car travels {d} kilometers in {h} hours. At the same rate, how many kilometers "
            "would it travel in {k} hours?",
            "A cyclist rides {d} miles in {h} hours. How long will it take the cyclist to ride "
            "{d2} miles at the same speed?",
        ),
    ),
    S(
        "garden",
        {"a": I(3, 12), "b": I(5, 20), "c": I(4, 30)},
        "{name} planted {a} rows of tomatoes with {b} plants in each row. Each plant produces {c} "
        "tomatoes. How many tomatoes can {she} harvest?",
        (
            "In {her} garden, {name} has {a} rows of tomato plants, {b} per row, and every plant "
            "yields {c} tomatoes. How many tomatoes will {she} get?",
            "Each of {name}'s tomato plants gives {c} tomatoes. If {she} planted {b} plants in "
            "each of {a} rows, what is {her} total harvest?",
            "{name} set out {a} rows containing {b} tomato plants apiece; every plant bears {c} "
            "fruits. Find the number of tomatoes harvested.",
        ),
        (
            "{name} planted {a} rows of corn with {b} stalks in each row. Each stalk produces {c} "
            "ears of corn. How many ears of corn can {she} harvest?",
            "A farmer has {a} rows of apple trees with {b} trees in each row. Each tree gives {c} "
            "baskets of apples. How many baskets does the farmer get?",
        ),
    ),
    S(
        "jacket",
        {"p": I(40, 200), "r": C(10, 15, 20, 25, 30, 40, 50)},
        "A jacket costs ${p}. It is on sale for {r}% off. How much does the jacket cost on sale?",
        (
            "What is the sale price of a ${p} jacket that is discounted by {r}%?",
            "A ${p} jacket is marked down {r} percent. What is the new price?",
            "The price of a jacket is {p} dollars, and the store takes {r}% off. How much does it "
            "cost now?",
        ),
        (
            "A pair of shoes costs ${p}. It is on sale for {r}% off. How much do the shoes cost "
            "on sale?",
            "A TV costs ${p}. During a sale, the price is reduced by {r}%, and then a further $10 "
            "is taken off. What is the final price?",
        ),
    ),
    S(
        "tip",
        {
            "k": I(2, 6),
            "kp": D(lambda v: v["k"] + 1),
            "b": M(40, 180, 0.05),
            "r": C(15, 18, 20, 25),
        },
        "{name} and {her} {k} friends went to dinner. The bill was ${b:.2f}, and they left a "
        "{r}% tip. They split the total evenly. How much did each person pay?",
        (
            "A dinner bill of ${b:.2f} for {name} and {k} friends comes with a {r}% tip. If "
            "everyone pays an equal share, how much does each pay?",
            "{name} went out to eat with {k} friends. With a {r} percent tip on the ${b:.2f} "
            "bill, what is each person's equal share?",
            "{kp} people, {name} and {her} friends, shared a ${b:.2f} dinner bill plus a {r}% "
            "tip equally. How much did each person pay?",
        ),
        (
            "{name} and {her} {k} coworkers went to lunch. The bill was ${b:.2f}, and they left a "
            "{r}% tip. They split the total evenly. How much did each person pay?",
            "{name} took {her} {k} cousins to the movies. Tickets cost ${b:.2f} in total plus a "
            "{r}% booking fee. How much did each of them pay if they split it evenly?",
        ),
    ),
    S(
        "temperature",
        {"t": I(2, 15), "u": I(5, 20), "v": I(3, 15)},
        "At 6 a.m. the temperature was -{t} degrees Celsius. By noon it had risen {u} degrees, "
        "and by midnight it had fallen {v} degrees from the noon temperature. What was the "
        "temperature at midnight?",
        (
            "The temperature was −{t}°C at 6 in the morning. It rose by {u} degrees until noon "
            "and then dropped {v} degrees by midnight. What was the midnight temperature?",
            "At six in the morning it was minus {t} degrees Celsius. The temperature climbed {u} "
            "degrees by midday and fell {v} degrees by midnight. How cold was it at midnight?",
            "Starting from -{t} degrees at 6 a.m., the temperature went up {u} degrees by noon "
            "and down {v} degrees by midnight. Find the temperature at midnight.",
        ),
        (
            "At 7 a.m. the temperature was -{t} degrees Celsius. By 2 p.m. it had risen {u} "
            "degrees. What was the temperature at 2 p.m.?",
            "A submarine was at -{t} meters. It rose {u} meters and then dove {v} meters. What "
            "was its final depth?",
        ),
    ),
    S(
        "balance",
        {
            "a": I(50, 400, 5),
            "o": I(10, 90, 5),
            "b": D(lambda v: v["a"] + v["o"]),
            "c": I(20, 300, 5),
        },
        "{name}'s bank account had ${a}. {She} wrote a check for ${b}, which overdrew the "
        "account, and then deposited ${c}. What is {her} balance now?",
        (
            "{name} had {a} dollars in {her} account, paid a ${b} check, and later deposited "
            "${c}. What is the balance?",
            "Starting with ${a}, {name}'s account went negative after a ${b} check. After a "
            "deposit of ${c}, what is the account balance?",
            "After paying a ${b} bill from an account holding ${a}, {name} deposited ${c}. How "
            "much is in the account?",
        ),
        (
            "{name}'s bank account had ${a}. {She} paid ${b} for rent and then received ${c} "
            "from {her} job. What is {her} balance now?",
            "{name} owed {her} friend ${a}. {She} paid back ${b} and then borrowed ${c} more. How "
            "much does {she} owe now?",
        ),
    ),
    S(
        "fuel",
        {
            "g": I(2, 8),
            "mpg": I(18, 40),
            "m": D(lambda v: v["g"] * v["mpg"]),
            "p": M(2.5, 4.9, 0.1),
            "k": I(100, 600, 10),
        },
        "A car uses {g} gallons of gas to drive {m} miles. Gas costs ${p:.2f} per gallon. How "
        "much does it cost to drive {k} miles?",
        (
            "Driving {m} miles takes {g} gallons in {name}'s car, and gas is ${p:.2f} a gallon. "
            "What does a {k}-mile trip cost in gas?",
            "If {g} gallons get a car {m} miles and one gallon costs {p:.2f} dollars, how much "
            "will fuel for {k} miles cost?",
            "At ${p:.2f} per gallon, how much gas money is needed for {k} miles in a car that "
            "gets {mpg} miles to the gallon?",
        ),
        (
            "A truck uses {g} gallons of diesel to drive {m} miles. Diesel costs ${p:.2f} per "
            "gallon. How much does it cost to drive {k} miles?",
            "A motorbike goes {m} miles on {g} gallons of gas. How many gallons does it need for "
            "{k} miles?",
        ),
    ),
    S(
        "town",
        {"a": I(10000, 90000, 500), "b": I(200, 2000, 50), "k": I(2, 9)},
        "A town had a population of {a:,}. Each year the population grows by {b:,} people. What "
        "will the population be after {k} years?",
        (
            "The population of a town is {a:,} and increases by {b:,} every year. How many "
            "people will live there in {k} years?",
            "If a town of {a} people gains {b} residents per year, what is its population {k} "
            "years from now?",
            "Starting from {a:,} residents, a town grows by {b:,} people annually. Find its "
            "population after {k:w} years.",
        ),
        (
            "A city had a population of {a:,}. Each year the population falls by {b:,} people. "
            "What will the population be after {k} years?",
            "A school district has {a:,} library books and buys {b:,} new books every year. How "
            "many books will it have after {k} years?",
        ),
    ),
    S(
        "tank",
        {"c": I(200, 1000, 50), "r": I(5, 40, 5), "s": I(20, 150, 10)},
        "A tank holds {c} liters of water. It is filled at a rate of {r} liters per minute. How "
        "many minutes will it take to fill the tank if it already contains {s} liters?",
        (
            "{s} liters of water are already in a tank that holds {c} liters. Water flows in at "
            "{r} liters a minute. How long until it is full?",
            "How many minutes does it take to fill a {c}-liter tank at {r} liters per minute when "
            "it already has {s} liters in it?",
            "A {c} L tank currently has {s} L of water. If a hose adds {r} L each minute, in how "
            "many minutes will it be full?",
        ),
        (
            "A pool holds {c} liters of water. It is filled at a rate of {r} liters per minute. "
            "How many minutes will it take to fill the pool if it is empty?",
            "A bathtub holds {c} liters. It drains at {r} liters per minute. How long does it "
            "take to empty if it is full?",
        ),
    ),
    S(
        "concert",
        {"a": I(15, 60), "b": I(5, 30), "n": I(1, 4), "m": I(1, 5)},
        "Tickets to a concert cost ${a} for adults and ${b} for children. A family of {n} adults "
        "and {m} children goes to the concert. How much do they pay?",
        (
            "A family with {n} adults and {m} kids buys concert tickets. Adult tickets are ${a} "
            "and child tickets are ${b}. What is the total cost?",
            "How much does a family pay for a concert if {n} adult tickets cost ${a} each and {m} "
            "child tickets cost ${b} each?",
            "Concert prices: adults {a} dollars, children {b} dollars. What does it cost for "
            "{n:w} adults and {m:w} children?",
        ),
        (
            "Tickets to the zoo cost ${a} for adults and ${b} for children. A family of {n} "
            "adults and {m} children goes to the zoo. How much do they pay?",
            "Museum entry is ${a} for adults and free for children under five. A group of {n} "
            "adults and {m} children visits. How much do they pay?",
        ),
    ),
    S(
        "phone",
        {"a": I(20, 60), "p": M(1.5, 12, 0.5), "g": I(2, 25)},
        "A phone plan costs ${a} per month plus ${p:.2f} for each gigabyte of data. {name} used "
        "{g} gigabytes last month. How much was {her} bill?",
        (
            "{name}'s phone plan charges {a} dollars a month and ${p:.2f} per gigabyte. What did "
            "{she} pay last month after using {g} GB?",
            "Last month {name} used {g} gigabytes of data. If the plan is ${a} monthly plus "
            "${p:.2f} per GB, what was the bill?",
            "What is {name}'s monthly bill when the base fee is ${a}, data costs ${p:.2f} a "
            "gigabyte, and {she} used {g} gigabytes?",
        ),
        (
            "An internet plan costs ${a} per month plus ${p:.2f} for each hour over the limit. "
            "{name} went {g} hours over last month. How much was {her} bill?",
            "A gym charges ${a} per month plus ${p:.2f} per class. {name} took {g} classes last "
            "month. How much did {she} pay?",
        ),
    ),
    S(
        "ages",
        {"a": I(5, 15), "b": I(2, 8)},
        "{name} is {a} years old. {Her} brother is {b} years older than {her}, and their mother "
        "is three times as old as the brother. How old is their mother?",
        (
            "{name}'s brother is {b} years older than {name}, who is {a}. Their mom is 3 times "
            "the brother's age. What is the mother's age?",
            "If {name} is {a} and {her} brother is {b} years older, and their mother is triple "
            "the brother's age, how old is the mother?",
            "{name}, age {a}, has a brother {b} years older. Their mother's age is three times "
            "his. How old is she?",
        ),
        (
            "{name} is {a} years old. {Her} sister is {b} years younger than {her}, and their "
            "father is four times as old as the sister. How old is their father?",
            "{name} is {a} years old. {Her} cousin is {b} years older, and their grandmother is "
            "twice as old as the cousin. How old is their grandmother?",
        ),
    ),
    S(
        "paint",
        {
            "w": I(2, 6),
            "h": I(8, 12),
            "l": I(10, 20),
            "c": C(250, 300, 350, 400),
            "ar": D(lambda v: v["h"] * v["l"]),
        },
        "{name} wants to paint {w} walls. Each wall is {h} feet high and {l} feet long. One can "
        "of paint covers {c} square feet. How many cans does {she} need?",
        (
            "One can of paint covers {c} square feet. {name} is painting {w} walls that are each "
            "{h} ft tall and {l} ft long. How many cans should {she} buy?",
            "How many cans of paint, each covering {c} sq ft, does {name} need for {w:w} walls "
            "measuring {h} by {l} feet?",
            "{name} needs to paint {w} walls, each {ar} square feet in area. If one can covers "
            "{c} square feet, how many cans does {she} need?",
        ),
        (
            "{name} wants to wallpaper {w} walls. Each wall is {h} feet high and {l} feet long. "
            "One roll of wallpaper covers {c} square feet. How many rolls does {she} need?",
            "{name} is tiling a floor that is {h} feet by {l} feet. Each box of tiles covers {c} "
            "square feet. How many boxes does {she} need?",
        ),
    ),
    S(
        "recipe",
        {"s": I(2, 6), "f": C(1.5, 2.0, 2.5, 3.0, 3.5, 1.25, 2.75), "e": I(2, 4), "t": I(8, 24, 2)},
        "A recipe for {s} servings uses {f:g} cups of flour and {e} eggs. How many cups of flour "
        "and eggs are needed for {t} servings?",
        (
            "To make {t} servings of a recipe that serves {s}, how much flour and how many eggs "
            "do you need if the original calls for {f:mixed} cups of flour and {e} eggs?",
            "A dish for {s} people needs {f:spoken} cups of flour and {e:w} eggs. Scale it up "
            "for {t} people: how much flour and how many eggs?",
            "{name}'s pancake recipe makes {s} servings with {f:g} cups of flour and {e} eggs. "
            "{She} wants {t} servings. How much of each does {she} need?",
        ),
        (
            "A recipe for {s} servings uses {f:g} cups of sugar and {e} tablespoons of butter. "
            "How much sugar and butter are needed for {t} servings?",
            "A cookie recipe makes {s} dozen cookies with {f:g} cups of flour. How many cups of "
            "flour are needed for {t} dozen cookies?",
        ),
    ),
    S(
        "overtime",
        {"r": I(12, 30), "h": I(42, 55), "k": I(2, 6)},
        "{name} earns ${r} per hour. {She} works {h} hours a week, and any hours over 40 are paid "
        "at 1.5 times the normal rate. How much does {she} earn in a week?",
        (
            "{name} makes ${r} an hour and works {h} hours weekly; overtime beyond 40 hours pays "
            "time and a half. What are {her} weekly earnings?",
            "For a {h}-hour week at ${r} per hour, with hours past 40 paid at one and a half "
            "times the rate, how much does {name} earn?",
            "{name}'s hourly wage is {r} dollars. Overtime (over 40 hours) pays 1.5 times that. "
            "How much does {she} earn working {h} hours?",
        ),
        (
            "{name} earns ${r} per hour. {She} works {h} hours a week, and any hours over 40 are "
            "paid at double the normal rate. How much does {she} earn in a week?",
            "{name} earns ${r} per hour as a cashier and works {h} hours a week. How much does "
            "{she} earn in {k} weeks?",
        ),
    ),
    S(
        "bicycle",
        {"c": I(150, 600, 10), "s": I(20, 120, 5), "w": I(5, 40, 5)},
        "{name} wants to buy a bicycle that costs ${c}. {She} has saved ${s} and saves ${w} each "
        "week. How many weeks will it take {her} to have enough money?",
        (
            "A bicycle costs ${c}. {name} already has ${s} and puts aside ${w} weekly. In how "
            "many weeks can {she} afford it?",
            "How many weeks must {name} save ${w} a week to buy a ${c} bike if {she} starts with "
            "${s}?",
            "{name} has {s} dollars toward a {c}-dollar bicycle and adds {w} dollars each week. "
            "How long until {she} can buy it?",
        ),
        (
            "{name} wants to buy a video game that costs ${c}. {She} has saved ${s} and earns "
            "${w} each week from chores. How many weeks will it take?",
            "{name} wants to buy a tablet for ${c}. {She} saves ${w} every week starting from "
            "nothing. How many weeks will it take?",
        ),
    ),
    S(
        "marbles",
        {
            "a": I(20, 80),
            "b": I(3, 15),
            "c": I(2, 6),
            "d": I(5, 12),
            "cd": D(lambda v: v["c"] * v["d"]),
        },
        "{name} had {a} marbles. {She} lost {b} marbles at school and then bought {c} packs of "
        "marbles with {d} marbles in each pack. How many marbles does {she} have now?",
        (
            "After losing {b} of {her} {a} marbles at school, {name} bought {c} packs containing "
            "{d} marbles each. How many marbles does {she} have?",
            "{name} bought {c} packs of {d} marbles after losing {b} at school. {She} originally "
            "had {a}. How many does {she} have now?",
            "{name} had {a} marbles, lost {b}, and then bought {cd} more marbles in {c:w} packs. "
            "How many marbles does {she} have now?",
        ),
        (
            "{name} had {a} baseball cards. {She} gave {b} cards to a friend and then bought {c} "
            "packs of cards with {d} cards in each pack. How many cards does {she} have now?",
            "{name} had {a} stickers. {She} used {b} stickers on {her} notebook. How many "
            "stickers does {she} have left?",
        ),
    ),
    S(
        "glasses",
        {"n": I(20, 60, 20), "n2": I(20, 60, 10)},
        "There are {n} students in a class. Two fifths of them are boys, and a quarter of the "
        "girls wear glasses. How many girls wear glasses?",
        (
            "A class of {n} students is 2/5 boys. One quarter of the girls wear glasses. How many "
            "girls wear glasses?",
            "In a {n}-student class, 40% are boys. If a fourth of the girls wear glasses, how "
            "many girls with glasses are there?",
            "{n} students are in a class; two-fifths are boys, and 25% of the girls wear glasses. "
            "Find how many girls wear glasses.",
        ),
        (
            "There are {n} students in a class. Three fifths of them are girls, and a third of "
            "the boys play soccer. How many boys play soccer?",
            "There are {n2} people at a party. Half of them are adults, and a quarter of the "
            "children are under five. How many children are under five?",
        ),
    ),
    S(
        "walk",
        {"s": I(2, 5), "d": C(0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0)},
        "{name} walks to school at {s} miles per hour. The school is {d:g} miles away. How many "
        "minutes does it take {her} to get to school?",
        (
            "If {name} walks {d:g} miles to school at a pace of {s} mph, how long in minutes is "
            "{her} walk?",
            "The walk to school is {d:g} miles, and {name} walks {s} miles every hour. How many "
            "minutes does the walk take?",
            "{name} walks {s:w} miles an hour. How many minutes will it take {her} to walk the "
            "{d:g} miles to school?",
        ),
        (
            "{name} bikes to the library at {s} miles per hour. The library is {d:g} miles away. "
            "How many minutes does it take {her} to get there?",
            "{name} runs at {s} miles per hour. How many minutes does it take {her} to run {d:g} "
            "miles around the park?",
        ),
    ),
    S(
        "legs",
        {"c": I(5, 40), "w": I(2, 20)},
        "A farmer has {c} chickens and {w} cows. How many legs do the animals have in total?",
        (
            "On a farm there are {w} cows and {c} chickens. Count the total number of legs.",
            "How many legs are there altogether among a farmer's {c} chickens and {w} cows?",
            "{c} chickens and {w} cows live on a farm. What is the combined number of animal legs?",
        ),
        (
            "A farmer has {c} ducks and {w} pigs. How many legs do the animals have in total?",
            "A zoo has {c} ostriches and {w} zebras. How many legs are there in total?",
        ),
    ),
    S(
        "change",
        {
            "a": I(2, 6),
            "p": M(1.25, 4.5, 0.25),
            "b": I(2, 8),
            "q": M(0.5, 2.0, 0.25),
            "bill": C(20, 50, 100),
        },
        "{name} bought {a} notebooks at ${p:.2f} each and {b} pens at ${q:.2f} each. {She} paid "
        "with a ${bill} bill. How much change did {she} get?",
        (
            "{name} paid for {a} notebooks (${p:.2f} each) and {b} pens (${q:.2f} each) using a "
            "${bill} bill. What change should {she} receive?",
            "With a {bill}-dollar bill, {name} buys {a} notebooks costing ${p:.2f} apiece and {b} "
            "pens costing ${q:.2f} apiece. How much change is {she} owed?",
            "How much change does {name} get from ${bill} after buying {a:w} notebooks at "
            "{p:.2f} dollars each and {b:w} pens at {q:.2f} dollars each?",
        ),
        (
            "{name} bought {a} folders at ${p:.2f} each and {b} markers at ${q:.2f} each. {She} "
            "paid with a ${bill} bill. How much change did {she} get?",
            "{name} bought {a} sandwiches at ${p:.2f} each. {She} paid with a ${bill} bill. How "
            "much change did {she} get?",
        ),
    ),
    S(
        "basketball",
        {"t": I(2, 12), "h": I(1, 6), "f": I(1, 8), "x": I(20, 60)},
        "In a basketball game, {name} scored {t} two-point shots, {h} three-point shots, and {f} "
        "free throws worth one point each. How many points did {she} score?",
        (
            "{name} made {t} two-pointers, {h} three-pointers and {f} free throws (1 point each) "
            "in a basketball game. What was {her} total score?",
            "How many points did {name} score with {h} three-point baskets, {t} two-point "
            "baskets, and {f} one-point free throws?",
            "During the game {name} hit {t} shots worth 2 points, {h} worth 3 points, and {f} "
            "free throws. How many points in all?",
        ),
        (
            "In a basketball game, {name} scored {t} two-point shots, {h} three-point shots, and "
            "{f} free throws. How many points did {her} team score if {her} teammates scored {x} "
            "points?",
            "In a football game, {name}'s team scored {t} touchdowns worth 6 points each and {h} "
            "field goals worth 3 points each. How many points did they score?",
        ),
    ),
    S(
        "rent",
        {"k": I(2, 5), "r": I(1200, 3000, 50), "u": I(60, 240, 10)},
        "{k} roommates share an apartment that costs ${r:,} per month. Utilities add ${u} per "
        "month. How much does each roommate pay per month?",
        (
            "An apartment rents for ${r:,} a month, plus ${u} in utilities, and {k} roommates "
            "split the cost equally. What is each person's monthly share?",
            "If {k:w} roommates divide a monthly rent of {r} dollars and utilities of {u} dollars "
            "evenly, how much does each pay?",
            "Monthly rent is ${r:,} and utilities are ${u}. Split evenly among {k} roommates, how "
            "much does each owe per month?",
        ),
        (
            "{k} friends share a vacation house that costs ${r:,} per week. Cleaning adds ${u}. "
            "How much does each friend pay?",
            "{k} roommates share an apartment that costs ${r:,} per month. How much does each "
            "roommate pay per year?",
        ),
    ),
    S(
        "pizza",
        {"p": I(2, 5), "s": C(6, 8, 10, 12), "a": I(1, 4), "b": I(5, 20)},
        "{name} ordered {p} pizzas, each cut into {s} slices. {She} ate {a} slices and {her} "
        "friends ate {b} slices. How many slices are left?",
        (
            "There were {p} pizzas with {s} slices each. {name} had {a} slices and {her} friends "
            "had {b}. How many slices remain?",
            "{name} got {p:w} pizzas cut into {s} slices apiece. After {she} ate {a} and {her} "
            "friends ate {b}, how many slices were left over?",
            "How many slices are left if {name} orders {p} pizzas of {s} slices each, eats {a} "
            "slices, and {her} friends eat {b}?",
        ),
        (
            "{name} bought {p} cakes, each cut into {s} pieces. {She} ate {a} pieces and {her} "
            "family ate {b} pieces. How many pieces are left?",
            "{name} ordered {p} pizzas, each cut into {s} slices. If {she} shares them equally "
            "among {b} friends, how many slices does each friend get?",
        ),
    ),
    S(
        "test",
        {"n": C(20, 25, 40, 50, 80), "w": I(1, 9), "c": D(lambda v: v["n"] - v["w"])},
        "{name} answered {c} out of {n} questions correctly on a test. What percentage of the "
        "questions did {she} answer correctly?",
        (
            "On a test with {n} questions, {name} got {c} right. What percent did {she} get "
            "correct?",
            "What percentage score did {name} get if {she} answered {c} of the {n} test questions "
            "correctly?",
            "{name} got {w} questions wrong on a {n}-question test. What percentage did {she} "
            "answer correctly?",
        ),
        (
            "{name} made {c} out of {n} free throws in practice. What percentage of the free "
            "throws did {she} make?",
            "{name} planted {n} seeds, and {c} of them sprouted. What percentage of the seeds "
            "sprouted?",
        ),
    ),
    S(
        "homework",
        {
            "t": C("3:15", "3:30", "3:45", "4:00", "4:15", "4:30", "5:00"),
            "a": I(20, 60, 5),
            "b": I(15, 45, 5),
            "c": I(10, 40, 5),
        },
        "{name} starts homework at {t} p.m. {She} spends {a} minutes on math, {b} minutes on "
        "reading, and {c} minutes on science. At what time does {she} finish?",
        (
            "Beginning at {t} p.m., {name} does {a} minutes of math, {b} minutes of reading, and "
            "{c} minutes of science. When does {she} finish?",
            "{name} spends {a} min on math, {b} min on reading and {c} min on science homework, "
            "starting at {t} in the afternoon. What time is it when {she} is done?",
            "If {name} begins homework at {t} p.m. and works {a} minutes on math, {b} minutes on "
            "reading, then {c} minutes on science, at what time does {she} stop?",
        ),
        (
            "{name} starts chores at {t} p.m. {She} spends {a} minutes cleaning, {b} minutes "
            "cooking, and {c} minutes doing laundry. At what time does {she} finish?",
            "A movie starts at {t} p.m. and lasts {a} minutes longer than two hours. At what time "
            "does it end?",
        ),
    ),
    S(
        "bookstore",
        {"s": I(4, 20), "b": I(20, 60, 5), "p": C(10, 20, 25, 30, 40, 50, 60, 75)},
        "A bookstore has {s} shelves. Each shelf holds {b} books. If {p}% of the books are sold, "
        "how many books are left?",
        (
            "There are {s} shelves in a bookstore with {b} books on each. After {p}% of the books "
            "are sold, how many remain?",
            "A bookshop sells {p} percent of the books on its {s} shelves, each of which holds "
            "{b} books. How many books are left?",
            "How many books remain in a store with {s} shelves of {b} books each after it sells "
            "{p}% of them?",
        ),
        (
            "A library has {s} shelves. Each shelf holds {b} DVDs. If {p}% of the DVDs are "
            "checked out, how many DVDs are left?",
            "A warehouse has {s} racks. Each rack holds {b} boxes. If {p}% of the boxes are "
            "shipped, how many boxes are shipped?",
        ),
    ),
]

PEOPLE = [
    ("Natalia", "she", "her"),
    ("Weng", "she", "her"),
    ("Betty", "she", "her"),
    ("Julie", "she", "her"),
    ("Maria", "she", "her"),
    ("Aisha", "she", "her"),
    ("Priya", "she", "her"),
    ("Hana", "she", "her"),
    ("Zara", "she", "her"),
    ("Sofia", "she", "her"),
    ("Tomas", "he", "his"),
    ("Kenji", "he", "his"),
    ("Omar", "he", "his"),
    ("Diego", "he", "his"),
    ("Ivan", "he", "his"),
    ("James", "he", "his"),
    ("Mark", "he", "his"),
    ("Samuel", "he", "his"),
]

# Swaps a rephrasing makes; each applies to a text with the given chance.
SYNONYMS = [
    (r"\bbought\b", "purchased"),
    (r"\bgave\b", "handed"),
    (r"\bHow much money\b", "What amount of money"),
    (r"\bin total\b", "altogether"),
    (r"\beach\b", "every"),
    (r"\bcosts\b", "is priced at"),
    (r"\bearns\b", "makes"),
    (r"\bstarted with\b", "began with"),
    (r"\bis left\b", "remains"),
    (r"\bare left\b", "remain"),
    (r"\bfind\b", "work out"),
    (r"\bFind\b", "Work out"),
]

WRAPPERS = [
    "Homework help please! {text} I got {x} but my friend says {y}. Who is right?",
    "Question {x} from my worksheet (page {y}): {text} Thanks in advance!",
    "Can someone check this one? {text} The answer key says {x}, I don't see how.",
]


def _pronouns(person: tuple[str, str, str], values: dict[str, Any]) -> dict[str, Any]:
    name, she, her = person
    return {
        **values,
        "name": name,
        "she": she,
        "She": she.capitalize(),
        "her": her,
        "Her": her.capitalize(),
    }


def _draw(story: Story, rng: random.Random, keep: dict[str, Any] | None = None) -> dict[str, Any]:
    """Gives the story's numbers drawn anew, except those in ``keep``."""
    values: dict[str, Any] = {}
    for name, make in story.slots.items():
        values[name] = (keep or {}).get(name, make(rng, values))
    return values


def _shared_by_chance(story: Story, values: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Gives some of the eval problem's numbers for a sibling to reuse: siblings written
    from one source often keep a price, a count or a rate and change the rest."""
    drawn = [name for name, make in story.slots.items() if not isinstance(make, D)]
    take = rng.sample(drawn, max(1, len(drawn) // 2)) if len(drawn) > 1 else []
    return {name: values[name] for name in take}


def _fix_him(text: str, person: tuple[str, str, str]) -> str:
    """Gives "him" where a template's {her} is an object ("gave him", "older than him"):
    in these stories it is one only after these verbs and "than"."""
    if person[1] != "he":
        return text
    return re.sub(r"\b(give|gives|gave|take|than) his\b", r"\1 him", text)


def _synonyms(text: str, rng: random.Random, chance: float) -> str:
    for pattern, repl in SYNONYMS:
        if rng.random() < chance:
            text = re.sub(pattern, repl, text, count=1)
    return text


def render(template: str, person, values, rng: random.Random, spell: float) -> str:
    """Gives the template filled in for this person and these numbers."""
    text = Writer(rng, spell).format(template, **_pronouns(person, values))
    return _fix_him(text, person)


def pair_row(
    story: str, rnd: int, split: str, label: str, form: str, eval_text: str, match: str
) -> dict[str, Any]:
    """Gives one labelled pair: its id (story, round, label), split, form and both texts."""
    return {
        "id": f"{story}-{rnd}-{label}",
        "story": story,
        "split": split,
        "label": label,
        "form": form,
        "eval": eval_text,
        "match": match,
    }


def write_pairs(rows: list[dict[str, Any]], out: Path, stories: int) -> None:
    """Writes the pairs to out as JSONL and prints how many of each split and label."""
    with open(out, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["split"], row["label"])
        counts[key] = counts.get(key, 0) + 1
    print(
        f"wrote {len(rows)} labelled pairs from {stories} stories to {out}: "
        + ", ".join(f"{s} {lab} {n}" for (s, lab), n in sorted(counts.items()))
    )


def main() -> None:
    rng = random.Random(20261201)
    rows: list[dict[str, Any]] = []
    for s_index, story in enumerate(STORIES):
        split = "holdout" if s_index % 3 == 2 else "tune"
        for rnd in range(ROUNDS):
            person = rng.choice(PEOPLE)
            values = _draw(story, rng)
            original = render(story.question, person, values, rng, 0.0)
            template = story.rephrasings[rnd % 3]
            leak = render(template, person, values, rng, 0.25)
            leak = _synonyms(leak, rng, 0.3)
            form = "rephrased"
            if rng.random() < 0.15:
                wrapper = rng.choice(WRAPPERS)
                leak = wrapper.format(text=leak, x=rng.randint(3, 250), y=rng.randint(3, 250))
                form = "rephrased_in_post"
            rows.append(pair_row(story.key, rnd, split, "leak", form, original, leak))
            other = rng.choice([p for p in PEOPLE if p[0] != person[0]])
            reuse = rng.random() < 0.12
            fresh = _draw(story, rng, _shared_by_chance(story, values, rng) if reuse else None)
            pick = rng.random()
            if pick < 0.3:
                sibling = render(story.question, other, fresh, rng, 0.1)
                form = "same_template"
            else:
                sibling = render(story.shapes[0 if pick < 0.65 else 1], other, fresh, rng, 0.1)
                form = "same_shape"
            sibling = _synonyms(sibling, rng, 0.2)
            if reuse:
                form += "_reusing_numbers"
            rows.append(pair_row(story.key, rnd, split, "sibling", form, original, sibling))
    write_pairs(rows, OUT, len(STORIES))


if __name__ == "__main__":
    main()
