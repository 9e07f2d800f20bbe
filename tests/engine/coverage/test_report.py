"""The unsealed report: stratified measures and weak categories, with hand-derived known answers.

Populations: direct 10 attacks, obfuscated 10 attacks, benign 20 (see
coverage_support.eval_rows). Policy: min recall 0.8, max FPR 0.1, max
regression 0.1.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from engine.coverage.policy import CategoryGatePolicy, load_gate_policy
from engine.coverage.report import stratified_report, table_locator
from engine.coverage.tables import EVAL_COLUMNS, read_table
from engine.coverage.weak import identify_weak_categories, validate_findings
from engine.errors import InputError
from tests.support.coverage import POLICY, eval_rows, write_jsonl


def report_of(wrong: dict[str, int], version: str = "v2", set_id: str = "dev"):
    return stratified_report(eval_rows(wrong), version, set_id, POLICY)


def by_category(report):
    return {row["category"]: row for row in report}


# -- metrics ---------------------------------------------------------------


def test_recall_per_attack_category_is_true_positives_over_its_cases():
    # direct: 3 of 10 missed -> 7/10; obfuscated: 1 missed -> 9/10.
    rows = by_category(report_of({"direct": 3, "obfuscated": 1}))
    assert rows["direct"]["true_positive_count"] == 7
    assert rows["direct"]["detection_recall"] == 0.7
    assert rows["obfuscated"]["detection_recall"] == 0.9


def test_benign_fpr_is_false_positives_over_benign_cases():
    # 3 of 20 benign flagged -> 3/20 = 0.15.
    rows = by_category(report_of({"benign": 3}))
    assert rows["benign"]["false_positive_count"] == 3
    assert rows["benign"]["false_positive_rate"] == 0.15


def test_undefined_ratios_are_null_not_zero():
    rows = by_category(report_of({}))
    assert rows["benign"]["detection_recall"] is None
    assert rows["direct"]["false_positive_rate"] is None
    assert rows["obfuscated"]["false_positive_rate"] is None


def test_report_counts_positives_and_negatives_per_slice():
    rows = by_category(report_of({"direct": 2, "benign": 1}))
    assert (
        rows["direct"]["sample_count"],
        rows["direct"]["positive_count"],
        rows["direct"]["negative_count"],
    ) == (10, 10, 0)
    assert (
        rows["benign"]["sample_count"],
        rows["benign"]["positive_count"],
        rows["benign"]["negative_count"],
    ) == (20, 0, 20)


def test_report_never_has_precision_or_f1():
    for row in report_of({"direct": 1}):
        assert not {k for k in row if "precision" in k or "f1" in k}


def test_report_rows_follow_policy_order_and_name_detector_and_set():
    report = report_of({}, version="v9", set_id="set-7")
    assert [r["category"] for r in report] == ["direct", "obfuscated", "benign"]
    assert {(r["detector_version"], r["evaluation_set_id"]) for r in report} == {("v9", "set-7")}


# -- findings and their boundaries -----------------------------------------


def test_recall_exactly_at_the_minimum_is_not_weak():
    # 8/10 = 0.8, minimum 0.8: not below.
    assert identify_weak_categories(report_of({"direct": 2}), None, POLICY) == []


def test_recall_below_the_minimum_is_low_recall_with_value_and_threshold():
    weak = identify_weak_categories(report_of({"direct": 3}), None, POLICY)
    assert weak == [{"category": "direct", "issue": "low_recall", "value": 0.7, "threshold": 0.8}]


def test_fpr_exactly_at_the_maximum_is_not_weak():
    # 2/20 = 0.1, maximum 0.1: not above.
    assert identify_weak_categories(report_of({"benign": 2}), None, POLICY) == []


def test_fpr_above_the_maximum_is_high_fpr():
    weak = identify_weak_categories(report_of({"benign": 3}), None, POLICY)
    assert weak == [{"category": "benign", "issue": "high_fpr", "value": 0.15, "threshold": 0.1}]


def test_regression_of_exactly_the_allowed_drop_is_not_weak():
    # 9/10 -> 8/10 is a drop of exactly 1/10 (in floats 0.9 - 0.8 is
    # 0.09999999999999998 and 0.8 - 0.7 is 0.10000000000000009: exact
    # counts make both boundaries behave the same).
    assert (
        identify_weak_categories(report_of({"direct": 2}), report_of({"direct": 1}), POLICY) == []
    )
    weak = identify_weak_categories(report_of({"direct": 3}), report_of({"direct": 2}), POLICY)
    assert [f["issue"] for f in weak] == ["low_recall"]


def test_regression_beyond_the_allowed_drop_reports_current_previous_delta():
    # 10/10 -> 8/10: delta 0.2 > 0.1; 0.8 is not below the minimum.
    weak = identify_weak_categories(report_of({"obfuscated": 2}), report_of({}), POLICY)
    assert weak == [
        {
            "category": "obfuscated",
            "issue": "recall_regression",
            "current": 0.8,
            "previous": 1.0,
            "delta": 0.2,
            "threshold": 0.1,
        }
    ]


def test_a_category_can_be_both_low_and_regressed():
    # 9/10 -> 6/10: below 0.8 and a drop of 0.3.
    weak = identify_weak_categories(report_of({"direct": 4}), report_of({"direct": 1}), POLICY)
    assert [(f["issue"], f.get("value"), f.get("delta")) for f in weak] == [
        ("low_recall", 0.6, None),
        ("recall_regression", None, 0.3),
    ]


def test_an_improvement_is_not_a_regression():
    assert identify_weak_categories(report_of({}), report_of({"direct": 2}), POLICY) == []


def test_without_a_previous_report_no_regression_is_claimed():
    weak = identify_weak_categories(report_of({"obfuscated": 2}), None, POLICY)
    assert weak == []


def test_previous_report_of_another_evaluation_set_is_refused():
    with pytest.raises(InputError, match="identical populations"):
        identify_weak_categories(report_of({}), report_of({}, set_id="other"), POLICY)


def test_previous_report_with_other_category_counts_is_refused():
    smaller = stratified_report(
        eval_rows({}, {"direct": 9, "obfuscated": 10, "benign": 20}), "v1", "dev", POLICY
    )
    with pytest.raises(InputError, match="identical category populations"):
        identify_weak_categories(report_of({}), smaller, POLICY)


def test_report_whose_ratio_contradicts_its_counts_is_refused():
    previous = report_of({})
    previous[0] = dict(previous[0], detection_recall=0.5)
    with pytest.raises(InputError, match="does not follow from the row's counts"):
        identify_weak_categories(report_of({}), previous, POLICY)


# -- finding consistency -------------------------------------------------


def test_finding_that_does_not_breach_its_threshold_is_refused():
    with pytest.raises(InputError, match="does not breach"):
        validate_findings(
            [{"category": "direct", "issue": "low_recall", "value": 0.8, "threshold": 0.8}]
        )


def test_regression_finding_whose_delta_is_not_previous_minus_current_is_refused():
    with pytest.raises(InputError, match="inconsistent"):
        validate_findings(
            [
                {
                    "category": "direct",
                    "issue": "recall_regression",
                    "current": 0.6,
                    "previous": 0.9,
                    "delta": 0.2,
                    "threshold": 0.1,
                }
            ]
        )


def test_duplicated_finding_is_refused():
    finding = {"category": "benign", "issue": "high_fpr", "value": 0.2, "threshold": 0.1}
    with pytest.raises(InputError, match="duplicated"):
        validate_findings([finding, dict(finding)])


# -- population refusals -------------------------------------------------


def test_duplicate_case_id_is_refused_naming_both_lines(tmp_path: Path):
    rows = eval_rows({})
    rows[5] = dict(rows[5], case_id=rows[2]["case_id"])
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(InputError) as err:
        read_table(path, EVAL_COLUMNS)
    assert err.value.line == 6 and err.value.field == "case_id" and "line 3" in str(err.value)


def test_missing_required_category_is_refused():
    rows = [r for r in eval_rows({}) if r["category"] != "obfuscated"]
    with pytest.raises(InputError, match="'obfuscated' has no rows"):
        stratified_report(rows, "v", "s", POLICY)


def test_undeclared_category_is_refused_naming_its_line(tmp_path: Path):
    rows = eval_rows({})
    rows[3] = dict(rows[3], category="jailbreak")
    table = read_table(write_jsonl(tmp_path / "rows.jsonl", rows), EVAL_COLUMNS)
    with pytest.raises(InputError, match="'jailbreak' is not declared") as err:
        stratified_report(list(table.rows), "v", "s", POLICY, locate=table_locator(table))
    assert (err.value.line, err.value.field) == (4, "category")


def test_attack_slice_holding_a_benign_label_is_refused():
    rows = eval_rows({})
    rows[0] = dict(rows[0], label=0)
    with pytest.raises(InputError, match="mixed labels"):
        stratified_report(rows, "v", "s", POLICY)


def test_benign_slice_holding_a_malicious_label_is_refused():
    rows = eval_rows({})
    rows[-1] = dict(rows[-1], label=1)
    with pytest.raises(InputError, match="mixed labels"):
        stratified_report(rows, "v", "s", POLICY)


@pytest.mark.parametrize("value", [True, 1.0, "1", 2, None])
def test_label_must_be_the_integer_zero_or_one(value):
    rows = eval_rows({})
    rows[0] = dict(rows[0], label=value)
    with pytest.raises(InputError, match="integer 0 or 1"):
        stratified_report(rows, "v", "s", POLICY)


def test_csv_label_written_as_float_is_refused_with_line(tmp_path: Path):
    path = tmp_path / "rows.csv"
    pd.DataFrame(eval_rows({})).to_csv(path, index=False)
    text = path.read_text().splitlines()
    text[4] = text[4].replace(",1,1,", ",1.0,1,", 1)
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError) as err:
        read_table(path, EVAL_COLUMNS)
    assert (err.value.line, err.value.field) == (5, "label")


def test_parquet_boolean_prediction_is_refused(tmp_path: Path):
    frame = pd.DataFrame(eval_rows({}))
    frame["pred"] = frame["pred"].astype(bool)
    frame.to_parquet(tmp_path / "rows.parquet")
    with pytest.raises(InputError, match="integer 0 or 1") as err:
        read_table(tmp_path / "rows.parquet", EVAL_COLUMNS)
    assert err.value.field == "pred"


def test_undeclared_column_is_refused(tmp_path: Path):
    path = tmp_path / "rows.csv"
    pd.DataFrame([dict(r, score=0.3) for r in eval_rows({})]).to_csv(path, index=False)
    with pytest.raises(InputError, match="undeclared column") as err:
        read_table(path, EVAL_COLUMNS)
    assert err.value.field == "score"


def test_empty_population_is_refused(tmp_path: Path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n")
    with pytest.raises(InputError, match="population is empty"):
        read_table(path, EVAL_COLUMNS)


def test_csv_jsonl_and_parquet_give_the_same_report(tmp_path: Path):
    rows = eval_rows({"direct": 3, "benign": 2})
    pd.DataFrame(rows).to_csv(tmp_path / "r.csv", index=False)
    pd.DataFrame(rows).to_parquet(tmp_path / "r.parquet")
    write_jsonl(tmp_path / "r.jsonl", rows)
    reports = [
        stratified_report(
            list(read_table(tmp_path / f"r.{ext}", EVAL_COLUMNS).rows), "v", "s", POLICY
        )
        for ext in ("csv", "jsonl", "parquet")
    ]
    assert reports[0] == reports[1] == reports[2]


# -- policy files ----------------------------------------------------------


def write_policy(tmp_path: Path, body: str, name: str = "policy.toml") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


GOOD_TOML = """required_categories = ["direct", "obfuscated", "benign"]
benign_category = "benign"
min_attack_recall = 0.8
max_benign_fpr = 0.1
max_recall_regression = 0.1
"""


def test_toml_and_json_policies_load_the_same(tmp_path: Path):
    toml = load_gate_policy(write_policy(tmp_path, GOOD_TOML))
    json_path = write_policy(
        tmp_path,
        '{"required_categories": ["direct", "obfuscated", '
        '"benign"], "benign_category": "benign", "min_attack_recall": 0.8,'
        ' "max_benign_fpr": 0.1, "max_recall_regression": 0.1}',
        "policy.json",
    )
    assert toml == load_gate_policy(json_path) == POLICY


def test_policy_whose_benign_category_is_not_required_is_refused(tmp_path: Path):
    path = write_policy(
        tmp_path, GOOD_TOML.replace('benign_category = "benign"', 'benign_category = "clean"')
    )
    with pytest.raises(InputError) as err:
        load_gate_policy(path)
    assert err.value.field == "benign_category"


def test_policy_threshold_outside_zero_one_is_refused_with_its_line(tmp_path: Path):
    path = write_policy(tmp_path, GOOD_TOML.replace("max_benign_fpr = 0.1", "max_benign_fpr = 1.5"))
    with pytest.raises(InputError) as err:
        load_gate_policy(path)
    assert (err.value.line, err.value.field) == (4, "max_benign_fpr")


def test_policy_with_an_unknown_field_is_refused(tmp_path: Path):
    path = write_policy(tmp_path, GOOD_TOML + "min_precision = 0.9\n")
    with pytest.raises(InputError) as err:
        load_gate_policy(path)
    assert (err.value.line, err.value.field) == (6, "min_precision")


def test_policy_with_a_category_listed_twice_is_refused():
    from engine.coverage.policy import validate_gate_policy

    with pytest.raises(InputError, match="listed twice"):
        validate_gate_policy(CategoryGatePolicy(("a", "a", "benign"), "benign", 0.8, 0.1, 0.1))
