"""``sealdesk agreement`` end to end: two reviewers and a lead decide through the CLI on a
real workspace (real SQLite, real ssh-keygen signatures), and the command's figures are
those of the statistics on the same labels, and scikit-learn's Cohen's kappa."""

from __future__ import annotations

import json

import pytest
from sklearn.metrics import cohen_kappa_score

from engine.agreement.stats import agreement
from engine.workspace import Workspace
from tests.conftest import FOUNDER
from tests.support.backlog import make_items
from tests.support.cli_workspace import found_through_cli

PAIRS, WEAK = "flagged_pairs", "weak_categories"
# What each reviewer finally stands by on the flagged pairs (None: no rating).
RITA = ["reject", "reject", "accept", "reject", "reject", "accept", "reject", None]
BEN = ["reject", "accept", "accept", "reject", "reject", "reject", None, None]
# On the weak categories the lead settles items 0 and 1.
RITA_WEAK = ["accept", "reject", "reject", "accept"]
BEN_WEAK = ["reject", "accept", "reject", "reject"]
LEAD_WEAK = ["reject", "accept"]


@pytest.fixture
def desk(tmp_path, sealdesk_main, keygen, founder_key):
    ws = tmp_path / "ws"
    keys = {name: keygen(name) for name in ("rita", "ben")}
    keys["founder"] = founder_key
    found_through_cli(
        sealdesk_main,
        ws,
        FOUNDER,
        founder_key,
        [("rita", "reviewer", keys["rita"]), ("ben", "reviewer", keys["ben"])],
        make_items(8) + make_items(4, queue=WEAK),
    )

    def decide(who: str, queue: str, decision: str, *items: int, extra: tuple = ()) -> None:
        ids = [arg for i in items for arg in ("--item", f"item-{i}")]
        sealdesk_main(
            "decide", "--queue", queue, *ids, "--decision", decision,
            "--key", keys[who], *extra, workspace=ws, check=True,
        )  # fmt: skip

    # rita first accepts item 0, then changes her mind: her latest decision stands.
    decide("rita", PAIRS, "accept", 0)
    decide("rita", PAIRS, "reject", 0, 1, 3, 4, 6)
    decide("rita", PAIRS, "accept", 2, 5, 7)
    # ... and retracts item 7: no rating of hers there.
    sealdesk_main(
        "undo", "--queue", PAIRS, "--item", "item-7", "--key", keys["rita"],
        workspace=ws, check=True,
    )  # fmt: skip
    over = ("--overrule",)
    decide("ben", PAIRS, "reject", 0, 3, 4, 5, extra=over)
    decide("ben", PAIRS, "accept", 1, 2, extra=over)
    decide("ben", PAIRS, "skip", 6, extra=over)  # a skip is no rating
    decide("rita", WEAK, "accept", 0, 3)
    decide("rita", WEAK, "reject", 1, 2)
    decide("ben", WEAK, "accept", 1, extra=over)
    decide("ben", WEAK, "reject", 0, 2, 3, extra=over)
    lead = ("--role", "lead", "--overrule")
    decide("founder", WEAK, "reject", 0, extra=lead)
    decide("founder", WEAK, "accept", 1, extra=lead)
    return ws


def labels(*raters: tuple[str, list]) -> list[dict[str, str]]:
    """Gives per item the raters' labels, leaving out those with none."""
    width = len(raters[0][1])
    return [{name: said[i] for name, said in raters if said[i] is not None} for i in range(width)]


def figures(items: list[dict[str, str]]) -> dict:
    return agreement(items, categories=("accept", "reject")).to_json()


