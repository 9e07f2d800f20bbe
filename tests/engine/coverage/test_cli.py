"""The `sealdesk coverage` command line, run as a real subprocess on real files."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from engine.artifacts import read_verified
from tests.support.coverage import SAMPLE, eval_rows, report_args

V1 = "55c80d5d9e0d82337ab555b17e8505febf5e680758e1dd23ca7239e571eb1130"
V2 = "5642865473cf347f2c19ed920c162cf41c08e258c2452abfe33cc7db0606737c"


def artifacts(ws: Path) -> list[str]:
    root = ws / "artifacts"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# The arguments of each coverage command, the paths and values a test gives filled in.


def scope_args(template: Path, holdout: Path, out: Path, *extra: object) -> tuple:
    """Gives `coverage scope` from a template and a holdout manifest, written to out."""
    return ("coverage", "scope", "--template", template, "--holdout", holdout, *extra, "--out", out)


def sign_args(role: str, key: Path, *rest: object) -> tuple:
    """Gives `coverage sign` with a role's key (rest: the document, and any option)."""
    return ("coverage", "sign", "--role", role, "--key", key, *rest)


def keygen_args(trust: Path, keys: Path, *extra: object) -> tuple:
    """Gives `coverage keygen` into a trust root and a private-keys directory."""
    return ("coverage", "keygen", "--trust-root", trust, "--keys", keys, *extra)


def holdout_args(
    rows: Path, out: Path, *extra: object, holdout_id: str = "h", version: str = "3"
) -> tuple:
    """Gives `coverage holdout` sealing rows into a manifest written to out."""
    return (
        "coverage",
        "holdout",
        "--rows",
        rows,
        "--holdout-id",
        holdout_id,
        "--version",
        version,
        *extra,
        "--out",
        out,
    )


def finalize_args(root: Path, *extra: object) -> tuple:
    """Gives `coverage finalize` against the authority's trust root and store under root."""
    return (
        "coverage",
        "finalize",
        "--trust-root",
        root / "trust",
        "--store",
        root / "lineage.db",
        "--store-id",
        "demo",
        *extra,
    )


def test_report_writes_the_stratified_report_with_a_sidecar(sealdesk, workspace, tmp_path):
    rows = tmp_path / "rows.csv"
    pd.DataFrame(eval_rows({"direct": 3, "benign": 3})).to_csv(rows, index=False)
    policy = tmp_path / "policy.toml"
    policy.write_text(
        'required_categories = ["direct", "obfuscated", "benign"]\n'
        'benign_category = "benign"\nmin_attack_recall = 0.8\n'
        "max_benign_fpr = 0.1\nmax_recall_regression = 0.1\n"
    )
    done = sealdesk(
        *report_args(rows, "--evaluation-set-id", "dev", policy=policy, version="v2"),
        workspace=workspace.root,
        check=True,
    )
    assert "coverage veto: 2 finding(s)" in done.stdout
    [name] = [a for a in artifacts(workspace.root) if a.endswith("category_report.json")]
    document = json.loads(read_verified(workspace.root / "artifacts" / name))
    assert [(f["category"], f["issue"], f["value"]) for f in document["weak_categories"]] == [
        ("direct", "low_recall", 0.7),
        ("benign", "high_fpr", 0.15),
    ]
    assert document["coverage_veto"] is True


def test_report_against_the_previous_report_finds_the_regression(sealdesk, workspace):
    dev = ("--evaluation-set-id", "dev")
    sealdesk(
        *report_args(SAMPLE / "eval_rows_v1.csv", *dev, version="v1"),
        workspace=workspace.root,
        check=True,
    )
    [previous] = [
        workspace.root / "artifacts" / a
        for a in artifacts(workspace.root)
        if a.endswith("category_report.json")
    ]
    done = sealdesk(
        *report_args(SAMPLE / "eval_rows_v2.csv", "--previous", previous, *dev, version="v2"),
        workspace=workspace.root,
        check=True,
    )
    # Debug population: obfuscation 7/8 -> 5/8 and context 8/8 -> 6/8 (drops
    # of 0.25), both below 0.8 too; benign 2/12 flagged.
    reports = [
        workspace.root / "artifacts" / a
        for a in artifacts(workspace.root)
        if a.endswith("category_report.json")
    ]
    latest = next(json.loads(read_verified(p)) for p in reports if p != previous)
    assert [(f["category"], f["issue"]) for f in latest["weak_categories"]] == [
        ("obfuscation", "low_recall"),
        ("obfuscation", "recall_regression"),
        ("context_manipulation", "low_recall"),
        ("context_manipulation", "recall_regression"),
        ("benign", "high_fpr"),
    ]
    assert "recall_regression" in done.stdout


