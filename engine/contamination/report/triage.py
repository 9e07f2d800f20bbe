"""Which flagged matches are likely leaks and which are template siblings, and how sure.

A rephrased leak keeps the numbers of the item it copies; a template sibling
(the same story shape with other names and numbers) changes them, though it
often restates the small counts of the story ("3 friends", "twice", "half").
Sentence embeddings cannot tell the two apart (both look alike to them, which
is why both were flagged), so each match is labelled from the eval item's
numbers it keeps, each weighed by how rare its value is
(``channels.numbers.NumberRarity``: small counting numbers and values that
many documents state weigh little), and from whether the n-gram channels
found its text copied:

- **likely leak**: it keeps at least ``KEEP_LEAK`` of the eval item's numbers
  and of their weight, and, unless the text itself was copied, at least two
  numbers (one shared number is too often chance) and at least
  ``LEAK_EVIDENCE`` of weight (two kept small counts are not enough);
- **template sibling**: it keeps less than ``KEEP_UNCLEAR`` of the numbers,
  by count and by weight, states numbers of its own, and its text was not copied;
- **unclear**: anything between, and an eval item that states no number and
  whose text was not copied.

The weights come from a document frequency: over the scan's own texts (the
eval set and the pool documents it flagged), or over a labelled pair file's
texts in ``measure``; with fewer than ``MIN_DOCS`` texts, a fixed prior (a
small counting number weighs ``SMALL_WEIGHT``, any other number 1).

The thresholds were chosen on the ``tune`` splits of the labelled pairs
(``triage_pairs.jsonl``, made by sample_data/contamination/make_triage_pairs.py,
and the harder pairs of make_hard_triage_pairs.py, whose siblings share small
counts) and of pairs made from a public benchmark (make_real_triage_pairs.py),
with the asymmetry of the two mistakes in mind: a leak called a sibling may be
rejected in bulk unread, a sibling called unclear only costs a look. So
``KEEP_UNCLEAR`` sits well below every tuned leak. The ``holdout`` splits were
not looked at while choosing them; every scan measures the rule on the shipped
pairs and reports it, and ``sealdesk bench contamination --triage FILE``
measures it, beside the previous rule, on any labelled pair file.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from engine.contamination.channels.calibration import labelled_rows
from engine.contamination.channels.ngram import NgramSettings
from engine.contamination.channels.numbers import (
    NO_RARITY,
    SMALL_WEIGHT,
    NumberOverlap,
    NumberRarity,
    number_overlap,
)
from engine.contamination.channels.shingles import shingle_set
from engine.contamination.inputs.canonical_text import canonical
from engine.errors import InputError

LIKELY_LEAK = "likely_leak"
UNCLEAR = "unclear"
TEMPLATE_SIBLING = "template_sibling"
# Most to least in need of a reviewer's eyes: the queue's order and an item's label.
LABELS = (LIKELY_LEAK, UNCLEAR, TEMPLATE_SIBLING)
SHOWN = {LIKELY_LEAK: "likely leak", UNCLEAR: "unclear", TEMPLATE_SIBLING: "template sibling"}

KEEP_LEAK = 0.75  # three quarters of the eval item's numbers and of their weight
LEAK_EVIDENCE = 0.6  # kept weight: more than two small counts (SMALL_WEIGHT each)
KEEP_UNCLEAR = 0.3
RULE = (
    f"likely leak: the match keeps >= {KEEP_LEAK:.0%} of the eval item's numbers and of their "
    f"weight (each weighed by its rarity, small counting numbers at most {SMALL_WEIGHT}), "
    f"at least two numbers and at least {LEAK_EVIDENCE} of weight (unless the n-gram "
    f"channels found the text copied); template sibling: it keeps < {KEEP_UNCLEAR:.0%} of "
    "the numbers by count and by weight, states numbers of its own and the text was not "
    "copied; unclear: between, or no numbers in the eval item and the text not copied"
)

PAIR_LABELS = ("leak", "sibling")
SPLITS = ("tune", "holdout")
# Package data of engine.contamination, like the cosine calibration set, so that an
# installed wheel measures the rule as a checkout does.
DEFAULT_PAIRS: Traversable = resources.files("engine.contamination") / "triage_pairs.jsonl"


@dataclass(frozen=True)
class Triage:
    """One match's label, and the numbers it was read from."""

    label: str
    overlap: NumberOverlap
    copied: bool

    def to_json(self) -> dict[str, Any]:
        """Gives the payload's account: the label, both texts' numbers and the share kept."""
        return {"label": self.label, "copied": self.copied, **self.overlap.to_json()}


def label_for(overlap: NumberOverlap, copied: bool) -> str:
    """Gives likely_leak, unclear or template_sibling for a match (RULE)."""
    kept, weighted = overlap.kept, overlap.weighted_kept
    if kept is None or weighted is None:
        return LIKELY_LEAK if copied else UNCLEAR
    if min(kept, weighted) >= KEEP_LEAK and (
        copied or (overlap.shared >= 2 and overlap.kept_weight >= LEAK_EVIDENCE)
    ):
        return LIKELY_LEAK
    if kept >= KEEP_UNCLEAR or weighted >= KEEP_UNCLEAR or copied or not overlap.match:
        return UNCLEAR  # a match stating no number at all is no sibling with other numbers
    return TEMPLATE_SIBLING


