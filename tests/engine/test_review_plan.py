"""A signed review plan end to end through the CLI: two reviewers decide the planned
items blind and independently, a disagreement goes to the adjudicator, whose decision
names the ratings it resolves; verify redraws the sample from the signed plan and
catches decisions the plan does not allow (real SQLite, real ssh-keygen signatures)."""

from __future__ import annotations

import json

import pytest

from engine.agreement import plan as review_plan
from engine.errors import PermissionRefused
from engine.ledger import plan as plan_shape
from engine.ledger import store
from engine.ledger.signers import FileSigner
from engine.signoff import summary as signing
from engine.workspace import Workspace
from tests.conftest import FOUNDER
from tests.support.backlog import make_items
from tests.support.cli_workspace import found_through_cli

PAIRS = "flagged_pairs"
PLAN = {"k": 2, "share": 0.5, "seed": 3, "principals": ["rita", "ben"]}


@pytest.fixture
def desk(tmp_path, sealdesk_main, keygen, founder_key):
    ws = tmp_path / "ws"
    keys = {name: keygen(name) for name in ("rita", "ben", "carl", "ada")}
    keys["lead"] = founder_key
    found_through_cli(
        sealdesk_main,
        ws,
        FOUNDER,
        founder_key,
        [
            ("rita", "reviewer", keys["rita"]),
            ("ben", "reviewer", keys["ben"]),
            ("carl", "reviewer", keys["carl"]),
            ("ada", "adjudicator", keys["ada"]),
        ],
        make_items(20),
    )
    sealdesk_main(
        "plan", "set", "--queue", PAIRS, "--k", "2", "--share", "0.5", "--seed", "3",
        "--principal", "rita", "--principal", "ben", "--key", founder_key,
        workspace=ws, check=True,
    )  # fmt: skip
    planned = [f"item-{i}" for i in range(20) if plan_shape.sampled(PLAN, PAIRS, f"item-{i}")]
    single = [f"item-{i}" for i in range(20) if f"item-{i}" not in planned]
    return ws, keys, planned, single


def decide(run, ws, key, decision, item, *extra, check=True):
    return run(
        "decide", "--queue", PAIRS, "--item", item, "--decision", decision, "--key", key,
        *extra, workspace=ws, check=check,
    )  # fmt: skip


def listed(run, ws, key) -> dict[str, dict]:
    out = run("items", "--queue", PAIRS, "--json", "--key", key, workspace=ws, check=True)
    return {row["item_id"]: row for row in json.loads(out.stdout)}


def test_the_sample_is_drawn_from_the_seed_at_the_share_asked():
    ids = [f"item-{i}" for i in range(4000)]
    for share in (0.2, 0.5):
        plan = {**PLAN, "share": share}
        drawn = [i for i in ids if plan_shape.sampled(plan, PAIRS, i)]
        assert abs(len(drawn) / len(ids) - share) < 0.03
        # another seed draws another sample of about the same size
        other = [i for i in ids if plan_shape.sampled({**plan, "seed": 4}, PAIRS, i)]
        assert drawn != other and abs(len(other) - len(drawn)) < 0.06 * len(ids)
    # each of three principals is asked first for about a third of the items
    three = {**PLAN, "principals": ["rita", "ben", "sam"]}
    firsts = [plan_shape.order(three, PAIRS, i)[0] for i in ids]
    assert all(abs(firsts.count(p) / len(ids) - 1 / 3) < 0.04 for p in three["principals"])


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"k": 1}, "k must be a whole number of at least 2"),
        ({"share": 0}, "share must be above 0"),
        ({"share": 1.5}, "share must be above 0"),
        ({"principals": ["rita"]}, "1 principal(s) cannot give 2 decisions"),
        ({"principals": ["rita", "rita"]}, "principals must be distinct"),
    ],
)
def test_a_plan_that_cannot_be_kept_is_refused_and_nothing_signed(
    desk, sealdesk_main, change, says
):
    ws, keys, _, _ = desk
    q = {**PLAN, **change}
    args = ["--k", str(q["k"]), "--share", str(q["share"]), "--seed", "1"]
    args += [a for p in q["principals"] for a in ("--principal", p)]
    before = Workspace.open(ws, read_only=True)
    head = before.head()
    before.close()
    out = sealdesk_main("plan", "set", "--queue", PAIRS, *args, "--key", keys["lead"], workspace=ws)
    assert out.returncode != 0 and says in out.stderr
    with Workspace.open(ws, read_only=True) as w:
        assert w.head() == head


