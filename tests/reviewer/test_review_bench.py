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
