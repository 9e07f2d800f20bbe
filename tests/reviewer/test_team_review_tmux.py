"""Team review end to end, by key presses in real tmux over a real sshd and the ssh gate.

Four people, each with their key only in an ssh-agent of their own (the key file is
deleted after ``ssh-add``), reach the workspace only through ``ssh -A`` and
authorized_keys entries locked to ``sealdesk ssh-gate``, as docs/guide/lead.md sets
it up. The lead signs a plan asking two decisions on a 20% share of the flagged pairs
and commits gold answers through the gate; the two reviewers review at once in their
own apps, each blind to the other's rating until they have given theirs; the
adjudicator's app opens on their disagreement and settles it; the lead reveals the
gold, reads the accuracy and agreement on the sign-off screen, signs off there, and
``sealdesk verify`` recomputes what the sign-off bound. Every wait polls a captured
screen for the state it waits for.

A sign-off whose agreement figures were computed wrong but signed with the lead's own
key is caught by verify in tests/engine/test_review_plan.py
(test_sign_off_is_ready_only_when_reviewed_as_planned_and_binds_the_agreement), so it
is not tampered with again here.
"""

from __future__ import annotations

import json
import re

import pytest

from engine.canonical import strict_loads
from engine.signoff.review import review_data, review_lines
from engine.workspace import BacklogItem, Workspace
from tests.support.review_app import claim_holders
from tests.support.ssh import gate_command, people_with_agents
from tests.support.ssh_review import detail_of, open_review, row_glyph

pytestmark = [pytest.mark.needs_sshd, pytest.mark.needs_tmux, pytest.mark.slow]
PAIRS = "flagged_pairs"
# What the plan's random seed draws at a 20% share of these twelve ids (a pure function
# of that number, the queue and the id: engine.ledger.plan.sampled): the three
# best-scored pairs, listed first, so both reviewers' apps open on the first of them.
SEED = 150
PLANNED = ("fp-0", "fp-1", "fp-2")
SCAN = [f"fp-{n}" for n in range(10)]
# Planted among the pairs, scored last; their answers are committed before review.
GOLD = {"gold-0": "reject", "gold-1": "reject"}


def pair(item_id: str, score: float) -> BacklogItem:
    summary = {"title": f"pair {item_id}", "score": score, "tags": []}
    return BacklogItem.make(PAIRS, item_id, "run-1", {"summary": summary})


def showing(item_id: str, *texts: str):
    """Gives a check of a screen: its detail pane is on item_id and says every text."""

    def holds(screen: str) -> bool:
        detail = detail_of(screen)
        return f"{PAIRS}/{item_id} " in detail and all(t in detail for t in texts)

    return holds


def assert_blind(screen: str, item_id: str, other: str) -> None:
    """Asserts a screen on a planned item its viewer has not rated gives away neither
    the other rater's name nor their decision: the row and the detail say undecided,
    the history holds nothing, the name is nowhere but in the banner's path."""
    detail = detail_of(screen)
    assert "in; blind: others' decisions" in detail, screen  # shown once they decide
    assert row_glyph(screen, f"pair {item_id}") == "·", screen
    assert "· undecided" in detail and "no records yet" in detail, screen
    assert not re.search(r"\b(accept|reject)", detail), screen
    below_banner = screen.split("\n", 1)[1]  # the banner holds the workspace's path
    assert not re.search(rf"\b{other}\b", below_banner), screen