def test_the_agreement_json_is_the_statistics_on_the_labels_the_reviewers_signed(desk, sealdesk):
    proc = sealdesk("agreement", "--json", workspace=desk, check=True)
    report = json.loads(proc.stdout)
    assert report["method"]["resamples"] == 1000 and report["method"]["seed"] == 1
    pairs, weak = report["queues"]
    assert (pairs["queue"], weak["queue"]) == (PAIRS, WEAK)

    both = [item for item in labels(("ben", BEN), ("rita", RITA)) if len(item) == 2]
    assert len(both) == 6
    assert pairs["all"] == figures(both)
    assert pairs["rated_items"] == 7  # item 6 by rita only (ben skipped), item 7 by nobody
    (pair,) = pairs["pairs"]
    assert pair["raters"] == ["ben", "rita"] and pair["statistics"] == figures(both)["statistics"]
    theirs = cohen_kappa_score([i["rita"] for i in both], [i["ben"] for i in both])
    assert pairs["all"]["statistics"]["cohen_kappa"]["value"] == pytest.approx(theirs, abs=1e-12)
    assert pairs["all"]["statistics"]["raw"]["value"] == pytest.approx(4 / 6)
    assert pairs["all"]["statistics"]["cohen_kappa"]["items"] == 6
    assert pairs["against_outcome"] == []  # no adjudicator or lead decided a pair

    # Weak categories: the lead settled items 0 and 1; each reviewer against that outcome.
    both_weak = labels(("ben", BEN_WEAK), ("rita", RITA_WEAK))
    assert weak["all"] == figures(both_weak)
    against = {a["principal"]: a for a in weak["against_outcome"]}
    for name, said in (("rita", RITA_WEAK), ("ben", BEN_WEAK)):
        expected = figures([{name: said[i], "outcome": LEAD_WEAK[i]} for i in range(2)])
        assert against[name]["statistics"] == expected["statistics"]
        assert against[name]["statistics"]["raw"]["items"] == 2
    assert against["rita"]["statistics"]["raw"]["value"] == 0.0
    assert against["ben"]["statistics"]["raw"]["value"] == 1.0


def test_the_table_names_each_statistic_with_its_interval(desk, sealdesk_main):
    proc = sealdesk_main("agreement", "--queue", PAIRS, workspace=desk, check=True)
    out = proc.stdout
    assert "flagged_pairs: 7 item(s) rated as reviewer, 6 by two or more" in out
    for name in ("raw agreement", "Cohen's kappa", "Fleiss' kappa", "Krippendorff's alpha"):
        assert name in out
    kappa = figures([i for i in labels(("ben", BEN), ("rita", RITA)) if len(i) == 2])
    k = kappa["statistics"]["cohen_kappa"]
    assert f"{k['value']:.3f}" in out and f"{k['low']:.3f}–{k['high']:.3f}" in out
    assert "seed 1" in out and WEAK not in out


def test_the_figures_come_from_the_signed_bodies_not_the_query_columns(desk, sealdesk_main):
    # Rewrite a decision column under the append-only triggers' nose (as a shell on the
    # host could): the figures still follow what was signed.
    before = json.loads(sealdesk_main("agreement", "--json", workspace=desk, check=True).stdout)
    ws = Workspace.open(desk)
    try:
        ws.conn.execute("DROP TRIGGER records_no_update")
        ws.conn.execute(
            "UPDATE records SET decision = 'accept' WHERE kind = 'decision' AND decision = 'reject'"
        )
        ws.conn.commit()
    finally:
        ws.close()
    after = json.loads(sealdesk_main("agreement", "--json", workspace=desk, check=True).stdout)
    assert after == before


def test_a_queue_nobody_rated_says_so(desk, sealdesk_main):
    proc = sealdesk_main("agreement", "--queue", "adjudication", "--json", workspace=desk)
    (queue,) = json.loads(proc.stdout)["queues"]
    assert queue["rated_items"] == 0 and queue["all"]["items"] == 0
    assert queue["all"]["statistics"]["gwet_ac1"]["value"] is None


def test_a_principals_name_is_printed_with_its_hidden_characters_shown(
    tmp_path, sealdesk_main, keygen, founder_key
):
    # A Hangul filler is printable, so a principal may be named with one: it draws as
    # nothing, and "eve" + filler would pass for "eve" unless it is shown.
    ws, odd = tmp_path / "ws", "eve\u3164"
    keys = {"eve": keygen("eve"), "ben": keygen("ben")}
    found_through_cli(
        sealdesk_main,
        ws,
        FOUNDER,
        founder_key,
        [(odd, "reviewer", keys["eve"]), ("ben", "reviewer", keys["ben"])],
        make_items(1),
    )
    for who, extra in (("eve", ()), ("ben", ("--overrule",))):
        sealdesk_main(
            "decide", "--queue", PAIRS, "--item", "item-0", "--decision", "accept",
            "--key", keys[who], *extra, workspace=ws, check=True,
        )  # fmt: skip
    table = sealdesk_main("agreement", workspace=ws, check=True).stdout
    assert "\u3164" not in table and "ben, eve⟨U+3164⟩" in table
    raw = sealdesk_main("agreement", "--json", workspace=ws, check=True).stdout
    assert "\u3164" not in raw and "\\u3164" in raw
    assert json.loads(raw)["queues"][0]["all"]["raters"] == ["ben", odd]
