"""The weak-category backlog, its signed reviews, and the evidence that binds them.

Built on the demo's HOLD benchmark (sample_data/coverage): obfuscation
low_recall 0.7, context_manipulation recall_regression 1.0 -> 0.8, benign
high_fpr 0.15. The debug rows hold 3, 2 and 2 misses in those categories.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.artifacts import read_verified, write_artifact
from engine.canonical import canonical_json, sha256_hex
from engine.coverage.evidence import check_evidence, make_evidence
from engine.coverage.findings import load_benchmark
from engine.coverage.run_backlog import run_backlog
from engine.errors import InputError, IntegrityError, PermissionRefused
from engine.ledger import store
from tests.support.backlog import sign_held_runs
from tests.support.coverage import SAMPLE, backlog_args, sample_benchmark


@pytest.fixture
def hold(tmp_path: Path):
    """Gives (authority, benchmark path) of the demo's signed HOLD benchmark."""
    auth, path, _ = sample_benchmark(tmp_path / "authority")
    return auth, path


@pytest.fixture
def people(enrol):
    return {"rita": enrol("rita", "reviewer"), "lena": enrol("lena", "lead", "reviewer")}


def backlog(sealdesk, ws, hold, rows: Path = SAMPLE / "debug_rows.jsonl"):
    auth, path = hold
    return sealdesk(*backlog_args(path, auth.trust.directory, rows), workspace=ws.root)


def backlog_in(ws, hold, rows: Path = SAMPLE / "debug_rows.jsonl"):
    """The backlog built in-process (the CLI path has its own tests above)."""
    auth, path = hold
    source = load_benchmark(path, Path(f"{path}.sig"), auth.trust)[0]
    return run_backlog(ws, source, rows, SAMPLE / "attribution.toml", None)


def evidence_in(ws, hold, signer=None):
    auth, path = hold
    return make_evidence(ws, path, Path(f"{path}.sig"), auth.trust, signer)


def items_by_category(ws) -> dict[str, dict]:
    return {
        ws.item("weak_categories", i["item_id"])["payload"]["category"]: ws.item(
            "weak_categories", i["item_id"]
        )
        for i in ws.items(queue="weak_categories")
        if i["item_id"].startswith("wc-")
    }


def review_all(ws, people, decisions=None) -> None:
    decisions = decisions or {}
    for category, item in items_by_category(ws).items():
        ws.decide(
            people["rita"],
            "weak_categories",
            item["item_id"],
            decisions.get(category, "accept"),
            note=f"reviewed {category}",
        )


def evidence(sealdesk, ws, hold, *key: object):
    auth, path = hold
    return sealdesk(
        "coverage",
        "evidence",
        "--benchmark",
        path,
        "--trust-root",
        auth.trust.directory,
        *key,
        workspace=ws.root,
    )


def evidence_files(ws) -> list[Path]:
    return sorted((ws.root / "artifacts").glob("coverage-evidence-*/coverage_evidence.json"))


# -- the backlog ----------------------------------------------------------------


def test_backlog_has_one_item_per_weak_category(sealdesk, workspace, hold):
    done = backlog(sealdesk, workspace, hold)
    assert done.returncode == 0, done.stderr
    assert sorted(items_by_category(workspace)) == ["benign", "context_manipulation", "obfuscation"]
    assert "3 item(s) added" in done.stdout


