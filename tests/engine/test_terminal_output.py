"""Hostile titles, texts and ids go in through ``ingest`` and ``scan contamination``;
every command that prints them shows their controls visibly and interprets none,
and its JSON still reads back as exactly the strings that went in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.canonical import canonical_json
from engine.workspace import BacklogItem
from tests.conftest import FOUNDER
from tests.support.cli_workspace import decide_args, found_through_cli
from tests.support.hostile_text import HOSTILE, HOSTILE_IDS, OSC52, unsafe_characters

WIDE = {"COLUMNS": "250"}  # so Rich's table does not wrap a title over two rows


def _hostile_items() -> list[BacklogItem]:
    """One flagged pair per hostile string (as title and text), then one per hostile id."""
    made = [
        BacklogItem.make(
            "flagged_pairs",
            f"fp-{name}",
            "run-hostile",
            {"summary": {"title": text, "score": 0.5}, "eval": {"id": name, "text": text}},
        )
        for name, text in HOSTILE.items()
    ]
    made += [
        BacklogItem.make(
            "flagged_pairs",
            item_id,
            "run-hostile",
            {"summary": {"title": f"id {name}", "score": 0.4}, "eval": {"id": item_id}},
        )
        for name, item_id in HOSTILE_IDS.items()
    ]
    return made


@pytest.fixture
def hostile_ws(tmp_path, sealdesk_main, keygen, founder_key) -> tuple[Path, Path]:
    """Gives a workspace (founded and fed through the CLI) holding the hostile items,
    and rita's key (an enrolled reviewer)."""
    ws = tmp_path / "ws"
    rita = keygen("rita")
    found_through_cli(
        sealdesk_main, ws, FOUNDER, founder_key, [("rita", "reviewer", rita)], _hostile_items()
    )
    return ws, rita


def test_items_shows_every_hostile_title_visibly(hostile_ws, sealdesk_main):
    ws, _ = hostile_ws
    proc = sealdesk_main("items", workspace=ws, env=WIDE, check=True)
    assert unsafe_characters(proc.stdout + proc.stderr) == []
    assert "clip ␛]52;c;" in proc.stdout
    assert "clear ␛[2J␛[HFAKE" in proc.stdout
    assert "c1 ⟨U+009B⟩2J" in proc.stdout
    assert "invoice_⟨U+202E⟩exe.txt" in proc.stdout
    assert "one␊two␉three" in proc.stdout
    assert "fp-⟨U+202E⟩evil" in proc.stdout and "fp-a⟨U+200B⟩b" in proc.stdout
    # Rich markup from data is text: shown as typed, not applied.
    assert "[bold red]RED[/bold red] [link=https://evil.example]click" in proc.stdout
    assert "fp-[bold]x[/bold]" in proc.stdout


def test_items_json_is_exact_and_holds_no_raw_control(hostile_ws, sealdesk_main):
    ws, _ = hostile_ws
    for extra in ((), ("--payload",)):
        proc = sealdesk_main("items", "--json", *extra, workspace=ws, check=True)
        assert unsafe_characters(proc.stdout) == []
        rows = {row["item_id"]: row for row in json.loads(proc.stdout)}
        for name, text in HOSTILE.items():
            assert rows[f"fp-{name}"]["title"] == text
            if extra:
                assert rows[f"fp-{name}"]["payload"]["eval"]["text"] == text
        for item_id in HOSTILE_IDS.values():
            assert item_id in rows


def test_decide_and_undo_show_hostile_ids_visibly(hostile_ws, sealdesk_main):
    ws, rita = hostile_ws
    shown = {}
    for item_id in HOSTILE_IDS.values():
        decided = sealdesk_main(*decide_args(rita, item_id), workspace=ws, check=True)
        undone = sealdesk_main(
            "undo", "--queue", "flagged_pairs", "--item", item_id, "--key", rita, workspace=ws
        )
        assert undone.returncode == 0, undone.stderr
        shown[item_id] = decided.stdout + decided.stderr + undone.stdout + undone.stderr
        assert unsafe_characters(shown[item_id]) == []
    assert "accept flagged_pairs/fp-⟨U+202E⟩evil by rita" in shown[HOSTILE_IDS["bidi-id"]]
    assert "on flagged_pairs/fp-a⟨U+200B⟩b" in shown[HOSTILE_IDS["zero-width-id"]]


def test_an_error_quoting_hostile_input_shows_it_visibly(hostile_ws, sealdesk_main, tmp_path):
    ws, rita = hostile_ws
    # A field name is quoted by the refusal as it was written.
    bad = tmp_path / "bad.jsonl"
    item = BacklogItem.make("flagged_pairs", "fp-x", "run-hostile", {"t": 1}).to_json()
    item["\x1b]0;TITLE\x07\u202e"] = 1
    bad.write_bytes(canonical_json(item) + b"\n")
    proc = sealdesk_main("ingest", bad, workspace=ws)
    assert proc.returncode == 2
    assert unsafe_characters(proc.stderr) == [], proc.stderr
    assert "␛]0;TITLE␇⟨U+202E⟩" in proc.stderr
    # An unknown id given on the command line comes back in the refusal.
    proc = sealdesk_main(*decide_args(rita, f"no-such {OSC52}\u202e"), workspace=ws)
    assert proc.returncode == 2
    assert unsafe_characters(proc.stderr) == [], proc.stderr


