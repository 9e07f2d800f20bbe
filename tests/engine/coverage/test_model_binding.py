"""Attribution explains the measured detector, and evidence says when it did not.

The model `coverage backlog --model` attributes with is known by its directory
digest; it must be the detector the benchmark measured. Another model is
refused unless a reason is given, and then every item records the reason.
Without a model the misses are reviewed unexplained: the lead's screen and
the evidence document say so.

A tiny classifier is trained here once (the ``attribution`` extra); it is the
measured detector only of the benchmark built for it below.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("captum")

from engine.artifacts import read_verified  # noqa: E402
from engine.canonical import canonical_json, sha256_hex  # noqa: E402
from engine.coverage.attribution import directory_digest  # noqa: E402
from engine.coverage.evidence import check_evidence, make_evidence  # noqa: E402
from engine.coverage.tiny_detector import train_tiny_detector  # noqa: E402
from engine.errors import IntegrityError, PermissionRefused  # noqa: E402
from engine.run_records import write_run  # noqa: E402
from reviewer.app import ReviewApp  # noqa: E402
from reviewer.session import open_session  # noqa: E402
from tests.support.coverage import SAMPLE, Authority, backlog_args, sample_benchmark  # noqa: E402
from tests.support.review_app import records, settle, text_of  # noqa: E402

pytestmark = pytest.mark.slow
DEBUG = [json.loads(line) for line in (SAMPLE / "debug_rows.jsonl").read_text().splitlines()]
V2 = DEBUG[0]["detector_sha256"]  # the stand-in digest the demo benchmark measured
REASON = "tiny model trained on the debug rows, standing in for the recorded detector"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, str]:
    """Gives (model directory, its digest) of a tiny classifier trained on the debug rows."""
    out = tmp_path_factory.mktemp("tiny") / "model"
    train_tiny_detector([r["text"] for r in DEBUG], [r["label"] for r in DEBUG], out)
    return out, directory_digest(out)


def benchmark_measuring(root: Path, digest: str) -> tuple[Authority, Path]:
    """Gives a signed genesis benchmark of the demo holdout whose measured detector is
    ``digest`` (the demo's v2 answers, given as that detector's)."""
    from engine.coverage.benchmark import (
        derive_benchmark,
        evaluation_context,
        predictions_from_results,
    )
    from engine.coverage.holdout import load_holdout
    from engine.coverage.policy import read_document
    from engine.coverage.scope import build_scope
    from engine.coverage.tables import DETECTOR_RESULT_COLUMNS, read_table

    auth = Authority(root)
    manifest, manifest_sig = auth.holdout(
        json.loads((SAMPLE / "holdout.json").read_text())["samples"]
    )
    value, _ = read_document(SAMPLE / "scope-genesis.toml")
    value.update(candidate_sha256=digest, candidate_version="tiny")
    scope_raw = build_scope(
        value,
        holdout_manifest_sha256=sha256_hex(manifest.read_bytes()),
        baseline_report_sha256=None,
        expires_at=datetime.now(UTC) + timedelta(days=1),
        path="scope",
    )
    sealed = load_holdout(manifest, manifest_sig, sha256_hex(manifest.read_bytes()), auth.trust)
    context = evaluation_context(
        sealed, digest, "tiny", scope_raw, auth.sign("scope", scope_raw), auth.trust
    )
    answers = root / "answers.jsonl"
    answers.write_text((SAMPLE / "predictions_v2.jsonl").read_text().replace(V2, digest))
    rows = predictions_from_results(read_table(answers, DETECTOR_RESULT_COLUMNS), sealed, digest)
    raw = canonical_json(derive_benchmark(rows, sealed, digest, "tiny", scope_raw, context))
    path = root / "benchmark.json"
    path.write_bytes(raw)
    (root / "benchmark.json.sig").write_bytes(auth.sign("benchmark", raw))
    return auth, path


def backlog(sealdesk, ws, auth, benchmark: Path, rows: Path, *extra):
    return sealdesk(*backlog_args(benchmark, auth.trust.directory, rows, *extra), workspace=ws.root)


def payloads(ws) -> dict[str, dict]:
    return {
        ws.item("weak_categories", i["item_id"])["payload"]["category"]: ws.item(
            "weak_categories", i["item_id"]
        )["payload"]
        for i in ws.items(queue="weak_categories")
        if i["item_id"].startswith("wc-")
    }


def nothing_written(ws) -> bool:
    return ws.items() == [] and not any((ws.root / "artifacts").rglob("*"))


# -- the binding ------------------------------------------------------------------------


def test_a_model_that_is_not_the_measured_detector_is_refused(sealdesk, workspace, tmp_path, tiny):
    model, digest = tiny
    auth, benchmark, _ = sample_benchmark(tmp_path / "authority")
    done = backlog(
        sealdesk, workspace, auth, benchmark, SAMPLE / "debug_rows.jsonl", "--model", model
    )
    assert done.returncode == 3
    assert done.stderr == (
        f"sealdesk: error: {model}: model digest {digest[:16]}… is not the benchmark's measured "
        f"detector {V2[:16]}…; attributing it would explain misses another model made. "
        "Attribute the measured detector, or give --reason WHY to attribute this model anyway "
        "(recorded in every item)\n"
    )
    assert nothing_written(workspace)


def test_an_override_reason_attributes_anyway_and_every_item_records_it(
    sealdesk, workspace, tmp_path, tiny
):
    model, digest = tiny
    auth, benchmark, _ = sample_benchmark(tmp_path / "authority")
    done = backlog(
        sealdesk,
        workspace,
        auth,
        benchmark,
        SAMPLE / "debug_rows.jsonl",
        "--model",
        model,
        "--reason",
        REASON,
    )
    assert done.returncode == 0, done.stderr
    assert (
        f"attributed with model {digest[:16]}…, which is not the measured detector "
        f"{V2[:16]}…: {REASON}"
    ) in done.stdout
    found = payloads(workspace)
    assert sorted(found) == ["benign", "context_manipulation", "obfuscation"]
    for payload in found.values():
        attribution = payload["attribution"]
        assert (
            attribution["status"],
            attribution["binding"],
            attribution["override_reason"],
            attribution["model_sha256"],
            attribution["detector_sha256"],
        ) == ("explained", "override", REASON, digest, V2)
        assert all(m["attribution"]["status"] == "explained" for m in payload["misses"])


def test_the_measured_detector_is_attributed_without_a_reason(sealdesk, workspace, tmp_path, tiny):
    model, digest = tiny
    printed = sealdesk("coverage", "model-digest", "--model", model)
    assert printed.returncode == 0 and printed.stdout == f"{digest}\n"
    auth, benchmark = benchmark_measuring(tmp_path / "authority", digest)
    rows = tmp_path / "rows.jsonl"
    rows.write_text((SAMPLE / "debug_rows.jsonl").read_text().replace(V2, digest))
    refused = backlog(
        sealdesk, workspace, auth, benchmark, rows, "--model", model, "--reason", REASON
    )
    assert refused.returncode == 2
    assert refused.stderr == (
        f"sealdesk: error: field 'reason': {model} is the measured "
        f"detector {digest[:16]}…: there is no mismatch to give a reason "
        "for\n"
    )
    assert nothing_written(workspace)
    done = backlog(sealdesk, workspace, auth, benchmark, rows, "--model", model)
    assert done.returncode == 0, done.stderr
    found = payloads(workspace)
    assert sorted(found) == ["benign", "obfuscation"]
    for payload in found.values():
        assert (
            payload["attribution"]["binding"],
            payload["attribution"]["override_reason"],
            payload["attribution"]["model_sha256"],
        ) == ("measured_detector", None, digest)


def test_a_reason_without_a_model_is_refused(sealdesk, workspace, tmp_path):
    auth, benchmark, _ = sample_benchmark(tmp_path / "authority")
    done = backlog(
        sealdesk, workspace, auth, benchmark, SAMPLE / "debug_rows.jsonl", "--reason", REASON
    )
    assert done.returncode == 2
    assert done.stderr == (
        "sealdesk: error: field 'reason': a reason is for attributing with "
        "a --model that is not the measured detector; no --model was "
        "given\n"
    )
    assert nothing_written(workspace)


# -- evidence without attribution --------------------------------------------------------


@pytest.fixture
def unexplained(sealdesk, workspace, enrol, tmp_path):
    """The demo HOLD benchmark's backlog made without --model and reviewed by rita."""
    auth, benchmark, _ = sample_benchmark(tmp_path / "authority")
    rita, lena = enrol("rita", "reviewer"), enrol("lena", "lead")
    done = backlog(sealdesk, workspace, auth, benchmark, SAMPLE / "debug_rows.jsonl")
    assert done.returncode == 0, done.stderr
    assert (
        "attribution not run: the selected misses are not explained (no --model was given)"
    ) in done.stdout
    for listed in workspace.items(queue="weak_categories"):
        workspace.decide(rita, "weak_categories", listed["item_id"], "accept")
    return auth, benchmark, lena


