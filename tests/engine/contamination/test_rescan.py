"""A re-scan with a grown pool, through the real CLI: decisions carry over by subject.

Scan, decide (accept some, reject some), scan again with pool documents added:
every eval item's item is new (the pool's provenance is in every payload), yet
an accept carries, a reject carries where the new scan found nothing more, and
a reject whose eval item gained a match is re-opened with that match named.
``contamination clean`` and the sign-off summary count them so; the same scan
of the same inputs again adds nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.cli_workspace import decide_args
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args

SAMPLE = REPO / "sample_data" / "contamination"
QUESTIONS = {
    row["id"]: row["question"]
    for row in map(json.loads, (SAMPLE / "eval.jsonl").read_text().splitlines())
}
ACCEPTED = ("q-clips", "q-babysitting")
# q-wallet gains a verbatim copy in the grown pool; the others gain nothing.
REJECTED = ("q-wallet", "q-reading", "q-grove", "q-parking")
INTERNAL = ("q-oneoff-0", "q-oneoff-0-copy", "q-oneoff-1", "q-oneoff-1-edit")


@pytest.fixture
def site(tmp_path, sealdesk, init_cli, keygen):
    """Gives (run, ws, pool path): a founded workspace with rita enrolled as reviewer, and
    ``run(*args)`` running the real CLI on it (checked)."""
    ws = tmp_path / "ws"
    lead = init_cli(ws)
    rita = keygen("rita")
    pool = tmp_path / "pool.jsonl"
    shutil.copy(SAMPLE / "pool.jsonl", pool)

    def run(*args):
        return sealdesk(*args, workspace=ws, check=True)

    run("keys", "add", "--principal", "rita", "--role", "reviewer", "--key", f"{rita}.pub", *lead)
    return run, ws, pool, rita


def scan(run, pool: Path):
    return run(
        *scan_args(
            SAMPLE / "eval.jsonl", pool, *SAMPLE_FIELDS, "--pool-id-field", "id", "--no-embed"
        ),
    )


def listed(run) -> list[dict]:
    return json.loads(run("items", "--queue", "flagged_pairs", "--json", "--payload").stdout)


def by_eval(rows: list[dict], run_id: str) -> dict[str, dict]:
    return {r["payload"]["eval"]["id"]: r for r in rows if r["run_id"] == run_id}


def grow(pool: Path) -> None:
    with pool.open("a", encoding="utf-8") as handle:
        handle.write(
            json.dumps({"id": "doc-new-wallet", "text": "Forum post: " + QUESTIONS["q-wallet"]})
            + "\n"
        )
        handle.write(json.dumps({"id": "doc-new-clips", "text": QUESTIONS["q-clips"]}) + "\n")


def decide_first_scan(run, rita, first: dict[str, dict]) -> None:
    for eval_id, row in first.items():
        decision = "accept" if eval_id in ACCEPTED else "reject"
        run(*decide_args(rita, row["item_id"], decision=decision))


def rescan(run, pool: Path, rita: Path) -> tuple[dict[str, dict], dict[str, dict], str]:
    """Gives (first scan's items, second scan's items, the second scan's output) by eval
    id, after rita decided every first-scan item and the pool grew."""
    scan(run, pool)
    (first_run,) = {r["run_id"] for r in listed(run)}
    decide_first_scan(run, rita, by_eval(listed(run), first_run))
    first = by_eval(listed(run), first_run)
    grow(pool)
    out = scan(run, pool).stdout
    rows = listed(run)
    (second_run,) = {r["run_id"] for r in rows} - {first_run}
    return first, by_eval(rows, second_run), out


def test_a_rescan_with_a_grown_pool_carries_decisions_and_reopens_on_new_evidence(site):
    run, ws, pool, rita = site
    first, second, out = rescan(run, pool, rita)
    assert sorted(first) == sorted(ACCEPTED + REJECTED + INTERNAL)
    assert "backlog: 10 new item(s) (10 about eval items decided or queued before)" in out
    assert sorted(second) == sorted(first)
    for eval_id, row in second.items():
        # Every item is new (the pool's provenance changed) but asks the same question.
        assert row["item_id"] != first[eval_id]["item_id"]
        assert row["subject"] == first[eval_id]["subject"] and row["subject"]
        assert row["decision"] is None  # nobody signed anything on the new items

    for eval_id in ACCEPTED:  # q-clips even gained a match: an accept carries regardless
        row = second[eval_id]
        assert (row["status"], row["reopened"]) == ("accept", None)
        made = row["carried_from"]
        assert made["item_id"] == first[eval_id]["item_id"]
        assert (made["decision"], made["principal"]) == ("accept", "rita")
        assert made["record_hash"] == first[eval_id]["decision"]["record_hash"]
    for eval_id in ("q-reading", "q-grove", "q-parking", *INTERNAL):
        row = second[eval_id]
        assert row["status"] == "reject" and row["reopened"] is None
        assert row["carried_from"]["record_hash"] == first[eval_id]["decision"]["record_hash"]

    wallet = second["q-wallet"]
    assert (wallet["status"], wallet["carried_from"]) == ("undecided", None)
    reopened = wallet["reopened"]
    assert reopened["since"]["record_hash"] == first["q-wallet"]["decision"]["record_hash"]
    assert {"match": "pool:doc-new-wallet"} in reopened["new"]
    assert reopened["text"].startswith("re-opened: new evidence since rita's reject of ")
    assert "new match pool:doc-new-wallet" in reopened["text"]
    # Only what is new is listed: the match the reject already saw is not.
    assert not any(e.get("match") == "pool:doc-004" for e in reopened["new"])

    undecided = json.loads(
        run("items", "--queue", "flagged_pairs", "--status", "undecided", "--json").stdout
    )
    assert [r["item_id"] for r in undecided] == [wallet["item_id"]]
    # The plain listing marks both kinds and says in full what re-opened an item.
    text = run("items", "--queue", "flagged_pairs").stdout
    assert "9 carried: decided on an earlier run's item about the same subject" in text
    assert f"{wallet['item_id']}: {reopened['text']}\n" in text


def test_clean_and_the_signoff_summary_count_carried_and_reopened_items(site, sealdesk):
    run, ws, pool, rita = site
    first, second, _ = rescan(run, pool, rita)

    refused = sealdesk("contamination", "clean", workspace=ws)
    assert refused.returncode != 0
    assert "1 flagged item(s) have no accept/reject decision (1 re-opened by new evidence)" in (
        refused.stderr
    )
    assert f"{second['q-wallet']['item_id']} (eval q-wallet, re-opened)" in refused.stderr

    summary = json.loads(run("signoff", "--summary-only", "--json").stdout)
    flagged = next(q for q in summary["queues"] if q["queue"] == "flagged_pairs")
    # 10 first-scan items decided by rita; of the 10 new ones, 9 carried and 1 re-opened.
    assert (flagged["total"], flagged["carried"], flagged["reopened"]) == (20, 9, 1)
    assert (flagged["accepted"], flagged["rejected"], flagged["undecided"]) == (4, 15, 1)
    assert [p["item_id"] for p in summary["pending"]] == [second["q-wallet"]["item_id"]]
    text = run("signoff", "--summary-only").stdout
    assert "flagged_pairs: 9 decision(s) carried from earlier runs' items" in text
    assert "1 re-opened by new evidence" in text

    # The reviewer looks at the new evidence and confirms the leak on the new item.
    run(*decide_args(rita, second["q-wallet"]["item_id"]))
    out = run("contamination", "clean").stdout
    assert "22 -> 19 items (3 dropped, 7 kept after review, 0 undecided kept)" in out
    assert "9 decision(s) carried from earlier scans' items; 0 item(s) re-opened" in out
    (clean_dir,) = [p for p in (ws / "artifacts").iterdir() if ".clean-" in p.name]
    report = json.loads((clean_dir / "clean_report.json").read_text())
    dropped = {d["id"]: d for d in report["dropped"]}
    assert sorted(dropped) == ["q-babysitting", "q-clips", "q-wallet"]
    assert dropped["q-clips"]["carried_from"] == first["q-clips"]["item_id"]
    assert dropped["q-clips"]["record_hash"] == first["q-clips"]["decision"]["record_hash"]
    assert "carried_from" not in dropped["q-wallet"]  # decided on the new item itself
    assert report["carried"]["decisions"] == 9
    kept = {row["id"] for row in map(json.loads, (clean_dir / "clean_eval.jsonl").open())}
    assert kept == set(QUESTIONS) - {"q-babysitting", "q-clips", "q-wallet"}
    run("verify")


def test_the_same_scan_of_the_same_inputs_again_adds_nothing_and_keeps_what_carried(site):
    run, ws, pool, rita = site
    rescan(run, pool, rita)
    before = listed(run)
    out = scan(run, pool).stdout
    assert "backlog: 0 new item(s), 10 already held" in out
    after = listed(run)
    assert [r["item_id"] for r in after] == [r["item_id"] for r in before]
    assert [(r["status"], r["carried_from"]) for r in after] == [
        (r["status"], r["carried_from"]) for r in before
    ]
    assert sum(r["carried_from"] is not None for r in after) == 9