def test_backlog_item_carries_findings_counts_misses_and_no_release_authority(workspace, hold):
    backlog_in(workspace, hold)
    payload = items_by_category(workspace)["obfuscation"]["payload"]
    assert payload["findings"] == [
        {"category": "obfuscation", "issue": "low_recall", "value": 0.7, "threshold": 0.8}
    ]
    assert payload["counts"] == {
        "sample_count": 10,
        "positive_count": 10,
        "negative_count": 0,
        "true_positive_count": 7,
        "false_positive_count": 0,
        "eligible_misses": 3,
        "selected_misses": 3,
    }
    assert sorted(m["case_id"] for m in payload["misses"]) == [
        "d-obfu-01",
        "d-obfu-02",
        "d-obfu-03",
    ]
    miss = payload["misses"][0]
    assert (miss["label"], miss["prediction"]) == (1, 0) and miss["text"]
    assert miss["attribution"] == {"status": "not_run", "reason": "no --model was given"}
    assert payload["release_authority"] == "none"
    assert any("AID-H-026.002" in a for a in payload["proposed_actions"])
    assert payload["summary"] == {
        "title": "obfuscation: low_recall 0.7 < 0.8",
        "score": 0.1,
        "tags": ["low_recall", "HOLD"],
    }


def test_benign_item_lists_its_false_positives(workspace, hold):
    backlog_in(workspace, hold)
    payload = items_by_category(workspace)["benign"]["payload"]
    assert {(m["case_id"], m["label"], m["prediction"]) for m in payload["misses"]} == {
        ("d-beni-01", 0, 1),
        ("d-beni-02", 0, 1),
    }
    assert payload["counts"]["false_positive_count"] == 3


def test_backlog_artifacts_are_sidecar_checked_and_named_in_the_run(workspace, hold):
    backlog_in(workspace, hold)
    item = items_by_category(workspace)["benign"]
    run_dir = workspace.root / "artifacts" / item["run_id"]
    lines = read_verified(run_dir / "debug_backlog.jsonl").decode().splitlines()
    assert sorted(json.loads(line)["item_id"] for line in lines) == sorted(
        i["item_id"] for i in items_by_category(workspace).values()
    )
    manifest = json.loads(
        workspace.conn.execute(
            "SELECT manifest FROM runs WHERE run_id=?", (item["run_id"],)
        ).fetchone()[0]
    )
    for name, digest in manifest["artifacts"].items():
        assert sha256_hex(read_verified(run_dir / name)) == digest
    assert manifest["inputs"]["source"]["sha256"] == sha256_hex(hold[1].read_bytes())


def test_backlog_run_again_adds_nothing(workspace, hold):
    first = backlog_in(workspace, hold)
    again = backlog_in(workspace, hold)
    assert (again.added, again.unchanged, again.run_id) == (0, 3, first.run_id)


def test_backlog_from_rows_with_a_bad_digest_writes_nothing(sealdesk, workspace, hold, tmp_path):
    lines = (SAMPLE / "debug_rows.jsonl").read_text().splitlines()
    row = json.loads(lines[4])
    row["text"] += " (edited)"
    lines[4] = json.dumps(row)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(lines) + "\n")
    done = backlog(sealdesk, workspace, hold, rows)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"sealdesk: error: {rows}:5: field 'text_sha256': text does not hash to text_sha256"
    )
    assert workspace.items() == [] and not list((workspace.root / "artifacts").iterdir())


def test_backlog_of_a_forged_benchmark_is_refused(workspace, hold):
    auth, path = hold
    value = json.loads(path.read_bytes())
    value["weak_categories"] = value["weak_categories"][:1]
    path.write_bytes(canonical_json(value))
    with pytest.raises(IntegrityError, match="benchmark authority"):
        backlog_in(workspace, hold)
    assert workspace.items() == []


# -- reviews and evidence --------------------------------------------------------


def test_evidence_is_refused_while_a_weak_category_is_unreviewed(workspace, hold, people):
    backlog_in(workspace, hold)
    first = next(iter(items_by_category(workspace).values()))
    workspace.decide(people["rita"], "weak_categories", first["item_id"], "accept")
    with pytest.raises(InputError, match="is undecided"):
        evidence_in(workspace, hold, people["lena"])
    assert evidence_files(workspace) == []
    assert [i for i in workspace.items() if i["item_id"].startswith("ev-")] == []