def test_only_a_lead_signs_a_plan(desk, sealdesk_main):
    ws, keys, _, _ = desk
    out = sealdesk_main(
        "plan", "set", "--queue", PAIRS, "--principal", "rita", "--principal", "ben",
        "--key", keys["rita"], workspace=ws,
    )  # fmt: skip
    assert out.returncode != 0 and "lead" in out.stderr


def test_two_blind_agreeing_decisions_settle_an_item(desk, sealdesk_main):
    ws, keys, planned, single = desk
    item = planned[0]
    decide(sealdesk_main, ws, keys["rita"], "accept", item)
    # rita sees her own decision; ben and the lead see none on the item yet
    assert listed(sealdesk_main, ws, keys["rita"])[item]["status"] == "accept"
    for who in ("ben", "lead"):
        row = listed(sealdesk_main, ws, keys[who])[item]
        assert row["status"] == "undecided" and row["decision"] is None
        assert row["review"] == {"k": 2, "ratings": 1, "outcome": "pending"}
    # ben's decision is independent: no overrule asked, and it names the plan
    decide(sealdesk_main, ws, keys["ben"], "accept", item)
    for who in ("rita", "ben", "lead"):
        row = listed(sealdesk_main, ws, keys[who])[item]
        assert row["status"] == "accept"
        assert row["review"]["outcome"] == "unanimous"
    with Workspace.open(ws, read_only=True) as w:
        plan_hash = w.plan().record_hash
        bodies = [
            json.loads(r[0])
            for r in w.conn.execute(
                "SELECT message FROM records WHERE kind='decision' AND item_id=? ORDER BY seq",
                (item,),
            )
        ]
        assert [b["data"] for b in bodies] == [{"plan": {"blind": True, "record": plan_hash}}] * 2
    # an item outside the sample is settled by one decision, as without a plan
    decide(sealdesk_main, ws, keys["rita"], "reject", single[0])
    assert listed(sealdesk_main, ws, keys["ben"])[single[0]]["status"] == "reject"
    assert "review" not in listed(sealdesk_main, ws, keys["ben"])[single[0]]
    assert sealdesk_main("verify", workspace=ws).returncode == 0


def test_a_reviewer_not_in_the_plan_may_not_decide_a_planned_item(desk, sealdesk_main):
    ws, keys, planned, single = desk
    out = decide(sealdesk_main, ws, keys["carl"], "accept", planned[0], check=False)
    assert out.returncode != 0
    assert "double-reviewed under the plan" in out.stderr and "carl is not one" in out.stderr
    decide(sealdesk_main, ws, keys["carl"], "accept", single[0])  # the rest are anyone's