NOTICE = (
    "attribution not run for 3 of 3 reviewed categories (benign, context_manipulation, "
    "obfuscation): their misses were reviewed unexplained (no --model was given)"
)


def test_evidence_without_attribution_says_so_in_the_document_and_the_output(
    sealdesk, workspace, unexplained
):
    auth, benchmark, lena = unexplained
    done = sealdesk(
        "coverage",
        "evidence",
        "--benchmark",
        benchmark,
        "--trust-root",
        auth.trust.directory,
        "--key",
        lena.path,
        workspace=workspace.root,
    )
    assert done.returncode == 0, done.stderr
    assert f"note: {NOTICE}" in done.stdout
    [path] = (workspace.root / "artifacts").glob("coverage-evidence-*/coverage_evidence.json")
    value = json.loads(read_verified(path))
    assert value["attribution"]["state"] == "not_run"
    assert {
        (p["category"], p["status"], p["not_run_reason"])
        for p in value["attribution"]["categories"]
    } == {
        (c, "not_run", "no --model was given")
        for c in ("benign", "context_manipulation", "obfuscation")
    }
    assert value["claim"]["attribution"] == value["attribution"]
    assert "attribution:not_run" in value["claim"]["summary"]["tags"]
    checked = sealdesk(
        "coverage",
        "check-evidence",
        path,
        "--trust-root",
        auth.trust.directory,
        workspace=workspace.root,
    )
    assert checked.returncode == 0, checked.stderr