def test_the_signoff_summary_lists_hostile_pending_titles_visibly(hostile_ws, sealdesk_main):
    ws, _ = hostile_ws
    proc = sealdesk_main("signoff", "--summary-only", workspace=ws, env=WIDE, check=True)
    assert unsafe_characters(proc.stdout + proc.stderr) == []
    assert "clear ␛[2J␛[HFAKE" in proc.stdout
    proc = sealdesk_main("signoff", "--summary-only", "--json", workspace=ws, check=True)
    assert unsafe_characters(proc.stdout) == []
    pending = {p["item_id"]: p for p in json.loads(proc.stdout)["pending"]}
    assert pending["fp-csi-clear"]["title"] == HOSTILE["csi-clear"]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_scan_of_hostile_eval_ids_and_texts_prints_them_visibly(
    tmp_path, sealdesk, keygen, founder_key
):
    ws = tmp_path / "ws"
    found_through_cli(sealdesk, ws, FOUNDER, founder_key)
    shared = "Natalia sold clips to 48 of her friends in April and then half as many in May"
    evals = [
        {"id": f"{name} {OSC52}", "text": f"{shared} {text}"}
        for name, text in HOSTILE.items()
        if name != "long-line"
    ]
    ev = _write_jsonl(tmp_path / "eval.jsonl", evals)
    pool = _write_jsonl(tmp_path / "pool.jsonl", [{"id": "web-1", "text": shared}])
    args = ("scan", "contamination", "--eval", ev, "--pool", pool, "--no-embed")
    proc = sealdesk(*args, workspace=ws, env=WIDE)
    assert proc.returncode == 0, proc.stderr
    assert unsafe_characters(proc.stdout + proc.stderr) == []
    listed = sealdesk("items", workspace=ws, env=WIDE, check=True)
    assert unsafe_characters(listed.stdout + listed.stderr) == []
    assert "␛]52;c;" in listed.stdout
    as_json = sealdesk("items", "--json", "--payload", workspace=ws, check=True)
    assert unsafe_characters(as_json.stdout) == []
    held = {row["payload"]["eval"]["id"] for row in json.loads(as_json.stdout)}
    assert held == {row["id"] for row in evals}


def test_exam_queue_and_items_json_keep_hostile_completions_off_the_terminal(
    tmp_path, sealdesk, init_cli
):
    from tests.support.exam_builders import claim, write_exam

    # Completions a model wrote, quoting whatever its prompt held: the lanes disagree on
    # their claims, so every candidate is queued for adjudication with its span as title.
    api = f"The API {OSC52} is live."
    cache = "The cache \u202eis warm\u202c [bold]now[/bold]."
    texts = {"c1": f"{api} {cache}", "c2": "The queue \x9b2J is empty."}
    exam = write_exam(
        tmp_path / "exam",
        texts,
        {"c1": [claim(api, "runtime", "API")], "c2": []},
        {"c1": [claim(cache, "runtime", "cache")], "c2": [claim("The queue \x9b2J is empty.")]},
        sweep={"c1": [], "c2": []},
    )
    ws = tmp_path / "ws"
    init_cli(ws)
    out = sealdesk("exam", "adjudicate", "--run-id", "ex", *exam.cli_inputs(), workspace=ws)
    assert out.returncode == 0, out.stderr
    assert unsafe_characters(out.stdout + out.stderr) == []
    queue = sealdesk("exam", "queue", "--run-id", "ex", workspace=ws, env=WIDE, check=True)
    assert unsafe_characters(queue.stdout + queue.stderr, allowed="\n\t") == []
    assert len(queue.stdout.splitlines()) == 3  # no title split a line, nor a field
    assert all(line.count("\t") == 3 for line in queue.stdout.splitlines())
    # The exam titles an item by its span's repr: the controls are already spelled out.
    assert "The API \\x1b]52;c;" in queue.stdout
    assert "\\u202eis warm\\u202c [bold]now[/bold]" in queue.stdout
    assert "The queue \\x9b2J" in queue.stdout
    listed = sealdesk("items", "--queue", "adjudication", workspace=ws, env=WIDE, check=True)
    assert unsafe_characters(listed.stdout + listed.stderr) == []
    assert "The API \\x1b]52;c;" in listed.stdout
    as_json = sealdesk("items", "--queue", "adjudication", "--json", "--payload", workspace=ws)
    assert unsafe_characters(as_json.stdout) == []
    held = {row["payload"]["completion"]["text"] for row in json.loads(as_json.stdout)}
    assert held == set(texts.values())