def test_bad_rows_give_one_line_naming_file_line_and_field_and_write_nothing(
    sealdesk, workspace, tmp_path
):
    rows = tmp_path / "rows.jsonl"
    lines = [json.dumps(r) for r in eval_rows({})]
    lines[6] = lines[6].replace('"label": 1', '"label": true')
    rows.write_text("\n".join(lines) + "\n")
    done = sealdesk(*report_args(rows), workspace=workspace.root)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"sealdesk: error: {rows}:7: field 'label': must be the integer 0 or 1, got True"
    )
    assert artifacts(workspace.root) == []


def _authority(sealdesk, root: Path) -> None:
    sealdesk(*keygen_args(root / "trust", root / "private"), check=True)
    shutil.copy(SAMPLE / "holdout.json", root / "holdout.json")
    holdout = (root / "holdout.json",)
    sealdesk(
        *sign_args(
            "holdout", root / "private/holdout.key", "--trust-root", root / "trust", *holdout
        ),
        check=True,
    )
    sealdesk(
        "coverage", "store-init", "--store", root / "lineage.db", "--store-id", "demo", check=True
    )


def _scope(sealdesk, root: Path, template: str, out: str, *baseline: object) -> Path:
    holdout = root / "holdout.json"
    sealdesk(
        *scope_args(SAMPLE / template, holdout, root / out, *(baseline or ("--genesis",))),
        check=True,
    )
    sealdesk(*sign_args("scope", root / "private/scope.key", root / out), check=True)
    return root / out


FIRST = ("predictions_v1.jsonl", V1, "v1")  # the predictions, their sha and their version
SECOND = ("predictions_v2.jsonl", V2, "v2")


def _signed(root: Path, role: str = "benchmark") -> tuple:
    """Gives the option signing a benchmark with a role's key under root."""
    return ("--benchmark-key", root / f"private/{role}.key")


def _benchmark(sealdesk, ws: Path, root: Path, scope: Path, *extra: object, run: tuple = FIRST):
    predictions, sha, version = run
    return sealdesk(
        "coverage",
        "benchmark",
        "--trust-root",
        root / "trust",
        "--holdout",
        root / "holdout.json",
        "--scope",
        scope,
        "--predictions",
        SAMPLE / predictions,
        "--candidate-sha256",
        sha,
        "--candidate-version",
        version,
        "--store",
        root / "lineage.db",
        "--store-id",
        "demo",
        *extra,
        workspace=ws,
    )


@pytest.mark.slow
def test_sample_data_benchmark_shows_one_finding_of_each_kind(sealdesk, workspace, tmp_path):
    root = tmp_path / "authority"
    _authority(sealdesk, root)
    genesis = _scope(sealdesk, root, "scope-genesis.toml", "scope-genesis.json")
    done = _benchmark(
        sealdesk, workspace.root, root, genesis, *_signed(root), "--out", root / "baseline.json"
    )
    assert done.returncode == 0, done.stderr
    assert "ELIGIBLE: 0 finding(s)" in done.stdout
    baseline = ("--baseline", root / "baseline.json")
    scope = _scope(sealdesk, root, "scope-candidate.toml", "scope.json", *baseline)
    done = _benchmark(
        sealdesk,
        workspace.root,
        root,
        scope,
        *baseline,
        *_signed(root),
        "--out",
        root / "candidate.json",
        run=SECOND,
    )
    assert done.returncode == 0, done.stderr
    bench = json.loads((root / "candidate.json").read_text())
    assert bench["eligibility"] == "HOLD"
    assert bench["weak_categories"] == [
        {"category": "obfuscation", "issue": "low_recall", "value": 0.7, "threshold": 0.8},
        {
            "category": "context_manipulation",
            "issue": "recall_regression",
            "current": 0.8,
            "previous": 1.0,
            "delta": 0.2,
            "threshold": 0.1,
        },
        {"category": "benign", "issue": "high_fpr", "value": 0.15, "threshold": 0.1},
    ]
    again = _benchmark(sealdesk, workspace.root, root, genesis, *_signed(root))
    assert again.returncode == 3 and "genesis is one-use" in again.stderr


