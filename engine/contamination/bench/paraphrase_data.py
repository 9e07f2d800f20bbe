"""English word problems, a pool of prose around them, and planted rule-based paraphrases.

The paraphrase benchmark needs text a sentence model reads as language,
which the n-gram benchmark's pseudo-words are not. Eval items are word
problems drawn from a dozen families (names, objects, numbers and a
flavour sentence vary); the pool is mostly prose on everyday topics, one
document in ten a word problem of the same families with other names and
numbers (the look-alikes a reviewer must not be shown as leaks).

Every eval item is planted twice as a paraphrase: once among the first
``subset`` documents (where the exhaustive reference also runs) and once in
the rest of the pool. A paraphrase keeps the names and numbers and changes
the wording: synonyms, the question asked another way, the context
sentences in another order, a lead-in. It shares few 13-word shingles with
the item, so the n-gram channels rarely see it: it is the paraphrase
channel's to find. The generator is seeded: the same files every time.

Half of the families have look-alikes and half have none, so that a
benchmark can tell what look-alikes cost from what the search itself
loses. The look-alikes are of two kinds, as a real pretraining pool holds
them: the pool's word problems (one document in ten) are all drawn from
the first half's families, and every eval item of that half also has
``RENUMBERED`` copies in the pool, its own wording with other numbers
(nearer to it, for any sentence model, than its paraphrase is).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

_NAMES = (
    "Ava Ben Carla Dev Elena Farid Grace Hiro Ines Jamal Kira Luca Maya Nico Omar Priya Quinn "
    "Rosa Sami Tara Umar Vera Wes Ximena Yusuf Zoe Abel Bianca Cyrus Dana Emil Fiona Gus Hana "
    "Ivan Jade Kofi Lena Marco Nadia Oscar Pia Rafael Sofia Theo Uma Viktor Willa Yara Zane"
).split()
_OBJECTS = [
    "apples",
    "marbles",
    "stickers",
    "pencils",
    "cookies",
    "stamps",
    "seashells",
    "postcards",
    "comic books",
    "trading cards",
    "candles",
    "notebooks",
    "cupcakes",
    "buttons",
    "paper cranes",
    "bracelets",
]
_PLACES = "market library bakery farm school garage museum park harbour studio".split()
_FLAVOUR = [
    "It was a rainy week, so most of the work happened indoors.",
    "Everyone agreed it had been a busy season.",
    "The plan had been written on a note stuck to the fridge.",
    "Nobody expected the numbers to add up so neatly.",
    "The whole family helped whenever they could.",
    "A neighbour kept track of everything in a small notebook.",
    "It all started as a hobby a few years ago.",
    "The weather stayed mild for the entire month.",
    "Prices had not changed since the previous year.",
    "The local newspaper even wrote a short piece about it.",
]

# (context sentences, question); {n} name, {o} object, {p} place, {a} {b} {c} numbers
_FAMILIES = [
    (
        ["{n} collected {a} {o} on Monday.", "On Tuesday {n} collected {b} more {o}."],
        "How many {o} does {n} have now?",
    ),
    (
        ["{n} bought {a} boxes of {o} at the {p}.", "Each box holds {b} {o}."],
        "How many {o} did {n} buy in total?",
    ),
    (
        ["{n} had {c} {o}.", "{n} gave {a} of them to a friend and lost {b} on the way home."],
        "How many {o} are left?",
    ),
    (
        ["A ticket to the {p} costs {a} dollars.", "{n} buys tickets for {b} people."],
        "How much money does {n} spend?",
    ),
    (
        ["{n} reads {a} pages every day.", "The book at the {p} has {c} pages."],
        "How many days will it take {n} to finish the book?",
    ),
    (
        ["{n} works {a} hours a week at the {p}.", "The job pays {b} dollars an hour."],
        "How much does {n} earn in a week?",
    ),
    (
        ["There are {c} {o} in a jar at the {p}.", "{n} shares them equally among {b} children."],
        "How many {o} does each child get?",
    ),
    (
        ["{n} walks {a} kilometres to the {p} and back every day.", "{n} does this for {b} days."],
        "How far does {n} walk altogether?",
    ),
    (
        ["A shelf at the {p} holds {a} {o}.", "There are {b} shelves, and {c} {o} are sold."],
        "How many {o} remain on the shelves?",
    ),
    (
        ["{n} saves {a} dollars each week.", "{n} wants a bike that costs {c} dollars."],
        "How many weeks must {n} save to buy the bike?",
    ),
    (
        ["{n} bakes {a} trays of {o}, with {b} on each tray.", "{n} sells half of them."],
        "How many {o} does {n} still have?",
    ),
    (
        ["The {p} opened with {c} visitors in the morning.", "{a} left at noon and {b} arrived."],
        "How many visitors were there in the afternoon?",
    ),
]

_SYNONYMS = {
    "collected": ["gathered", "picked up"],
    "bought": ["purchased", "got"],
    "buys": ["purchases", "pays for"],
    "buy": ["purchase", "get"],
    "holds": ["contains", "has room for"],
    "gave": ["handed", "passed"],
    "lost": ["dropped", "misplaced"],
    "costs": ["is priced at", "sells for"],
    "reads": ["gets through", "goes through"],
    "works": ["puts in", "spends"],
    "pays": ["gives", "offers"],
    "shares": ["splits", "divides"],
    "equally": ["evenly", "fairly"],
    "children": ["kids", "youngsters"],
    "walks": ["goes on foot", "hikes"],
    "saves": ["puts aside", "sets aside"],
    "wants": ["hopes to get", "would like"],
    "bakes": ["makes", "prepares"],
    "sells": ["sold", "gets rid of"],
    "sold": ["bought by customers", "gone"],
    "left": ["went home", "departed"],
    "arrived": ["came in", "showed up"],
    "friend": ["pal", "classmate"],
    "every": ["each", "per"],
    "each": ["every", "per"],
    "more": ["additional", "extra"],
    "money": ["cash", "dollars"],
    "altogether": ["in all", "overall"],
    "remain": ["are still", "stay"],
    "finish": ["complete", "get to the end of"],
}
_QUESTION_FORMS = [
    ("How many ", ["What is the number of ", "Work out how many ", "Find how many "]),
    ("How much ", ["What amount of ", "Work out how much ", "Find how much "]),
    ("How far ", ["What distance ", "Work out how far "]),
]
_LEAD_INS = ["", "Here is a problem.", "Try this one:", "A quick puzzle:", "Consider this."]

_TOPICS = {
    "cooking": "recipe oven flour garlic sauce pan dinner spices bread soup kitchen chef".split(),
    "travel": "train station ticket map hotel coast journey valley passport bridge city".split(),
    "sport": "match coach season goal team stadium training league referee score".split(),
    "tech": "laptop update server battery screen network software cable keyboard app".split(),
    "garden": "soil tomato seeds hedge compost shovel roses watering shade fence".split(),
    "music": "guitar rehearsal chorus concert drummer melody album studio tune stage".split(),
}
_VERBS = "checked moved fixed noticed cleaned painted shared described planned visited".split()
_ADJS = "old quiet bright small busy careful local famous simple heavy new friendly".split()


@dataclass(frozen=True)
class ParaphraseData:
    """Paths of the generated files and the planted (eval index, pool index) pairs."""

    eval_path: Path
    pool_path: Path
    subset_path: Path  # the first ``subset`` pool documents, as their own file
    subset: int
    planted: list[tuple[int, int]]  # every planted paraphrase
    planted_in_subset: list[tuple[int, int]]
    lookalike_items: frozenset[int]  # eval items whose family has look-alikes in the pool


RENUMBERED = 3  # copies of each look-alike-half eval item with its numbers changed


def has_lookalikes(family: int) -> bool:
    """Gives whether a family's problems have look-alikes in the pool (the first half)."""
    return family < len(_FAMILIES) // 2


