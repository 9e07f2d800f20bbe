"""The synthetic preflight before live lanes, against a real HTTP server on 127.0.0.1.

Each way an endpoint can fail it (down, another model, a broken schema,
routing parameters ignored) stops `exam label` before any lane request, with
one line per failed check, and nothing written.
"""

from __future__ import annotations

import json
import socket

import pytest

from tests.support.exam_builders import claim, write_exam
from tests.support.exam_endpoint import (
    Endpoint,
    blind,
    chat,
    completion_id,
    is_preflight,
    lanes_config,
)

TEXTS = {"c1": "The API is live. The cache is warm.", "c2": "Nothing to report."}
ANSWERS = {"c1": [claim("The API is live.", "runtime", "API")], "c2": []}
IDENTITY = {"m-a": "m-a", "m-b-2025": "m-b"}


def sound(identity=IDENTITY, claims=ANSWERS):
    """Gives a respond function of an endpoint that answers every request as it should."""

    def respond(path, body):
        cid = completion_id(body)
        content = {"schema_version": 2, "completion_id": cid, "claims": claims.get(cid, [])}
        return 200, {}, chat(identity[body["model"]], content)

    return respond


@pytest.fixture
def exam(tmp_path):
    return write_exam(tmp_path / "in", TEXTS, ANSWERS, ANSWERS)


def label(sealdesk, exam, config, out):
    return sealdesk(*exam.label_args(config, out))


def preflight_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("sealdesk: preflight: ")]


def assert_stopped(proc, out, failed: list[str]) -> None:
    """The run stopped (exit 5) with exactly one line per failed check, nothing written."""
    assert proc.returncode == 5, proc.stderr
    lines = preflight_lines(proc.stderr)
    assert [" ".join(line.split(": ")[2:4]) for line in lines] == failed, proc.stderr
    assert all(": FAILED: " in line for line in lines)
    errors = [line for line in proc.stderr.splitlines() if line not in lines]
    assert len(errors) == 1 and errors[0].startswith("sealdesk: error: preflight failed")
    assert not out.exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_sound_routing_endpoint_passes_every_check(sealdesk, tmp_path):
    with Endpoint(sound()) as endpoint:
        config = lanes_config(tmp_path / "lanes.json", endpoint.url)
        proc = sealdesk("exam", "preflight", "--config", config)
        bodies = endpoint.bodies()
    assert proc.returncode == 0, proc.stderr
    for lane in ("lane-a", "lane-b"):
        for check in ("reachable", "model identity", "strict schema", "routing"):
            assert f"{lane}: {check}: ok: " in proc.stdout
    assert proc.stdout.rstrip().endswith("preflight passed: lane-a, lane-b")
    # Per lane: the synthetic request, shaped like a lane request, and the routing probe.
    assert len(bodies) == 4 and all(is_preflight(b) for b in bodies)
    synthetic, probe = bodies[0], bodies[1]
    assert synthetic["provider"] == {"require_parameters": True, "allow_fallbacks": False}
    assert synthetic["response_format"]["json_schema"]["strict"] is True
    assert (synthetic["temperature"], synthetic["seed"]) == (0, 0)
    assert probe["provider"]["only"] == ["sealdesk-preflight-no-such-provider"]
    assert probe["provider"]["allow_fallbacks"] is False


def test_an_endpoint_that_is_down_stops_label_and_writes_nothing(sealdesk, tmp_path, exam):
    config = lanes_config(tmp_path / "lanes.json", f"http://127.0.0.1:{free_port()}/v1")
    out = tmp_path / "labels"
    proc = label(sealdesk, exam, config, out)
    assert_stopped(proc, out, ["lane-a reachable", "lane-b reachable"])
    assert "unreachable: cannot connect to http://127.0.0.1:" in proc.stderr


def test_an_endpoint_answering_as_another_model_stops_label_before_any_lane_request(
    sealdesk, tmp_path, exam
):
    with Endpoint(sound(identity={"m-a": "m-a-preview", "m-b-2025": "m-b"})) as endpoint:
        out = tmp_path / "labels"
        proc = label(sealdesk, exam, lanes_config(tmp_path / "lanes.json", endpoint.url), out)
        asked = {completion_id(b) for b in endpoint.bodies()}
    assert_stopped(proc, out, ["lane-a model identity"])
    assert "response model 'm-a-preview' is not the frozen identity 'm-a'" in proc.stderr
    assert asked == {"sealdesk-preflight-1"}  # not one corpus completion was sent