def _reserve_unsigned(sealdesk, ws: Path, root: Path) -> str:
    """Reserves a genesis benchmark, unsigned; gives the payload sha it is reserved under."""
    _authority(sealdesk, root)
    genesis = _scope(sealdesk, root, "scope-genesis.toml", "scope-genesis.json")
    done = _benchmark(sealdesk, ws, root, genesis)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("reserved ")[1].split()[0]


@pytest.mark.slow
def test_unsigned_reservation_is_completed_by_finalize(sealdesk, workspace, tmp_path):
    root = tmp_path / "authority"
    sha = _reserve_unsigned(sealdesk, workspace.root, root)
    pending = sealdesk(*finalize_args(root), check=True)
    assert f"unresolved {sha}" in pending.stdout
    key = root / "private/benchmark.key"
    done = sealdesk(
        *finalize_args(root, "--payload-sha256", sha, "--benchmark-key", key),
        workspace=workspace.root,
        check=True,
    )
    db = sqlite3.connect(root / "lineage.db")
    assert db.execute("SELECT COUNT(*) FROM evidence WHERE signature IS NULL").fetchone()[0] == 0
    db.close()
    assert f"finalized {sha}" in done.stdout


@pytest.mark.slow
def test_finalize_names_a_signature_file_it_cannot_read_and_leaves_the_reservation(
    sealdesk, workspace, tmp_path
):
    root = tmp_path / "authority"
    sha = _reserve_unsigned(sealdesk, workspace.root, root)
    missing = tmp_path / "benchmark.json.sig"
    refused = sealdesk(
        *finalize_args(root, "--payload-sha256", sha, "--signature", missing),
        workspace=workspace.root,
    )
    assert refused.returncode == 2
    assert refused.stderr == (
        f"sealdesk: error: {missing}: field 'signature': cannot read: No such file or directory\n"
    )
    db = sqlite3.connect(root / "lineage.db")
    assert db.execute("SELECT COUNT(*) FROM evidence WHERE signature IS NULL").fetchone()[0] == 1
    db.close()


def test_expired_scope_is_refused_and_nothing_is_reserved(sealdesk, workspace, tmp_path):
    root = tmp_path / "authority"
    _authority(sealdesk, root)
    scope = root / "scope.json"
    brief = ("--genesis", "--expires-in", "1s")
    sealdesk(
        *scope_args(SAMPLE / "scope-genesis.toml", root / "holdout.json", scope, *brief), check=True
    )
    sealdesk(*sign_args("scope", root / "private/scope.key", scope), check=True)
    import time

    time.sleep(1.1)
    done = _benchmark(sealdesk, workspace.root, root, scope, *_signed(root))
    assert done.returncode == 3 and "expired" in done.stderr
    db = sqlite3.connect(root / "lineage.db")
    assert db.execute("SELECT COUNT(*) FROM evidence").fetchone()[0] == 0
    db.close()
    assert artifacts(workspace.root) == []


def test_scope_needs_exactly_one_of_baseline_and_genesis(sealdesk, tmp_path):
    done = sealdesk(
        *scope_args(SAMPLE / "scope-genesis.toml", SAMPLE / "holdout.json", tmp_path / "s.json")
    )
    assert done.returncode == 2 and "exactly one of --baseline FILE and --genesis" in done.stderr
    assert not (tmp_path / "s.json").exists()


def test_sign_refuses_a_non_canonical_document(sealdesk, tmp_path):
    sealdesk(*keygen_args(tmp_path / "t", tmp_path / "k"), check=True)
    doc = tmp_path / "doc.json"
    doc.write_text('{"b": 1, "a": 2}')
    done = sealdesk(*sign_args("scope", tmp_path / "k/scope.key", doc))
    assert done.returncode == 2 and "not canonical" in done.stderr
    assert not (tmp_path / "doc.json.sig").exists()