def triage(
    eval_text: str, match_text: str, copied: bool, rarity: NumberRarity = NO_RARITY
) -> Triage:
    """Gives the triage of a match; ``copied``: an n-gram channel flagged its text;
    ``rarity``: the document frequencies its numbers are weighed by."""
    overlap = number_overlap(eval_text, match_text, rarity)
    return Triage(label_for(overlap, copied), overlap, copied)


def pair_rarity(texts: list[str]) -> NumberRarity:
    """Gives the document frequencies of the numbers of a set of texts, each distinct
    text counted once (below MIN_DOCS texts the weights are the fixed prior)."""
    return NumberRarity.of_texts(dict.fromkeys(texts))


def item_label(labels: list[str]) -> str | None:
    """Gives an item's label: its most pressing match's (a likely leak beats the rest)."""
    for label in LABELS:
        if label in labels:
            return label
    return None


# -- measuring the rule on labelled pairs ---------------------------------------------
@dataclass(frozen=True)
class LabelledPair:
    """One pair of the labelled set: an eval text, a match, leak or sibling, its split."""

    line: int
    id: str
    split: str
    label: str
    eval: str
    match: str


def read_pairs(path: Path | Traversable) -> tuple[list[LabelledPair], str]:
    """Gives the labelled pairs and the file's SHA-256, or names the bad line and field."""
    rows, digest = labelled_rows(
        path, ("eval", "match", "id"), (("label", PAIR_LABELS), ("split", SPLITS))
    )
    pairs = [
        LabelledPair(number, row["id"], row["split"], row["label"], row["eval"], row["match"])
        for number, row in rows
    ]
    if not pairs:
        raise InputError("has no labelled pairs", path=str(path))
    return pairs, digest


def copied_text(eval_text: str, match_text: str, settings: NgramSettings) -> bool:
    """Says whether the n-gram channels would flag the pair (exact Jaccard or containment)."""
    a = shingle_set(canonical(eval_text), settings.n)
    b = shingle_set(canonical(match_text), settings.n)
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return bool(settings.channels(shared / union if union else 0.0, shared / len(a)))


def _rates(labelled: list[tuple[str, str]]) -> dict[str, Any]:
    """Gives precision and recall of each label, and the two goals' rates, for one split."""
    leaks = [got for truth, got in labelled if truth == "leak"]
    siblings = [got for truth, got in labelled if truth == "sibling"]
    called_leak = [truth for truth, got in labelled if got == LIKELY_LEAK]
    called_sibling = [truth for truth, got in labelled if got == TEMPLATE_SIBLING]

    def share(part: int, whole: int) -> float | None:
        return round(part / whole, 4) if whole else None

    return {
        "pairs": len(labelled),
        "leaks": len(leaks),
        "siblings": len(siblings),
        "likely_leak": {
            "precision": share(called_leak.count("leak"), len(called_leak)),
            "recall": share(leaks.count(LIKELY_LEAK), len(leaks)),
        },
        "template_sibling": {
            "precision": share(called_sibling.count("sibling"), len(called_sibling)),
            "recall": share(siblings.count(TEMPLATE_SIBLING), len(siblings)),
        },
        # the goals: leaks never sent to the sibling pile, few siblings called leaks
        "leaks_likely_or_unclear": share(len(leaks) - leaks.count(TEMPLATE_SIBLING), len(leaks)),
        "siblings_called_likely_leak": share(siblings.count(LIKELY_LEAK), len(siblings)),
        "unclear": share(sum(got == UNCLEAR for _, got in labelled), len(labelled)),
    }


def measure(
    pairs: list[LabelledPair], settings: NgramSettings | None = None
) -> dict[str, dict[str, Any]]:
    """Gives the rule's rates on each split of the labelled pairs."""
    settings = settings or NgramSettings()
    rarity = pair_rarity([t for pair in pairs for t in (pair.eval, pair.match)])
    by_split: dict[str, list[tuple[str, str]]] = {split: [] for split in SPLITS}
    for pair in pairs:
        copied = copied_text(pair.eval, pair.match, settings)
        got = triage(pair.eval, pair.match, copied, rarity).label
        by_split[pair.split].append((pair.label, got))
    return {split: _rates(labelled) for split, labelled in by_split.items()}


def rule_report(
    path: Path | Traversable = DEFAULT_PAIRS, settings: NgramSettings | None = None
) -> dict[str, Any]:
    """Gives the report's account of the rule: its words, thresholds and measured rates."""
    pairs, sha = read_pairs(path)
    name = path.name if isinstance(path, Traversable) else Path(path).name
    return {
        "rule": RULE,
        "thresholds": {
            "keep_leak": KEEP_LEAK,
            "leak_evidence": LEAK_EVIDENCE,
            "keep_unclear": KEEP_UNCLEAR,
        },
        "labelled_pairs": {"file": name, "sha256": sha, **measure(pairs, settings)},
    }
