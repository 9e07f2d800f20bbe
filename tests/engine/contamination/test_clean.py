"""After review: confirmed leaks dropped, false positives kept, undecided refused.

The power of the cleaned set is checked again.
"""

from __future__ import annotations

import hashlib
import json
import math
import re

import pytest

from engine.contamination.clean import clean
from engine.contamination.inputs.sources import resolve_source
from engine.contamination.report.power import minimum_detectable_difference
from engine.contamination.scan import ScanConfig, run_scan
from engine.errors import InputError, IntegrityError
from tests.conftest import REPO

SAMPLE = REPO / "sample_data" / "contamination"
QUESTIONS = [json.loads(line) for line in open(SAMPLE / "eval.jsonl", encoding="utf-8")]


def test_minimum_detectable_difference_matches_a_hand_computation():
    # z(0.975) = 1.959964, z(0.8) = 0.841621, sum 2.801585; sqrt(2 * 0.25 / 100) = 0.0707107
    assert minimum_detectable_difference(100) == pytest.approx(0.198102, abs=1e-6)
    # at accuracy 0.9 the spread is sqrt(2 * 0.09 / 100) = 0.0424264
    assert minimum_detectable_difference(100, accuracy=0.9) == pytest.approx(0.118861, abs=1e-6)


def test_fewer_items_detect_only_larger_differences():
    assert minimum_detectable_difference(19) > minimum_detectable_difference(22)


@pytest.fixture
def scanned(workspace):
    config = ScanConfig.of(
        eval=resolve_source(
            "eval", str(SAMPLE / "eval.jsonl"), text_field="question", id_field="id"
        ),
        pool=resolve_source("pool", str(SAMPLE / "pool.jsonl"), text_field="text", id_field="id"),
        embed=False,
        jobs=1,
    )
    outcome = run_scan(workspace, config)
    by_eval = {item.payload["eval"]["id"]: item.item_id for item in outcome.items}
    return workspace, outcome, by_eval


def decide(workspace, signer, by_eval, accept=(), reject=()):
    for eval_id in accept:
        workspace.decide(signer, "flagged_pairs", by_eval[eval_id], "accept", note="leak")
    for eval_id in reject:
        workspace.decide(signer, "flagged_pairs", by_eval[eval_id], "reject", note="fine")


def seed_hash(texts) -> str:
    sha = hashlib.sha256()
    for text in texts:
        sha.update(re.sub(r"\s+", " ", text.strip().lower()).encode() + b"\x00")
    return sha.hexdigest()


def test_undecided_items_are_refused_and_named(scanned, enrol):
    workspace, outcome, by_eval = scanned
    rita = enrol("rita", "reviewer")
    decide(workspace, rita, by_eval, accept=["q-clips"])
    with pytest.raises(InputError) as caught:
        clean(workspace)
    assert caught.value.field == "decision"
    assert caught.value.reason.startswith("9 flagged item(s) have no accept/reject decision:")
    assert by_eval["q-wallet"] in caught.value.reason and "(eval q-wallet)" in caught.value.reason
    kinds = [r[0] for r in workspace.conn.execute("SELECT kind FROM runs")]
    assert kinds == ["contamination-scan"]