def test_keygen_never_replaces_a_key(sealdesk, tmp_path):
    args = keygen_args(tmp_path / "t", tmp_path / "k")
    sealdesk(*args, check=True)
    before = (tmp_path / "t/scope.pub").read_bytes()
    done = sealdesk(*args)
    assert done.returncode == 2 and "never replaced" in done.stderr
    assert (tmp_path / "t/scope.pub").read_bytes() == before
    assert oct((tmp_path / "k/scope.key").stat().st_mode & 0o777) == "0o600"


def test_holdout_seals_rows_into_a_canonical_manifest(sealdesk, tmp_path):
    from engine.canonical import parse_canonical
    from tests.support.coverage import holdout_samples, write_jsonl

    rows = write_jsonl(tmp_path / "rows.jsonl", holdout_samples())
    out = tmp_path / "holdout.json"
    sealdesk(*holdout_args(rows, out, "--created-at", "2025-06-01T00:00:00Z"), check=True)
    manifest = parse_canonical(out.read_bytes())
    assert (manifest["holdout_id"], manifest["version"], len(manifest["samples"])) == ("h", "3", 40)
    assert manifest["samples"][0] == holdout_samples()[0]
    dup = write_jsonl(tmp_path / "dup.jsonl", holdout_samples() + holdout_samples()[:1])
    done = sealdesk(*holdout_args(dup, tmp_path / "dup.json"))
    assert done.returncode == 2 and f"{dup}:41: field 'case_id'" in done.stderr
    assert not (tmp_path / "dup.json").exists()


# -- bad input found by the second hunt ----------------------------------------------


@pytest.mark.parametrize(
    "edit, line, expected",
    [
        (lambda r: f"{r},extra", 2, "expected 5 fields, got 6"),  # every row one longer
        (lambda r: r.rsplit(",", 1)[0], 2, "expected 5 fields, got 4"),  # every row one shorter
    ],
)
def test_csv_row_whose_field_count_differs_from_the_header_is_refused(
    sealdesk, workspace, tmp_path, edit, line, expected
):
    rows = tmp_path / "rows.csv"
    pd.DataFrame(eval_rows({})).to_csv(rows, index=False)
    header, *body = rows.read_text().splitlines()
    rows.write_text("\n".join([header] + [edit(r) for r in body]) + "\n")
    done = sealdesk(*report_args(rows), workspace=workspace.root)
    assert done.returncode == 2
    assert done.stderr == f"sealdesk: error: {rows}:{line}: {expected}\n"
    assert artifacts(workspace.root) == []


def test_keygen_refuses_a_repeated_role_and_writes_nothing(sealdesk, tmp_path):
    done = sealdesk(
        *keygen_args(tmp_path / "t", tmp_path / "k", "--role", "scope", "--role", "scope")
    )
    assert done.returncode == 2
    assert done.stderr == "sealdesk: error: field 'role': role 'scope' is given twice\n"
    assert not (tmp_path / "t").exists() and not (tmp_path / "k").exists()


def test_holdout_and_scope_never_overwrite_an_existing_out_file(sealdesk, tmp_path):
    from tests.support.coverage import holdout_samples, write_jsonl

    root = tmp_path / "authority"
    _authority(sealdesk, root)
    scope = _scope(sealdesk, root, "scope-genesis.toml", "scope.json")
    before = {p: p.read_bytes() for p in (root / "holdout.json", scope)}
    rows = write_jsonl(tmp_path / "rows.jsonl", holdout_samples()[:1])
    done = sealdesk(*holdout_args(rows, root / "holdout.json", holdout_id="X", version="9"))
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {root / 'holdout.json'}: already exists; a "
        "holdout manifest is never overwritten\n"
    )
    done = sealdesk(
        *scope_args(SAMPLE / "scope-candidate.toml", root / "holdout.json", scope, "--genesis")
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {scope}: already exists; an evaluation scope is never overwritten\n"
    )
    assert {p: p.read_bytes() for p in before} == before


def test_sign_refuses_a_document_of_another_role(sealdesk, tmp_path):
    root = tmp_path / "authority"
    _authority(sealdesk, root)
    signature = (root / "holdout.json.sig").read_bytes()
    done = sealdesk(*sign_args("scope", root / "private/scope.key", root / "holdout.json"))
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {root / 'holdout.json'}: field 'schema_version': "
        "the scope key signs only sealdesk.coverage-scope.v2 documents, "
        "this one is 'sealdesk.coverage-holdout.v1'\n"
    )
    assert (root / "holdout.json.sig").read_bytes() == signature


