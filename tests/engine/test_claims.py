"""Claims through the CLI: people working one queue at once are given different items.

Real SQLite and real processes: several ``sealdesk claim --next`` run at the same
moment never get the same item; a named item someone else holds is refused and
nothing is claimed; items lists who holds what; a review plan's items are never
claimed; a claim ends when its time runs out, and ``--release`` gives it back.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from engine import claims
from engine.workspace import Workspace
from tests.conftest import FOUNDER, SEALDESK
from tests.support.backlog import make_items
from tests.support.cli_workspace import found_through_cli

PAIRS = "flagged_pairs"


@pytest.fixture
def desk(tmp_path, sealdesk_main, keygen, founder_key):
    ws = tmp_path / "ws"
    keys = {name: keygen(name) for name in ("rita", "sam", "tom")}
    found_through_cli(
        sealdesk_main,
        ws,
        FOUNDER,
        founder_key,
        [(name, "reviewer", key) for name, key in keys.items()],
        make_items(40),
    )
    keys["lead"] = founder_key
    return ws, keys


def claim(run, ws, key, *args, check=True):
    return run("claim", "--queue", PAIRS, *args, "--key", key, workspace=ws, check=check)


def held(run, ws) -> dict[str, str]:
    out = run("items", "--queue", PAIRS, "--json", workspace=ws, check=True)
    return {r["item_id"]: r["claim"]["principal"] for r in json.loads(out.stdout) if r["claim"]}


def test_people_claiming_at_the_same_moment_never_get_the_same_item(desk):
    ws, keys = desk
    # three processes, started together, each asking for the next 8 items, twice over
    taken: dict[str, list[str]] = {}
    for _round in range(2):
        procs = {
            name: subprocess.Popen(
                [
                    *SEALDESK,
                    "--workspace",
                    str(ws),
                    "claim",
                    "--queue",
                    PAIRS,
                    "--next",
                    "8",
                    "--json",
                    "--key",
                    str(keys[name]),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for name in ("rita", "sam", "tom")
        }
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
            taken.setdefault(name, []).extend(r["item_id"] for r in json.loads(out))
    # the second round renews each person's own 8 and adds none of anyone else's
    for name in taken:
        assert len(set(taken[name])) == 8, taken
    everyone = [i for ids in taken.values() for i in set(ids)]
    assert len(everyone) == len(set(everyone)) == 24
    # and the workspace says the same: who holds what
    with Workspace.open(ws, read_only=True) as w:
        holders = {iid: c.principal for (_, iid), c in w.claims(PAIRS).items()}
    assert holders == {i: name for name, ids in taken.items() for i in ids}


def test_a_named_item_someone_else_holds_is_refused_and_nothing_is_claimed(desk, sealdesk_main):
    ws, keys = desk
    claim(sealdesk_main, ws, keys["rita"], "--item", "item-3")
    refused = claim(
        sealdesk_main, ws, keys["sam"], "--item", "item-4", "--item", "item-3", check=False
    )
    assert refused.returncode == 4
    assert "flagged_pairs/item-3 is claimed: rita holds it until" in refused.stderr
    assert "nothing was claimed" in refused.stderr
    assert held(sealdesk_main, ws) == {"item-3": "rita"}
    # rita claiming it again renews it; sam's --next passes over it
    claim(sealdesk_main, ws, keys["rita"], "--item", "item-3")
    out = claim(sealdesk_main, ws, keys["sam"], "--next", "40", "--json")
    sams = [r["item_id"] for r in json.loads(out.stdout)]
    assert "item-3" not in sams and len(sams) == 39


def test_items_show_who_holds_an_undecided_item_and_a_decision_ends_it(desk, sealdesk_main):
    ws, keys = desk
    claim(sealdesk_main, ws, keys["rita"], "--item", "item-1", "--item", "item-2")
    rows = {
        r["item_id"]: r
        for r in json.loads(
            sealdesk_main("items", "--queue", PAIRS, "--json", workspace=ws, check=True).stdout
        )
    }
    assert rows["item-1"]["claim"]["principal"] == "rita"
    assert rows["item-1"]["claim"]["until"] > rows["item-1"]["claim"]["since"]
    assert rows["item-5"]["claim"] is None
    sealdesk_main(
        "decide", "--queue", PAIRS, "--item", "item-1", "--decision", "reject",
        "--key", keys["rita"], workspace=ws, check=True,
    )  # fmt: skip
    # a decided item is nobody's work any more
    assert held(sealdesk_main, ws) == {"item-2": "rita"}


def test_release_gives_claims_back_and_a_lapsed_claim_is_nobodys(desk, sealdesk_main):
    ws, keys = desk
    claim(sealdesk_main, ws, keys["rita"], "--next", "3")
    out = sealdesk_main("claim", "--release", "--key", keys["rita"], workspace=ws, check=True)
    assert "released 3 claim(s) of rita" in out.stdout
    assert held(sealdesk_main, ws) == {}
    # a claim whose time ran out: rita's, taken an hour ago for 30 minutes
    with Workspace.open(ws) as w:
        w.viewer = "rita"
        w.claim(PAIRS, ["item-7"], seconds=1800, now=time.time() - 3600)
    assert held(sealdesk_main, ws) == {}
    claim(sealdesk_main, ws, keys["sam"], "--item", "item-7")
    assert held(sealdesk_main, ws) == {"item-7": "sam"}


def test_a_review_plans_items_are_not_claimed(desk, sealdesk_main):
    ws, keys = desk
    sealdesk_main(
        "plan", "set", "--queue", PAIRS, "--k", "2", "--share", "0.5", "--seed", "3",
        "--principal", "rita", "--principal", "sam", "--key", keys["lead"],
        workspace=ws, check=True,
    )  # fmt: skip
    with Workspace.open(ws, read_only=True) as w:
        planned = [f"item-{i}" for i in range(40) if w.plan().planned(PAIRS, f"item-{i}")]
    assert planned
    refused = claim(sealdesk_main, ws, keys["tom"], "--item", planned[0], check=False)
    assert refused.returncode == 2
    assert "is in the review plan" in refused.stderr
    out = claim(sealdesk_main, ws, keys["tom"], "--next", "40", "--json")
    got = {r["item_id"] for r in json.loads(out.stdout)}
    assert got and not got & set(planned)
    assert len(got) == 40 - len(planned)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--next", "2", "--item", "item-1"), "say what to claim: --next N or --item ID"),
        ((), "say what to claim: --next N or --item ID"),
        (("--item", "no-such"), "no item 'no-such' in queue flagged_pairs"),
        (("--next", "0"), "Invalid value for '--next'"),
    ],
)
def test_a_claim_that_says_nothing_clear_is_refused_with_one_line(desk, sealdesk_main, args, says):
    ws, keys = desk
    refused = claim(sealdesk_main, ws, keys["rita"], *args, check=False)
    assert refused.returncode != 0
    assert says in refused.stderr
    assert held(sealdesk_main, ws) == {}


def test_claiming_needs_to_know_who_claims(desk, sealdesk_main, monkeypatch):
    ws, _ = desk
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    refused = sealdesk_main("claim", "--queue", PAIRS, "--next", "1", workspace=ws, check=False)
    assert refused.returncode != 0
    assert "a claim needs to know who is claiming" in refused.stderr


def test_one_person_holds_at_most_the_most_claims_one_may(desk, sealdesk_main, monkeypatch):
    ws, keys = desk
    monkeypatch.setattr(claims, "MAX_HELD", 5)
    first = claim(sealdesk_main, ws, keys["rita"], "--next", "5", "--json")
    top = [r["item_id"] for r in json.loads(first.stdout)]  # the first five in order
    # she gives back the first two and takes two from further down: five held still
    sealdesk_main(
        "claim", "--release", "--item", top[0], "--item", top[1], "--key", keys["rita"],
        workspace=ws, check=True,
    )  # fmt: skip
    below = [f"item-{k}" for k in range(40) if f"item-{k}" not in top][:2]
    claim(sealdesk_main, ws, keys["rita"], "--item", below[0], "--item", below[1])
    mine = sorted([*top[2:], *below])
    # the next two undecided items are new to her, and she holds the most she may: they
    # are passed over, she is told, and the two she gets are her own, renewed
    out = claim(sealdesk_main, ws, keys["rita"], "--next", "2", "--json")
    got = [r["item_id"] for r in json.loads(out.stdout)]
    assert len(got) == 2 and set(got) <= set(mine) and not set(got) & set(top[:2])
    assert "rita holds 5 claims, the most one person may hold at once: items new" in out.stderr
    assert sorted(i for i, who in held(sealdesk_main, ws).items() if who == "rita") == mine
    # a named item past the bound is refused and nothing is claimed; renewing goes on
    refused = claim(sealdesk_main, ws, keys["rita"], "--item", mine[0], "--item", "item-39",
                    check=False)  # fmt: skip
    assert refused.returncode == 3
    assert "rita holds 5 claims, the most one person may hold at once" in refused.stderr
    assert "nothing was claimed" in refused.stderr
    claim(sealdesk_main, ws, keys["rita"], "--item", mine[0])
    # the bound is each person's: sam still gets his
    out = claim(sealdesk_main, ws, keys["sam"], "--next", "5", "--json")
    assert len(json.loads(out.stdout)) == 5
    assert sorted(i for i, who in held(sealdesk_main, ws).items() if who == "rita") == mine


def test_a_lead_ends_someones_claims_and_nobody_else_may(desk, sealdesk_main, tmp_path):
    ws, keys = desk
    claim(sealdesk_main, ws, keys["rita"], "--item", "item-5")
    claim(sealdesk_main, ws, keys["sam"], "--next", "3")
    # a reviewer may not end a colleague's claims
    refused = sealdesk_main(
        "claim", "--release", "--of", "sam", "--key", keys["rita"], workspace=ws
    )
    assert refused.returncode == 3 and "rita may not sign as lead" in refused.stderr
    # nor may one who shows the lead's public key without holding the private one
    public = tmp_path / "lead.pub"
    public.write_bytes(keys["lead"].with_suffix(".pub").read_bytes())
    shown = sealdesk_main(
        "claim", "--release", "--of", "sam", "--key", public, workspace=ws,
        env={"SSH_AUTH_SOCK": ""},
    )  # fmt: skip
    assert shown.returncode != 0 and "released" not in shown.stdout
    assert sorted(held(sealdesk_main, ws).values()) == ["rita", "sam", "sam", "sam"]
    # the lead ends sam's, and only sam's
    out = sealdesk_main(
        "claim", "--release", "--of", "sam", "--key", keys["lead"], workspace=ws, check=True
    )
    assert f"released 3 claim(s) of sam, ended by {FOUNDER} (lead)" in out.stdout
    assert held(sealdesk_main, ws) == {"item-5": "rita"}
    # --of without --release says what it is for
    bad = sealdesk_main("claim", "--queue", PAIRS, "--of", "sam", "--next", "1", workspace=ws)
    assert bad.returncode == 2 and "--of names whose claims --release ends" in bad.stderr


def test_an_item_a_colleague_holds_is_theirs_whether_or_not_one_holds_the_most(
    desk, sealdesk_main, monkeypatch
):
    ws, keys = desk
    monkeypatch.setattr(claims, "MAX_HELD", 2)
    claim(sealdesk_main, ws, keys["sam"], "--item", "item-3")
    claim(sealdesk_main, ws, keys["rita"], "--item", "item-4", "--item", "item-5")
    # rita holds the most she may; item-3 is refused as sam's, not as one too many
    refused = claim(sealdesk_main, ws, keys["rita"], "--item", "item-3", check=False)
    assert refused.returncode == 4
    assert "flagged_pairs/item-3 is claimed: sam holds it until" in refused.stderr
    assert held(sealdesk_main, ws) == {"item-3": "sam", "item-4": "rita", "item-5": "rita"}