def test_a_disagreement_goes_to_the_adjudicator_who_resolves_it(desk, sealdesk_main):
    ws, keys, planned, _ = desk
    a, b = planned[1], planned[2]
    decide(sealdesk_main, ws, keys["rita"], "accept", a)
    decide(sealdesk_main, ws, keys["ben"], "reject", a)
    decide(sealdesk_main, ws, keys["rita"], "reject", b)
    # disagreeing, the item is nobody's single decision: undecided to all, listed as
    # disputed, and blocks nothing else
    for who in ("rita", "ben", "lead"):
        row = listed(sealdesk_main, ws, keys[who])[a]
        assert row["review"]["outcome"] == "unresolved"
    assert listed(sealdesk_main, ws, keys["lead"])[a]["status"] == "undecided"
    assert listed(sealdesk_main, ws, keys["rita"])[a]["status"] == "accept"  # her own
    out = sealdesk_main("plan", "disputed", "--json", "--key", keys["ada"], workspace=ws,
                        check=True)  # fmt: skip
    assert json.loads(out.stdout) == [
        {"queue": PAIRS, "item_id": a, "ratings": {"ben": "reject", "rita": "accept"}}
    ]
    decide(sealdesk_main, ws, keys["ada"], "reject", a)
    row = listed(sealdesk_main, ws, keys["lead"])[a]
    assert row["status"] == "reject" and row["review"]["outcome"] == "adjudicated"
    with Workspace.open(ws, read_only=True) as w:
        body = json.loads(
            w.conn.execute(
                "SELECT message FROM records WHERE kind='decision' AND item_id=? "
                "ORDER BY seq DESC LIMIT 1",
                (a,),
            ).fetchone()[0]
        )
        ratings = {
            r[0]
            for r in w.conn.execute(
                "SELECT record_hash FROM records WHERE item_id=? AND role='reviewer'", (a,)
            )
        }
        assert body["role"] == "adjudicator"
        assert set(body["data"]["plan"]["resolves"]) == ratings
        assert body["data"]["overrules"] in ratings
        # once resolved, a rating no longer changes the item
        with pytest.raises(PermissionRefused, match="was settled by ada"):
            w2 = Workspace.open(ws)
            try:
                w2.decide(FileSigner(keys["rita"]), PAIRS, a, "accept")
            finally:
                w2.close()
    out = sealdesk_main("plan", "show", "--json", workspace=ws, check=True)
    progress = json.loads(out.stdout)["progress"][PAIRS]
    assert progress["outcomes"]["adjudicated"] == 1
    assert progress["outcomes"]["pending"] == len(planned) - 1  # b waits for ben
    assert progress["principals_progress"]["rita"]["ratings"] == 2
    assert sealdesk_main("verify", workspace=ws).returncode == 0
    # an export carries, beside each decision on a planned item, its item's outcome
    out = ws.parent / "records.jsonl"
    sealdesk_main("export", "--out", out, workspace=ws, check=True)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    on = {
        (json.loads(line["message"])["item_id"], line["principal"]): line.get("review")
        for line in lines
        if line["kind"] == "decision"
    }
    assert on[(a, "rita")] == on[(a, "ben")] == on[(a, "ada")]
    assert on[(a, "ada")]["outcome"] == "adjudicated" and on[(a, "ada")]["ratings"] == 2
    assert on[(b, "rita")]["outcome"] == "pending"
    assert all("review" not in line for line in lines if line["kind"] != "decision")


def _forge(ws, key, item, data, role="reviewer"):
    """Appends a signed decision whose data the workspace would never write."""
    with Workspace.open(ws) as w:
        signer = FileSigner(key)
        principal, role = w.identify(signer, role=role, queue=PAIRS)
        store.append(
            w.db,
            signer,
            workspace_id=w.workspace_id,
            principal=principal,
            role=role,
            kind="decision",
            check=lambda c: {**w._item_binding(c, PAIRS, item), "data": data},
            queue=PAIRS,
            item_id=item,
            decision="accept",
        )


@pytest.mark.parametrize(
    ("who", "where", "says"),
    [
        ("rita", "single", "which its plan does not sample"),
        ("carl", "planned", "who is not in the plan"),
    ],
)
def test_verify_catches_a_blind_rating_the_plan_does_not_allow(
    desk, sealdesk_main, who, where, says
):
    ws, keys, planned, single = desk
    item = planned[0] if where == "planned" else single[0]
    with Workspace.open(ws, read_only=True) as w:
        plan_hash = w.plan().record_hash
    _forge(ws, keys[who], item, {"plan": {"blind": True, "record": plan_hash}})
    out = sealdesk_main("verify", workspace=ws)
    assert out.returncode != 0 and says in out.stdout + out.stderr


def test_verify_catches_a_silent_overrule_dressed_as_a_rating(desk, sealdesk_main):
    """A rating replaces only other ratings: one after the adjudicator settled the item is
    a fault, though the plan samples the item and names its signer."""
    ws, keys, planned, single = desk
    item = planned[0]
    decide(sealdesk_main, ws, keys["rita"], "reject", item)
    decide(sealdesk_main, ws, keys["ben"], "accept", item)
    decide(sealdesk_main, ws, keys["ada"], "reject", item)
    assert sealdesk_main("verify", workspace=ws).returncode == 0
    with Workspace.open(ws, read_only=True) as w:
        plan_hash = w.plan().record_hash
    _forge(ws, keys["ben"], item, {"plan": {"blind": True, "record": plan_hash}})
    out = sealdesk_main("verify", workspace=ws)
    assert out.returncode != 0
    assert "which is no rating" in out.stdout + out.stderr


def test_states_follow_the_ledger_not_the_query_columns(desk, sealdesk_main):
    ws, keys, planned, _ = desk
    decide(sealdesk_main, ws, keys["rita"], "accept", planned[3])
    decide(sealdesk_main, ws, keys["rita"], "skip", planned[3])  # "not me": no rating
    with Workspace.open(ws, read_only=True) as w:
        state = review_plan.states(w.conn, w.plan(), PAIRS, [planned[3]])[planned[3]]
        assert state.ratings == {} and state.outcome == "pending"


