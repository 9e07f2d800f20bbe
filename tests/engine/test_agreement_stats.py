"""Agreement statistics against published answers and an independent implementation.

Every expected figure here is either printed in the publication named beside it,
computed by scikit-learn's ``cohen_kappa_score``, or worked by hand in the test
from the statistic's textbook formula; none was produced by sealdesk's code.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from engine.agreement.stats import (
    SEED,
    agreement,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    raw_agreement,
    resample_indices,
)

# Krippendorff's reliability data: 4 coders, 12 units, "-" missing (Krippendorff,
# Content Analysis; the same data in Gwet, Handbook of Inter-Rater Reliability, 4th ed.).
KRIPPENDORFF_CODERS = """
1 2 3 3 2 1 4 1 2 - - -
1 2 3 3 2 2 4 1 2 5 - -
- 3 3 3 2 3 4 2 2 5 1 3
1 2 3 3 2 4 4 1 2 5 1 -
"""


def by_units(coders: str) -> list[dict[str, str]]:
    """Gives per unit the coder -> value mapping of a coders-by-units block."""
    rows = [line.split() for line in coders.strip().splitlines()]
    return [
        {f"c{r}": row[u] for r, row in enumerate(rows) if row[u] != "-"}
        for u in range(len(rows[0]))
    ]


def from_table(table: list[list[int]]) -> list[dict[str, int]]:
    """Gives the items of a two-rater contingency table (rows rater A, columns rater B)."""
    return [
        {"A": i, "B": j} for i, row in enumerate(table) for j, n in enumerate(row) for _ in range(n)
    ]


def from_counts(table: list[list[int]]) -> list[dict[str, int]]:
    """Gives items from a subjects x categories table of how many raters chose each
    category (raters are interchangeable, so they are numbered per subject)."""
    out = []
    for row in table:
        labels = [k for k, n in enumerate(row) for _ in range(n)]
        out.append({f"r{i}": label for i, label in enumerate(labels)})
    return out


THREE_BY_THREE = [[13, 0, 0], [0, 20, 7], [0, 4, 56]]  # Gwet (2014)
FOUR_BY_FOUR = [[40, 4, 4, 17], [6, 25, 2, 13], [4, 1, 21, 12], [15, 5, 9, 45]]  # Gwet (2014)
EMPTY_FIRST_CLASS = [[0, 4, 1], [0, 8, 0], [0, 1, 5]]  # SAS PROC FREQ kappa example

# Fleiss (1971): 30 patients, 6 psychiatrists each, 5 diagnoses (as R's irr package
# holds it, ``diagnoses``); kappam.fleiss gives 0.4302445.
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]  # fmt: skip
# The worked example of Fleiss' kappa on Wikipedia ("Fleiss' kappa"): 10 subjects,
# 14 raters, 5 categories, each row how many raters chose each category; kappa 0.210.
FLEISS_WORKED = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]  # fmt: skip
# R's irr package, ``anxiety`` (20 subjects, 3 raters); kappa2(anxiety[,2:3]) gives
# -0.006289308.
ANXIETY_RATER_2 = [3, 6, 4, 6, 2, 4, 2, 4, 3, 3, 2, 3, 3, 3, 2, 2, 1, 3, 3, 4]
ANXIETY_RATER_3 = [2, 1, 4, 4, 3, 2, 1, 6, 1, 1, 1, 2, 3, 3, 1, 1, 3, 3, 2, 2]


def two(a: list, b: list) -> list[dict]:
    return [{"A": x, "B": y} for x, y in zip(a, b, strict=True)]


# -- Cohen's kappa ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "published", "places"),
    [
        (THREE_BY_THREE, 0.796, 3),  # Gwet (2014)
        (FOUR_BY_FOUR, 0.432, 3),  # Gwet (2014)
        (EMPTY_FIRST_CLASS, 0.4842, 4),  # SAS PROC FREQ
    ],
    ids=["3x3", "4x4", "empty-class"],
)
def test_cohens_kappa_is_the_published_figure_and_scikit_learns(table, published, places):
    items = from_table(table)
    mine = cohen_kappa(items, categories=range(len(table)))
    assert round(mine, places) == published
    theirs = cohen_kappa_score([i["A"] for i in items], [i["B"] for i in items])
    assert mine == pytest.approx(theirs, abs=1e-12)


def test_cohens_kappa_on_rs_anxiety_ratings_is_irrs_figure():
    items = two(ANXIETY_RATER_2, ANXIETY_RATER_3)
    assert cohen_kappa(items) == pytest.approx(-0.006289308, abs=5e-10)


def test_cohens_kappa_with_missing_ratings_is_scikit_learns_on_the_items_both_rated():
    rng = random.Random(7)
    for _ in range(20):
        items = []
        for _ in range(rng.randint(5, 60)):
            item = {}
            for rater in ("A", "B"):
                if rng.random() < 0.8:
                    item[rater] = rng.choice("xyz")
            items.append(item)
        both = [i for i in items if len(i) == 2]
        if len({i["A"] for i in both} | {i["B"] for i in both}) < 2:
            continue
        theirs = cohen_kappa_score([i["A"] for i in both], [i["B"] for i in both])
        mine = cohen_kappa(items)
        assert mine == pytest.approx(theirs, abs=1e-12)
        assert agreement(items, resamples=1).estimates["cohen_kappa"].items == len(both)


def test_cohens_kappa_is_not_given_for_three_raters():
    items = by_units(KRIPPENDORFF_CODERS)
    assert cohen_kappa(items) is None
    assert agreement(items, resamples=10).estimates["cohen_kappa"].low is None


# -- Fleiss' kappa ------------------------------------------------------------------


def test_fleiss_kappa_on_fleiss_1971_is_the_published_figure():
    items = [{f"r{i}": d for i, d in enumerate(row)} for row in FLEISS_1971]
    assert fleiss_kappa(items) == pytest.approx(0.4302445, abs=5e-8)


def test_fleiss_kappa_on_the_worked_example_is_its_figure():
    assert round(fleiss_kappa(from_counts(FLEISS_WORKED)), 3) == 0.210


def test_fleiss_kappa_with_missing_ratings_is_gwets_figure():
    # Gwet (2014) on Krippendorff's data: 0.76117.
    assert fleiss_kappa(by_units(KRIPPENDORFF_CODERS)) == pytest.approx(0.76117, abs=5e-6)


def test_fleiss_kappa_of_two_raters_is_scotts_pi_worked_by_hand():
    items = from_table(FOUR_BY_FOUR)
    n = len(items)
    observed = sum(FOUR_BY_FOUR[k][k] for k in range(4)) / n
    shares = [
        (sum(FOUR_BY_FOUR[k]) + sum(row[k] for row in FOUR_BY_FOUR)) / (2 * n) for k in range(4)
    ]
    chance = sum(p * p for p in shares)
    assert fleiss_kappa(items) == pytest.approx((observed - chance) / (1 - chance), abs=1e-12)


# -- Krippendorff's alpha -----------------------------------------------------------


def test_krippendorffs_alpha_with_missing_data_is_the_published_figure():
    # Krippendorff: nominal alpha 0.743 on the 4 coders x 12 units data.
    assert round(krippendorff_alpha(by_units(KRIPPENDORFF_CODERS)), 3) == 0.743


def test_krippendorffs_alpha_on_binary_data_is_the_published_figure():
    # Krippendorff (2011), Computing Krippendorff's Alpha-Reliability, example A:
    # two observers, binary data, ten units; alpha = 0.095.
    items = two([0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0])
    assert round(krippendorff_alpha(items), 3) == 0.095


def test_krippendorffs_alpha_on_nominal_data_of_two_observers_is_the_published_figure():
    # Krippendorff (2011), example B: two observers, five values, twelve units;
    # alpha = 0.692.
    items = two(list("aabbdcccedda"), list("babbbcccedd" + "d"))
    assert round(krippendorff_alpha(items), 3) == 0.692


# -- Gwet's AC1 and the raw agreement ---------------------------------------------------


@pytest.mark.parametrize(
    ("items", "categories", "published", "places"),
    [
        (by_units(KRIPPENDORFF_CODERS), None, 0.77544, 5),  # Gwet (2014): pa 0.81818
        (from_table(THREE_BY_THREE), range(3), 0.849, 3),  # Gwet (2014)
        (from_table(FOUR_BY_FOUR), range(4), 0.456, 3),  # Gwet (2014)
    ],
    ids=["krippendorff-data", "3x3", "4x4"],
)
def test_gwets_ac1_is_the_published_figure(items, categories, published, places):
    assert round(gwet_ac1(items, categories), places) == published


def test_the_raw_agreement_with_missing_data_is_gwets_observed_agreement():
    assert raw_agreement(by_units(KRIPPENDORFF_CODERS)) == pytest.approx(0.81818, abs=5e-6)
    # Two raters: the share of items on the diagonal.
    assert raw_agreement(from_table(THREE_BY_THREE)) == pytest.approx(89 / 100, abs=1e-12)


def test_on_skewed_labels_kappa_is_near_zero_while_ac1_stays_near_the_raw_agreement():
    # 100 flagged pairs: 95 rejected by both, 3 accepted by A only, 2 by B only.
    items = two(
        ["reject"] * 95 + ["accept"] * 3 + ["reject"] * 2,
        ["reject"] * 95 + ["reject"] * 3 + ["accept"] * 2,
    )
    kappa = cohen_kappa(items)
    assert kappa == pytest.approx(
        cohen_kappa_score([i["A"] for i in items], [i["B"] for i in items]), abs=1e-12
    )
    # By hand: pa = 0.95; accept's share over both raters (3 + 2) / 200 = 0.025, so
    # AC1's chance agreement is 2 * 0.025 * 0.975 / (2 - 1) = 0.04875.
    assert gwet_ac1(items) == pytest.approx((0.95 - 0.04875) / (1 - 0.04875), abs=1e-12)
    assert raw_agreement(items) == pytest.approx(0.95)
    assert kappa < 0 and gwet_ac1(items) > 0.94


def test_ac1_on_a_table_with_an_empty_column_is_gwets_formula_worked_by_hand():
    items = from_table(EMPTY_FIRST_CLASS)
    n = len(items)
    observed = (0 + 8 + 5) / n
    # Each class's ratings by A (row sums 5, 8, 6) and by B (column sums 0, 13, 6).
    shares = [(5 + 0) / (2 * n), (8 + 13) / (2 * n), (6 + 6) / (2 * n)]
    chance = sum(p * (1 - p) for p in shares) / (3 - 1)
    assert gwet_ac1(items, categories=range(3)) == pytest.approx(
        (observed - chance) / (1 - chance), abs=1e-12
    )


def test_ac1_counts_a_category_nobody_chose_when_it_is_named():
    # Gwet's p_e divides by q - 1: naming a third label nobody gave makes q = 3.
    items = two(["reject"] * 8 + ["accept"] * 2, ["reject"] * 9 + ["accept"])
    observed = 0.9
    shares = {"accept": 3 / 20, "reject": 17 / 20, "unsure": 0.0}
    for labels, q in ((("accept", "reject"), 2), (("accept", "reject", "unsure"), 3)):
        chance = sum(shares[c] * (1 - shares[c]) for c in labels) / (q - 1)
        assert gwet_ac1(items, categories=labels) == pytest.approx(
            (observed - chance) / (1 - chance), abs=1e-12
        )


def test_a_label_outside_the_named_categories_is_refused():
    with pytest.raises(ValueError, match="not a category"):
        gwet_ac1([{"A": "accept", "B": "maybe"}], categories=("accept", "reject"))


def test_when_everyone_gives_one_label_the_kappas_are_undefined_not_a_number():
    items = [{"A": "reject", "B": "reject"}] * 5
    result = agreement(items, categories=("accept", "reject"), resamples=50)
    assert result.estimates["cohen_kappa"].value is None
    assert result.estimates["fleiss_kappa"].value is None
    assert result.estimates["raw"].value == 1.0
    assert result.estimates["gwet_ac1"].value == 1.0


# -- the bootstrap intervals ------------------------------------------------------------


def splitmix64(state: int) -> tuple[int, int]:
    """Gives (next state, output) of Vigna's SplitMix64, in plain Python integers."""
    mask = (1 << 64) - 1
    state = (state + 0x9E3779B97F4A7C15) & mask
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return state, z ^ (z >> 31)