def test_two_reviewers_decide_blind_the_adjudicator_settles_and_the_lead_signs_the_figures(
    sshd, agents, tmux, keygen, sealdesk, tmp_path
):
    ws = Workspace.init(tmp_path / "review" / "ws")
    people = {"lena": "lead", "rita": "reviewer", "sam": "reviewer", "ada": "adjudicator"}
    socks = people_with_agents(
        ws, people, keygen=keygen, agents=agents, sshd=sshd, command=gate_command(ws)
    )
    scan = [pair(item_id, 0.95 - n / 20) for n, item_id in enumerate(SCAN)]
    gold = [pair(item_id, 0.1 - n / 100) for n, item_id in enumerate(GOLD)]
    ws.ingest(scan + gold, runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}})
    lena = socks["lena"]

    # The lead signs the plan and commits the gold answers, through the gate.
    plan = sshd.run(
        f"sealdesk plan set --queue {PAIRS} --k 2 --share 0.2 --seed {SEED} "
        "--principal rita --principal sam",
        lena,
    )
    assert plan.returncode == 0, plan.stderr
    assert "2 decisions on 3 item(s) (20% drawn with seed 150)" in plan.stdout
    listed = json.loads(sshd.run(f"sealdesk items --queue {PAIRS} --json", lena).stdout)
    assert tuple(r["item_id"] for r in listed if r.get("review")) == PLANNED
    sealed = sshd.run(
        f"sealdesk gold commit --queue {PAIRS} --answers - --out -", lena,
        input=json.dumps(GOLD),
    )  # fmt: skip
    assert sealed.returncode == 0, sealed.stderr

    # Both reviewers open the app at once; each opens on the first planned pair.
    for name in ("rita", "sam"):
        open_review(tmux, sshd, name, ws, socks[name])
    for name in ("rita", "sam"):
        tmux.wait_until(name, showing("fp-0", "0 of 2 in"), "fp-0, no rating in")

    # rita accepts fp-0. sam, on it, sees one rating in, not whose, nor what it says,
    # and his count of decided pairs does not move.
    tmux.keys("rita", "a")
    tmux.wait_for("rita", "1 decided this session")
    shown = tmux.wait_until("sam", showing("fp-0", "1 of 2 in"), "rita's rating counted")
    assert_blind(shown, "fp-0", "rita")
    assert "0/12" in shown, shown
    # sam rejects it: only now is it unresolved to him, with rita's decision beside his.
    tmux.keys("sam", "x")
    tmux.wait_for("sam", "1 decided this session")
    tmux.keys("sam", "k")  # back from fp-1, where the app moved on, to fp-0
    tmux.wait_until(
        "sam",
        showing("fp-0", "2 of 2 in, unresolved", "rita (reviewer) accept", "sam (reviewer) reject"),
        "the disagreement",
    )

    # The other way round on fp-1, where rita's app moved on: sam rates it first.
    tmux.keys("sam", "j", "a")
    tmux.wait_for("sam", "2 decided this session")
    shown = tmux.wait_until("rita", showing("fp-1", "1 of 2 in"), "sam's rating counted")
    assert_blind(shown, "fp-1", "sam")
    tmux.keys("rita", "a")
    tmux.wait_for("rita", "2 decided this session")
    tmux.keys("rita", "k")
    tmux.wait_until(
        "rita", showing("fp-1", "2 of 2 in, unanimous", "sam (reviewer) accept"), "agreement"
    )
    # Both reject fp-2. Outside the sample one decision settles an item, and each app
    # holds the one it shows (a claim): sam goes to the last item, gold-1, and rita then
    # accepts every other pair the plan asks one decision on, gold-0 among them, her
    # app passing over the one sam holds. The adjudicator opens her app meanwhile.
    tmux.keys("rita", "j", "x")
    tmux.wait_for("rita", "3 decided this session")
    tmux.wait_until("rita", lambda _: claim_holders(ws).get("fp-3") == "rita", "rita on fp-3")
    tmux.keys("sam", "x")
    tmux.wait_for("sam", "3 decided this session")
    tmux.keys("sam", "G")
    tmux.wait_until("sam", lambda _: claim_holders(ws).get("gold-1") == "sam", "sam on gold-1")
    open_review(tmux, sshd, "ada", ws, socks["ada"])
    tmux.keys("rita", *["a"] * (len(SCAN) - len(PLANNED) + 1))
    tmux.wait_for("rita", f"{len(SCAN) + 1} decided this session")
    # sam's app shows rita's decisions as they come, and gold-1 still his to decide
    tmux.wait_until(
        "sam",
        lambda screen: (
            "11/12" in screen
            and row_glyph(screen, "pair gold-0") == "✓"
            and row_glyph(screen, "pair gold-1") == "·"
            and showing("gold-1", "· undecided")(screen)
        ),
        "every other item decided, gold-1 left to sam",
    )
    tmux.keys("sam", "x")
    tmux.wait_for("sam", "4 decided this session")

    # The adjudicator's app opens on the disagreement, both decisions in its history.
    shown = tmux.wait_until(
        "ada",
        showing("fp-0", "2 of 2 in, unresolved", "rita (reviewer) accept", "sam (reviewer) reject"),
        "the disagreement",
    )
    assert "ada as adjudicator" in shown and "blind" not in detail_of(shown), shown
    tmux.keys("ada", "a")
    tmux.wait_for("ada", "1 decided this session")
    tmux.keys("ada", "g")  # back to the top of the list: fp-0
    tmux.wait_until(
        "ada", showing("fp-0", "2 of 2 in, adjudicated", "ada (adjudicator) accept"), "settled"
    )

    # The lead reveals the gold through the gate and signs off in her app.
    revealed = sshd.run("sealdesk gold reveal --sealed -", lena, input=sealed.stdout)
    assert revealed.returncode == 0, revealed.stderr
    open_review(tmux, sshd, "lena", ws, lena, width=116, height=70)  # one column, no wrap
    tmux.wait_for("lena", "lena as lead")
    tmux.keys("lena", "S")
    shown = tmux.wait_for("lena", "READY: every item is accepted or rejected; s signs off")
    expected = review_lines(review_data(ws.conn))
    assert [line for line in expected if line.rstrip() not in shown] == [], shown
    for figure in (
        f"{PAIRS}: k=2 on 3 item(s) (20%, seed {SEED}): 2 unanimous, 1 adjudicated, "
        "0 unresolved, 0 pending",
        "raw agreement         0.667",
        "Cohen's kappa         0.400",
        "Gwet's AC1",
        "rita vs sam: agree 0.667",
        "rita vs the adjudicated outcome: agree 1.000",
        "sam vs the adjudicated outcome: agree 0.000",
        f"Gold on {PAIRS}: 2 item(s) with a revealed answer",
        "rita: 0/1 decided as the answer",
        "sam: 1/1 decided as the answer",
    ):
        assert figure in shown, shown
    (size,) = ws.conn.execute("SELECT MAX(seq) FROM records").fetchone()
    tmux.keys("lena", "s")
    tmux.wait_for("lena", f"Sign off {size} record(s) as lena (lead)?")
    tmux.keys("lena", "Enter")
    tmux.wait_for("lena", f"SIGNED OFF: record #{size + 1}")

    # The ledger says the same: two blind ratings under the plan, and the adjudicator's
    # decision naming both as those it resolves.
    bodies = [
        strict_loads(m)
        for (m,) in ws.conn.execute(
            "SELECT message FROM records WHERE kind = 'decision' AND item_id = 'fp-0' ORDER BY seq"
        )
    ]
    assert [(b["principal"], b["decision"]) for b in bodies] == [
        ("rita", "accept"),
        ("sam", "reject"),
        ("ada", "accept"),
    ]
    assert [b["data"]["plan"]["blind"] for b in bodies[:2]] == [True, True]
    assert len(bodies[2]["data"]["plan"]["resolves"]) == 2

    check = sshd.run("sealdesk verify", lena)
    assert check.returncode == 0, check.stdout + check.stderr
    (message,) = ws.conn.execute(
        "SELECT message FROM records WHERE kind = 'signoff' AND seq = ?", (size + 1,)
    ).fetchone()
    bound = strict_loads(message)["data"]["review"]
    agreement = sealdesk("agreement", "--json", workspace=ws.root, check=True)
    assert bound["agreement"] == json.loads(agreement.stdout)
    accuracy = sshd.run("sealdesk gold accuracy --json", lena)
    assert bound["gold"]["accuracy"] == json.loads(accuracy.stdout)["accuracy"]
    progress = sshd.run("sealdesk plan show --json", lena)
    assert bound["progress"] == json.loads(progress.stdout)["progress"]
    ws.close()