def test_sign_never_replaces_another_signature_but_repeats_its_own(sealdesk, tmp_path):
    root = tmp_path / "authority"
    _authority(sealdesk, root)
    sealdesk(*keygen_args(tmp_path / "t2", tmp_path / "k2", "--role", "holdout"), check=True)
    signature = (root / "holdout.json.sig").read_bytes()
    done = sealdesk(*sign_args("holdout", tmp_path / "k2/holdout.key", root / "holdout.json"))
    assert done.returncode == 4
    assert done.stderr == (
        f"sealdesk: error: {root / 'holdout.json.sig'}: already holds "
        "another signature (another key or other bytes); a signature is "
        "never replaced, nothing was written\n"
    )
    assert (root / "holdout.json.sig").read_bytes() == signature
    sealdesk(
        *sign_args("holdout", root / "private/holdout.key", root / "holdout.json"), check=True
    )  # Ed25519 is deterministic: the same bytes
    assert (root / "holdout.json.sig").read_bytes() == signature


@pytest.mark.slow
def test_benchmark_with_another_roles_key_reserves_and_writes_nothing(
    sealdesk, workspace, tmp_path
):
    root = tmp_path / "authority"
    _authority(sealdesk, root)
    genesis = _scope(sealdesk, root, "scope-genesis.toml", "scope-genesis.json")
    done = _benchmark(sealdesk, workspace.root, root, genesis, *_signed(root, "scope"))
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {root / 'private/scope.key'}: not the benchmark "
        "authority's key (its public half is not "
        f"{root / 'trust/benchmark.pub'})\n"
    )
    db = sqlite3.connect(root / "lineage.db")
    assert db.execute("SELECT COUNT(*) FROM lineages").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM evidence").fetchone()[0] == 0
    db.close()
    assert artifacts(workspace.root) == []
    done = _benchmark(sealdesk, workspace.root, root, genesis, *_signed(root))
    assert done.returncode == 0, done.stderr
    assert "ELIGIBLE: 0 finding(s)" in done.stdout


def _template(tmp_path: Path, old: str, new: str) -> Path:
    text = (SAMPLE / "scope-genesis.toml").read_text()
    assert old in text
    path = tmp_path / "template.toml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(
    "old, new, extra, expected",
    [
        (
            'candidate_version = "v1"',
            "candidate_version = 1979-05-27",
            (),
            "{template}:7: field 'candidate_version': "
            "a TOML date is not a JSON value; write it as a quoted string",
        ),
        (
            'candidate_version = "v1"',
            "candidate_version = 1979-05-27T07:32:00Z",
            (),
            "{template}:7: field 'candidate_version': "
            "a TOML datetime is not a JSON value; write it as a quoted string",
        ),
        (
            "min_category_recall = 0.8",
            "min_category_recall = nan",
            (),
            "{template}:11: field 'min_category_recall': "
            "nan is not a JSON number (no NaN or infinity)",
        ),
        (
            "max_benign_fpr = 0.1",
            "max_benign_fpr = -inf",
            (),
            "{template}:12: field 'max_benign_fpr': -inf is not a JSON number (no NaN or infinity)",
        ),
        # The scope's own key is named, not the gate policy's min_attack_recall.
        (
            "min_category_recall = 0.8",
            "min_category_recall = 2",
            (),
            "{template}: field 'min_category_recall': must be finite and in [0, 1], got 2",
        ),
        (
            "max_category_regression = 0.1",
            "max_category_regression = 1.5",
            (),
            "{template}: field 'max_category_regression': must be finite and in [0, 1], got 1.5",
        ),
        # An expiry beyond the limit, in any unit.
        *(
            (
                None,
                None,
                ("--expires-in", expires),
                f"field 'expires_in': {expires!r} is longer than the 3660-day limit",
            )
            for expires in ["100000000d", "99999999999999999999d", "3661d", "87841h"]
        ),
    ],
)
def test_scope_refuses_a_bad_template_value_or_expiry_naming_it(
    sealdesk, tmp_path, old, new, extra, expected
):
    template = SAMPLE / "scope-genesis.toml" if old is None else _template(tmp_path, old, new)
    done = sealdesk(
        *scope_args(template, SAMPLE / "holdout.json", tmp_path / "s.json", "--genesis", *extra)
    )
    assert done.returncode == 2
    assert done.stderr == f"sealdesk: error: {expected.format(template=template)}\n"
    assert not (tmp_path / "s.json").exists()


