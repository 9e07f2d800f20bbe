"""Threat mappings of the attack taxonomy: checked in form, carried to every reader.

Each attack category may map to MITRE ATLAS technique ids and OWASP LLM Top 10
risk ids. A malformed id is refused with the file, line and field; a good
mapping travels from the policy or signed scope into the report, the signed
benchmark, every backlog item, the evidence, the weak-category pane and the
sign-off summary.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from engine.artifacts import read_verified
from engine.canonical import canonical_json
from engine.coverage.evidence import make_evidence
from engine.coverage.findings import load_benchmark
from engine.coverage.run_backlog import run_backlog
from engine.errors import InputError
from engine.signoff.run_status import run_status
from reviewer.app import ReviewApp
from reviewer.session import open_session
from reviewer.signoff_screen import SignoffScreen
from tests.support.coverage import SAMPLE, eval_rows, report_args, sample_benchmark, write_jsonl
from tests.support.review_app import settle, text_of

# What sample_data's taxonomy maps each attack category to (the scopes and the policy
# carry the same table).
SAMPLE_MAPPINGS = tomllib.loads((SAMPLE / "scope-candidate.toml").read_text())["threat_mappings"]

GATE = (
    'required_categories = ["direct", "obfuscated", "benign"]\n'
    'benign_category = "benign"\nmin_attack_recall = 0.8\n'
    "max_benign_fpr = 0.1\nmax_recall_regression = 0.1\n"
)
GOOD = (
    "\n[threat_mappings.direct]\n"
    'mitre_atlas = ["AML.T0051.000", "AML.T0054"]\n'
    'owasp_llm_top10 = ["LLM01:2026"]\n'
    "\n[threat_mappings.obfuscated]\n"
    'mitre_atlas = ["AML.T0068"]\n'
    'owasp_llm_top10 = ["LLM01:2026"]\n'
)


def line_with(text: str, needle: str, after: str = "") -> int:
    """Gives the 1-based number of the first line holding needle after the line holding
    ``after`` (the file is the test's own: the line the error must name)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i in range(start, len(lines)) if needle in lines[i]) + 1


def artifacts(ws: Path) -> list[Path]:
    return sorted(p for p in (ws / "artifacts").rglob("*") if p.is_file())


def report(sealdesk, ws, policy: Path, tmp_path: Path):
    rows = write_jsonl(tmp_path / "rows.jsonl", eval_rows({"obfuscated": 3}))
    return sealdesk(
        *report_args(rows, "--evaluation-set-id", "dev", policy=policy, version="v2"),
        workspace=ws.root,
    )


# -- form ------------------------------------------------------------------------------

BAD = [
    # (what to replace in GOOD, with what, the field named, the reason, the text on the
    # line the error must name)
    (
        '"AML.T0068"',
        '"AML.T68"',
        "obfuscated.mitre_atlas[0]",
        "'AML.T68' is not an ATLAS technique id (AML.Tnnnn or AML.Tnnnn.nnn)",
        '"AML.T68"',
    ),
    (
        '"AML.T0054"',
        '"AML.TA0005"',
        "direct.mitre_atlas[1]",
        "'AML.TA0005' is an ATLAS tactic; map techniques (AML.Tnnnn or AML.Tnnnn.nnn)",
        '"AML.TA0005"',
    ),
    (
        '"AML.T0051.000"',
        '"AML.T0051.00"',
        "direct.mitre_atlas[0]",
        "'AML.T0051.00' is not an ATLAS technique id (AML.Tnnnn or AML.Tnnnn.nnn)",
        '"AML.T0051.00"',
    ),
    (
        '"AML.T0068"',
        '"aml.t0068"',
        "obfuscated.mitre_atlas[0]",
        "'aml.t0068' is not an ATLAS technique id (AML.Tnnnn or AML.Tnnnn.nnn)",
        '"aml.t0068"',
    ),
    (
        '"LLM01:2026"',
        '"LLM11:2026"',
        "direct.owasp_llm_top10[0]",
        "'LLM11:2026' is not an OWASP LLM Top 10 id (LLM01:YYYY to LLM10:YYYY)",
        '"LLM11:2026"',
    ),
    (
        '"LLM01:2026"',
        '"LLM01"',
        "direct.owasp_llm_top10[0]",
        (
            "'LLM01' names no edition; risk numbers differ between editions, write it as "
            "LLM01:YYYY (e.g. LLM01:2026)"
        ),
        '"LLM01"',
    ),
    (
        '"LLM01:2026"',
        '"LLM01:2019"',
        "direct.owasp_llm_top10[0]",
        "'LLM01:2019' names edition 2019; the first edition is 2023",
        '"LLM01:2019"',
    ),
    (
        '["AML.T0068"]',
        '["AML.T0068", "AML.T0068"]',
        "obfuscated.mitre_atlas[1]",
        "'AML.T0068' is listed twice",
        '"AML.T0068", "AML.T0068"',
    ),
    (
        '["AML.T0068"]',
        '"AML.T0068"',
        "obfuscated.mitre_atlas",
        "must be a list of ids (it may be empty)",
        'mitre_atlas = "AML.T0068"',
    ),
    (
        'owasp_llm_top10 = ["LLM01:2026"]',
        'owasp_llm = ["LLM01:2026"]',
        "direct.owasp_llm",
        "unknown field (a mapping holds exactly mitre_atlas and owasp_llm_top10)",
        "owasp_llm = ",
    ),
]


@pytest.mark.parametrize("old, new, field, reason, where", BAD, ids=[f"{b[2]}={b[1]}" for b in BAD])
def test_a_malformed_threat_id_is_refused_naming_file_line_and_field(
    sealdesk, workspace, tmp_path, old, new, field, reason, where
):
    category = field.split(".")[0]
    header = f"[threat_mappings.{category}]"
    # Only the category's own table is changed (the first match after its header).
    before, table = GOOD.split(header)
    assert old in table
    text = GATE + before + header + table.replace(old, new, 1)
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    done = report(sealdesk, workspace, policy, tmp_path)
    assert done.returncode == 2
    line = line_with(text, where, after=header)
    assert done.stderr == (
        f"sealdesk: error: {policy}:{line}: field 'threat_mappings.{field}': {reason}\n"
    )
    assert artifacts(workspace.root) == []


@pytest.mark.parametrize(
    "extra, field, reason",
    [
        (
            '\n[threat_mappings.benign]\nmitre_atlas = ["AML.T0051"]\nowasp_llm_top10 = []\n',
            "benign",
            "'benign' is the benign category; only attack categories map to threats",
        ),
        (
            '\n[threat_mappings.jailbreak]\nmitre_atlas = ["AML.T0054"]\nowasp_llm_top10 = []\n',
            "jailbreak",
            "'jailbreak' is not an attack category of the taxonomy",
        ),
    ],
)
def test_a_mapping_of_a_category_that_is_not_an_attack_is_refused(
    sealdesk, workspace, tmp_path, extra, field, reason
):
    text = GATE + GOOD + extra
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    done = report(sealdesk, workspace, policy, tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {policy}:{line_with(text, f'.{field}]')}: "
        f"field 'threat_mappings.{field}': {reason}\n"
    )
    assert artifacts(workspace.root) == []


def test_a_mapping_that_leaves_an_attack_category_out_is_refused(sealdesk, workspace, tmp_path):
    text = GATE + GOOD.split("\n[threat_mappings.obfuscated]")[0]
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    done = report(sealdesk, workspace, policy, tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {policy}:{line_with(text, '[threat_mappings.direct]')}: field "
        "'threat_mappings.obfuscated': attack category 'obfuscated' has no mapping; once "
        "given, the mappings cover every attack category\n"
    )


def test_a_mapping_to_nothing_is_refused(sealdesk, workspace, tmp_path):
    # direct keeps its ids; obfuscated is left with two empty lists.
    text = GATE + GOOD.replace('mitre_atlas = ["AML.T0068"]', "mitre_atlas = []").replace(
        'owasp_llm_top10 = ["LLM01:2026"]\n', "owasp_llm_top10 = []\n"
    )
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    done = report(sealdesk, workspace, policy, tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {policy}:{line_with(text, '[threat_mappings.obfuscated]')}: field "
        "'threat_mappings.obfuscated': maps to nothing: give at least one ATLAS or OWASP id\n"
    )


def test_a_json_policy_names_the_line_of_the_bad_id(sealdesk, workspace, tmp_path):
    value = tomllib.loads(GATE + GOOD)
    value["threat_mappings"]["obfuscated"]["owasp_llm_top10"] = ["LLM1:2026"]
    text = json.dumps(value, indent=1)
    policy = tmp_path / "policy.json"
    policy.write_text(text)
    done = report(sealdesk, workspace, policy, tmp_path)
    assert done.returncode == 2
    line = line_with(text, '"LLM1:2026"')
    assert done.stderr == (
        f"sealdesk: error: {policy}:{line}: field "
        "'threat_mappings.obfuscated.owasp_llm_top10[0]': 'LLM1:2026' is not an OWASP LLM "
        "Top 10 id (LLM01:YYYY to LLM10:YYYY)\n"
    )


def test_a_scope_template_with_a_bad_id_is_refused_and_no_scope_is_written(sealdesk, tmp_path):
    text = (
        (SAMPLE / "scope-genesis.toml")
        .read_text()
        .replace('mitre_atlas = ["AML.T0051.001"]', 'mitre_atlas = ["AML.T0051.1"]')
    )
    template = tmp_path / "scope.toml"
    template.write_text(text)
    holdout = tmp_path / "holdout.json"
    holdout.write_bytes((SAMPLE / "holdout.json").read_bytes())
    out = tmp_path / "scope.json"
    done = sealdesk(
        "coverage", "scope", "--template", template, "--holdout", holdout, "--genesis", "--out", out
    )
    assert done.returncode == 2
    line = line_with(text, '"AML.T0051.1"')
    assert done.stderr == (
        f"sealdesk: error: {template}:{line}: field "
        "'threat_mappings.indirect_injection.mitre_atlas[0]': 'AML.T0051.1' is not an ATLAS "
        "technique id (AML.Tnnnn or AML.Tnnnn.nnn)\n"
    )
    assert not out.exists()


def test_a_signed_benchmark_carrying_a_malformed_id_is_refused(tmp_path):
    auth, path, sig = sample_benchmark(tmp_path / "authority")
    value = json.loads(path.read_bytes())
    value["threat_mappings"]["obfuscation"]["owasp_llm_top10"] = ["LLM01"]
    raw = canonical_json(value)
    path.write_bytes(raw)
    sig.write_bytes(auth.sign("benchmark", raw))  # the authority itself signed it
    with pytest.raises(InputError) as refused:
        load_benchmark(path, sig, auth.trust)
    assert refused.value.field == "threat_mappings.obfuscation.owasp_llm_top10[0]"
    assert refused.value.path == str(path)


# -- carried through -------------------------------------------------------------------


def test_the_report_carries_the_policy_mappings_and_prints_them(sealdesk, workspace):
    done = sealdesk(
        "coverage",
        "report",
        "--rows",
        SAMPLE / "eval_rows_v2.csv",
        "--policy",
        SAMPLE / "policy.toml",
        "--detector-version",
        "v2",
        "--evaluation-set-id",
        "dev",
        workspace=workspace.root,
    )
    assert done.returncode == 0, done.stderr
    [path] = [p for p in artifacts(workspace.root) if p.name == "category_report.json"]
    document = json.loads(read_verified(path))
    assert document["policy"]["threat_mappings"] == SAMPLE_MAPPINGS
    obfuscation = next(
        line for line in done.stdout.splitlines() if line.lstrip().startswith("obfuscation")
    )
    assert "AML.T0051.000 AML.T0068 AML.T0015 LLM01:2026" in obfuscation


def test_backlog_items_of_a_report_carry_their_category_mapping(sealdesk, workspace):
    v2 = json.loads((SAMPLE / "debug_rows.jsonl").read_text().splitlines()[0])["detector_sha256"]
    sealdesk(
        "coverage",
        "report",
        "--rows",
        SAMPLE / "eval_rows_v2.csv",
        "--policy",
        SAMPLE / "policy.toml",
        "--detector-version",
        "v2",
        "--detector-sha256",
        v2,
        "--evaluation-set-id",
        "dev",
        workspace=workspace.root,
        check=True,
    )
    [path] = [p for p in artifacts(workspace.root) if p.name == "category_report.json"]
    done = sealdesk(
        "coverage",
        "backlog",
        "--report",
        path,
        "--rows",
        SAMPLE / "debug_rows.jsonl",
        "--policy",
        SAMPLE / "attribution.toml",
        workspace=workspace.root,
    )
    assert done.returncode == 0, done.stderr
    threats = {
        workspace.item("weak_categories", i["item_id"])["payload"]["category"]: workspace.item(
            "weak_categories", i["item_id"]
        )["payload"]["threats"]
        for i in workspace.items(queue="weak_categories")
    }
    assert threats == {
        "obfuscation": SAMPLE_MAPPINGS["obfuscation"],
        "context_manipulation": SAMPLE_MAPPINGS["context_manipulation"],
        "benign": None,
    }


@pytest.fixture
def reviewed(tmp_path, workspace, enrol):
    """The demo's HOLD benchmark, its backlog reviewed by rita and approved by lena."""
    auth, path, sig = sample_benchmark(tmp_path / "authority")
    rita, lena = enrol("rita", "reviewer"), enrol("lena", "lead", "reviewer")
    source = load_benchmark(path, sig, auth.trust)[0]
    run_backlog(workspace, source, SAMPLE / "debug_rows.jsonl", SAMPLE / "attribution.toml", None)
    for listed in workspace.items(queue="weak_categories"):
        workspace.decide(rita, "weak_categories", listed["item_id"], "accept")
    made = make_evidence(workspace, path, sig, auth.trust, lena)
    return workspace, path, made, lena


def test_benchmark_items_and_evidence_carry_the_signed_mappings(reviewed):
    ws, benchmark, made, _ = reviewed
    assert json.loads(benchmark.read_bytes())["threat_mappings"] == SAMPLE_MAPPINGS
    payloads = {
        ws.item("weak_categories", i["item_id"])["payload"].get("category"): ws.item(
            "weak_categories", i["item_id"]
        )["payload"]
        for i in ws.items(queue="weak_categories")
        if i["item_id"].startswith("wc-")
    }
    assert payloads["obfuscation"]["threats"] == {
        "mitre_atlas": ["AML.T0051.000", "AML.T0068", "AML.T0015"],
        "owasp_llm_top10": ["LLM01:2026"],
    }
    assert payloads["context_manipulation"]["threats"] == SAMPLE_MAPPINGS["context_manipulation"]
    assert payloads["benign"]["threats"] is None
    evidence = json.loads(read_verified(made.path))
    assert evidence["claim"]["threat_mappings"] == SAMPLE_MAPPINGS
    assert evidence["benchmark"]["threat_mappings"] == SAMPLE_MAPPINGS


def test_the_signoff_summary_lists_each_categorys_threat_ids(reviewed, sealdesk):
    ws = reviewed[0]
    categories = {c.category: c for c in run_status(ws.artifacts_dir).coverage.categories}
    assert categories["obfuscation"].threats == (
        "AML.T0051.000",
        "AML.T0068",
        "AML.T0015",
        "LLM01:2026",
    )
    assert categories["benign"].threats == ()
    done = sealdesk("signoff", "--summary-only", workspace=ws.root)
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert "obfuscation HOLD (low_recall) [AML.T0051.000 AML.T0068 AML.T0015 LLM01:2026]" in lines
    assert "indirect_injection ELIGIBLE [AML.T0051.001 LLM01:2026]" in lines


async def _to_item(app, pilot, item_id: str) -> str:
    """Moves the cursor down the queue by key presses until it is on item_id; gives the
    detail pane's text."""
    for _ in range(10):
        if app.review.queue_list.current.item_id == item_id:
            return text_of(app.review.query_one("#detail"))
        await pilot.press("j")
    raise AssertionError(f"{item_id} is not in the queue")


@pytest.mark.anyio
async def test_the_weak_category_pane_and_the_signoff_screen_show_the_threat_ids(reviewed):
    ws, _, _, lena = reviewed
    obfuscation = next(
        i["item_id"]
        for i in ws.items(queue="weak_categories")
        if ws.item("weak_categories", i["item_id"])["payload"].get("category") == "obfuscation"
    )
    app = ReviewApp(ws, open_session(ws, key=str(lena.path)))
    async with app.run_test(size=(240, 60)) as pilot:
        await pilot.press("3", "o", "o", "g")  # weak categories, in id order, from the top
        text = " ".join((await _to_item(app, pilot, obfuscation)).split())
        assert "threat mappings MITRE ATLAS: AML.T0051.000, AML.T0068, AML.T0015" in text
        assert "OWASP LLM Top 10: LLM01:2026" in text
        await pilot.press("S")
        await settle(
            pilot, lambda: isinstance(app.screen, SignoffScreen) and app.screen.summary is not None
        )
        body = [
            " ".join(line.split())
            for line in text_of(app.screen.query_one("#signoff-body")).splitlines()
        ]
    # The status column is half the screen: the last id may wrap onto the next line.
    row = next(i for i, line in enumerate(body) if line.startswith("obfuscation HOLD"))
    assert " ".join(body[row : row + 2]).startswith(
        "obfuscation HOLD low_recall AML.T0051.000 AML.T0068 AML.T0015"
    ), body[row]
    assert "LLM01:2026" in " ".join(body[row : row + 2])
