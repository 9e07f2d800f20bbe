"""The sealed holdout stays sealed: `coverage backlog` refuses debug rows that are its cases.

A row is a sealed case when its case id is one the benchmark measured, or when
its text, up to case, Unicode width, invisible characters and spacing, is a
sealed text (the benchmark lists their canonical text hashes, never the texts).
Such rows would put holdout texts in front of reviewers and into attribution.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path

from tests.support.coverage import SAMPLE, backlog_args, sample_benchmark

HOLDOUT = json.loads((SAMPLE / "holdout.json").read_text())
DEBUG = [json.loads(line) for line in (SAMPLE / "debug_rows.jsonl").read_text().splitlines()]
V2 = DEBUG[0]["detector_sha256"]


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def with_text(row: dict, text: str) -> dict:
    return dict(row, text=text, text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


def sealed(case_id: str) -> dict:
    return next(s for s in HOLDOUT["samples"] if s["case_id"] == case_id)


def backlog(sealdesk, ws, tmp_path: Path, rows: Path):
    auth, path, _ = sample_benchmark(tmp_path / "authority")
    return sealdesk(*backlog_args(path, auth.trust.directory, rows), workspace=ws.root)


def nothing_written(ws) -> bool:
    return ws.items() == [] and not any((ws.root / "artifacts").rglob("*"))


def test_a_row_with_a_sealed_case_id_is_refused_naming_the_row(sealdesk, workspace, tmp_path):
    rows = [dict(r) for r in DEBUG]
    rows[4]["case_id"] = "h-obfu-03"  # its own text; only the id is the holdout's
    path = write_rows(tmp_path / "rows.jsonl", rows)
    done = backlog(sealdesk, workspace, tmp_path, path)
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {path}:5: field 'case_id': case 'h-obfu-03' is a "
        "case of sealed holdout pi-holdout; sealed cases stay out of "
        "attribution and review\n"
    )
    assert nothing_written(workspace)


def test_a_row_carrying_a_sealed_text_under_another_id_is_refused(sealdesk, workspace, tmp_path):
    rows = [dict(r) for r in DEBUG]
    rows[9] = with_text(rows[9], sealed("h-obfu-02")["text"])
    path = write_rows(tmp_path / "rows.jsonl", rows)
    done = backlog(sealdesk, workspace, tmp_path, path)
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {path}:10: field 'text': text of case "
        f"{rows[9]['case_id']!r} is the text of a case of sealed holdout "
        "pi-holdout; sealed cases stay out of attribution and review\n"
    )
    assert nothing_written(workspace)


def test_a_sealed_text_recased_widened_and_respaced_is_still_refused(sealdesk, workspace, tmp_path):
    from engine.coverage.holdout import canonical_text

    # h-obfu-07 hides zero-width spaces in "Ign\u200bore the pol\u200bicy": drop them,
    # shout it, write its letters full-width and double its spaces.
    original = sealed("h-obfu-07")["text"]
    disguised = "  ".join(original.replace("\u200b", "").upper().split())
    disguised = "".join(chr(ord(c) + 0xFEE0) if "A" <= c <= "Z" else c for c in disguised)
    assert disguised != original and unicodedata.normalize("NFKC", disguised) != original
    assert canonical_text(disguised) == canonical_text(original)
    rows = [dict(r) for r in DEBUG]
    rows[0] = with_text(rows[0], disguised)
    path = write_rows(tmp_path / "rows.jsonl", rows)
    done = backlog(sealdesk, workspace, tmp_path, path)
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"sealdesk: error: {path}:1: field 'text': text of case "
        "'d-inst-01' is the text of a case of sealed holdout"
    )
    assert nothing_written(workspace)


def test_debug_rows_built_from_the_holdout_itself_are_refused_and_none_reaches_a_reviewer(
    sealdesk, workspace, tmp_path
):
    # The holdout's own misses, with the candidate's answers, dressed as debug rows.
    answers = {
        json.loads(line)["case_id"]: json.loads(line)["label"]
        for line in (SAMPLE / "predictions_v2.jsonl").read_text().splitlines()
    }
    rows = []
    for s in HOLDOUT["samples"]:
        pred = 1 if answers[s["case_id"]] == "malicious" else 0
        rows.append(
            dict(
                with_text({}, s["text"]),
                case_id=s["case_id"],
                label=s["label_int"],
                pred=pred,
                category=s["category"],
                detector_sha256=V2,
            )
        )
    path = write_rows(tmp_path / "rows.jsonl", rows)
    done = backlog(sealdesk, workspace, tmp_path, path)
    assert done.returncode == 2
    assert done.stderr == (
        f"sealdesk: error: {path}:1: field 'case_id': case 'h-inst-01' is a "
        "case of sealed holdout pi-holdout; sealed cases stay out of "
        f"attribution and review ({len(rows) - 1} more such row(s))\n"
    )
    assert nothing_written(workspace)


def test_the_benchmark_lists_sealed_text_hashes_and_never_the_texts(tmp_path):
    from engine.coverage.holdout import canonical_text

    _, path, _ = sample_benchmark(tmp_path / "authority")
    raw = path.read_bytes()
    listed = json.loads(raw)["holdout_text_sha256"]
    expected = sorted(
        {
            hashlib.sha256(canonical_text(s["text"]).encode("utf-8")).hexdigest()
            for s in HOLDOUT["samples"]
        }
    )
    assert listed == expected and len(listed) == len(HOLDOUT["samples"])
    for s in HOLDOUT["samples"]:
        assert json.dumps(s["text"], ensure_ascii=False)[1:-1].encode("utf-8") not in raw


def test_the_demo_debug_rows_share_nothing_with_the_holdout(sealdesk, workspace, tmp_path):
    from engine.coverage.holdout import canonical_text

    done = backlog(sealdesk, workspace, tmp_path, SAMPLE / "debug_rows.jsonl")
    assert done.returncode == 0, done.stderr
    shown = [
        workspace.item("weak_categories", i["item_id"])["payload"]
        for i in workspace.items(queue="weak_categories")
    ]
    texts = {canonical_text(m["text"]) for p in shown for m in p["misses"]}
    assert texts and not texts & {canonical_text(s["text"]) for s in HOLDOUT["samples"]}
