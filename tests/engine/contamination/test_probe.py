"""The behavioral probe against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engine.contamination.channels.probe import mask_last_number
from engine.contamination.inputs.sources import resolve_source
from engine.contamination.scan import ScanConfig, run_scan
from engine.errors import InputError
from engine.workspace import Workspace
from tests.support.scan_cli import scan_args

# id: (question, worked answer, memorized by the model?, solved by the model?)
ITEMS = {
    "a": (
        "Ann has 3 bags with 4 apples each. How many apples?",
        "3 * 4 = 12\n#### 12",
        True,
        False,
    ),
    "b": ("Bo reads 5 pages a day for 6 days. How many pages?", "5 * 6 = 30\n#### 30", True, True),
    "c": ("Cy buys 7 pens and loses 2. How many are left?", "7 - 2 = 5\n#### 5", False, True),
    "d": ("Di saves 9 dollars a week for 8 weeks. How much?", "9 * 8 = 72\n#### 72", False, False),
    "e": (
        "Ed runs 1,200 metres twice. How far in total?",
        "2 * 1,200 = 2,400\n#### 2,400",
        True,
        False,
    ),
    "f": ("Fay wonders which colour is nicest.", "It depends on taste.", False, False),
}


class FakeModel(BaseHTTPRequestHandler):
    """Answers like a served model that memorized some items and can solve others."""

    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeModel.requests.append({"path": self.path, **body})
        prompt = body["messages"][0]["content"]
        reply = "I am not sure, maybe 3."
        for question, answer, memorized, solved in ITEMS.values():
            if question not in prompt:
                continue
            gold = mask_last_number(answer)[1]
            if prompt.startswith("Fill in the blank") and memorized:
                reply = gold
            elif prompt.startswith("Solve") and solved:
                reply = f"Working it out step by step, the answer is {gold}"
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args) -> None:
        pass


def serve(handler):
    """Serves handler on a free port of 127.0.0.1; gives the /v1 base URL, then stops it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture
def endpoint():
    FakeModel.requests = []
    yield from serve(FakeModel)


def files(tmp_path: Path) -> tuple[Path, Path]:
    ev = tmp_path / "eval.jsonl"
    ev.write_text(
        "".join(
            json.dumps({"id": k, "question": q, "answer": a}) + "\n"
            for k, (q, a, _, _) in ITEMS.items()
        ),
        encoding="utf-8",
    )
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"id": "p", "text": "nothing to see"}) + "\n", encoding="utf-8")
    return ev, pool


def config(ev: Path, pool: Path, url: str) -> ScanConfig:
    return ScanConfig.of(
        eval=resolve_source("eval", str(ev), text_field="question", id_field="id"),
        pool=resolve_source("pool", str(pool), text_field="text", id_field="id"),
        embed=False,
        probe_endpoint=url,
        probe_model="tiny-model",
        probe_sample=0,
        jobs=1,
    )


def test_mask_blanks_the_last_number_and_gives_it_back():
    assert mask_last_number("3 * 4 = 12\n#### 12") == ("3 * 4 = 12\n#### ____", "12")
    assert mask_last_number("no numbers") == ("no numbers", "")


def test_probe_rates_and_suspects_are_computed_from_the_models_replies(tmp_path, endpoint):
    ev, pool = files(tmp_path)
    with Workspace.init(tmp_path / "ws") as ws:
        outcome = run_scan(ws, config(ev, pool, endpoint))
    probe = outcome.report["probe"]
    # five items hold a number (f is skipped); a, b, e are reconstructed; b, c are solved
    assert probe["probed"] == 5 and probe["skipped_no_number"] == 1
    assert probe["reconstruction_rate"] == 0.6
    assert probe["accuracy_unaided"] == 0.4
    assert probe["excess"] == 0.2
    assert probe["suspected"] == [0, 4]
    assert outcome.report["counts"]["probe_suspected_items"] == 2