def test_accepted_items_are_dropped_rejected_kept_with_new_hash_and_power(scanned, enrol, tmp_path):
    workspace, outcome, by_eval = scanned
    rita = enrol("rita", "reviewer")
    dropped = ["q-clips", "q-babysitting", "q-oneoff-0-copy"]
    decide(
        workspace, rita, by_eval, accept=dropped, reject=[e for e in by_eval if e not in dropped]
    )
    result = clean(workspace, out=tmp_path / "clean.jsonl")
    report = result.report
    kept = [q for q in QUESTIONS if q["id"] not in dropped]
    assert (report["n_before"], report["n_after"]) == (22, 19)
    assert report["content_sha256_before"] == seed_hash(q["question"] for q in QUESTIONS)
    assert report["content_sha256_after"] == seed_hash(q["question"] for q in kept)
    assert [d["id"] for d in report["dropped"]] == ["q-clips", "q-babysitting", "q-oneoff-0-copy"]
    assert len(report["kept_after_review"]) == 7 and report["kept_undecided"] == []
    # 10 of 22 flagged, 3 accepted: 2 leaks from the pool and q-oneoff-0-copy, a duplicate
    # of another eval item only (its original is kept), so the leakage rate is 2 / 22
    leakage = report["leakage"]
    assert (leakage["rate"], leakage["confirmed_items"], leakage["pending_review"]) == (
        round(2 / 22, 6),
        2,
        0,
    )
    assert leakage["internal_duplicates_accepted"] == 1
    assert report["kept_one_of_duplicates"] == []
    assert (leakage["flagged"]["items"], leakage["flagged"]["rate"]) == (10, round(10 / 22, 6))
    assert leakage["rejected_items"] == 7
    # n = 22: 2.801585 * sqrt(0.5 / 22) = 0.422355; n = 19: 2.801585 * sqrt(0.5 / 19) = 0.454477
    assert report["power"]["mde_before"] == pytest.approx(0.422355, abs=1e-6)
    assert report["power"]["mde_after"] == pytest.approx(0.454477, abs=1e-6)
    written = [json.loads(line) for line in (tmp_path / "clean.jsonl").read_text().splitlines()]
    assert written == kept
    artifact = result.run_dir / "clean_eval.jsonl"
    assert artifact.read_bytes() == (tmp_path / "clean.jsonl").read_bytes()
    assert (result.run_dir / "clean_eval.jsonl.sha256").exists()


def test_allow_undecided_keeps_and_lists_them(scanned, enrol):
    workspace, outcome, by_eval = scanned
    decide(workspace, enrol("rita", "reviewer"), by_eval, accept=["q-clips"])
    report = clean(workspace, allow_undecided=True).report
    assert report["n_after"] == 21
    assert len(report["kept_undecided"]) == 9
    # one confirmed leak in 22; nine flagged items nobody decided are pending, not leaks
    assert (report["leakage"]["rate"], report["leakage"]["pending_review"]) == (
        round(1 / 22, 6),
        9,
    )


def test_a_retracted_accept_no_longer_drops_the_item(scanned, enrol):
    workspace, outcome, by_eval = scanned
    rita = enrol("rita", "reviewer")
    decide(workspace, rita, by_eval, accept=["q-clips"])
    workspace.retract(rita, "flagged_pairs", by_eval["q-clips"], note="second look")
    assert clean(workspace, allow_undecided=True).report["n_after"] == 22


def test_a_tampered_scan_artifact_is_refused(scanned):
    workspace, outcome, by_eval = scanned
    path = outcome.run_dir / "eval_items.jsonl"
    path.write_bytes(path.read_bytes().replace(b"Natalia", b"Natasha"))
    with pytest.raises(IntegrityError):
        clean(workspace, allow_undecided=True)


def test_the_clean_command_prints_the_new_hash_and_power(scanned, enrol, sealdesk):
    workspace, outcome, by_eval = scanned
    decide(
        workspace,
        enrol("rita", "reviewer"),
        by_eval,
        accept=["q-clips"],
        reject=[e for e in by_eval if e != "q-clips"],
    )
    proc = sealdesk("contamination", "clean", workspace=workspace.root)
    assert proc.returncode == 0, proc.stderr
    assert "22 -> 21 items (1 dropped, 9 kept after review, 0 undecided kept)" in proc.stdout
    # 2.801585 * sqrt(0.5 / 22) = 0.422355 and 2.801585 * sqrt(0.5 / 21) = 0.432294
    assert "0.4224 -> 0.4323" in proc.stdout


