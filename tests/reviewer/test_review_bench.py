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