def test_evidence_is_refused_before_the_backlog_exists(workspace, hold, people):
    with pytest.raises(InputError, match="has no backlog item"):
        evidence_in(workspace, hold, people["lena"])


def test_a_reviewer_cannot_approve_the_evidence(workspace, hold, people):
    backlog_in(workspace, hold)
    review_all(workspace, people)
    with pytest.raises(PermissionRefused, match="may not sign as lead"):
        evidence_in(workspace, hold, people["rita"])
    assert evidence_files(workspace) == []
    assert [i for i in workspace.items() if i["item_id"].startswith("ev-")] == []


def test_evidence_binds_benchmark_bytes_review_records_and_lead_approval(
    sealdesk, workspace, hold, people
):
    backlog_in(workspace, hold)
    review_all(workspace, people, {"obfuscation": "reject"})
    done = evidence(sealdesk, workspace, hold, "--key", people["lena"].path)
    assert done.returncode == 0, done.stderr
    [path] = evidence_files(workspace)
    value = json.loads(read_verified(path))
    assert value["benchmark_sha256"] == sha256_hex(hold[1].read_bytes())
    assert canonical_json(value["benchmark"]) == hold[1].read_bytes()
    assert value["benchmark"]["eligibility"] == "HOLD"
    reviewed = {r["category"]: r for r in value["reviews"]}
    assert {c: r["decision"] for c, r in reviewed.items()} == {
        "benign": "accept",
        "context_manipulation": "accept",
        "obfuscation": "reject",
    }
    for review in value["reviews"]:
        record = store.get_record(workspace.conn, review["record_hash"])
        assert (record.body["principal"], record.body["item_id"]) == ("rita", review["item_id"])
    approval = store.get_record(workspace.conn, value["approval"]["record_hash"])
    assert (approval.body["role"], approval.body["decision"], approval.body["item_id"]) == (
        "lead",
        "accept",
        value["claim_item"]["item_id"],
    )
    assert value["release_authority"] == "none"
    assert sealdesk("verify", workspace=workspace.root).returncode == 0


def test_check_evidence_accepts_what_evidence_wrote(sealdesk, workspace, hold, people):
    backlog_in(workspace, hold)
    review_all(workspace, people)
    evidence_in(workspace, hold, people["lena"])
    [path] = evidence_files(workspace)
    done = sealdesk(
        "coverage",
        "check-evidence",
        path,
        "--trust-root",
        hold[0].trust.directory,
        workspace=workspace.root,
    )
    assert done.returncode == 0, done.stderr
    assert "3 review(s), approved by lena (lead)" in done.stdout


def test_retracting_a_review_makes_the_evidence_stale(workspace, hold, people):
    backlog_in(workspace, hold)
    review_all(workspace, people)
    made = evidence_in(workspace, hold, people["lena"])
    benign = items_by_category(workspace)["benign"]
    workspace.retract(people["rita"], "weak_categories", benign["item_id"])
    with pytest.raises(IntegrityError, match="no longer stands"):
        check_evidence(workspace, made.path, hold[0].trust)


def test_evidence_whose_benchmark_was_edited_fails_its_check(workspace, hold, people):
    backlog_in(workspace, hold)
    review_all(workspace, people)
    path = evidence_in(workspace, hold, people["lena"]).path
    value = json.loads(path.read_bytes())
    value["benchmark"]["eligibility"] = "ELIGIBLE"
    value["benchmark"]["weak_categories"] = []
    value["benchmark_sha256"] = sha256_hex(canonical_json(value["benchmark"]))
    write_artifact(path, canonical_json(value))  # a consistent sidecar, too
    with pytest.raises(IntegrityError, match="benchmark authority"):
        check_evidence(workspace, path, hold[0].trust)