def renumbered(text: str, rng: random.Random) -> str:
    """Gives the text with every number replaced by another."""

    def other(found: re.Match[str]) -> str:
        value = int(found.group())
        new = value
        while new == value:
            new = rng.randint(2, max(60, 2 * value))
        return str(new)

    return re.sub(r"\d+", other, text)


def _numbers(rng: random.Random) -> dict[str, int]:
    a, b = rng.randint(2, 60), rng.randint(2, 40)
    return {"a": a, "b": b, "c": a + b + rng.randint(10, 400)}


def word_problem(rng: random.Random, family: int | None = None) -> str:
    """Gives one word problem of a family (a random one when None), names and numbers drawn."""
    context, question = _FAMILIES[rng.randrange(len(_FAMILIES)) if family is None else family]
    slots = {
        "n": rng.choice(_NAMES),
        "o": rng.choice(_OBJECTS),
        "p": rng.choice(_PLACES),
        **_numbers(rng),
    }
    sentences = [s.format(**slots) for s in context]
    sentences.insert(rng.randrange(len(sentences) + 1), rng.choice(_FLAVOUR))
    return " ".join([*sentences, question.format(**slots)])


def _swap_words(sentence: str, rng: random.Random) -> str:
    out = []
    for word in sentence.split(" "):
        bare = word.rstrip(".,?:")
        if bare in _SYNONYMS and rng.random() < 0.8:
            word = rng.choice(_SYNONYMS[bare]) + word[len(bare) :]
        out.append(word)
    return " ".join(out)


