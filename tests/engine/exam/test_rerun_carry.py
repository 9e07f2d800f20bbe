"""An exam run again with other votes, through the real CLI: adjudications carry by subject.

The subject of an adjudication item is the candidate (completion, span,
family, entity). A second run whose votes differ makes new items for the same
candidates: the accept carries, the reject of a candidate that gained no new
side vote carries, and the reject of one a lane now votes on is re-opened.
``exam resolve`` folds the carried decisions (naming the item each was made
on); ``exam queue`` and the sign-off summary say which; the same run again
adds nothing.
"""

from __future__ import annotations

import json

import pytest

from tests.support.exam_builders import cand_id, claim, write_exam

TEXTS = {"c1": "The API is live. The cache is warm.", "c2": "The queue is empty."}
API = claim("The API is live.", "runtime", "API")
CACHE = claim("The cache is warm.", "runtime", "cache")
QUEUE_CLAIM = claim("The queue is empty.", "runtime", "queue")


def ids() -> dict[str, str]:
    return {
        "api": cand_id(TEXTS["c1"], "The API is live.", "runtime", "API"),
        "cache": cand_id(TEXTS["c1"], "The cache is warm.", "runtime", "cache"),
        "queue": cand_id(TEXTS["c2"], "The queue is empty.", "runtime", "queue", cid="c2"),
    }


@pytest.fixture
def site(tmp_path, sealdesk, init_cli, keygen):
    """Gives (run, ws, adam's key, first exam, second exam): the first run has lane-a
    failing on c2; the second has it answering (omitting the queue claim) and an
    adjudicator whose third votes on c1 failed."""
    ws = tmp_path / "ws"
    lead = init_cli(ws)
    adam = keygen("adam")

    def run(*args):
        return sealdesk(*args, workspace=ws, check=True)

    run(
        "keys", "add", "--principal", "adam", "--role", "adjudicator", "--key", f"{adam}.pub", *lead
    )
    sweep = {"c1": [], "c2": []}
    first = write_exam(
        tmp_path / "r1",
        TEXTS,
        {"c1": [API], "c2": None},
        {"c1": [CACHE], "c2": [QUEUE_CLAIM]},
        sweep=sweep,
    )
    failed = [
        {"candidate_id": ids()[name], "voter": "adjudicator", "vote": "operational_failure"}
        for name in ("api", "cache")
    ]
    second = write_exam(
        tmp_path / "r2",
        TEXTS,
        {"c1": [API], "c2": []},
        {"c1": [CACHE], "c2": [QUEUE_CLAIM]},
        votes=failed,
        sweep=sweep,
    )
    return run, ws, adam, first, second


def by_candidate(run, run_id: str) -> dict[str, dict]:
    rows = json.loads(run("items", "--queue", "adjudication", "--json", "--payload").stdout)
    names = {v: k for k, v in ids().items()}
    return {names[r["payload"]["candidate"]["id"]]: r for r in rows if r["run_id"] == run_id}


def decide(run, adam, item_id: str, decision: str) -> None:
    run("decide", "--queue", "adjudication", "--item", item_id, "--decision", decision,
        "--key", adam)  # fmt: skip


def resolved(ws, out: str) -> dict:
    wrote = next(line for line in out.splitlines() if line.startswith("wrote "))
    return json.loads(open(wrote.split()[1], encoding="utf-8").read())


def test_a_rerun_carries_adjudications_and_reopens_a_candidate_with_a_new_vote(site):
    run, ws, adam, first, second = site
    run("exam", "adjudicate", "--run-id", "ex1", *first.cli_inputs())
    one = by_candidate(run, "ex1")
    assert sorted(one) == ["api", "cache", "queue"]
    decide(run, adam, one["api"]["item_id"], "accept")
    decide(run, adam, one["cache"]["item_id"], "reject")
    decide(run, adam, one["queue"]["item_id"], "reject")
    one = by_candidate(run, "ex1")

    out = run("exam", "adjudicate", "--run-id", "ex2", *second.cli_inputs()).stdout
    assert "queued 3 item(s) for adjudication (3 new) in run ex2" in out
    two = by_candidate(run, "ex2")
    for name in ("api", "cache", "queue"):
        assert two[name]["item_id"] != one[name]["item_id"]
        assert two[name]["subject"] == one[name]["subject"]
    assert two["api"]["status"] == "accept"
    assert two["api"]["carried_from"]["record_hash"] == one["api"]["decision"]["record_hash"]
    # The failed third vote is no evidence either way: the reject stands for the new item.
    assert two["cache"]["status"] == "reject"
    assert two["cache"]["carried_from"]["item_id"] == one["cache"]["item_id"]
    queue = two["queue"]
    assert (queue["status"], queue["carried_from"]) == ("undecided", None)
    assert queue["reopened"]["new"] == [{"channel": "lane-a"}, {"match": "lane-a=reject"}]
    assert queue["reopened"]["text"].startswith("re-opened: new evidence since adam's reject")

    listing = run("exam", "queue", "--run-id", "ex2").stdout.splitlines()
    fields = {line.split("\t")[2]: line.split("\t") for line in listing}
    assert fields[ids()["api"]][1] == "accept" and fields[ids()["api"]][4:] == ["carried"]
    assert fields[ids()["cache"]][1] == "reject" and fields[ids()["cache"]][4:] == ["carried"]
    assert fields[ids()["queue"]][1:2] == ["undecided"]
    assert fields[ids()["queue"]][4:] == ["re-opened"]

    summary = json.loads(run("signoff", "--summary-only", "--json").stdout)
    adjudication = next(q for q in summary["queues"] if q["queue"] == "adjudication")
    assert (adjudication["total"], adjudication["carried"], adjudication["reopened"]) == (6, 2, 1)
    assert (adjudication["accepted"], adjudication["rejected"]) == (2, 3)

    out = run("exam", "resolve", "--run-id", "ex2", "--partial").stdout
    assert "PENDING_ADJUDICATION: applied 2 adjudicator decision(s); 1 undecided" in out
    art = resolved(ws, out)
    humans = {c["candidate_id"]: c["human"] for comp in art["completions"]
              for c in comp["candidates"] if c.get("human")}  # fmt: skip
    api = humans[ids()["api"]]
    assert api["carried_from"] == {
        "item_id": one["api"]["item_id"],
        "item_sha256": one["api"]["item_sha256"],
    }
    assert (api["item_id"], api["decision"]) == (two["api"]["item_id"], "accept")
    assert api["record_hash"] == one["api"]["decision"]["record_hash"]

    decide(run, adam, queue["item_id"], "reject")
    out = run("exam", "resolve", "--run-id", "ex2").stdout
    assert out.startswith("COMPLETE: applied 3 adjudicator decision(s); 0 undecided")
    run("verify")


def test_the_same_exam_run_again_adds_nothing_and_keeps_what_carried(site):
    run, ws, adam, first, second = site
    run("exam", "adjudicate", *first.cli_inputs())
    (one_run,) = {r["run_id"] for r in json.loads(run("items", "--json").stdout)}
    for name, row in by_candidate(run, one_run).items():
        decide(run, adam, row["item_id"], "accept" if name == "api" else "reject")
    run("exam", "adjudicate", *second.cli_inputs())
    before = json.loads(run("items", "--json").stdout)
    out = run("exam", "adjudicate", *second.cli_inputs()).stdout
    assert "queued 3 item(s) for adjudication (0 new)" in out
    after = json.loads(run("items", "--json").stdout)
    assert after == before
    assert sum(r["carried_from"] is not None for r in after) == 2