def test_an_answer_breaking_the_strict_schema_stops_label(sealdesk, tmp_path, exam):
    def respond(path, body):
        cid = completion_id(body)
        if body["model"] == "m-b-2025":  # schema_version 1 and an extra field
            return (
                200,
                {},
                chat(
                    "m-b",
                    {"schema_version": 1, "completion_id": cid, "claims": [], "confidence": 0.9},
                ),
            )
        return sound()(path, body)

    with Endpoint(respond) as endpoint:
        out = tmp_path / "labels"
        proc = label(sealdesk, exam, lanes_config(tmp_path / "lanes.json", endpoint.url), out)
        asked = {completion_id(b) for b in endpoint.bodies()}
    assert_stopped(proc, out, ["lane-b strict schema"])
    assert "lane-b: strict schema: FAILED: schema: " in proc.stderr
    assert asked == {"sealdesk-preflight-1"}


def test_an_endpoint_that_ignores_routing_parameters_stops_label(sealdesk, tmp_path, exam):
    with Endpoint(sound(), honour_routing=False) as endpoint:
        out = tmp_path / "labels"
        proc = label(sealdesk, exam, lanes_config(tmp_path / "lanes.json", endpoint.url), out)
        asked = {completion_id(b) for b in endpoint.bodies()}
    assert_stopped(proc, out, ["lane-a routing", "lane-b routing"])
    assert "routing parameters ignored" in proc.stderr
    assert '"strict_routing": false' in proc.stderr  # the way out, for a non-router
    assert asked == {"sealdesk-preflight-1"}


def test_a_router_that_cannot_honour_the_profile_fails_reachable_with_its_reason(
    sealdesk, tmp_path
):
    def respond(path, body):
        if "temperature" in body and (body.get("provider") or {}).get("require_parameters"):
            return (
                404,
                {},
                {
                    "error": {
                        "code": 404,
                        "message": "No endpoints found that can handle the requested parameters.",
                    }
                },
            )
        return sound()(path, body)

    with Endpoint(respond) as endpoint:
        config = lanes_config(tmp_path / "lanes.json", endpoint.url)
        proc = sealdesk("exam", "preflight", "--config", config)
    assert proc.returncode == 5
    [line] = preflight_lines(proc.stderr)
    assert line == (
        "sealdesk: preflight: lane-a: reachable: FAILED: http_status: HTTP 404: "
        "No endpoints found that can handle the requested parameters."
    )
    assert "lane-b: routing: ok" in proc.stdout


def test_an_explicit_opt_out_sends_no_routing_and_is_recorded(sealdesk, tmp_path, exam):
    from engine.workspace import Workspace

    with Endpoint(sound()) as endpoint:
        out = tmp_path / "labels"
        config = lanes_config(tmp_path / "lanes.json", endpoint.url, b={"strict_routing": False})
        proc = label(sealdesk, exam, config, out)
        lane_a, lane_b = endpoint.bodies("m-a"), endpoint.bodies("m-b-2025")
    assert proc.returncode == 0, proc.stderr
    # lane-a (the default) sends the routing block on every request, probe included;
    # lane-b, opted out, sends none and gets no probe.
    assert len(lane_a) == 2 + 2 and all(b["provider"]["require_parameters"] for b in lane_a)
    assert len(lane_b) == 1 + 2 and all("provider" not in b for b in lane_b)
    assert "lane-a: 2 ok" in proc.stdout and "routing strict" in proc.stdout
    assert "routing opted_out" in proc.stdout
    summary = json.loads((out / "labeling-summary.json").read_bytes())
    assert summary["lanes"]["lane-a"]["provider_routing"] == "strict"
    assert summary["lanes"]["lane-b"]["provider_routing"] == "opted_out"
    # The sealed artifact carries the opt-out with the lane's model identity.
    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    digest = proc.stdout.split("--expected-labeling-summary-sha256 ")[1].strip()
    sealdesk(
        "exam",
        "adjudicate",
        "--run-id",
        "ex",
        "--corpus",
        exam.paths["corpus"],
        "--context",
        exam.paths["context"],
        "--expected-context-sha256",
        exam.sha("context"),
        "--lane-a",
        out / "lane-a.labels.jsonl",
        "--lane-b",
        out / "lane-b.labels.jsonl",
        "--labeling-summary",
        out / "labeling-summary.json",
        "--expected-labeling-summary-sha256",
        digest,
        workspace=ws,
        check=True,
    )
    art = json.loads((ws / "artifacts" / "ex" / "exam-adjudication.json").read_bytes())
    assert art["models"]["lane-a"]["provider_routing"] == "strict"
    assert art["models"]["lane-b"]["provider_routing"] == "opted_out"


