"""Reasons inside the decision, and guidelines per queue.

A decision carries its reason code, a rationale and the SHA-256 of the queue's
guidelines in its signed ``data``; an unknown code is refused before anything
is signed; a lead sets a queue's codes and guidelines from files, refused whole
when anything in them is wrong; what the files say reaches a terminal only
through the sanitiser.
"""

from __future__ import annotations

import json
import sqlite3

from engine.canonical import sha256_hex, strict_loads
from engine.reasons import DEFAULTS
from engine.roles import QUEUES
from engine.signoff.verify import verify_workspace
from engine.workspace import Workspace

PAIRS = "flagged_pairs"


def records(ws) -> int:
    conn = sqlite3.connect(ws / "sealdesk.db")
    try:
        return conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    finally:
        conn.close()


def last_data(ws):
    conn = sqlite3.connect(ws / "sealdesk.db")
    try:
        (message,) = conn.execute(
            "SELECT message FROM records ORDER BY seq DESC LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    return strict_loads(message)["data"]


def decide(sealdesk_main, ws, keys, *extra, item="item-0", decision="reject", who="rita"):
    return sealdesk_main(
        "decide",
        "--queue",
        PAIRS,
        "--item",
        item,
        "--decision",
        decision,
        "--key",
        keys[who],
        *extra,
        workspace=ws,
    )


def test_every_queue_has_default_codes_a_key_can_pick():
    assert set(DEFAULTS) == set(QUEUES)
    for reasons in DEFAULTS.values():
        assert 1 <= len(reasons) <= 9
        assert len({r.code for r in reasons}) == len(reasons)
    assert [r.code for r in DEFAULTS[PAIRS]] == [
        "exact-copy",
        "paraphrase",
        "new-numbers",
        "template-sibling",
        "different-problem",
    ]


def test_a_decision_signs_its_reason_and_rationale(cli_ws, sealdesk_main):
    ws, keys = cli_ws
    out = decide(
        sealdesk_main, ws, keys, "--reason", "paraphrase", "--rationale", "same steps, reworded"
    )
    assert out.returncode == 0, out.stderr
    assert "reason paraphrase" in out.stdout
    assert last_data(ws) == {"reason": "paraphrase", "rationale": "same steps, reworded"}
    with Workspace.open(ws) as opened:
        assert not verify_workspace(opened).faults


def test_an_unknown_reason_is_refused_naming_the_field_and_nothing_is_signed(cli_ws, sealdesk_main):
    ws, keys = cli_ws
    before = records(ws)
    out = decide(sealdesk_main, ws, keys, "--reason", "looks-fine")
    assert out.returncode != 0
    (line,) = out.stderr.strip().splitlines()
    assert "reason" in line and "looks-fine" in line and "exact-copy" in line
    assert records(ws) == before


def test_a_blank_rationale_is_refused_and_nothing_is_signed(cli_ws, sealdesk_main):
    ws, keys = cli_ws
    before = records(ws)
    out = decide(sealdesk_main, ws, keys, "--rationale", "   ")
    assert out.returncode != 0 and "rationale" in out.stderr
    assert records(ws) == before


def test_the_same_decision_with_another_reason_is_signed_again(cli_ws, sealdesk_main):
    ws, keys = cli_ws
    decide(sealdesk_main, ws, keys, "--reason", "paraphrase")
    again = decide(sealdesk_main, ws, keys, "--reason", "paraphrase")
    assert "nothing signed" in again.stdout
    other = decide(sealdesk_main, ws, keys, "--reason", "exact-copy")
    assert "reason exact-copy" in other.stdout
    assert last_data(ws) == {"reason": "exact-copy"}


def test_items_json_and_history_show_the_reason(cli_ws, sealdesk_main):
    ws, keys = cli_ws
    decide(sealdesk_main, ws, keys, "--reason", "new-numbers", "--rationale", "only 3 -> 4")
    rows = json.loads(
        sealdesk_main("items", "--queue", PAIRS, "--json", workspace=ws, check=True).stdout
    )
    made = {r["item_id"]: r["decision"] for r in rows}
    assert made["item-0"]["reason"] == "new-numbers"
    assert made["item-0"]["rationale"] == "only 3 -> 4"
    assert made["item-1"] is None
    with Workspace.open(ws, read_only=True) as opened:
        (rec,) = [r for r in opened.history(PAIRS, "item-0") if r["kind"] == "decision"]
        assert rec["reason"] == "new-numbers" and rec["rationale"] == "only 3 -> 4"
        assert opened.item(PAIRS, "item-0")["decision"]["reason"] == "new-numbers"


def test_a_lead_sets_a_queues_codes_and_decisions_check_against_them(
    cli_ws, sealdesk_main, tmp_path
):
    ws, keys = cli_ws
    mine = tmp_path / "pairs-reasons.txt"
    mine.write_text("# ours\nverbatim   Copied word for word\nrenamed    Names changed\n")
    out = sealdesk_main(
        "reasons",
        "set",
        "--queue",
        PAIRS,
        mine,
        "--lead-key",
        keys["founder"],
        workspace=ws,
        check=True,
    )
    assert "2 reason(s) set" in out.stdout
    listed = sealdesk_main("reasons", "list", "--queue", PAIRS, workspace=ws, check=True).stdout
    assert listed.splitlines()[0].split()[:2] == ["1", "verbatim"]
    assert decide(sealdesk_main, ws, keys, "--reason", "exact-copy").returncode != 0
    assert decide(sealdesk_main, ws, keys, "--reason", "renamed").returncode == 0
    sealdesk_main(
        "reasons",
        "reset",
        "--queue",
        PAIRS,
        "--lead-key",
        keys["founder"],
        workspace=ws,
        check=True,
    )
    assert "exact-copy" in sealdesk_main("reasons", "list", "--queue", PAIRS, workspace=ws).stdout


def test_a_bad_reasons_file_is_refused_naming_its_line_and_field_and_writes_nothing(
    cli_ws, sealdesk_main, tmp_path
):
    ws, keys = cli_ws
    bad = tmp_path / "bad.txt"
    bad.write_text("verbatim  Copied\nNot-A-Code  Shouty\n")
    out = sealdesk_main(
        "reasons", "set", "--queue", PAIRS, bad, "--lead-key", keys["founder"], workspace=ws
    )
    assert out.returncode != 0
    (line,) = out.stderr.strip().splitlines()
    assert f"{bad}:2" in line and "code" in line
    assert not (ws / "reasons" / f"{PAIRS}.txt").exists()
    nolabel = tmp_path / "nolabel.txt"
    nolabel.write_text("verbatim\n")
    out = sealdesk_main(
        "reasons", "set", "--queue", PAIRS, nolabel, "--lead-key", keys["founder"], workspace=ws
    )
    assert f"{nolabel}:1" in out.stderr and "label" in out.stderr


def test_only_a_lead_sets_codes_or_guidelines(cli_ws, sealdesk_main, tmp_path):
    ws, keys = cli_ws
    mine = tmp_path / "g.md"
    mine.write_text("Reject only what is copied.\n")
    for group in ("reasons", "guidelines"):
        out = sealdesk_main(
            group, "set", "--queue", PAIRS, mine, "--lead-key", keys["rita"], workspace=ws
        )
        assert out.returncode != 0 and "lead" in out.stderr
    assert not (ws / "guidelines").exists() and not (ws / "reasons").exists()


def test_decisions_made_under_guidelines_carry_their_sha256(cli_ws, sealdesk_main, tmp_path):
    ws, keys = cli_ws
    text = tmp_path / "pairs.md"
    text.write_text("Reject a pair only when the problem is the same.\n")
    out = sealdesk_main(
        "guidelines",
        "set",
        "--queue",
        PAIRS,
        text,
        "--lead-key",
        keys["founder"],
        workspace=ws,
        check=True,
    )
    digest = sha256_hex(text.read_bytes())
    assert digest in out.stdout
    decide(sealdesk_main, ws, keys, "--reason", "exact-copy")
    assert last_data(ws) == {"guidelines_sha256": digest, "reason": "exact-copy"}
    decide(sealdesk_main, ws, keys, item="item-1", decision="accept")
    assert last_data(ws) == {"guidelines_sha256": digest}
    sealdesk_main(
        "guidelines", "clear", "--queue", PAIRS, "--lead-key", keys["founder"], workspace=ws
    )
    decide(sealdesk_main, ws, keys, item="item-2", decision="accept")
    assert last_data(ws) is None
    with Workspace.open(ws) as opened:
        assert not verify_workspace(opened).faults


def test_guidelines_with_an_escape_sequence_are_shown_never_interpreted(
    cli_ws, sealdesk_main, tmp_path
):
    ws, keys = cli_ws
    hostile = tmp_path / "hostile.md"
    hostile.write_text("Be careful\x1b]52;c;cGF3bmVk\x07 and \x1b[2J here\u202e.\n")
    sealdesk_main(
        "guidelines",
        "set",
        "--queue",
        PAIRS,
        hostile,
        "--lead-key",
        keys["founder"],
        workspace=ws,
        check=True,
    )
    shown = sealdesk_main("guidelines", "show", "--queue", PAIRS, workspace=ws, check=True).stdout
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "␛]52;c;cGF3bmVk␇" in shown and "⟨U+202E⟩" in shown


def test_guidelines_that_are_not_utf8_are_refused_and_write_nothing(
    cli_ws, sealdesk_main, tmp_path
):
    ws, keys = cli_ws
    bad = tmp_path / "latin1.md"
    bad.write_bytes(b"line one\nna\xefve\n")
    out = sealdesk_main(
        "guidelines", "set", "--queue", PAIRS, bad, "--lead-key", keys["founder"], workspace=ws
    )
    assert out.returncode != 0 and f"{bad}:2" in out.stderr
    assert not (ws / "guidelines" / f"{PAIRS}.md").exists()