def _decide_all(run, ws, key, decision, items, *extra):
    ids = [a for i in items for a in ("--item", i)]
    run(
        "decide", "--queue", PAIRS, *ids, "--decision", decision, "--key", key, *extra,
        workspace=ws, check=True,
    )  # fmt: skip


def test_sign_off_is_ready_only_when_reviewed_as_planned_and_binds_the_agreement(
    desk, sealdesk_main, monkeypatch
):
    ws, keys, planned, single = desk
    lead = ("--key", keys["lead"])
    _decide_all(sealdesk_main, ws, keys["rita"], "reject", single)
    _decide_all(sealdesk_main, ws, keys["rita"], "accept", planned[:3])
    _decide_all(sealdesk_main, ws, keys["rita"], "reject", planned[3:])
    # ben has rated nothing yet: 10 planned decisions missing, and the sign-off says so
    out = sealdesk_main("signoff", *lead, workspace=ws)
    assert out.returncode != 0
    assert f"{len(planned)} planned decision(s) missing" in out.stderr
    _decide_all(sealdesk_main, ws, keys["ben"], "accept", planned[:2])
    _decide_all(sealdesk_main, ws, keys["ben"], "reject", planned[2:])  # disagrees on one
    out = sealdesk_main("signoff", *lead, workspace=ws)
    assert out.returncode != 0 and "1 disagreement(s) unresolved" in out.stderr
    summary = sealdesk_main("signoff", "--summary-only", workspace=ws, check=True).stdout
    assert f"{len(planned) - 1} unanimous, 0 adjudicated, 1 unresolved" in summary
    decide(sealdesk_main, ws, keys["ada"], "reject", planned[2])
    summary = sealdesk_main("signoff", "--summary-only", workspace=ws, check=True).stdout
    assert "1 adjudicated, 0 unresolved, 0 pending" in summary
    assert "Gwet's AC1" in summary and "rita vs the adjudicated outcome" in summary
    sealdesk_main("signoff", *lead, "--yes", workspace=ws, check=True)
    with Workspace.open(ws, read_only=True) as w:
        body = json.loads(
            w.conn.execute(
                "SELECT message FROM records WHERE kind='signoff' ORDER BY seq DESC LIMIT 1"
            ).fetchone()[0]
        )
        review = body["data"]["review"]
        assert review["plan"] == w.plan().record_hash
        figures = review["agreement"]["queues"][0]
        # the bound figures are the statistics of the signed ratings: 9 of 10 agree
        assert figures["all"]["items"] == len(planned)
        assert figures["all"]["statistics"]["raw"]["value"] == pytest.approx(
            (len(planned) - 1) / len(planned)
        )
        assert [r["principal"] for r in figures["against_outcome"]] == ["ben", "rita"]
    assert sealdesk_main("verify", workspace=ws).returncode == 0

    # A sign-off whose figures say better than the ledger does, made by a tool that
    # computed them wrong and signed by the lead's own key: every signature holds, so
    # only recomputing the figures from the signed decisions catches it.
    review["agreement"]["queues"][0]["all"]["statistics"]["raw"]["value"] = 1.0
    with Workspace.open(ws) as w:
        monkeypatch.setattr(signing, "review_data", lambda conn, before=None: review)
        signing.sign_off(w, FileSigner(keys["lead"]))
    out = sealdesk_main("verify", workspace=ws)
    assert out.returncode != 0
    assert "review figures (agreement) are not those the signed decisions" in (
        out.stdout + out.stderr
    )


