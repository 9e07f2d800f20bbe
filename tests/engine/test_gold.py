"""Gold items end to end through the CLI: a lead commits to known answers by hash before
review, reviewers decide the items like any other, the lead reveals the answers; each
reviewer's accuracy is shown and bound in the sign-off, gold stays out of the agreement
figures, and verify catches answers that are not those committed to or gold chosen
after a decision (real SQLite, real ssh-keygen signatures)."""

from __future__ import annotations

import json

import pytest

from engine.canonical import canonical_json
from engine.ledger import store
from engine.ledger.gold import commitment
from engine.ledger.signers import FileSigner
from engine.workspace import Workspace
from tests.conftest import FOUNDER
from tests.support.backlog import make_items
from tests.support.cli_workspace import found_through_cli

PAIRS = "flagged_pairs"
GOLD = {"item-0": "accept", "item-1": "reject", "item-2": "accept"}


@pytest.fixture
def desk(tmp_path, sealdesk_main, keygen, founder_key):
    ws = tmp_path / "ws"
    keys = {name: keygen(name) for name in ("rita", "ben")}
    keys["lead"] = founder_key
    found_through_cli(
        sealdesk_main, ws, FOUNDER, founder_key,
        [("rita", "reviewer", keys["rita"]), ("ben", "reviewer", keys["ben"])],
        make_items(8),
    )  # fmt: skip
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(GOLD), encoding="utf-8")
    return ws, keys, answers, tmp_path / "sealed.json"


def decide(run, ws, key, decision, *items, extra=()):
    ids = [a for i in items for a in ("--item", i)]
    run(
        "decide", "--queue", PAIRS, *ids, "--decision", decision, "--key", key, *extra,
        workspace=ws, check=True,
    )  # fmt: skip


def commit(run, ws, keys, answers, sealed, check=True):
    return run(
        "gold", "commit", "--queue", PAIRS, "--answers", answers, "--out", sealed,
        "--key", keys["lead"], workspace=ws, check=check,
    )  # fmt: skip


def test_accuracy_on_gold_is_shown_bound_and_kept_out_of_agreement(desk, sealdesk_main):
    ws, keys, answers, sealed = desk
    commit(sealdesk_main, ws, keys, answers, sealed)
    held = json.loads(sealed.read_text())
    assert held["answers"] == GOLD and held["queue"] == PAIRS
    # the commit binds the answers by hash only: the record does not say them
    with Workspace.open(ws, read_only=True) as w:
        (message,) = w.conn.execute("SELECT message FROM records WHERE kind='gold'").fetchone()
    assert "item-0" not in message
    assert json.loads(message)["data"]["sha256"] == commitment(PAIRS, GOLD, held["salt"])
    decide(sealdesk_main, ws, keys["rita"], "accept", "item-0", "item-2", "item-3", "item-4")
    decide(sealdesk_main, ws, keys["rita"], "reject", "item-1", "item-5", "item-6", "item-7")
    over = ("--overrule",)
    decide(sealdesk_main, ws, keys["ben"], "reject", "item-0", "item-1", "item-3", extra=over)
    decide(sealdesk_main, ws, keys["ben"], "accept", "item-4", "item-5", extra=over)
    # not revealed yet: the sign-off waits for it
    out = sealdesk_main("signoff", "--key", keys["lead"], "--yes", workspace=ws)
    assert out.returncode != 0 and "is not revealed" in out.stderr
    sealdesk_main("gold", "reveal", "--sealed", sealed, "--key", keys["lead"], workspace=ws,
                  check=True)  # fmt: skip
    out = sealdesk_main("gold", "accuracy", "--json", workspace=ws, check=True)
    figures = json.loads(out.stdout)["accuracy"][PAIRS]
    assert figures["gold_items"] == 3
    assert figures["principals"] == {
        "rita": {"decided": 3, "correct": 3},
        "ben": {"decided": 2, "correct": 1},
    }
    # agreement is over the items both rated that are not gold: 3, 4 and 5
    out = sealdesk_main("agreement", "--queue", PAIRS, "--json", workspace=ws, check=True)
    (queue,) = json.loads(out.stdout)["queues"]
    assert queue["all"]["items"] == 3
    assert queue["all"]["statistics"]["raw"]["value"] == pytest.approx(1 / 3)
    summary = sealdesk_main("signoff", "--summary-only", workspace=ws, check=True).stdout
    assert "rita: 3/3 decided as the answer" in summary
    assert "ben: 1/2 decided as the answer" in summary
    sealdesk_main("signoff", "--key", keys["lead"], "--yes", workspace=ws, check=True)
    with Workspace.open(ws, read_only=True) as w:
        (message,) = w.conn.execute(
            "SELECT message FROM records WHERE kind='signoff' ORDER BY seq DESC LIMIT 1"
        ).fetchone()
    assert json.loads(message)["data"]["review"]["gold"]["accuracy"][PAIRS] == figures
    assert sealdesk_main("verify", workspace=ws).returncode == 0


