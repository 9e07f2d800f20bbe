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