def test_label_refuses_when_every_attempt_of_a_lane_failed_for_a_transport_reason(
    sealdesk, tmp_path, exam
):
    def respond(path, body):
        if is_preflight(body) or body["model"] == "m-a":
            return sound()(path, body)
        return 503, {}, {"error": {"message": "upstream overloaded"}}

    with Endpoint(respond) as endpoint:
        out = tmp_path / "labels"
        proc = label(sealdesk, exam, lanes_config(tmp_path / "lanes.json", endpoint.url), out)
        lane_b = [b for b in endpoint.bodies("m-b-2025") if not is_preflight(b)]
    assert len(lane_b) == 4  # two completions, two attempts each: the run did go
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.count("\n") == 1
    assert (
        "lane-b: every one of its 4 attempts failed for a transport reason "
        "(http_status 4; first: HTTP 503: upstream overloaded)"
    ) in proc.stderr
    assert not out.exists()


def test_model_backed_adjudicate_preflights_and_writes_nothing_on_failure(sealdesk, tmp_path, exam):
    from engine.workspace import Workspace

    ws = tmp_path / "ws"
    Workspace.init(ws).close()
    with Endpoint(sound(identity={"m-adj-1": "m-adj-2"})) as endpoint:
        adj = tmp_path / "adjudicator.json"
        adj.write_text(
            json.dumps(
                {
                    "schema_version": 2,
                    "base_url": endpoint.url,
                    "request_model": "m-adj-1",
                    "model_identity": "m-adj",
                    "request_profile": "deterministic-v1",
                }
            )
        )
        proc = sealdesk(
            "exam",
            "adjudicate",
            "--run-id",
            "ex",
            *exam.cli_inputs(),
            "--adjudicator-config",
            adj,
            workspace=ws,
        )
        asked = [blind(b) for b in endpoint.bodies()]
    assert proc.returncode == 5, proc.stderr
    assert preflight_lines(proc.stderr) == [
        (
            "sealdesk: preflight: adjudicator: model identity: FAILED: model_identity: response "
            "model 'm-adj-2' is not the frozen identity 'm-adj'"
        )
    ]
    assert all("candidate" not in a for a in asked)  # no third vote was asked for
    assert list((ws / "artifacts").iterdir()) == []
    with Workspace.open(ws) as opened:
        assert opened.items() == []


def test_a_plain_server_refusing_the_provider_block_passes_once_opted_out(sealdesk, tmp_path):
    def respond(path, body):  # an OpenAI-style server: unknown request fields are refused
        if "provider" in body:
            return (
                400,
                {},
                {"error": {"message": "Unrecognized request argument supplied: provider"}},
            )
        return sound()(path, body)

    with Endpoint(respond) as endpoint:
        strict = sealdesk(
            "exam", "preflight", "--config", lanes_config(tmp_path / "strict.json", endpoint.url)
        )
        opted_out = sealdesk(
            "exam",
            "preflight",
            "--config",
            lanes_config(
                tmp_path / "plain.json",
                endpoint.url,
                a={"strict_routing": False},
                b={"strict_routing": False},
            ),
        )
    assert strict.returncode == 5
    assert [line.split(": ")[2:4] for line in preflight_lines(strict.stderr)] == [
        ["lane-a", "reachable"],
        ["lane-b", "reachable"],
    ]
    assert (
        "HTTP 400: Unrecognized request argument supplied: provider; if this endpoint is "
        'no routing provider, set "strict_routing": false' in strict.stderr
    )
    assert opted_out.returncode == 0, opted_out.stderr
    assert "lane-a: routing: not checked: opted out" in opted_out.stdout