def test_the_probe_asks_greedily_through_chat_completions(tmp_path, endpoint):
    ev, pool = files(tmp_path)
    with Workspace.init(tmp_path / "ws") as ws:
        run_scan(ws, config(ev, pool, endpoint))
    assert len(FakeModel.requests) == 10
    assert {r["path"] for r in FakeModel.requests} == {"/v1/chat/completions"}
    assert {r["temperature"] for r in FakeModel.requests} == {0.0}
    assert {r["model"] for r in FakeModel.requests} == {"tiny-model"}


def test_suspected_items_join_the_backlog_with_channel_behavioral_probe(tmp_path, endpoint):
    ev, pool = files(tmp_path)
    with Workspace.init(tmp_path / "ws") as ws:
        outcome = run_scan(ws, config(ev, pool, endpoint))
        items = [ws.item("flagged_pairs", i["item_id"]) for i in ws.items(queue="flagged_pairs")]
    rows = [r for r in outcome.rows if r["channel"] == "behavioral_probe"]
    assert [(r["test_id"], r["reconstructed"]) for r in rows] == [("a", "12"), ("e", "2,400")]
    payloads = sorted((i["payload"] for i in items), key=lambda p: p["eval"]["index"])
    assert [p["eval"]["id"] for p in payloads] == ["a", "e"]
    for payload in payloads:
        assert payload["channels"] == ["behavioral_probe"]
        assert payload["probe"]["solved_unaided"] is False and payload["matches"] == []


def test_an_unreachable_endpoint_is_refused_and_nothing_is_written(tmp_path):
    ev, pool = files(tmp_path)
    with Workspace.init(tmp_path / "ws") as ws:
        with pytest.raises(InputError) as caught:
            run_scan(ws, config(ev, pool, "http://127.0.0.1:9/v1"))
        assert caught.value.field == "probe-endpoint"
        assert ws.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    assert list((tmp_path / "ws" / "artifacts").iterdir()) == []


class OddReply(BaseHTTPRequestHandler):
    """Answers HTTP 200 with whatever body the test set: valid JSON, but not a chat reply."""

    body = b""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(OddReply.body)))
        self.end_headers()
        self.wfile.write(OddReply.body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def odd_endpoint():
    yield from serve(OddReply)


def chat_body(content: str) -> bytes:
    return (
        '{"choices": [{"message": {"role": "assistant", "content": ' + content + "}}]}"
    ).encode()


@pytest.mark.parametrize(
    "body",
    [
        chat_body("42"),
        chat_body('[{"type": "text", "text": "42"}]'),
        chat_body("NaN"),
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["int", "list", "nan", "deeply-nested"],
)
def test_a_reply_that_is_json_but_not_a_text_completion_is_refused(tmp_path, odd_endpoint, body):
    OddReply.body = body
    ev, pool = files(tmp_path)
    with Workspace.init(tmp_path / "ws") as ws:
        with pytest.raises(InputError) as caught:
            run_scan(ws, config(ev, pool, odd_endpoint))
        assert caught.value.field == "probe-endpoint"
        assert caught.value.one_line().startswith(
            f"field 'probe-endpoint': {odd_endpoint}/chat/completions did not answer like an "
            "OpenAI chat completion"
        )
        assert ws.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    assert list((tmp_path / "ws" / "artifacts").iterdir()) == []


def test_a_malformed_endpoint_url_is_refused_naming_the_option(sealdesk, tmp_path):
    ev, pool = files(tmp_path)
    Workspace.init(tmp_path / "ws").close()
    proc = sealdesk(
        *scan_args(
            ev,
            pool,
            "--text-field",
            "question",
            "--id-field",
            "id",
            "--no-embed",
            "--probe-endpoint",
            "http://[::1",
            "--probe-model",
            "m",
        ),
        workspace=tmp_path / "ws",
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "sealdesk: error: http://[::1: field 'probe-endpoint': not a URL: Invalid port: ':1'"
    ]
    assert list((tmp_path / "ws" / "artifacts").iterdir()) == []
