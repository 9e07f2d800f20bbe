"""``sealdesk bench review`` runs end to end on a small workspace (figures not asserted)."""

from __future__ import annotations

import re

import pytest


@pytest.mark.slow
def test_bench_review_measures_both_sides_and_prints_ratios(sealdesk):
    proc = sealdesk(
        "bench", "review", "--items", "300", "--decisions", "10", "--runs", "1", check=True
    )
    out = proc.stdout
    assert re.search(r"sealdesk app\s+[\d.]+ s", out), out
    assert re.search(r"DataTable\s+300 rows\s+[\d.]+ s", out), out
    assert re.search(
        r"app keypress->durable\s+median\s+[\d.]+ ms\s+p95\s+[\d.]+ ms\s+\(n=10\)", out
    ), out
    assert re.search(r"ratio app/direct\s+median\s+[\d.]+x", out), out
    assert "goals: first screen < 1.5 s:" in out


def _keys_per_decision(out: str, mode: str) -> float:
    match = re.search(rf"{mode}\s+([\d.]+) keys/decision \((\d+) keys, (\d+) deciding", out)
    assert match, out
    return float(match.group(1))


@pytest.mark.slow
def test_bench_review_throughput_works_the_queue_both_ways_and_bulk_takes_fewer_keys(sealdesk):
    proc = sealdesk(
        "bench",
        "review",
        "--items",
        "300",
        "--decisions",
        "5",
        "--runs",
        "1",
        "--throughput",
        "--queue-items",
        "60",
        check=True,
    )
    out = proc.stdout
    assert re.search(r"throughput\s+60 flagged pairs, \d+ in \d+ duplicate clusters", out), out
    # The bench checks the ledger after each run: the script's verdict on every item.
    assert out.count("every verdict as scripted") == 2, out
    before = _keys_per_decision(out, "one at a time")
    bulk = _keys_per_decision(out, "with bulk")
    assert bulk < before, out
    assert re.search(r"with bulk\s+.*\s+\d+ decisions/min", out), out
    assert "keys per decision <= 1.2: met" in out


def _reading(out: str, mode: str) -> tuple[float, int]:
    match = re.search(rf"{mode}\s+([\d.]+) keys/decision \((\d+) deciding nothing\)", out)
    assert match, out
    return float(match.group(1)), int(match.group(2))


@pytest.mark.slow
def test_bench_review_reading_reads_every_pair_to_its_end_and_the_diff_needs_fewer_keys(
    sealdesk,
):
    proc = sealdesk(
        "bench",
        "review",
        "--items",
        "100",
        "--decisions",
        "3",
        "--runs",
        "1",
        "--throughput",
        "--queue-items",
        "20",
        "--reading",
        "--reading-items",
        "40",
        check=True,
    )
    out = proc.stdout
    assert re.search(r"reading at 80x24\s+40 made near-duplicates", out), out
    # every run signed the script's verdict on every pair (the ledger checked after it)
    assert out.count("every verdict as scripted") == 2 + 4, out
    whole, whole_scrolled = _reading(out, "whole texts  ")
    diff, diff_scrolled = _reading(out, "word diff  ")
    zoomed, _ = _reading(out, "word diff, zoomed")
    # whole 40-to-120-word texts stacked at 80x24 do not fit: reading them scrolls
    assert whole_scrolled > 40, out
    assert diff_scrolled < whole_scrolled and diff < whole and zoomed <= diff, out
    assert re.search(r"reading keys per decision <= 1.2 \(word diff, zoomed\): (met|MISSED)", out)


@pytest.mark.slow
def test_bench_review_reasons_gives_each_decision_its_reason_both_ways_and_prints_the_ratio(
    sealdesk,
):
    proc = sealdesk(
        "bench",
        "review",
        "--items",
        "300",
        "--decisions",
        "5",
        "--runs",
        "1",
        "--throughput",
        "--queue-items",
        "20",
        "--reasons",
        check=True,
    )
    out = proc.stdout
    # The bench checks the ledger after each run: every verdict and reason as scripted.
    assert out.count("every verdict and reason as scripted") == 2, out
    picked = re.search(r"reason picked\s+([\d.]+) keys/decision \(\d+ keys, 20 decisions\)", out)
    note = re.search(r"note, then decision\s+([\d.]+) keys/decision", out)
    assert picked and note, out
    assert float(picked.group(1)) == 2.0 < float(note.group(1)), out
    assert re.search(r"ratio picked/note\s+keys/decision\s+[\d.]+x", out), out
    assert "keys per decision with a reason <= 2.0: met" in out
