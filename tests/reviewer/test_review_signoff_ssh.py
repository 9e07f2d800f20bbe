"""The review app over a real OpenSSH server, inside real tmux: the lead signs off in the app,
and three people review the same workspace at once, each in their own app.

Each person's key lives only in an ssh-agent the test starts (the key file is
deleted after ``ssh-add``), and reaches the review host only through ``ssh
-A``; authorized_keys locks every key to ``sealdesk ssh-gate`` on the
workspace, as docs/guide/lead.md sets it up. Every wait polls the captured screen.
sshd, the agents and the tmux server are stopped by their pids at teardown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.signoff.verify import verify_workspace
from engine.workspace import BacklogItem, Workspace
from tests.support.review_app import claim_holders
from tests.support.ssh import (
    REVIEW_RECORDS,
    files_holding,
    gate_command,
    keygen_verify,
    lead_agent_only,
    people_with_agents,
)
from tests.support.ssh_review import open_review

pytestmark = [pytest.mark.needs_sshd, pytest.mark.needs_tmux, pytest.mark.slow]


def sign_off_in_app(tmux, name: str, size: int) -> str:
    """Opens the sign-off screen, signs a ledger of size records, confirms; gives the screen."""
    tmux.keys(name, "S")
    tmux.wait_for(name, "READY: every item is accepted or rejected; s signs off")
    tmux.keys(name, "s")
    tmux.wait_for(name, f"Sign off {size} record(s) as {name} (lead)?")
    tmux.keys(name, "Enter")
    return tmux.wait_for(name, f"SIGNED OFF: record #{size + 1}")


def quit_review(tmux, name: str) -> str:
    """Presses q and gives the screen once ssh has ended, asserting a clean exit."""
    tmux.keys(name, "q")
    shown = tmux.wait_for(name, "EXIT=")
    assert "EXIT=0" in shown, shown
    return shown


def test_the_lead_signs_off_in_the_review_app_over_ssh_with_only_the_forwarded_agent(
    sshd, agents, review, tmux, sealdesk, tmp_path
):
    ws, lena = review  # rita decided all 3 pairs; lena is the lead
    sock, secrets = lead_agent_only(agents, lena)
    sshd.authorize(Path(f"{lena}.pub"), command=gate_command(ws))
    open_review(tmux, sshd, "lena", ws, sock)
    tmux.wait_for("lena", "lena as lead")

    shown = sign_off_in_app(tmux, "lena", REVIEW_RECORDS)
    assert "sealdesk checkpoint export > checkpoint.txt" in shown
    tmux.keys("lena", "Escape")
    tmux.wait_for("lena", "f filter")  # back on the review screen...
    tmux.wait_for("lena", "signed off by lena")  # ...whose ledger head is the sign-off
    shown = quit_review(tmux, "lena")
    assert "sealdesk review: 1 record(s) signed by lena this session" in shown

    check = sealdesk("verify", workspace=ws.root)
    # lena signed the genesis, rita's enrolment and the sign-off; rita her 3 decisions
    assert check.returncode == 0 and "signers: lena 3, rita 3" in check.stdout, check.stderr
    out = tmp_path / "records.jsonl"
    sealdesk("export", "--out", out, workspace=ws.root, check=True)
    last = json.loads(out.read_text().splitlines()[-1])
    body = json.loads(last["message"])
    assert (body["seq"], body["kind"], body["role"], body["principal"]) == (
        REVIEW_RECORDS + 1,
        "signoff",
        "lead",
        "lena",
    )
    assert body["data"]["tree"]["size"] == REVIEW_RECORDS
    keygen = keygen_verify(
        ws.allowed_signers_path,
        "lena",
        "lead@sealdesk",
        last["message"].encode(),
        last["signature"],
        tmp_path,
    )
    assert keygen.returncode == 0, keygen.stderr
    assert 'Good "lead@sealdesk" signature for lena' in keygen.stdout
    note = body["data"]["checkpoint"]
    keygen = keygen_verify(
        ws.allowed_signers_path,
        "lena",
        "lead@sealdesk",
        note["note"].encode(),
        note["signature"],
        tmp_path,
    )
    assert keygen.returncode == 0, keygen.stderr

    # The lead's private key is in no file: not the workspace, not the review HOME, nowhere here.
    assert files_holding(tmp_path, secrets) == []
    assert files_holding(ws.root, [b"PRIVATE KEY"]) == []
    assert files_holding(tmp_path / "review-home", [b"PRIVATE KEY"]) == []


def scored_pair(n: int) -> BacklogItem:
    return BacklogItem.make(
        "flagged_pairs",
        f"fp-{n}",
        "run-1",
        {"summary": {"title": f"pair {n}", "score": 0.9 - n / 10, "tags": []}},
    )


def row_shows(screen: str, glyph: str, n: int) -> bool:
    """Says whether the queue list shows pair n (score 0.9 - n/10) with a status glyph."""
    return re.search(rf"{glyph}  {0.9 - n / 10:.3f} pair {n}\b", screen) is not None


def every_decision_shown(rows: dict[str, tuple[int, ...]]):
    """Gives a check of a screen: both queues' counts complete (pairs 6/6, weak cats 2/2)
    and each pair listed with its glyph (rows: glyph -> pair numbers)."""

    def holds(screen: str) -> bool:
        listed = all(row_shows(screen, g, n) for g, numbers in rows.items() for n in numbers)
        return "6/6" in screen and "2/2" in screen and listed

    return holds


def test_two_reviewers_and_the_lead_in_their_own_apps_over_ssh_see_each_others_decisions(
    sshd, agents, tmux, keygen, tmp_path
):
    ws = Workspace.init(tmp_path / "review" / "ws")
    people = {"rita": "reviewer", "ravi": "reviewer", "lena": "lead"}
    socks = people_with_agents(
        ws, people, keygen=keygen, agents=agents, sshd=sshd, command=gate_command(ws)
    )
    weak = [
        BacklogItem.make(
            "weak_categories",
            f"wk-{i}",
            "run-1",
            {"summary": {"title": f"category {i}", "score": 0.5 - i / 10, "tags": []}},
        )
        for i in range(2)
    ]
    ws.ingest(
        [scored_pair(n) for n in range(6)] + weak,
        runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}},
    )
    open_review(tmux, sshd, "rita", ws, socks["rita"])
    tmux.wait_for("rita", "rita as reviewer")
    for name in ("ravi", "lena"):
        open_review(tmux, sshd, name, ws, socks[name])
    for name, role in people.items():
        tmux.wait_for(name, f"{name} as {role}")
    # rita's app holds the top pair, so ravi's, opened after it, starts on the next one.
    each_own = {"fp-0": "rita", "fp-1": "ravi", "wk-0": "lena"}
    tmux.wait_until("ravi", lambda _: claim_holders(ws) == each_own, "each app on its own item")

    # ravi sorts by score ↑ and goes to the bottom pair (his app gives the second back);
    # rita accepts the top three while lena (lead) accepts both weak categories; then
    # ravi rejects the bottom three. rita's app, done, holds the fourth pair: ravi's,
    # finding no other undecided pair nobody holds, goes on to it and decides it all
    # the same (a claim is advice).
    tmux.keys("ravi", "o", "g")
    tmux.wait_until(
        "ravi", lambda _: claim_holders(ws).get("fp-5") == "ravi", "ravi on the bottom pair"
    )
    tmux.keys("rita", "a", "a", "a")
    tmux.keys("lena", "a", "a")
    tmux.wait_for("rita", "3 decided this session")
    tmux.wait_until(
        "rita", lambda _: claim_holders(ws).get("fp-3") == "rita", "rita on the fourth pair"
    )
    tmux.keys("ravi", "x", "x", "x")
    for name, count in (("rita", 3), ("ravi", 3), ("lena", 2)):
        tmux.wait_for(name, f"{count} decided this session")

    # Each app shows the others' decisions: counts, and the status of the rows on screen.
    # Waited for as one state: each app reads the others' records on its own poll, so
    # one queue's count can be drawn before the other's (under load, pairs 6/6 while
    # weak cats were still 1/2).
    tmux.keys("lena", "1")
    others = {"rita": {"✗": (3, 4, 5)}, "ravi": {"✓": (0, 1, 2)}}
    others["lena"] = {"✓": (0, 1, 2), "✗": (3, 4, 5)}
    for name, rows in others.items():
        tmux.wait_until(name, every_decision_shown(rows), "every decision")

    # The lead signs off in her app; the reviewers' status bars show the sign-off as head.
    authority = len(people)  # lena's genesis, then her enrolments of rita and ravi
    sign_off_in_app(tmux, "lena", authority + 8)
    for name in ("rita", "ravi"):
        tmux.wait_for(name, "signed off by lena")
    tmux.keys("lena", "Escape")
    tmux.wait_for("lena", "f filter")  # the review screen (a lead decides no pairs)
    for name, count in (("rita", 3), ("ravi", 3), ("lena", 3)):
        assert f"sealdesk review: {count} record(s) signed by {name} this session" in quit_review(
            tmux, name
        )

    rows = ws.conn.execute(
        "SELECT seq, kind, principal, item_id, decision FROM records ORDER BY seq"
    ).fetchall()
    assert [r[1] for r in rows[:authority]] == ["genesis", "enrol", "enrol"]
    assert [r[0] for r in rows] == list(range(1, authority + 8 + 1 + 1))
    assert sorted((r[2], r[3], r[4]) for r in rows if r[1] == "decision") == sorted(
        [("rita", f"fp-{n}", "accept") for n in range(3)]
        + [("ravi", f"fp-{n}", "reject") for n in range(3, 6)]
        + [("lena", f"wk-{i}", "accept") for i in range(2)]
    )
    assert rows[-1][1:3] == ("signoff", "lena")
    report = verify_workspace(ws)  # chain, signatures and the sign-off's tree head
    assert report.ok, report.faults
    ws.close()