def test_with_three_raters_the_third_learns_nothing_before_deciding(
    tmp_path, sealdesk_main, keygen, founder_key
):
    """k=3: after two ratings that disagree, the third rater's items, plan disputed and
    the agreement figures (also the sign-off summary's) give nothing of them away; the
    adjudicator, whom the plan does not ask, sees the dispute."""
    ws = tmp_path / "ws"
    keys = {name: keygen(name) for name in ("rita", "ben", "sam", "ada")}
    found_through_cli(
        sealdesk_main, ws, FOUNDER, founder_key,
        [(n, "reviewer", keys[n]) for n in ("rita", "ben", "sam")]
        + [("ada", "adjudicator", keys["ada"])],
        make_items(4),
    )  # fmt: skip
    sealdesk_main(
        "plan", "set", "--queue", PAIRS, "--k", "3", "--share", "1", "--principal", "rita",
        "--principal", "ben", "--principal", "sam", "--key", founder_key,
        workspace=ws, check=True,
    )  # fmt: skip
    decide(sealdesk_main, ws, keys["rita"], "accept", "item-0")
    decide(sealdesk_main, ws, keys["ben"], "reject", "item-0")
    row = listed(sealdesk_main, ws, keys["sam"])["item-0"]
    assert row["status"] == "undecided" and row["review"]["outcome"] == "pending"
    assert listed(sealdesk_main, ws, keys["rita"])["item-0"]["review"]["outcome"] == "unresolved"

    def disputed(who):
        out = sealdesk_main("plan", "disputed", "--json", "--key", keys[who], workspace=ws,
                            check=True)  # fmt: skip
        return [r["item_id"] for r in json.loads(out.stdout)]

    assert disputed("sam") == [] and disputed("ada") == ["item-0"]
    out = sealdesk_main("agreement", "--queue", PAIRS, "--json", workspace=ws, check=True)
    assert json.loads(out.stdout)["queues"][0]["pairs"] == []
    summary = sealdesk_main("signoff", "--summary-only", workspace=ws, check=True).stdout
    assert "ben vs rita" not in summary and "Agreement on" not in summary
    # once sam has decided, the item is settled by the adjudicator and counts
    decide(sealdesk_main, ws, keys["sam"], "accept", "item-0")
    assert disputed("sam") == ["item-0"]
    decide(sealdesk_main, ws, keys["ada"], "accept", "item-0")
    out = sealdesk_main("agreement", "--queue", PAIRS, "--json", workspace=ws, check=True)
    assert json.loads(out.stdout)["queues"][0]["all"]["items"] == 1


def test_the_sample_follows_the_question_not_the_item_id(desk, sealdesk_main):
    """An item id hashes all the evidence, scores included: a score's last digit (another
    CPU) or a re-scan changes it. The plan draws by the item's subject, so the same
    question is in the sample or out of it on every machine and in every run."""
    from engine.workspace import BacklogItem

    ws, keys, _, _ = desk

    def pair(n: int, run: str, cosine: float) -> BacklogItem:
        payload = {
            "subject": {"kind": "eval_item", "eval_id": f"q-{n}"},
            "summary": {"title": f"q-{n}", "score": cosine, "tags": []},
            "matches": [{"scores": {"cosine": cosine}}],
        }
        return BacklogItem.make(PAIRS, f"fp-{run}-{n}", run, payload)

    with Workspace.open(ws) as w:
        for run, cosine in (("run-a", 0.812345), ("run-b", 0.812346)):
            w.ingest(
                [pair(n, run, cosine) for n in range(60)],
                runs={run: {"kind": "test", "artifacts": {}, "inputs": {}}},
            )
    with Workspace.open(ws, read_only=True) as w:
        plan = w.plan()
        a = [plan.planned(PAIRS, f"fp-run-a-{n}") for n in range(60)]
        b = [plan.planned(PAIRS, f"fp-run-b-{n}") for n in range(60)]
        by_id = [plan_shape.sampled(PLAN, PAIRS, f"fp-run-a-{n}") for n in range(60)]
        assigned = [plan.assigned(PAIRS, f"fp-run-a-{n}") for n in range(60)]
        again = [plan.assigned(PAIRS, f"fp-run-b-{n}") for n in range(60)]
    assert a == b and assigned == again  # the same questions, the same sample and order
    assert 15 < sum(a) < 45  # about half, as the plan asks
    assert a != by_id  # drawn by the question, not by the id
    # verify draws the same: a blind rating on a sampled question passes, and one on a
    # question out of the sample is a fault
    inside = next(f"fp-run-a-{n}" for n in range(60) if a[n])
    outside = next(f"fp-run-a-{n}" for n in range(60) if not a[n])
    decide(sealdesk_main, ws, keys["rita"], "accept", inside)
    assert sealdesk_main("verify", workspace=ws).returncode == 0
    plan_hash = json.loads(
        sealdesk_main("plan", "show", "--json", workspace=ws, check=True).stdout
    )["plan"]["record_hash"]
    _forge(ws, keys["rita"], outside, {"plan": {"blind": True, "record": plan_hash}})
    out = sealdesk_main("verify", workspace=ws)
    assert out.returncode != 0 and "which its plan does not sample" in out.stderr + out.stdout