def test_gold_is_committed_before_anyone_decides_it(desk, sealdesk_main):
    ws, keys, answers, sealed = desk
    decide(sealdesk_main, ws, keys["rita"], "accept", "item-1")
    with Workspace.open(ws, read_only=True) as w:
        head = w.head()
    out = commit(sealdesk_main, ws, keys, answers, sealed, check=False)
    assert out.returncode != 0 and "item-1 is decided already" in out.stderr
    assert not sealed.exists()
    with Workspace.open(ws, read_only=True) as w:
        assert w.head() == head


def test_a_reveal_with_other_answers_is_refused(desk, sealdesk_main):
    ws, keys, answers, sealed = desk
    commit(sealdesk_main, ws, keys, answers, sealed)
    held = json.loads(sealed.read_text())
    held["answers"]["item-1"] = "accept"  # the lead changes an answer after the review
    sealed.write_bytes(canonical_json(held))
    out = sealdesk_main("gold", "reveal", "--sealed", sealed, "--key", keys["lead"], workspace=ws)
    assert out.returncode != 0 and "do not hash to what its commit bound" in out.stderr


def _append_gold(ws, key, data):
    """Appends a lead-signed gold record without the workspace's checks (a forger with the
    lead's key and the database)."""
    with Workspace.open(ws) as w:
        signer = FileSigner(key)
        principal, role = w.identify(signer, role="lead")
        return store.append(
            w.db, signer, workspace_id=w.workspace_id, principal=principal, role=role,
            kind="gold", check=None, data=data,
        )  # fmt: skip


@pytest.mark.parametrize("forgery", ["other answers", "chosen after a decision"])
def test_verify_catches_a_forged_reveal(desk, sealdesk_main, forgery):
    ws, keys, _, _ = desk
    salt = "ab" * 16
    if forgery == "chosen after a decision":
        decide(sealdesk_main, ws, keys["rita"], "accept", "item-0")
    made = _append_gold(
        ws, keys["lead"],
        {"type": "commit", "queue": PAIRS, "count": 3, "sha256": commitment(PAIRS, GOLD, salt)},
    )  # fmt: skip
    shown = dict(GOLD, **({"item-1": "accept"} if forgery == "other answers" else {}))
    _append_gold(
        ws, keys["lead"],
        {"type": "reveal", "commit": made.record_hash, "answers": shown, "salt": salt},
    )  # fmt: skip
    out = sealdesk_main("verify", workspace=ws)
    assert out.returncode != 0
    says = {
        "other answers": "do not hash to what its commit bound",
        "chosen after a decision": "gold chosen after a decision",
    }[forgery]
    assert says in out.stdout + out.stderr


def test_a_commit_is_revealed_once(desk, sealdesk_main):
    ws, keys, answers, sealed = desk
    commit(sealdesk_main, ws, keys, answers, sealed)
    reveal = ("gold", "reveal", "--sealed", sealed, "--key", keys["lead"])
    sealdesk_main(*reveal, workspace=ws, check=True)
    again = sealdesk_main(*reveal, workspace=ws)
    assert again.returncode != 0 and "revealed already" in again.stderr