def test_evidence_claiming_explained_misses_that_were_not_fails_its_check(workspace, unexplained):
    # A forger with the workspace records a run of their own holding a rewritten file, so
    # that the sidecar and the ledger's run record agree with it.
    auth, benchmark, lena = unexplained
    made = make_evidence(workspace, benchmark, Path(f"{benchmark}.sig"), auth.trust, lena)
    value = json.loads(made.path.read_bytes())
    value["attribution"] = {
        "state": "explained",
        "categories": [
            dict(p, status="explained", binding="measured_detector", not_run_reason=None)
            for p in value["attribution"]["categories"]
        ],
    }
    forged = write_run(
        workspace,
        "coverage-evidence-forged",
        {"coverage_evidence.json": canonical_json(value)},
        {"kind": "coverage-evidence-file"},
        hint="forged",
    )
    with pytest.raises(
        IntegrityError,
        match="field 'attribution' does not state how the reviewed items' misses were attributed",
    ):
        check_evidence(workspace, forged.directory / "coverage_evidence.json", auth.trust)


async def _to(app, pilot, item_id: str) -> str:
    """Moves down the queue by key presses to item_id; gives the detail pane's text."""
    for _ in range(10):
        if app.review.queue_list.current.item_id == item_id:
            return " ".join(text_of(app.review.query_one("#detail")).split())
        await pilot.press("j")
    raise AssertionError(f"{item_id} is not in the queue")


@pytest.mark.anyio
async def test_the_lead_sees_that_the_misses_are_unexplained_before_approving(
    workspace, unexplained
):
    auth, benchmark, lena = unexplained
    with pytest.raises(PermissionRefused, match="awaits a lead's approval"):
        make_evidence(workspace, benchmark, Path(f"{benchmark}.sig"), auth.trust, None)
    [claim] = [i["item_id"] for i in workspace.items() if i["item_id"].startswith("ev-")]
    obfuscation = next(
        i["item_id"]
        for i in workspace.items(queue="weak_categories")
        if workspace.item("weak_categories", i["item_id"])["payload"].get("category")
        == "obfuscation"
    )
    app = ReviewApp(workspace, open_session(workspace, key=str(lena.path)))
    async with app.run_test(size=(160, 60)) as pilot:
        await pilot.press("3", "o", "o", "g")  # weak categories in id order: the claim first
        text = await _to(app, pilot, claim)
        assert f"attribution NOT EXPLAINED {NOTICE}" in text
        assert "obfuscation low_recall AML.T0051.000, AML.T0068, AML.T0015 LLM01:2026" in text
        await pilot.press("a")  # lena approves, having read it
        await settle(pilot, lambda: any(r[2] == claim for r in records(workspace)))
        text = await _to(app, pilot, obfuscation)
        assert (
            "attribution NOT RUN the 3 selected miss(es) are not explained: nobody knows "
            "yet which tokens the detector missed them on (no --model was given)"
        ) in text
    made = make_evidence(workspace, benchmark, Path(f"{benchmark}.sig"), auth.trust, None)
    assert json.loads(made.path.read_bytes())["attribution"]["state"] == "not_run"
    assert made.attribution_notice == NOTICE


@pytest.mark.anyio
async def test_the_pane_shows_a_model_override_and_its_reason(
    sealdesk, workspace, enrol, tmp_path, tiny
):
    model, digest = tiny
    lena = enrol("lena", "lead", "reviewer")
    auth, benchmark, _ = sample_benchmark(tmp_path / "authority")
    backlog(
        sealdesk,
        workspace,
        auth,
        benchmark,
        SAMPLE / "debug_rows.jsonl",
        "--model",
        model,
        "--reason",
        REASON,
    )
    first = sorted(i["item_id"] for i in workspace.items(queue="weak_categories"))[0]
    app = ReviewApp(workspace, open_session(workspace, key=str(lena.path)))
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.press("3", "o", "o", "g")
        text = await _to(app, pilot, first)
    assert (
        f"attribution OTHER MODEL attributed with model {digest[:16]}…, which is not the "
        f"measured detector {V2[:16]}…; reason given: {REASON}"
    ) in text
