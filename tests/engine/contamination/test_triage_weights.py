"""Triage with weighed numbers: small counting numbers and common values say little, rare
ones a lot; units must agree; the rule meets its goals on pairs it was not tuned on; and
``sealdesk bench contamination --triage`` measures it beside the previous rule."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from engine.contamination.bench.triage import measure_file, previous_label
from engine.contamination.channels.numbers import (
    NO_RARITY,
    SMALL_WEIGHT,
    NumberRarity,
    number_overlap,
    quantities,
)
from engine.contamination.report.triage import (
    LIKELY_LEAK,
    TEMPLATE_SIBLING,
    UNCLEAR,
    triage,
)

ROOT = Path(__file__).resolve().parents[3]
HARD_PAIRS = ROOT / "sample_data" / "contamination" / "triage_pairs_hard.jsonl"
SHIPPED_PAIRS = ROOT / "engine" / "contamination" / "triage_pairs.jsonl"

PETS = "Ana keeps 3 cats, 7 dogs and 8 rabbits. How many pets does she keep?"


def test_a_sibling_sharing_two_small_counts_is_no_likely_leak():
    sibling = "Twelve cats, three dogs and eight rabbits live at the farm. How many pets is that?"
    assert previous_label(PETS, sibling, copied=False) == LIKELY_LEAK  # kept 2 of 3
    got = triage(PETS, sibling, copied=False)
    assert got.overlap.shared == 2 and got.label == UNCLEAR


def test_a_rephrasing_keeping_every_small_count_is_still_a_likely_leak():
    leak = "How many pets does Ana have if she owns three cats, seven dogs and eight rabbits?"
    assert triage(PETS, leak, copied=False).label == LIKELY_LEAK


def test_minutes_are_not_a_bare_fraction_nor_days():
    eval_text = "Tom reads for 20 minutes, then half as long. How long does he read?"
    sibling = "Kim read for 5 days, 20 pages a day and 30 minutes a night. How much did she read?"
    assert previous_label(eval_text, sibling, copied=False) == LIKELY_LEAK  # 20 and half
    got = triage(eval_text, sibling, copied=False)
    assert got.overlap.shared == 1 and got.label != LIKELY_LEAK
    assert number_overlap("a 30 minutes walk", "a walk of half an hour").shared == 1
    assert number_overlap("for 4 days", "for 4 weeks").shared == 0
    assert number_overlap("for 4 days", "for four").shared == 1  # a rephrasing drops units


def test_rare_values_weigh_more_than_common_ones_and_small_counts_little():
    texts = [f"Shop {k} sold 20 pens and 3 cups for ${k + 100}." for k in range(40)]
    texts.append("A bike costs $1,250 and a loan charges 3.75% a year.")
    rarity = NumberRarity.of_texts(texts)
    assert rarity.docs == 41
    (bike, rate) = quantities(texts[-1])
    (_, twenty, three, _) = quantities(texts[0])
    assert rarity.weight(bike) > 0.9 and rarity.weight(rate) > 0.9
    assert rarity.weight(twenty) < 0.05  # in every shop's text
    assert rarity.weight(three) <= SMALL_WEIGHT
    # too few texts for a frequency: small counts at the prior, anything else 1
    assert NO_RARITY.weight(three) == SMALL_WEIGHT and NO_RARITY.weight(bike) == 1.0


def test_the_bounded_count_holds_only_the_values_asked_for():
    rarity = NumberRarity.of_texts(["7 and 1,250", "7 and 9"], only={Fraction(7)})
    assert rarity.counts == {Fraction(7): 2}


def test_kept_rare_numbers_make_a_likely_leak_and_a_kept_small_count_does_not():
    rarity = NumberRarity.of_texts(
        [f"Shop {k} has 4 shelves and sells {k + 30} mugs." for k in range(30)]
    )
    eval_text = "Jo invests $1,250 at 3.75% a year for 4 years. What does she earn?"
    leak = "At an annual 3.75%, what is the interest on $1,250 over four years?"
    sibling = "Max invests $900 at 5% a year for 4 years. What does he earn?"
    assert triage(eval_text, leak, False, rarity).label == LIKELY_LEAK
    got = triage(eval_text, sibling, False, rarity)
    assert got.label == UNCLEAR  # one of three numbers kept: a look, not the sibling pile
    assert got.overlap.weighted_kept is not None and got.overlap.weighted_kept < 0.15
    assert triage(eval_text, "Max invests $900 at 5% a year.", False, rarity).label == (
        TEMPLATE_SIBLING
    )


@pytest.mark.parametrize("path", [HARD_PAIRS, SHIPPED_PAIRS], ids=["hard", "shipped"])
def test_on_held_out_pairs_few_siblings_are_likely_leaks_and_no_leak_is_lost(path):
    result = measure_file(path)
    held = result["splits"]["holdout"]
    assert held["current"]["siblings_likely_leak_rate"] <= 0.05
    assert held["current"]["leaks_likely_or_unclear_rate"] >= 0.97
    # and no worse than the previous rule on either goal
    assert held["current"]["siblings_likely_leak"] <= held["previous"]["siblings_likely_leak"]
    assert held["current"]["leaks_likely_or_unclear"] >= held["previous"]["leaks_likely_or_unclear"]


def test_on_the_hard_held_out_pairs_the_goals_are_met():
    held = measure_file(HARD_PAIRS)["splits"]["holdout"]["current"]
    assert held["siblings"] == held["leaks"] == 40
    assert held["siblings_likely_leak_rate"] <= 0.05
    assert held["leaks_likely_or_unclear_rate"] >= 0.97


def test_a_rephrasing_that_writes_a_bare_1_as_one_is_not_a_sibling():
    eval_text = (
        "Doxa sliced an apple into 8 pieces. She ate 1 slice, her sister ate 1 more than her, "
        "and her brother ate 1 more than her sister. How many slices did they all eat?"
    )
    leak = (
        "Doxa cut an apple into eight parts. She consumed one piece, her sibling one more than "
        "Doxa, and her brother one more than her sibling. How many pieces did they consume?"
    )
    assert previous_label(eval_text, leak, copied=False) == TEMPLATE_SIBLING
    got = triage(eval_text, leak, copied=False)
    assert got.to_json()["eval"] == ["8"] and got.label == UNCLEAR


def test_a_match_that_states_no_number_is_unclear_not_a_sibling():
    eval_text = "Dolly has two books. Pandora has one. How many books do they read in all?"
    leak = "If Dolly and Pandora each read their own books and each other's, how many is that?"
    assert previous_label(eval_text, leak, copied=False) == TEMPLATE_SIBLING
    assert triage(eval_text, leak, copied=False).label == UNCLEAR


def _pairs(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_bench_triage_prints_both_rules_for_each_split(sealdesk, tmp_path):
    sib = "Twelve cats, three dogs and eight rabbits live at the farm. How many pets is that?"
    leak = "How many pets does Ana have if she owns three cats, seven dogs and eight rabbits?"
    path = _pairs(
        tmp_path,
        [
            {"eval": PETS, "match": sib, "label": "sibling"},
            {"eval": PETS, "match": leak, "label": "leak"},
        ],
    )
    proc = sealdesk("bench", "contamination", "--triage", path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("triage on 2 labelled pairs")
    assert (
        lines[1].split()
        == "split rule siblings -> likely leak leaks -> likely/unclear leaks -> likely leak".split()
    )
    counts = {tuple(ln.split()[:2]): re.findall(r"\((\d+/\d+)\)", ln) for ln in lines[2:]}
    # siblings called likely leak, leaks likely or unclear, leaks likely leak
    assert counts == {
        ("all", "current"): ["0/1", "1/1", "1/1"],
        ("all", "previous"): ["1/1", "1/1", "1/1"],
    }

    proc = sealdesk("bench", "contamination", "--triage", path, "--json")
    got = json.loads(proc.stdout)["splits"]["all"]
    assert got["current"]["siblings_likely_leak"] == 0
    assert got["previous"]["siblings_likely_leak"] == 1
    assert got["current"]["leaks_likely_or_unclear"] == got["previous"]["leaks"] == 1


@pytest.mark.parametrize(
    "bad, field, reason",
    [
        ({"eval": "a 1", "match": "b 1", "label": "copy"}, "label", "leak, sibling"),
        ({"eval": "a 1", "label": "leak"}, "match", "missing or empty"),
        ({"eval": "a 1", "match": "b 1", "label": "leak", "split": ""}, "split", "non-empty"),
    ],
)
def test_bench_triage_refuses_a_bad_row_naming_file_line_and_field(
    sealdesk, tmp_path, bad, field, reason
):
    good = {"eval": "a 1 and 2", "match": "b 1 and 2", "label": "leak"}
    path = _pairs(tmp_path, [good, bad])
    proc = sealdesk("bench", "contamination", "--triage", path)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert f"{path}:2" in line and f"field '{field}'" in line and reason in line


def test_a_scan_weighs_each_match_s_numbers_by_their_frequency_in_its_own_texts(workspace):
    from engine.contamination.inputs.sources import resolve_source
    from engine.contamination.scan import ScanConfig, run_scan

    sample = ROOT / "sample_data" / "contamination"
    config = ScanConfig.of(
        eval=resolve_source(
            "eval", str(sample / "eval.jsonl"), text_field="question", id_field="id"
        ),
        pool=resolve_source("pool", str(sample / "pool.jsonl"), text_field="text", id_field="id"),
        embed=False,
        jobs=1,
    )
    outcome = run_scan(workspace, config)
    matches = [m for item in outcome.items for m in item.payload["matches"]]
    assert matches
    weights = []
    for match in matches:
        triaged = match["triage"]
        assert len(triaged["weights"]) == len(triaged["eval"])
        weights += triaged["weights"]
    # a frequency, not the fixed prior: the 22 eval items and the flagged documents count
    assert set(weights) - {1.0, SMALL_WEIGHT}
    assert all(0 < w <= 1 for w in weights)


def test_bench_triage_refuses_a_line_that_is_no_json_and_a_file_with_no_pairs(sealdesk, tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"eval": "a 1", "match": "b 1", "label": "leak"}\n{"eval": "a 1",\n')
    proc = sealdesk("bench", "contamination", "--triage", path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{path}:2" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    path.write_text("\n\n")
    proc = sealdesk("bench", "contamination", "--triage", path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{path}: has no labelled pairs" in proc.stderr
