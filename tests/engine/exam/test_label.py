"""Live lanes and the adjudicator model against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import stat
import threading

import pytest

from engine.canonical import sha256_hex
from engine.endpoint.chat import ModelSpec
from engine.exam.inputs import InputPaths, load_inputs, parse_context, parse_corpus
from engine.exam.label import label
from tests.support.exam_builders import claim, write_exam
from tests.support.exam_endpoint import Endpoint, blind, chat, is_preflight, lanes_config

TEXTS = {"c1": "The API is live. The cache is warm.", "c2": "Nothing to report."}
ANSWERS = {"c1": [claim("The API is live.", "runtime", "API")], "c2": []}


IDENTITY = {"m-a": "m-a", "m-b-2025": "m-b"}  # request model -> identity it answers as


def _labels(model_of_response: str | None = None, claims=ANSWERS):
    # The preflight is answered as a sound endpoint would; what these tests
    # change applies to the lane requests after it.
    def respond(path, body):
        cid = blind(body)["completion"]["completion_id"]
        if is_preflight(body):
            content = {"schema_version": 2, "completion_id": cid, "claims": []}
            return 200, {}, chat(IDENTITY[body["model"]], content)
        content = {"schema_version": 2, "completion_id": cid, "claims": claims[cid]}
        return 200, {}, chat(model_of_response or IDENTITY[body["model"]], content)

    return respond


def _specs(url: str, **override) -> dict[str, ModelSpec]:
    return {
        "lane-a": ModelSpec(
            "lane-a",
            url,
            "m-a",
            override.get("a_identity", "m-a"),
            "deterministic-v1",
            strict_routing=True,
        ),
        "lane-b": ModelSpec("lane-b", url, "m-b-2025", "m-b", "provider-default-v1"),
    }


@pytest.fixture
def exam_files(tmp_path):
    exam = write_exam(tmp_path / "in", TEXTS, ANSWERS, ANSWERS)
    data = {k: exam.paths[k].read_bytes() for k in ("corpus", "context")}
    corpus = parse_corpus(data["corpus"], exam.paths["corpus"])
    contexts = parse_context(data["context"], exam.paths["context"], corpus)
    return exam, corpus, contexts


def _run(endpoint: Endpoint, exam_files, **override):
    exam, corpus, contexts = exam_files
    files, summary = label(
        corpus, contexts, _specs(endpoint.url, **override), exam.sha("corpus"), exam.sha("context")
    )
    rows = {
        lane: [json.loads(line) for line in data.decode().splitlines()]
        for lane, data in files.items()
    }
    return rows, summary


def test_both_lanes_run_at_the_same_time(exam_files):
    arrived = {"m-a": threading.Event(), "m-b-2025": threading.Event()}

    def respond(path, body):
        if is_preflight(body):  # one lane after the other, before the lanes start
            return _labels()(path, body)
        model = body["model"]
        arrived[model].set()
        other = next(e for m, e in arrived.items() if m != model)
        # Each lane's first request waits for the other lane's: run one after
        # the other, and this times out into a failed request.
        if not other.wait(timeout=10):
            return 503, {}, None
        return _labels()(path, body)

    with Endpoint(respond) as endpoint:
        rows, summary = _run(endpoint, exam_files)
    assert [r["status"] for lane in rows for r in rows[lane]] == ["ok"] * 4
    assert summary["lanes"]["lane-b"]["failed_request_attempts"] == 0


def test_a_response_from_another_model_is_invalid_twice_then_an_operational_failure(exam_files):
    with Endpoint(_labels(model_of_response="m-a-preview")) as endpoint:
        rows, summary = _run(endpoint, exam_files)
    failed = rows["lane-a"][0]
    assert (
        failed["status"],
        failed["claims"],
        failed["attempts"],
        failed["invalid_response_attempts"],
    ) == ("operational_failure", None, 2, 2)
    assert summary["lanes"]["lane-a"]["operational_failure"] == 2
    # lane-b's answers were named "m-a-preview" too: not its identity either.
    assert summary["lanes"]["lane-b"]["ok"] == 0


def test_one_retry_recovers_a_failed_request(exam_files):
    seen = set()

    def respond(path, body):
        key = (body["model"], blind(body)["completion"]["completion_id"])
        if key not in seen and not is_preflight(body):
            seen.add(key)
            return 500, {}, {"error": "busy"}
        return _labels()(path, body)

    with Endpoint(respond) as endpoint:
        rows, _ = _run(endpoint, exam_files)
    row = rows["lane-a"][0]
    assert (row["status"], row["attempts"], row["failed_request_attempts"]) == ("ok", 2, 1)
    assert row["claims"] == ANSWERS["c1"]


def test_redirects_are_never_followed(exam_files):
    def respond(path, body):
        if (
            path.endswith("/chat/completions")
            and blind(body)["completion"]["completion_id"] == "c1"
        ):
            return 307, {"Location": "/v1/elsewhere"}, None
        return _labels()(path, body)

    with Endpoint(respond) as endpoint:
        rows, _ = _run(endpoint, exam_files)
        paths = {p for p, _, _ in endpoint.requests}
    assert paths == {"/v1/chat/completions"}
    assert rows["lane-a"][0]["failed_request_attempts"] == 2
    assert rows["lane-a"][0]["status"] == "operational_failure"
    assert [f["reason"] for f in rows["lane-a"][0]["failures"]] == ["redirect", "redirect"]


def test_a_span_not_in_the_completion_is_an_invalid_attempt(exam_files):
    bad = {"c1": [claim("The API is down.", "runtime", "API")], "c2": []}
    with Endpoint(_labels(claims=bad)) as endpoint:
        rows, _ = _run(endpoint, exam_files)
    assert rows["lane-b"][0]["invalid_response_attempts"] == 2
    assert rows["lane-b"][1]["status"] == "ok"


def test_each_request_is_blind_strict_and_uses_its_lanes_profile(exam_files):
    with Endpoint(_labels()) as endpoint:
        _run(endpoint, exam_files)
        a, b = [
            next(x for x in endpoint.bodies(m) if not is_preflight(x)) for m in ("m-a", "m-b-2025")
        ]
    fmt = a["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False
    assert (a["temperature"], a["seed"]) == (0, 0)
    assert "temperature" not in b and "seed" not in b
    # strict routing by default: no provider fallback, every parameter honoured
    assert a["provider"] == b["provider"] == {"require_parameters": True, "allow_fallbacks": False}
    assert "models" not in a and "models" not in b
    assert set(blind(a)) == {"completion", "context"}
    assert "lane" not in json.dumps(a) and "lane" not in json.dumps(b)


def test_the_label_command_writes_locked_files_that_adjudicate_accepts(
    sealdesk, tmp_path, exam_files
):
    exam, _, _ = exam_files
    out = tmp_path / "labels"
    with Endpoint(_labels()) as endpoint:
        config = lanes_config(tmp_path / "labelers.json", endpoint.url, api_key_env="EXAM_TEST_KEY")
        proc = sealdesk(
            *exam.label_args(config, out),
            env={"EXAM_TEST_KEY": "sk-test-123"},
            check=True,
        )
        auth = {h.get("Authorization") for _, _, h in endpoint.requests}
    assert auth == {"Bearer sk-test-123"}
    assert "lane-b: 2 ok, 0 operational_failure" in proc.stdout
    for name in ("lane-a.labels.jsonl", "lane-b.labels.jsonl", "labeling-summary.json"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600
        assert (out / f"{name}.sha256").read_text().split()[0] == sha256_hex(
            (out / name).read_bytes()
        )
    summary = out / "labeling-summary.json"
    inputs = load_inputs(
        InputPaths(
            exam.paths["corpus"],
            exam.paths["context"],
            out / "lane-a.labels.jsonl",
            out / "lane-b.labels.jsonl",
            summary,
            exam.sha("context"),
            sha256_hex(summary.read_bytes()),
        )
    )
    assert inputs.lanes["lane-b"]["c1"].response_model == "m-b"
    again = sealdesk(
        "exam",
        "label",
        "--corpus",
        exam.paths["corpus"],
        "--context",
        exam.paths["context"],
        "--expected-context-sha256",
        exam.sha("context"),
        "--config",
        config,
        "--out-dir",
        out,
    )
    assert again.returncode == 4 and "never overwritten" in again.stderr


def _adjudicator_server(sweep_claims):
    def respond(path, body):
        request = blind(body)
        model = body["model"]
        if "candidate" in request:
            vote = {
                "schema_version": 2,
                "candidate_id": request["candidate"]["candidate_id"],
                "vote": "accept",
            }
            return 200, {}, chat({"m-adj-1": "m-adj", "m-a": "m-a", "m-b-2025": "m-b"}[model], vote)
        cid = request["completion"]["completion_id"]
        identity = {"m-adj-1": "m-adj", "m-a": "m-a", "m-b-2025": "m-b"}[model]
        return (
            200,
            {},
            chat(
                identity,
                {"schema_version": 2, "completion_id": cid, "claims": sweep_claims.get(cid, [])},
            ),
        )

    return respond


def test_the_adjudicator_model_sees_only_the_completion_context_and_one_candidate(
    tmp_path, workspace
):
    from engine.exam.runs import RaterFiles, adjudicate
    from engine.exam.score import verified_artifact

    texts = {"c1": "The API is live. The cache is warm. The queue is empty."}
    exam = write_exam(
        tmp_path / "in",
        texts,
        {"c1": [claim("The API is live.", "runtime", "API")]},
        {"c1": [claim("The cache is warm.", "runtime", "cache")]},
    )
    sweep = {"c1": [claim("The queue is empty.", "runtime", "queue")]}
    with Endpoint(_adjudicator_server(sweep)) as endpoint:
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
        lanes = tmp_path / "lanes.json"
        lanes_config(lanes, endpoint.url)
        result = adjudicate(
            workspace,
            exam.input_paths(),
            RaterFiles(adjudicator_config=adj, labelers_config=lanes),
            "ex",
        )
        votes = [blind(b) for b in endpoint.bodies() if "candidate" in blind(b)]
        raw = json.dumps([b for b in endpoint.bodies("m-adj-1") if not is_preflight(b)])
    # Two union candidates get a third vote; the sweep-only one is validated by both lanes.
    assert len(votes) == 4
    for request in votes:
        assert set(request) == {"candidate", "completion", "context"}
        assert set(request["candidate"]) == {
            "candidate_id",
            "start",
            "end",
            "span_exact_text",
            "family",
            "entity",
        }
    assert "lane-a" not in raw and "lane-b" not in raw and '"votes"' not in raw
    art = json.loads(result.artifact_path.read_bytes())
    cands = art["completions"][0]["candidates"]
    assert all(c["decision"] == "accept" for c in cands) and len(cands) == 3
    third = [c["votes"][2] for c in cands if c["origin"] == "union"]
    assert {v["source"] for v in third} == {"model:m-adj"}
    assert art["models"]["third_votes"]["model_identity"] == "m-adj"
    assert result.status == "COMPLETE"
    # The scorer re-derives a model-voted artifact from the answers it recorded.
    verified = verified_artifact(
        workspace, result.artifact_path, result.artifact_sha256, exam.input_paths(), RaterFiles()
    )
    assert verified[1] == result.artifact_sha256