def test_the_draws_are_splitmix64_from_the_stated_seed():
    # Vigna's reference generator started at 0 first gives 0xe220a8397b1dcdaf.
    assert splitmix64(0)[1] == 0xE220A8397B1DCDAF
    n, rows, seed = 13, 4, 12345
    state, expected = seed, []
    for _ in range(rows * n):
        state, out = splitmix64(state)
        expected.append(((out >> 11) * n) >> 53)
    assert resample_indices(n, rows, seed).ravel().tolist() == expected
    # Resamples 2 and 3 on their own are the same draws.
    assert resample_indices(n, 2, seed, start=2).ravel().tolist() == expected[2 * n :]


def test_the_kappa_interval_is_the_percentiles_of_scikit_learn_on_the_same_resamples():
    items = from_table(FOUR_BY_FOUR)
    a = np.array([i["A"] for i in items])
    b = np.array([i["B"] for i in items])
    drawn = resample_indices(len(items), 200, SEED)
    theirs = [cohen_kappa_score(a[row], b[row]) for row in drawn]
    low, high = np.quantile(theirs, [0.025, 0.975])
    mine = agreement(items, resamples=200).estimates["cohen_kappa"]
    assert (mine.low, mine.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))


@pytest.mark.parametrize(
    ("table", "statistic", "published_low", "published_high"),
    [
        (THREE_BY_THREE, "cohen_kappa", 0.680, 0.913),
        (THREE_BY_THREE, "gwet_ac1", 0.764, 0.935),
        (FOUR_BY_FOUR, "cohen_kappa", 0.341, 0.522),
        (FOUR_BY_FOUR, "gwet_ac1", 0.371, 0.542),
        (EMPTY_FIRST_CLASS, "cohen_kappa", 0.2137, 0.7547),
    ],
)
def test_bootstrap_intervals_are_close_to_the_published_normal_intervals(
    table, statistic, published_low, published_high
):
    # The published intervals come from standard errors, not resampling: close, not equal.
    found = agreement(from_table(table), categories=range(len(table))).estimates[statistic]
    assert found.low == pytest.approx(published_low, abs=0.03)
    assert found.high == pytest.approx(published_high, abs=0.03)
    assert found.low < found.value < found.high


def test_on_twelve_units_the_intervals_reach_the_published_upper_bound_of_one():
    found = agreement(by_units(KRIPPENDORFF_CODERS)).estimates
    # Krippendorff / Gwet (2014): alpha 0.419-1, Fleiss 0.42438-1 (upper bounds clipped).
    assert found["krippendorff_alpha"].low == pytest.approx(0.419, abs=0.05)
    assert found["fleiss_kappa"].low == pytest.approx(0.42438, abs=0.05)
    for name in ("krippendorff_alpha", "fleiss_kappa", "gwet_ac1"):
        assert found[name].high == pytest.approx(1.0)
        assert found[name].items == 11  # the twelfth unit has a single value


def test_the_same_seed_gives_the_same_interval_and_another_seed_another():
    items = from_table(FOUR_BY_FOUR)
    first = agreement(items, seed=3).estimates["gwet_ac1"]
    assert agreement(items, seed=3).estimates["gwet_ac1"] == first
    other = agreement(items, seed=4).estimates["gwet_ac1"]
    assert (other.low, other.high) != (first.low, first.high)
    assert other.value == first.value
