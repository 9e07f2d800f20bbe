"""A review plan and gold items over the ssh gate: a real sshd, each person's key only in
their own ssh-agent. The lead signs the plan and commits gold through the gate; two
reviewers decide the same item at once, each blind to the other until they have
decided; the disagreement is listed for the adjudicator; the sealed gold answers go back
to the lead's machine and come back for the reveal."""

from __future__ import annotations

import json

import pytest

from engine.workspace import Workspace
from tests.support.ssh import gate_command, items, people_with_agents

pytestmark = [pytest.mark.needs_sshd, pytest.mark.slow]
PAIRS = "flagged_pairs"


def gate_desk(tmp_path, keygen, agents, sshd, *, pairs: int):
    """Gives a workspace of ``pairs`` flagged pairs whose lead (lena) and reviewers (rita,
    sam) reach it only through the gate, and each one's agent socket."""
    ws = Workspace.init(tmp_path / "review" / "ws")
    socks = people_with_agents(
        ws, {"lena": "lead", "rita": "reviewer", "sam": "reviewer"},
        keygen=keygen, agents=agents, sshd=sshd, command=gate_command(ws),
    )  # fmt: skip
    ws.ingest(
        items(PAIRS, "fp", pairs),
        runs={"run-1": {"kind": "test", "artifacts": {}, "inputs": {}}},
    )
    return ws, socks


def listed(sshd, sock) -> dict[str, dict]:
    proc = sshd.run(f"sealdesk items --queue {PAIRS} --json", sock)
    assert proc.returncode == 0, proc.stderr
    return {row["item_id"]: row for row in json.loads(proc.stdout)}


def test_two_reviewers_over_the_gate_decide_blind_and_the_lead_sees_the_dispute(
    tmp_path, keygen, agents, sshd
):
    ws, socks = gate_desk(tmp_path, keygen, agents, sshd, pairs=4)
    lena, rita, sam = socks["lena"], socks["rita"], socks["sam"]
    plan = sshd.run(
        f"sealdesk plan set --queue {PAIRS} --k 2 --share 1 --seed 1 "
        "--principal rita --principal sam",
        lena,
    )
    assert plan.returncode == 0, plan.stderr
    # lena commits gold on fp-3 before anyone decides it; the sealed answers come back
    gold = sshd.run(
        f"sealdesk gold commit --queue {PAIRS} --answers - --out -", lena,
        input=json.dumps({"fp-3": "reject"}),
    )  # fmt: skip
    assert gold.returncode == 0, gold.stderr
    sealed = gold.stdout
    assert json.loads(sealed)["answers"] == {"fp-3": "reject"}

    assert sshd.run(f"sealdesk decide --queue {PAIRS} --item fp-0 --decision accept", rita
                    ).returncode == 0  # fmt: skip
    assert listed(sshd, rita)["fp-0"]["status"] == "accept"
    seen = listed(sshd, sam)["fp-0"]
    assert seen["status"] == "undecided" and seen["decision"] is None
    assert seen["review"] == {"k": 2, "ratings": 1, "outcome": "pending"}
    # sam's decision is his own: no overrule asked for, none recorded
    proc = sshd.run(f"sealdesk decide --queue {PAIRS} --item fp-0 --decision reject", sam)
    assert proc.returncode == 0, proc.stderr
    assert "blind, under the review plan" in proc.stdout
    assert listed(sshd, sam)["fp-0"]["review"]["outcome"] == "unresolved"
    disputed = sshd.run("sealdesk plan disputed --json", lena)
    assert json.loads(disputed.stdout) == [
        {"queue": PAIRS, "item_id": "fp-0", "ratings": {"rita": "accept", "sam": "reject"}}
    ]
    for who in (rita, sam):
        assert sshd.run(f"sealdesk decide --queue {PAIRS} --item fp-3 --decision reject", who
                        ).returncode == 0  # fmt: skip
    shown = sshd.run("sealdesk gold reveal --sealed -", lena, input=sealed)
    assert shown.returncode == 0, shown.stderr
    accuracy = json.loads(sshd.run("sealdesk gold accuracy --json", lena).stdout)["accuracy"]
    assert accuracy[PAIRS]["principals"] == {
        "rita": {"decided": 1, "correct": 1},
        "sam": {"decided": 1, "correct": 1},
    }
    assert sshd.run("sealdesk verify", lena).returncode == 0


def test_over_the_gate_two_reviewers_claim_different_items_and_read_the_agreement(
    tmp_path, keygen, agents, sshd
):
    ws, socks = gate_desk(tmp_path, keygen, agents, sshd, pairs=6)
    # each claims the next three in the name of the key the agent forwards
    taken = {}
    for name in ("rita", "sam"):
        proc = sshd.run(f"sealdesk claim --queue {PAIRS} --next 3 --json", socks[name])
        assert proc.returncode == 0, proc.stderr
        taken[name] = {r["item_id"] for r in json.loads(proc.stdout)}
        assert all(r["principal"] == name for r in json.loads(proc.stdout))
    assert len(taken["rita"]) == len(taken["sam"]) == 3 and not taken["rita"] & taken["sam"]
    holders = {i: r["claim"]["principal"] for i, r in listed(sshd, socks["lena"]).items()}
    assert holders == {i: name for name, ids in taken.items() for i in ids}
    # a key file named on the command line is refused: the claim is the agent key's
    refused = sshd.run(f"sealdesk claim --queue {PAIRS} --next 1 --key /etc/passwd", socks["sam"])
    assert refused.returncode != 0 and "ssh-gate" in refused.stderr
    # sam may not end rita's claims; the lead, with the key her agent forwards, may
    refused = sshd.run("sealdesk claim --release --of rita", socks["sam"])
    assert refused.returncode == 3 and "sam may not sign as lead" in refused.stderr
    ended = sshd.run("sealdesk claim --release --of rita", socks["lena"])
    assert ended.returncode == 0, ended.stderr
    assert "released 3 claim(s) of rita, ended by lena (lead)" in ended.stdout
    rows = listed(sshd, socks["lena"]).items()
    assert {i: r["claim"]["principal"] for i, r in rows if r["claim"]} == dict.fromkeys(
        taken["sam"], "sam"
    )
    # the agreement, read through the gate: both decide every item the same but one
    for name in ("rita", "sam"):
        for n in range(6):
            decision = "reject" if name == "sam" and n == 0 else "accept"
            proc = sshd.run(
                f"sealdesk decide --queue {PAIRS} --item fp-{n} --decision {decision} "
                "--overrule", socks[name],
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
    figures = sshd.run("sealdesk agreement --json", socks["lena"])
    assert figures.returncode == 0, figures.stderr
    (pairs,) = json.loads(figures.stdout)["queues"]
    both = pairs["all"]
    assert both["raters"] == ["rita", "sam"] and both["items"] == 6
    assert both["statistics"]["raw"]["value"] == pytest.approx(5 / 6)