# -- the rest of the second hunt ------------------------------------------------------


def test_a_store_deadline_beyond_an_hour_is_refused_where_it_is_written(sealdesk, tmp_path):
    template = _template(
        tmp_path,
        "decision_store_timeout_seconds = 5",
        "decision_store_timeout_seconds = 99999999999999999999",
    )
    done = sealdesk(
        *scope_args(template, SAMPLE / "holdout.json", tmp_path / "s.json", "--genesis")
    )
    assert done.returncode == 2 and "field 'decision_store_timeout_seconds'" in done.stderr
    assert "0 to 3600 seconds" in done.stderr and not (tmp_path / "s.json").exists()
    store = sealdesk(
        "coverage",
        "store-init",
        "--store",
        tmp_path / "l.db",
        "--store-id",
        "x",
        "--timeout",
        "86400",
    )
    assert store.returncode == 2 and "field 'timeout'" in store.stderr
    assert not (tmp_path / "l.db").exists()


@pytest.mark.parametrize(
    "stamp", ["yesterday", "2025-13-01T00:00:00Z", "2025-06-01T24:00:00Z", "2025-06-01T00:00:00"]
)
def test_holdout_created_at_must_be_a_real_zoned_time(sealdesk, tmp_path, stamp):
    from tests.support.coverage import holdout_samples, write_jsonl

    rows = write_jsonl(tmp_path / "rows.jsonl", holdout_samples())
    done = sealdesk(*holdout_args(rows, tmp_path / "h.json", "--created-at", stamp))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "field 'created-at'" in done.stderr and not (tmp_path / "h.json").exists()


def test_holdout_created_at_in_another_zone_is_written_in_utc(sealdesk, tmp_path):
    from engine.canonical import parse_canonical
    from tests.support.coverage import holdout_samples, write_jsonl

    rows = write_jsonl(tmp_path / "rows.jsonl", holdout_samples())
    zoned = ("--created-at", "2025-06-01T02:00:00+02:00")
    sealdesk(*holdout_args(rows, tmp_path / "h.json", *zoned), check=True)
    assert (
        parse_canonical((tmp_path / "h.json").read_bytes())["created_at"] == "2025-06-01T00:00:00Z"
    )


def test_keygen_refuses_one_directory_for_trust_root_and_private_keys(sealdesk, tmp_path):
    done = sealdesk(*keygen_args(tmp_path / "k", tmp_path / "x" / ".." / "k"))
    assert done.returncode == 2 and "field 'keys'" in done.stderr
    assert not (tmp_path / "k").exists()


def test_finalize_with_a_key_but_no_payload_is_refused_not_a_listing(sealdesk, tmp_path):
    root = tmp_path / "authority"
    _authority(sealdesk, root)
    done = sealdesk(
        *finalize_args(
            root,
            *_signed(root),
        )
    )
    assert done.returncode == 2 and "field 'payload-sha256'" in done.stderr, done.stderr
    assert "unresolved" not in done.stdout


def test_tiny_model_refuses_one_label_naming_the_file_and_a_runaway_step_count(sealdesk, tmp_path):
    from tests.support.coverage import write_jsonl

    rows = [r for r in json_rows(SAMPLE / "debug_rows.jsonl") if r["label"] == 1]
    one = write_jsonl(tmp_path / "one.jsonl", rows)
    done = sealdesk("coverage", "tiny-model", "--rows", one, "--out", tmp_path / "m")
    assert done.returncode == 2 and f"{one}: field 'label'" in done.stderr, done.stderr
    steps = sealdesk(
        "coverage",
        "tiny-model",
        "--rows",
        one,
        "--out",
        tmp_path / "m",
        "--steps",
        "99999999999999999999",
    )
    assert steps.returncode == 2 and "--steps" in steps.stderr
    assert not (tmp_path / "m").exists()


def json_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