def test_an_out_path_that_cannot_be_written_leaves_no_clean_run_behind(scanned, tmp_path):
    workspace, outcome, by_eval = scanned
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    runs_before = sorted(p.name for p in workspace.artifacts_dir.iterdir())
    with pytest.raises(InputError, match="cannot write"):
        clean(workspace, allow_undecided=True, out=blocker / "clean.jsonl")
    assert sorted(p.name for p in workspace.artifacts_dir.iterdir()) == runs_before
    assert (
        workspace.conn.execute("SELECT COUNT(*) FROM runs WHERE run_id LIKE '%clean%'").fetchone()[
            0
        ]
        == 0
    )


def test_other_power_parameters_make_another_clean_run_never_a_rewrite(scanned, enrol):
    workspace, outcome, by_eval = scanned
    decide(workspace, enrol("rita", "reviewer"), by_eval, accept=["q-clips"])
    first = clean(workspace, allow_undecided=True)
    held = {p.name: p.read_bytes() for p in first.run_dir.iterdir()}
    second = clean(workspace, allow_undecided=True, alpha=0.01, power=0.9)
    assert second.run_id != first.run_id
    assert {p.name: p.read_bytes() for p in first.run_dir.iterdir()} == held
    assert second.report["power"]["alpha"] == 0.01
    again = clean(workspace, allow_undecided=True)  # the same inputs: the same run, unchanged
    assert again.run_id == first.run_id
    assert {p.name: p.read_bytes() for p in first.run_dir.iterdir()} == held


def test_a_tiny_alpha_is_computed_not_a_statistics_error():
    from engine.contamination.report.power import minimum_detectable_difference

    tiny = minimum_detectable_difference(100, alpha=1e-300)
    assert math.isfinite(tiny) and tiny > minimum_detectable_difference(100, alpha=1e-10)
    # 2.801585 * sqrt(0.5 / 22) = 0.422355, as before the change of formula
    assert round(minimum_detectable_difference(22), 6) == 0.422355


def test_an_eval_item_confirmed_a_leak_on_another_item_is_never_kept_silently(scanned, enrol):
    from engine.workspace import BacklogItem

    workspace, outcome, by_eval = scanned
    rita = enrol("rita", "reviewer")
    held = workspace.item("flagged_pairs", by_eval["q-clips"])["payload"]["eval"]
    # An item of another scan for the same eval item, with other evidence: its id differs.
    other = BacklogItem.make(
        "flagged_pairs",
        "fp-earlier",
        "scan-earlier",
        {"eval": dict(held), "channels": ["embed"], "matches": []},
    )
    workspace.ingest(
        [other], runs={"scan-earlier": {"kind": "test", "artifacts": {}, "inputs": {}}}
    )
    workspace.decide(rita, "flagged_pairs", "fp-earlier", "accept", note="leak")
    with pytest.raises(InputError) as err:
        clean(workspace, allow_undecided=True)
    assert err.value.field == "decision"
    assert "eval q-clips was confirmed a leak on item fp-earlier (by rita)" in err.value.reason
    assert by_eval["q-clips"] in err.value.reason
    assert not any("clean" in p.name for p in workspace.artifacts_dir.iterdir())
    decide(workspace, rita, by_eval, accept=["q-clips"])  # decided here too: clean runs
    assert clean(workspace, allow_undecided=True).report["n_after"] == 21


def test_accepting_every_copy_of_a_duplicate_cluster_keeps_one_in_the_clean_set(
    scanned, enrol, sealdesk
):
    workspace, outcome, by_eval = scanned
    rita = enrol("rita", "reviewer")
    both = ["q-oneoff-0", "q-oneoff-0-copy"]  # one internal cluster, not in the pool
    decide(workspace, rita, by_eval, accept=both, reject=[e for e in by_eval if e not in both])
    proc = sealdesk("contamination", "clean", workspace=workspace.root)
    assert proc.returncode == 0, proc.stderr
    assert "22 -> 21 items (1 dropped, 8 kept after review, 0 undecided kept)" in proc.stdout
    assert "1 accepted duplicate(s) kept as the one copy of their cluster: q-oneoff-0" in (
        proc.stdout
    )
    assert "leakage rate 0.00% confirmed (0 of 22 eval items accepted as leaks from the pool)" in (
        proc.stdout
    )
    assert "2 internal duplicate(s) accepted apart" in proc.stdout
    from engine.contamination.clean import CLEAN_SET

    run = sorted(p for p in workspace.artifacts_dir.iterdir() if ".clean-" in p.name)[-1]
    ids = [json.loads(line)["id"] for line in (run / CLEAN_SET).read_text().splitlines()]
    assert "q-oneoff-0" in ids and "q-oneoff-0-copy" not in ids and len(ids) == 21


