"""Debug backlog, step 1: deterministic, complete selection of misses per weak category."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from engine.coverage.misses import select_misses
from engine.coverage.policy import AttributionPolicy
from engine.coverage.tables import DEBUG_COLUMNS, read_table
from engine.errors import InputError, PermissionRefused
from tests.support.coverage import V1, V2, write_jsonl

POLICY = AttributionPolicy(
    max_examples_per_category=2,
    selection_seed="seed-1",
    tokenizer_max_length=32,
    integration_steps=8,
    top_tokens_per_direction=2,
)
LOW = {"category": "direct", "issue": "low_recall", "value": 0.5, "threshold": 0.8}
HIGH = {"category": "benign", "issue": "high_fpr", "value": 0.25, "threshold": 0.1}


def row(
    case_id: str, category: str, label: int, pred: int, detector: str = V2, text: str | None = None
) -> dict:
    text = text or f"text of {case_id}"
    return {
        "case_id": case_id,
        "text": text,
        "text_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "label": label,
        "pred": pred,
        "category": category,
        "detector_sha256": detector,
    }


def population() -> list[dict]:
    # direct: 4 misses (d0..d3) of 6; benign: 1 false positive (b0) of 4;
    # obfuscated is not weak and its miss is not eligible.
    return (
        [row(f"d{i}", "direct", 1, 0 if i < 4 else 1) for i in range(6)]
        + [row(f"b{i}", "benign", 0, 1 if i == 0 else 0) for i in range(4)]
        + [row("o0", "obfuscated", 1, 0)]
    )


def table(tmp_path: Path, rows: list[dict]):
    return read_table(write_jsonl(tmp_path / "debug.jsonl", rows), DEBUG_COLUMNS)


def seed_order(seed: str, case_ids: list[str]) -> list[str]:
    # The rule, stated independently: ascending SHA-256 of "seed:case_id".
    return sorted(case_ids, key=lambda c: hashlib.sha256(f"{seed}:{c}".encode()).hexdigest())


def test_every_miss_of_a_weak_category_is_eligible_and_nothing_else(tmp_path: Path):
    chosen = select_misses(table(tmp_path, population()), [LOW, HIGH], V2, POLICY)
    assert {c: sorted(m.case_id for m in ms) for c, ms in chosen.eligible.items()} == {
        "benign": ["b0"],
        "direct": ["d0", "d1", "d2", "d3"],
    }


def test_selection_takes_the_lowest_rank_keys_up_to_the_maximum(tmp_path: Path):
    chosen = select_misses(table(tmp_path, population()), [LOW, HIGH], V2, POLICY)
    assert [m.case_id for m in chosen.selected["direct"]] == seed_order(
        "seed-1", ["d0", "d1", "d2", "d3"]
    )[:2]
    assert [m.case_id for m in chosen.selected["benign"]] == ["b0"]


def test_another_seed_ranks_by_its_own_keys(tmp_path: Path):
    other = AttributionPolicy(4, "seed-2", 32, 8, 2)
    chosen = select_misses(table(tmp_path, population()), [LOW], V2, other)
    assert [m.case_id for m in chosen.selected["direct"]] == seed_order(
        "seed-2", ["d0", "d1", "d2", "d3"]
    )


def test_selection_evidence_records_counts_and_rank_keys(tmp_path: Path):
    evidence = select_misses(table(tmp_path, population()), [LOW, HIGH], V2, POLICY).to_json()
    assert evidence["eligible_miss_counts"] == {"benign": 1, "direct": 4}
    assert evidence["selected_counts"] == {"benign": 1, "direct": 2}
    assert evidence["eligible"]["benign"] == [
        {"case_id": "b0", "rank_key": hashlib.sha256(b"seed-1:b0").hexdigest()}
    ]


def test_a_weak_category_without_a_miss_is_an_error(tmp_path: Path):
    rows = [r for r in population() if r["case_id"] != "b0"]
    with pytest.raises(InputError, match="'benign' has no miss"):
        select_misses(table(tmp_path, rows), [LOW, HIGH], V2, POLICY)


def test_no_findings_is_an_error(tmp_path: Path):
    with pytest.raises(InputError, match="no weak-category findings"):
        select_misses(table(tmp_path, population()), [], V2, POLICY)


def test_inconsistent_finding_is_refused(tmp_path: Path):
    bad = dict(LOW, value=0.9)
    with pytest.raises(InputError, match="does not breach"):
        select_misses(table(tmp_path, population()), [bad], V2, POLICY)


def test_row_whose_text_does_not_match_its_digest_is_refused(tmp_path: Path):
    rows = population()
    rows[2] = dict(rows[2], text="edited after hashing")
    with pytest.raises(InputError) as err:
        select_misses(table(tmp_path, rows), [LOW], V2, POLICY)
    assert (err.value.line, err.value.field) == (3, "text_sha256")


def test_row_from_another_detector_is_refused(tmp_path: Path):
    rows = population()
    rows[7] = dict(rows[7], detector_sha256=V1)
    with pytest.raises(PermissionRefused, match=":8: row was predicted by detector"):
        select_misses(table(tmp_path, rows), [LOW], V2, POLICY)