def test_a_pending_claim_can_be_approved_by_the_lead_as_a_decision(workspace, hold, people):
    backlog_in(workspace, hold)
    review_all(workspace, people)
    with pytest.raises(PermissionRefused, match="awaits a lead's approval"):
        evidence_in(workspace, hold)
    [claim] = [i for i in workspace.items() if i["item_id"].startswith("ev-")]
    workspace.decide(people["lena"], "weak_categories", claim["item_id"], "accept", role="lead")
    made = evidence_in(workspace, hold)
    assert evidence_files(workspace) == [made.path]


def test_a_claim_accepted_in_the_reviewer_role_is_not_an_approval(workspace, hold, people):
    backlog_in(workspace, hold)
    review_all(workspace, people)
    with pytest.raises(PermissionRefused):
        evidence_in(workspace, hold)
    [claim] = [i for i in workspace.items() if i["item_id"].startswith("ev-")]
    workspace.decide(people["rita"], "weak_categories", claim["item_id"], "accept")
    with pytest.raises(PermissionRefused, match="needs an accept made as lead"):
        evidence_in(workspace, hold)
    assert evidence_files(workspace) == []


def test_an_eligible_benchmark_needs_no_backlog_only_the_leads_approval(workspace, hold, people):
    auth, path = hold
    eligible = (auth, path.parent / "baseline.json")
    made = evidence_in(workspace, eligible, people["lena"])
    value = check_evidence(workspace, made.path, auth.trust)
    assert (value["benchmark"]["eligibility"], value["reviews"]) == ("ELIGIBLE", [])
    assert value["approval"]["role"] == "lead"


def test_an_eligible_benchmark_has_no_backlog_to_build(workspace, hold):
    auth, path = hold
    with pytest.raises(InputError, match="nothing to debug"):
        backlog_in(workspace, (auth, path.parent / "baseline.json"))


def test_an_unsealed_report_becomes_a_backlog_bound_to_its_detector(workspace, tmp_path):
    from engine.artifacts import write_json_artifact
    from engine.coverage.findings import load_report_document, report_document
    from engine.coverage.policy import load_gate_policy
    from engine.coverage.report import stratified_report
    from engine.coverage.tables import EVAL_COLUMNS, read_table
    from engine.coverage.weak import identify_weak_categories

    policy = load_gate_policy(SAMPLE / "policy.toml")
    table = read_table(SAMPLE / "eval_rows_v2.csv", EVAL_COLUMNS)
    report = stratified_report(list(table.rows), "v2", "dev", policy)
    weak = identify_weak_categories(report, None, policy)
    detector = json.loads((SAMPLE / "debug_rows.jsonl").read_text().splitlines()[0])[
        "detector_sha256"
    ]
    for digest, name in ((None, "unbound.json"), (detector, "bound.json")):
        write_json_artifact(
            tmp_path / name,
            report_document(
                report,
                weak,
                policy,
                detector_sha256=digest,
                rows_sha256="0" * 64,
                previous_report_sha256=None,
            ),
        )
    with pytest.raises(InputError, match="names no detector digest"):
        run_backlog(
            workspace,
            load_report_document(tmp_path / "unbound.json"),
            SAMPLE / "debug_rows.jsonl",
            SAMPLE / "attribution.toml",
            None,
        )
    run = run_backlog(
        workspace,
        load_report_document(tmp_path / "bound.json"),
        SAMPLE / "debug_rows.jsonl",
        SAMPLE / "attribution.toml",
        None,
    )
    # Debug population under v2: obfuscation 5/8, context 6/8, benign 2/12.
    assert sorted(i.payload["category"] for i in run.items) == [
        "benign",
        "context_manipulation",
        "obfuscation",
    ]
    assert {i.payload["source"]["kind"] for i in run.items} == {"report"}


# -- bad input found by the second hunt ----------------------------------------------