def test_accepting_everything_drops_the_leaks_and_keeps_one_copy_of_each_cluster(scanned, enrol):
    workspace, outcome, by_eval = scanned
    rita = enrol("rita", "reviewer")
    # every flagged item accepted: the pool leaks drop; each internal cluster keeps one
    decide(workspace, rita, by_eval, accept=list(by_eval))
    report = clean(workspace).report
    kept = [d["id"] for d in report["kept_one_of_duplicates"]]
    assert kept == ["q-oneoff-0", "q-oneoff-1"]
    assert report["leakage"]["confirmed_items"] == 6  # the items flagged against the pool
    assert report["leakage"]["internal_duplicates_accepted"] == 4
    assert report["n_after"] == 22 - 10 + 2


def test_a_cluster_whose_copies_all_leaked_from_the_pool_keeps_none():
    from engine.contamination.clean import _keep_one_of_each_cluster

    def item(index, channels):
        cluster = [{"index": 1}, {"index": 2}]
        return {"payload": {"cluster": cluster}}, {"index": index, "channels": channels}

    (a, leak_a), (b, leak_b) = item(1, ["embed", "internal"]), item(2, ["ngram", "internal"])
    assert _keep_one_of_each_cluster([a, b], [leak_a, leak_b]) == []
    # one copy only a duplicate: that one stays
    (_, dup_b) = item(2, ["internal"])
    assert _keep_one_of_each_cluster([a, b], [leak_a, dup_b]) == [dup_b]
    # a member not accepted is kept anyway: nothing more to keep
    assert _keep_one_of_each_cluster([a, b], [dup_b]) == []


def test_under_a_review_plan_only_agreeing_or_adjudicated_decisions_clean(scanned, enrol):
    """One reviewer's rating on a double-reviewed pair settles nothing: the pair stays in
    the set, pending; once a second agrees it is dropped, and the report says how each
    planned item was settled."""
    workspace, outcome, by_eval = scanned
    rita, sam = enrol("rita", "reviewer"), enrol("sam", "reviewer")
    lead = enrol("lena", "lead")
    plan = {"k": 2, "share": 1.0, "seed": 5, "principals": ["rita", "sam"]}
    workspace.set_plan(lead, {"flagged_pairs": plan})
    decide(workspace, rita, by_eval, accept=["q-clips"])
    report = clean(workspace, allow_undecided=True).report
    assert report["n_after"] == 22 and len(report["kept_undecided"]) == 10
    decide(workspace, sam, by_eval, accept=["q-clips"])
    report = clean(workspace, allow_undecided=True).report
    assert report["n_after"] == 21
    assert [(d["id"], d["review"]) for d in report["dropped"]] == [("q-clips", "unanimous")]


def test_the_clean_report_lists_each_decisions_reason_where_it_gave_one(scanned, enrol):
    workspace, outcome, by_eval = scanned
    rita = enrol("rita", "reviewer")
    workspace.decide(
        rita,
        "flagged_pairs",
        by_eval["q-clips"],
        "accept",
        reason="exact-copy",
        rationale="word for word",
    )
    decide(workspace, rita, by_eval, reject=[e for e in by_eval if e != "q-clips"])
    report = clean(workspace).report
    (dropped,) = report["dropped"]
    assert (dropped["reason"], dropped["rationale"]) == ("exact-copy", "word for word")
    assert all("reason" not in k for k in report["kept_after_review"])
