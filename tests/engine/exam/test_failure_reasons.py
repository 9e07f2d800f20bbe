"""Why each attempt failed is kept: in the lane file, the artifact, the CLI and the pane.

The lanes run against a real HTTP server on 127.0.0.1; the adjudicator's
pane is read in the real review app, opened on the workspace the CLI filled.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.support.exam_builders import claim, write_exam
from tests.support.exam_endpoint import Endpoint, chat, completion_id, is_preflight, lanes_config
from tests.support.review_app import settle, text_of

TEXTS = {"c1": "The API is live. The cache is warm.", "c2": "Nothing to report."}
API = claim("The API is live.", "runtime", "API")
IDENTITY = {"m-a": "m-a", "m-b-2025": "m-b"}
pytestmark = pytest.mark.anyio


def _answer(body, claims):
    cid = completion_id(body)
    return (
        200,
        {},
        chat(
            IDENTITY[body["model"]], {"schema_version": 2, "completion_id": cid, "claims": claims}
        ),
    )


def flaky_lane_a():
    """lane-a on c1: HTTP 503, then an answer from another model; everything else sound."""
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def respond(path, body):
        cid = completion_id(body)
        if is_preflight(body) or cid == "c2":
            return _answer(body, [])
        if body["model"] == "m-b-2025":
            return _answer(body, [API])
        with lock:
            seen[cid] = seen.get(cid, 0) + 1
            n = seen[cid]
        if n == 1:
            return 503, {}, {"error": {"message": "upstream overloaded"}}
        return (
            200,
            {},
            chat("m-a-preview", {"schema_version": 2, "completion_id": cid, "claims": [API]}),
        )

    return respond


@pytest.fixture
def labeled(sealdesk, tmp_path):
    """Gives (exam inputs, the label command's output, the labels directory)."""
    exam = write_exam(tmp_path / "in", TEXTS, {"c1": [], "c2": []}, {"c1": [], "c2": []})
    out = tmp_path / "labels"
    with Endpoint(flaky_lane_a()) as endpoint:
        config = lanes_config(tmp_path / "lanes.json", endpoint.url)
        proc = sealdesk(*exam.label_args(config, out), check=True)
    return exam, proc, out


def test_each_failed_attempt_keeps_its_reason_in_the_lane_file(labeled):
    _, proc, out = labeled
    rows = [json.loads(line) for line in (out / "lane-a.labels.jsonl").read_text().splitlines()]
    c1 = rows[0]
    assert (c1["status"], c1["failed_request_attempts"], c1["invalid_response_attempts"]) == (
        "operational_failure",
        1,
        1,
    )
    assert c1["failures"] == [
        {
            "attempt": 1,
            "kind": "failed_request",
            "reason": "http_status",
            "detail": "HTTP 503: upstream overloaded",
        },
        {
            "attempt": 2,
            "kind": "invalid_response",
            "reason": "model_identity",
            "detail": "response model 'm-a-preview' is not the frozen identity 'm-a'",
        },
    ]
    assert rows[1]["failures"] == []
    summary = json.loads((out / "labeling-summary.json").read_bytes())
    assert summary["lanes"]["lane-a"]["failure_reasons"] == {"http_status": 1, "model_identity": 1}
    assert (
        "lane-a: 1 ok, 1 operational_failure (1 invalid, 1 failed attempts; by reason: "
        "http_status 1, model_identity 1)"
    ) in proc.stdout


def test_a_timeout_is_its_own_reason(tmp_path):
    from engine.endpoint.chat import ModelSpec, client
    from engine.exam.inputs import Completion
    from engine.exam.raters import label_one

    def respond(path, body):
        time.sleep(1.0)
        return _answer(body, [])

    with Endpoint(respond) as endpoint, client() as http:
        spec = ModelSpec("lane-a", endpoint.url, "m-a", "m-a", "deterministic-v1", timeout_s=0.2)
        out = label_one(
            http,
            spec,
            Completion("c1", "s", "turn-1", TEXTS["c1"]),
            {"completion": {"completion_id": "c1", "text": TEXTS["c1"]}, "context": []},
        )
    assert out.value is None
    assert [(f.kind, f.reason) for f in out.failures] == [("failed_request", "timeout")] * 2
    assert out.failures[0].detail.startswith("no answer from http://127.0.0.1:")


def _adjudicate(sealdesk, exam, out, ws, lane_a=None, check=True):
    """Runs ``exam adjudicate`` on the lanes labeled into out (lane-a's file: lane_a)."""
    lanes = exam.lanes_args(
        lane_a or out / "lane-a.labels.jsonl",
        out / "lane-b.labels.jsonl",
        out / "labeling-summary.json",
    )
    return sealdesk("exam", "adjudicate", "--run-id", "ex", *lanes, workspace=ws, check=check)


async def test_the_adjudicator_sees_why_a_vote_is_missing(sealdesk, labeled, workspace):
    from reviewer.app import ReviewApp
    from reviewer.session import read_only_session

    exam, _, out = labeled
    proc = _adjudicate(sealdesk, exam, out, workspace.root)
    assert "failed attempts by reason: http_status 1, model_identity 1" in proc.stdout
    art = json.loads((workspace.root / "artifacts" / "ex" / "exam-adjudication.json").read_bytes())
    assert art["counts"]["failure_reasons"] == {"http_status": 1, "model_identity": 1}
    assert [f["reason"] for f in art["completions"][0]["lanes"]["lane-a"]["failures"]] == [
        "http_status",
        "model_identity",
    ]
    # lane-a failed on c1 and lane-b proposed the API claim: one vote each way, abstained.
    [item] = json.loads(
        sealdesk(
            "items",
            "--queue",
            "adjudication",
            "--json",
            "--payload",
            workspace=workspace.root,
            check=True,
        ).stdout
    )
    assert item["payload"]["failed_attempts"] == [
        {
            "voter": "lane-a",
            "basis": "lane_failed",
            "source": "lane-a labels",
            "reasons": {"http_status": 1, "model_identity": 1},
            "details": [
                "http_status: HTTP 503: upstream overloaded",
                ("model_identity: response model 'm-a-preview' is not the frozen identity 'm-a'"),
            ],
        }
    ]
    app = ReviewApp(workspace, read_only_session("reading"))
    async with app.run_test(size=(160, 60)) as pilot:
        await pilot.press("2")  # the adjudication queue
        detail = app.review.query_one("#detail")
        await settle(pilot, lambda: "failed attempts" in text_of(detail))
        text = text_of(detail)
    assert "failed attempts (why a vote is missing)" in text
    assert "http_status ×1, model_identity ×1" in text
    assert "HTTP 503: upstream overloaded" in text


def test_reasons_that_disagree_with_the_counters_are_refused(sealdesk, labeled, tmp_path):
    from engine.workspace import Workspace

    exam, _, out = labeled
    lane = out / "lane-a.labels.jsonl"
    rows = lane.read_text().splitlines()
    first = json.loads(rows[0])
    first["failures"] = first["failures"][:1]  # counters say two failed attempts
    rows[0] = json.dumps(first, sort_keys=True, separators=(",", ":"))
    lane.write_text("\n".join(rows) + "\n")
    ws = tmp_path / "ws2"
    Workspace.init(ws).close()
    proc = _adjudicate(sealdesk, exam, out, ws, lane_a=lane, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(
        f"sealdesk: error: {lane}:1: field 'failures': lists 0 "
        "invalid_response attempt(s) but the row counts 1"
    )
    assert list((ws / "artifacts").iterdir()) == []