def test_evidence_made_again_after_a_signoff_keeps_the_signed_bytes(
    sealdesk, workspace, hold, people
):
    backlog_in(workspace, hold)
    sign_held_runs(workspace, people["lena"])  # the backlog was built in-process, unsigned
    review_all(workspace, people)
    assert evidence(sealdesk, workspace, hold, "--key", people["lena"].path).returncode == 0
    [path] = evidence_files(workspace)
    signed = path.read_bytes()
    done = sealdesk("signoff", "--yes", "--key", people["lena"].path, workspace=workspace.root)
    assert done.returncode == 0, done.stderr
    done = evidence(sealdesk, workspace, hold, "--key", people["lena"].path, "--note", "again")
    assert done.returncode == 4
    assert done.stderr == (
        f"sealdesk: error: {path} already holds a different artifact "
        "(sealed artifacts are never rewritten; nothing was written); it "
        "stands as written: check it with `sealdesk coverage "
        "check-evidence`\n"
    )
    assert path.read_bytes() == signed and evidence_files(workspace) == [path]
    assert sealdesk("verify", workspace=workspace.root).returncode == 0


def test_evidence_whose_approval_was_withdrawn_is_not_replaced(workspace, hold, people):
    from engine.errors import ConflictError

    backlog_in(workspace, hold)
    review_all(workspace, people)
    made = evidence_in(workspace, hold, people["lena"])
    written = made.path.read_bytes()
    [claim] = [i for i in workspace.items() if i["item_id"].startswith("ev-")]
    workspace.retract(people["lena"], "weak_categories", claim["item_id"], role="lead")
    records = workspace.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    with pytest.raises(ConflictError, match="whose approval no longer stands"):
        evidence_in(workspace, hold, people["lena"])
    assert workspace.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == records
    assert made.path.read_bytes() == written


@pytest.mark.parametrize(
    "field, forged",
    [
        ("approval.principal", "rita"),
        ("approval.decision", "reject"),
        ("approval.role", "reviewer"),
        ("approval.seq", 1),
        ("approval.time", "2025-01-01T00:00:00Z"),
        ("release_authority", "lena"),
        ("ledger.records", 1),
        ("ledger.head_hash", "0" * 64),
        ("claim_item.queue", "other"),
        ("claim_item.run_sha256", "0" * 64),
    ],
)
def test_check_evidence_refuses_a_field_that_differs_from_the_ledger(
    workspace, hold, people, field, forged
):
    backlog_in(workspace, hold)
    review_all(workspace, people)
    path = evidence_in(workspace, hold, people["lena"]).path
    value = json.loads(path.read_bytes())
    outer, _, inner = field.partition(".")
    if inner:
        value[outer][inner] = forged
    else:
        value[outer] = forged
    # A copy handed over from elsewhere: the file in the workspace would first be refused
    # for differing from the hash its run recorded, before any field is read.
    copy = workspace.root.parent / "handed-over" / path.name
    copy.parent.mkdir()
    write_artifact(copy, canonical_json(value))  # a consistent sidecar, too
    with pytest.raises(IntegrityError, match=rf"field '{field}'"):
        check_evidence(workspace, copy, hold[0].trust)


@pytest.mark.parametrize(
    "name, value, limit",
    [
        ("tokenizer_max_length", 99999999999999999999, 8192),
        ("integration_steps", 999999999999, 1000),
    ],
)
def test_attribution_policy_beyond_its_bound_is_refused_naming_file_line_and_field(
    sealdesk, workspace, hold, tmp_path, name, value, limit
):
    text = (SAMPLE / "attribution.toml").read_text()
    lines = text.splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if line.startswith(name))
    lines[number - 1] = f"{name} = {value}"
    policy = tmp_path / "attribution.toml"
    policy.write_text("\n".join(lines) + "\n")
    auth, path = hold
    done = sealdesk(
        *backlog_args(path, auth.trust.directory, SAMPLE / "debug_rows.jsonl", policy=policy),
        workspace=workspace.root,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {policy}:{number}: field '{name}': must be at "
        f"most {limit}, got {value}\n"
    )
    assert workspace.items() == [] and not list((workspace.root / "artifacts").iterdir())
