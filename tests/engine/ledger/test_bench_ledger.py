"""``sealdesk bench ledger`` runs end to end and cleans up (its figures are not asserted)."""

from __future__ import annotations

import json


def test_bench_ledger_appends_verifies_and_leaves_nothing_behind(sealdesk, tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    proc = sealdesk(
        "bench",
        "ledger",
        "--records",
        "30",
        "--processes",
        "2",
        "--rounds",
        "2",
        "--dir",
        out,
        "--json",
        check=True,
    )
    figures = json.loads(proc.stdout)
    assert figures["records"] == 30 and figures["processes"] == 2 and figures["rounds"] == 2
    for name in (
        "append_per_s",
        "raw_sign_per_s",
        "verify_per_s",
        "verify_1proc_per_s",
        "raw_verify_per_s",
        "verify_ratio",
        "verify_1proc_ratio",
        "verify_ratio_best_of",
        "raw_parallel_per_s",
        "raw_parallel_ratio",
        "verify_of_ceiling",
    ):
        assert figures[name] > 0, name
    # one ratio per 2-process verify run, each against the raw runs either side of it
    assert len(figures["verify_ratios"]) == 2 and sorted(figures["verify_ratios"])[0] > 0
    assert list(out.iterdir()) == []  # the throwaway workspace and key are gone
