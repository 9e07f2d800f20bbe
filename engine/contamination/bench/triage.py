"""``sealdesk bench contamination --triage FILE``: the match triage on labelled pairs.

A labelled pair file is JSONL, one pair a line::

  {"eval": "<eval item text>", "match": "<the text it was matched with>",
   "label": "leak" | "sibling", "split": "<any name>", "id": "<any name>"}

``eval``, ``match`` and ``label`` are required; ``split`` (pairs are counted per
split and over all) and ``id`` are optional; other fields are ignored, so the
shipped ``triage_pairs.jsonl`` and the files of the sample_data generators are
read as they are. A bad row is refused with its file, line and field, and nothing
is printed but that line.

For the current rule and for the previous one (every number weighing the same,
two numbers equal whatever their units; kept here as the reference), each on the
same pairs in the same run, it gives the two rates the triage answers for:
siblings labelled *likely leak* (the queue would put them first), and leaks
labelled *likely leak* or *unclear* (the rest are put on the sibling pile, which
may be rejected in bulk). The current rule weighs numbers by their document
frequency over the file's own distinct texts (``report.triage.pair_rarity``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from engine.contamination.channels.calibration import labelled_rows
from engine.contamination.channels.ngram import NgramSettings
from engine.contamination.channels.numbers import quantities
from engine.contamination.report.triage import (
    LIKELY_LEAK,
    PAIR_LABELS,
    TEMPLATE_SIBLING,
    UNCLEAR,
    copied_text,
    pair_rarity,
    triage,
)
from engine.errors import InputError

ALL = "all"
RULES = ("current", "previous")
# The previous rule's thresholds, as it shipped: share of numbers kept, equal weights.
PREVIOUS_KEEP_LEAK = 0.66
PREVIOUS_KEEP_UNCLEAR = 0.3


@dataclass(frozen=True)
class BenchPair:
    """One labelled pair of a bench file."""

    line: int
    label: str
    split: str
    eval: str
    match: str


def read_bench_pairs(path: Path) -> list[BenchPair]:
    """Gives the labelled pairs of a file, or names the bad line and field."""
    rows, _ = labelled_rows(path, ("eval", "match"), (("label", PAIR_LABELS),))
    pairs = []
    for number, row in rows:
        split = row.get("split", ALL)
        if not isinstance(split, str) or not split.strip():
            raise InputError(
                "must be a non-empty string", path=str(path), line=number, field="split"
            )
        pairs.append(BenchPair(number, row["label"], split, row["eval"], row["match"]))
    if not pairs:
        raise InputError("has no labelled pairs", path=str(path))
    return pairs


def _previous_shared(eval_text: str, match_text: str) -> tuple[int, int]:
    """Gives (numbers shared, eval numbers) as the previous rule paired them: equal
    values, or one a percentage, cents or minutes of the other, whatever the units."""
    a = [q.keys() for q in quantities(eval_text)]
    b = [q.keys() for q in quantities(match_text)]
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j, keys in enumerate(b):
            if j in seen or not (a[i] & keys):
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    return sum(place(i, set()) for i in range(len(a))), len(a)


def previous_label(eval_text: str, match_text: str, copied: bool) -> str:
    """Gives the previous rule's label: likely leak at >= 66% of the numbers kept (two at
    least, unless copied), sibling under 30% and not copied, unclear between."""
    shared, total = _previous_shared(eval_text, match_text)
    if total == 0:
        return LIKELY_LEAK if copied else UNCLEAR
    kept = Fraction(shared, total)
    if kept >= PREVIOUS_KEEP_LEAK and (shared >= 2 or copied):
        return LIKELY_LEAK
    if kept >= PREVIOUS_KEEP_UNCLEAR or copied:
        return UNCLEAR
    return TEMPLATE_SIBLING


def _rates(labelled: list[tuple[str, str]]) -> dict[str, Any]:
    siblings = [got for truth, got in labelled if truth == "sibling"]
    leaks = [got for truth, got in labelled if truth == "leak"]
    called = siblings.count(LIKELY_LEAK)
    kept = sum(got != TEMPLATE_SIBLING for got in leaks)
    first = leaks.count(LIKELY_LEAK)
    return {
        "siblings": len(siblings),
        "siblings_likely_leak": called,
        "siblings_likely_leak_rate": round(called / len(siblings), 4) if siblings else None,
        "leaks": len(leaks),
        "leaks_likely_or_unclear": kept,
        "leaks_likely_or_unclear_rate": round(kept / len(leaks), 4) if leaks else None,
        "leaks_likely_leak": first,
        "leaks_likely_leak_rate": round(first / len(leaks), 4) if leaks else None,
    }


def measure_file(path: Path, settings: NgramSettings | None = None) -> dict[str, Any]:
    """Gives both rules' rates on a labelled pair file, per split and over all pairs."""
    pairs = read_bench_pairs(path)
    settings = settings or NgramSettings()
    rarity = pair_rarity([t for p in pairs for t in (p.eval, p.match)])
    got: dict[str, list[tuple[str, str, str, str]]] = {}
    for p in pairs:
        copied = copied_text(p.eval, p.match, settings)
        current = triage(p.eval, p.match, copied, rarity).label
        previous = previous_label(p.eval, p.match, copied)
        for split in {p.split, ALL}:
            got.setdefault(split, []).append((p.label, current, previous, p.split))
    splits = sorted(s for s in got if s != ALL) + [ALL]
    if len(splits) == 2:  # one split only: "all" says the same
        splits = [ALL]
    return {
        "file": str(path),
        "pairs": len(pairs),
        "weights": {"documents": rarity.docs, "from": "the file's distinct texts"},
        "splits": {
            split: {
                "current": _rates([(t, c) for t, c, _, _ in got[split]]),
                "previous": _rates([(t, p) for t, _, p, _ in got[split]]),
            }
            for split in splits
        },
    }


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:6.1%} ({part}/{whole})" if whole else "     - (0/0)"


def report_lines(result: dict[str, Any]) -> list[str]:
    """Gives the printed account: one line per split and rule."""
    out = [
        f"triage on {result['pairs']} labelled pairs ({result['file']}); numbers weighed by "
        f"their document frequency over {result['weights']['documents']} distinct texts",
        f"{'split':10} {'rule':9} {'siblings -> likely leak':>24} "
        f"{'leaks -> likely/unclear':>24} {'leaks -> likely leak':>24}",
    ]
    for split, rules in result["splits"].items():
        for rule in RULES:
            r = rules[rule]
            out.append(
                f"{split:10} {rule:9} {_pct(r['siblings_likely_leak'], r['siblings']):>24} "
                f"{_pct(r['leaks_likely_or_unclear'], r['leaks']):>24} "
                f"{_pct(r['leaks_likely_leak'], r['leaks']):>24}"
            )
    return out
