"""Agreement between raters on nominal labels, with missing ratings.

Input: per item, a mapping of rater to label (a rater who did not rate the
item is simply absent). Items nobody rated are dropped. Statistics:

``raw``                 observed agreement: over items with at least two
                        ratings, the share of agreeing pairs of ratings
                        (Gwet's p_a; for two raters, the share of items
                        they labelled alike)
``cohen_kappa``         Cohen (1960), two raters only (None otherwise), over
                        the items both rated: (p_o - p_e) / (1 - p_e), p_e
                        from each rater's own label shares
``fleiss_kappa``        Fleiss (1971), any number of raters: p_e is the sum
                        of squared label shares. With missing ratings, as
                        Gwet (2014) generalises it: p_a over items rated at
                        least twice, label shares averaged over items
``krippendorff_alpha``  Krippendorff's alpha, nominal: 1 - D_o / D_e from the
                        coincidence matrix of the pairable items
``gwet_ac1``            Gwet's AC1 (2008): p_e = sum pi_k (1 - pi_k) / (q - 1)
                        over the q categories; stays near the raw agreement
                        when one label dominates, where the kappas collapse

Each comes with a percentile bootstrap interval over items: ``resamples``
resamples of the items, drawn with replacement by a stated seed from a
counter-based generator defined here (SplitMix64), so that anyone can redraw
exactly the same resamples, whatever NumPy's own generators do next. A
resample on which a statistic is undefined (p_e = 1, one category) is left
out of its interval and counted.

Every statistic is a function of sums over items of a few per-item numbers,
so a resample is a weighting of the items (how often each was drawn), and the
point estimate is the weighting by ones: one implementation serves both.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

STATISTICS = ("raw", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1")
NAMES = {
    "raw": "raw agreement",
    "cohen_kappa": "Cohen's kappa",
    "fleiss_kappa": "Fleiss' kappa",
    "krippendorff_alpha": "Krippendorff's alpha",
    "gwet_ac1": "Gwet's AC1",
}
RESAMPLES = 1000
SEED = 1
LEVEL = 0.95
INTERVAL = "percentile bootstrap over items (SplitMix64 draws)"

Ratings = Sequence[Mapping[str, Hashable]]

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
# Bootstrap weights are built this many (resample, item) cells at a time.
_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class Estimate:
    """One statistic: its value, its bootstrap interval, and the items it is over."""

    statistic: str
    value: float | None  # None: undefined on these ratings
    low: float | None
    high: float | None
    items: int  # items with at least two ratings (for Cohen's kappa: rated by both)
    undefined_resamples: int = 0  # resamples left out of the interval

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "items": self.items,
            "undefined_resamples": self.undefined_resamples,
        }


@dataclass(frozen=True)
class Agreement:
    """Every statistic over one set of ratings, and how the intervals were drawn."""

    raters: tuple[str, ...]
    categories: tuple[Hashable, ...]
    items: int  # items with at least two ratings
    estimates: dict[str, Estimate]
    resamples: int
    seed: int
    level: float

    def to_json(self) -> dict[str, Any]:
        return {
            "raters": list(self.raters),
            "categories": [str(c) for c in self.categories],
            "items": self.items,
            "statistics": {name: self.estimates[name].to_json() for name in STATISTICS},
        }


# -- the per-item numbers ----------------------------------------------------------


@dataclass(frozen=True)
class _Items:
    """The per-item numbers every statistic is summed from (one row per rated item)."""

    q: int
    features: np.ndarray  # n x f, columns laid out by the slices below
    two_raters: bool

    @property
    def n(self) -> int:
        return int(self.features.shape[0])


def _layout(q: int) -> dict[str, slice]:
    """Gives the columns of ``_Items.features``: ``pairable`` (1 where rated at least
    twice), ``agree`` (the item's share of agreeing pairs of ratings, 0 where unpairable),
    ``rated`` (1), ``share`` (q: the item's share of each label), ``d`` (the item's
    disagreeing coincidences), ``pcount`` (q: label counts where pairable), ``joint``
    (q*q: the two raters' labels, where both rated)."""
    spans = [("pairable", 1), ("agree", 1), ("rated", 1), ("share", q), ("d", 1)]
    spans += [("pcount", q), ("joint", q * q)]
    out: dict[str, slice] = {}
    at = 0
    for name, width in spans:
        out[name] = slice(at, at + width)
        at += width
    return out


def _categories(ratings: Ratings, categories: Iterable[Hashable] | None) -> tuple[Hashable, ...]:
    if categories is not None:
        chosen = tuple(dict.fromkeys(categories))
        for item in ratings:
            for rater, label in item.items():
                if label not in chosen:
                    raise ValueError(f"label {label!r} of rater {rater!r} is not a category")
        return chosen
    seen = {label for item in ratings for label in item.values()}
    return tuple(sorted(seen, key=lambda c: (type(c).__name__, str(c))))


def _items(ratings: Ratings, categories: tuple[Hashable, ...], raters: tuple[str, ...]) -> _Items:
    q = len(categories)
    col = _layout(q)
    index = {c: k for k, c in enumerate(categories)}
    two_raters = len(raters) == 2
    rows = []
    for item in ratings:
        if not item:
            continue
        counts = np.zeros(q)
        for label in item.values():
            counts[index[label]] += 1
        row = np.zeros(col["joint"].stop)
        r = counts.sum()
        row[col["rated"]] = 1
        row[col["share"]] = counts / r
        if r >= 2:
            row[col["pairable"]] = 1
            row[col["agree"]] = (counts * (counts - 1)).sum() / (r * (r - 1))
            row[col["d"]] = (r * r - (counts * counts).sum()) / (r - 1)
            row[col["pcount"]] = counts
            if two_raters:
                a, b = (index[item[name]] for name in raters)
                row[col["joint"].start + a * q + b] = 1
        rows.append(row)
    features = np.array(rows) if rows else np.zeros((0, col["joint"].stop))
    return _Items(q, features, two_raters)


def _statistics(sums: np.ndarray, q: int, two_raters: bool) -> dict[str, np.ndarray]:
    """Gives each statistic per row of ``sums`` (item weights times features); NaN
    where undefined."""
    col = _layout(q)
    m = sums.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        pairable = sums[:, col["pairable"]][:, 0]
        pa = sums[:, col["agree"]][:, 0] / pairable
        pi = sums[:, col["share"]] / sums[:, col["rated"]]
        pe_fleiss = (pi * pi).sum(axis=1)
        fleiss = (pa - pe_fleiss) / (1 - pe_fleiss)
        if q >= 2:
            pe_ac1 = (pi * (1 - pi)).sum(axis=1) / (q - 1)
            ac1 = (pa - pe_ac1) / (1 - pe_ac1)
        else:
            ac1 = np.full(m, np.nan)
        counts = sums[:, col["pcount"]]
        total = counts.sum(axis=1)
        expected = total * total - (counts * counts).sum(axis=1)
        alpha = 1 - (total - 1) * sums[:, col["d"]][:, 0] / expected
        if two_raters:
            joint = sums[:, col["joint"]].reshape(m, q, q)
            n = joint.sum(axis=(1, 2))
            po = np.trace(joint, axis1=1, axis2=2) / n
            pe = (joint.sum(axis=2) * joint.sum(axis=1)).sum(axis=1) / (n * n)
            cohen = (po - pe) / (1 - pe)
        else:
            cohen = np.full(m, np.nan)
    out = {
        "raw": pa,
        "cohen_kappa": cohen,
        "fleiss_kappa": fleiss,
        "krippendorff_alpha": alpha,
        "gwet_ac1": ac1,
    }
    # 0/0 gives NaN, x/0 gives an infinity: both are undefined.
    return {name: np.where(np.isfinite(v), v, np.nan) for name, v in out.items()}


# -- resampling -----------------------------------------------------------------


def _splitmix64(counter: np.ndarray) -> np.ndarray:
    """Gives SplitMix64's output for each state (uint64; arithmetic wraps modulo 2**64)."""
    z = counter.astype(np.uint64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def resample_indices(n: int, resamples: int, seed: int, start: int = 0) -> np.ndarray:
    """Gives the items drawn by resamples ``start`` .. ``start + resamples - 1``, a
    (resamples x n) array of indices in 0..n-1.

    Draw ``j`` (counting row by row from the first resample) is SplitMix64's output
    for the state ``seed + (j + 1) * 0x9E3779B97F4A7C15`` modulo 2**64, as the
    generator's ``j``-th step from ``seed``; its top 53 bits, as a fraction of 1, are
    scaled by ``n`` and rounded down (in exact integer arithmetic).
    """
    if n <= 0:
        return np.zeros((resamples, 0), dtype=np.int64)
    first = start * n
    steps = np.arange(first + 1, first + resamples * n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        states = np.uint64(seed & _MASK) + steps * np.uint64(_GOLDEN)
        z = _splitmix64(states)
    # floor(top53 * n / 2**53) in exact integers: top53 = hi * 2**26 + lo, so that
    # neither product leaves 64 bits (for n below 2**37).
    top = z >> np.uint64(11)
    hi, lo = top >> np.uint64(26), top & np.uint64((1 << 26) - 1)
    size = np.uint64(n)
    drawn = (hi * size + ((lo * size) >> np.uint64(26))) >> np.uint64(27)
    return drawn.astype(np.int64).reshape(resamples, n)


def _bootstrap(items: _Items, resamples: int, seed: int) -> dict[str, np.ndarray]:
    n = items.n
    found: dict[str, list[np.ndarray]] = {name: [] for name in STATISTICS}
    per_chunk = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, resamples, per_chunk):
        rows = min(per_chunk, resamples - start)
        drawn = resample_indices(n, rows, seed, start)
        offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
        weights = np.bincount((drawn + offsets).ravel(), minlength=rows * n).reshape(rows, n)
        values = _statistics(weights.astype(np.float64) @ items.features, items.q, items.two_raters)
        for name in STATISTICS:
            found[name].append(values[name])
    return {name: np.concatenate(found[name]) for name in STATISTICS}


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


# -- the entry points -----------------------------------------------------------------


def agreement(
    ratings: Ratings,
    *,
    categories: Iterable[Hashable] | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> Agreement:
    """Gives every statistic with its bootstrap interval over ``ratings`` (per item,
    rater -> label). ``categories``: the labels that could have been given (AC1
    depends on how many there are; a table's empty class counts); by default, those
    given."""
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < level < 1:
        raise ValueError("level must lie between 0 and 1")
    chosen = _categories(ratings, categories)
    raters = tuple(sorted({str(r) for item in ratings for r in item}))
    items = _items(ratings, chosen, raters)
    point = _statistics(items.features.sum(axis=0, keepdims=True), items.q, items.two_raters)
    pairable = int(items.features[:, _layout(items.q)["pairable"]].sum())
    drawn = _bootstrap(items, resamples, seed) if items.n else None
    tail = (1 - level) / 2
    estimates = {}
    for name in STATISTICS:
        value = _number(point[name][0])
        low = high = None
        undefined = resamples
        if drawn is not None and value is not None:
            defined = drawn[name][~np.isnan(drawn[name])]
            undefined = resamples - int(defined.size)
            if defined.size:
                low, high = (float(v) for v in np.quantile(defined, [tail, 1 - tail]))
        estimates[name] = Estimate(name, value, low, high, pairable, undefined)
    return Agreement(raters, chosen, pairable, estimates, resamples, seed, level)


def _point(ratings: Ratings, categories: Iterable[Hashable] | None, name: str) -> float | None:
    chosen = _categories(ratings, categories)
    raters = tuple(sorted({str(r) for item in ratings for r in item}))
    items = _items(ratings, chosen, raters)
    sums = items.features.sum(axis=0, keepdims=True)
    return _number(_statistics(sums, items.q, items.two_raters)[name][0])


def raw_agreement(ratings: Ratings, categories: Iterable[Hashable] | None = None) -> float | None:
    """Gives the observed agreement (the share of agreeing pairs of ratings)."""
    return _point(ratings, categories, "raw")


def cohen_kappa(ratings: Ratings, categories: Iterable[Hashable] | None = None) -> float | None:
    """Gives Cohen's kappa of exactly two raters over the items both rated, else None."""
    return _point(ratings, categories, "cohen_kappa")


def fleiss_kappa(ratings: Ratings, categories: Iterable[Hashable] | None = None) -> float | None:
    """Gives Fleiss' kappa (with missing ratings, Gwet's generalisation)."""
    return _point(ratings, categories, "fleiss_kappa")


def krippendorff_alpha(
    ratings: Ratings, categories: Iterable[Hashable] | None = None
) -> float | None:
    """Gives Krippendorff's alpha for nominal labels."""
    return _point(ratings, categories, "krippendorff_alpha")


def gwet_ac1(ratings: Ratings, categories: Iterable[Hashable] | None = None) -> float | None:
    """Gives Gwet's AC1 over ``categories`` (by default the labels given)."""
    return _point(ratings, categories, "gwet_ac1")