def _ask_again(question: str, rng: random.Random) -> str:
    for start, forms in _QUESTION_FORMS:
        if question.startswith(start):
            return rng.choice(forms) + question[len(start) :]
    return question


def paraphrase(text: str, rng: random.Random) -> str:
    """Gives a rewording of a word problem that keeps its names and numbers.

    The question is asked another way, words are swapped for synonyms, the
    context sentences come in another order and a lead-in may open it.
    """
    sentences = re.split(r"(?<=[.?!])\s+", text.strip())
    context, question = sentences[:-1], sentences[-1]
    rng.shuffle(context)
    reworded = [_swap_words(s, rng) for s in context]
    asked = _swap_words(_ask_again(question, rng), rng)
    lead = rng.choice(_LEAD_INS)
    return " ".join(part for part in [lead, *reworded, asked] if part)


def prose(rng: random.Random) -> str:
    """Gives a short everyday paragraph (40 to 120 words) on one topic."""
    words = _TOPICS[rng.choice(list(_TOPICS))]
    name = rng.choice(_NAMES)
    out = []
    for _ in range(rng.randint(4, 11)):
        a, b = rng.sample(words, 2)
        out.append(
            f"{name} {rng.choice(_VERBS)} the {rng.choice(_ADJS)} {a} near the {b}"
            + (f" after {rng.randint(2, 30)} minutes." if rng.random() < 0.3 else ".")
        )
    return " ".join(out)


def make_paraphrase_data(
    directory: Path,
    pool_size: int,
    eval_size: int,
    subset: int,
    seed: int = 7,
    halves: bool = True,
) -> ParaphraseData:
    """Writes eval.jsonl, pool.jsonl and pool-subset.jsonl into ``directory``; gives the plants.

    ``halves=False`` makes the earlier pool: look-alikes of every family, no
    renumbered copies (kept to compare with figures measured on it).
    """
    copies_each = RENUMBERED if halves else 0
    if subset > pool_size or pool_size < (2 + copies_each) * eval_size:
        raise ValueError(
            "the pool must hold two paraphrases and the renumbered copies of every eval item"
        )
    eval_path = directory / "eval.jsonl"
    pool_path, subset_path = directory / "pool.jsonl", directory / "pool-subset.jsonl"
    record = directory / "planted.json"
    lookalike_items = frozenset(e for e in range(eval_size) if has_lookalikes(e % len(_FAMILIES)))
    if record.is_file():  # written last: the files beside it are whole
        planted = [(e, p) for e, p in json.loads(record.read_text())]
        return ParaphraseData(
            eval_path,
            pool_path,
            subset_path,
            subset,
            planted,
            [(e, p) for e, p in planted if p < subset],
            lookalike_items,
        )
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    evals: list[str] = []
    seen: set[str] = set()
    while len(evals) < eval_size:
        text = word_problem(rng, len(evals) % len(_FAMILIES))
        if text not in seen:
            seen.add(text)
            evals.append(text)
    # one paraphrase of each item among the first `subset` documents, one in the rest
    # (all of them in the subset's part when the pool is no larger than it), and the
    # renumbered copies of the look-alike half anywhere else
    head = rng.sample(range(subset), min(eval_size, subset))
    rest = range(subset, pool_size)
    tail = rng.sample(rest, eval_size) if len(rest) >= eval_size else []
    plants: dict[int, int] = {}
    for e, p in enumerate(head):
        plants[p] = e
    for e, p in enumerate(tail):
        plants[p] = e
    copies: dict[int, int] = {}
    free = [p for p in range(pool_size) if p not in plants]
    spots = rng.sample(free, copies_each * len(lookalike_items))
    for n, e in enumerate(sorted(lookalike_items) * copies_each):
        copies[spots[n]] = e
    families = [f for f in range(len(_FAMILIES)) if not halves or has_lookalikes(f)]
    with open(eval_path, "w", encoding="utf-8") as out:
        for e, text in enumerate(evals):
            out.write(json.dumps({"id": f"q{e}", "question": text}) + "\n")
    with open(pool_path, "w", encoding="utf-8") as out, open(subset_path, "w") as part:
        for p in range(pool_size):
            if p in plants:
                text = paraphrase(evals[plants[p]], rng)
            elif p in copies:
                text = renumbered(evals[copies[p]], rng)
            elif rng.random() < 0.1:
                text = word_problem(rng, rng.choice(families))
            else:
                text = prose(rng)
            line = json.dumps({"id": f"d{p}", "text": text}) + "\n"
            out.write(line)
            if p < subset:
                part.write(line)
    planted = sorted((e, p) for p, e in plants.items())
    record.write_text(json.dumps(planted))
    return ParaphraseData(
        eval_path,
        pool_path,
        subset_path,
        subset,
        planted,
        [(e, p) for e, p in planted if p < subset],
        lookalike_items,
    )
