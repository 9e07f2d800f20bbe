"""The judge: a model's suggestion on unclear pairs, asked of a real HTTP server on 127.0.0.1.

The scan's data (tests/support/judge_endpoint.py) gives four unclear pairs
and one likely leak; the endpoint is the exam's fake OpenAI-compatible
server, which refuses a routing probe as a routing provider does.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from engine.endpoint.preflight import PreflightFailed
from engine.errors import InputError
from engine.workspace import Workspace
from tests.support.exam_endpoint import Endpoint, chat
from tests.support.judge_endpoint import (
    EVAL,
    IDENTITY,
    MODEL,
    POOL,
    UNCLEAR,
    asked,
    by_numbers,
    is_preflight,
    judge_answer,
    scan_config,
    write_config,
    write_inputs,
)
from tests.support.scan_cli import SAMPLE_FIELDS, scan_args


def _scan(tmp_path: Path, endpoint: Endpoint | None, **options):
    ev, pool = write_inputs(tmp_path / "data")
    url = endpoint.url if endpoint is not None else options.pop("url")
    config = write_config(tmp_path / "judge.json", url, **options.pop("model", {}))
    from engine.contamination.scan import run_scan

    with Workspace.init(tmp_path / "ws") as ws:
        return run_scan(ws, scan_config(ev, pool, config, **options))


def _pair_bodies(endpoint: Endpoint) -> list[dict]:
    return [b for b in endpoint.bodies() if not is_preflight(b)]


def _judged_rows(outcome) -> dict[tuple, dict]:
    out = {}
    for row in outcome.rows:
        if "judge" in row:
            key = (
                (row["test_id"], row["pool_id"]) if "pool_id" in row else (row["a_id"], row["b_id"])
            )
            out[key] = row
    return out


def test_only_the_pairs_the_triage_labels_unclear_are_sent(tmp_path):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        outcome = _scan(tmp_path, endpoint)
    assert {asked(b) for b in _pair_bodies(endpoint)} == UNCLEAR
    labels = {r.get("pool_id", r.get("b_id")): r["triage"]["label"] for r in outcome.rows}
    assert labels == {
        "p0": "unclear",
        "p1": "likely_leak",
        "p2": "unclear",
        "p4": "unclear",
        "e3": "unclear",
    }
    assert "judge" not in next(r for r in outcome.rows if r.get("pool_id") == "p1")


def test_each_pair_is_asked_as_the_exam_asks_frozen_model_strict_schema_and_routing(tmp_path):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        _scan(tmp_path, endpoint)
    for body in _pair_bodies(endpoint):
        assert body["model"] == MODEL
        assert body["temperature"] == 0 and body["seed"] == 0
        assert body["provider"] == {"require_parameters": True, "allow_fallbacks": False}
        schema = body["response_format"]["json_schema"]
        assert schema["strict"] is True
        assert schema["schema"]["required"] == ["same_problem", "reason"]
        assert schema["schema"]["additionalProperties"] is False
    # the preflight came first: its request, and its routing probe that was refused
    first, probe = endpoint.bodies()[:2]
    assert is_preflight(first) and is_preflight(probe)
    assert probe["provider"]["only"] == ["sealdesk-preflight-no-such-provider"]


def test_verdicts_are_kept_beside_the_pair_as_suggestions_and_change_no_label(tmp_path):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        outcome = _scan(tmp_path, endpoint)
    judged = _judged_rows(outcome)
    assert set(judged) == {("e0", "p0"), ("e0", "p4"), ("e1", "p2"), ("e2", "e3")}
    same = judged[("e1", "p2")]
    assert same["judge"] == {
        "role": "suggestion",
        "model": IDENTITY,
        "attempts": 1,
        "failures": [],
        "verdict": "same_problem",
        "reason": "the first quantity is kept",
    }
    assert judged[("e0", "p0")]["judge"]["verdict"] == "different_problem"
    assert {r["triage"]["label"] for r in judged.values()} == {"unclear"}
    # the artifact on disk holds the same
    written = [
        json.loads(line)
        for line in (outcome.run_dir / "flagged_pairs.jsonl").read_text().splitlines()
    ]
    assert [r.get("judge") for r in written] == [r.get("judge") for r in outcome.rows]


def test_the_backlog_item_carries_the_suggestion_beside_each_match_it_was_asked_about(tmp_path):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        outcome = _scan(tmp_path, endpoint)
    items = {i.payload["eval"]["id"]: i.payload for i in outcome.items}
    e0 = {m["id"]: m for m in items["e0"]["matches"]}
    assert e0["p0"]["judge"]["verdict"] == "different_problem"
    assert "judge" not in e0["p1"]
    # the item's label and order are the triage's alone: the likely leak comes first
    assert items["e0"]["triage"] == "likely_leak"
    assert [m["id"] for m in items["e0"]["matches"]][0] == "p1"
    # an internal pair's suggestion stands in both eval items
    assert items["e2"]["matches"][0]["judge"]["verdict"] == "different_problem"
    assert items["e3"]["matches"][0]["judge"]["verdict"] == "different_problem"
    assert items["e1"]["matches"][0]["judge"]["reason"] == "the first quantity is kept"


def test_the_report_says_how_many_were_judged_and_what_was_suggested(tmp_path):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        outcome = _scan(tmp_path, endpoint)
    judge = outcome.report["judge"]
    assert judge["role"].startswith("suggestion")
    assert judge["model"]["model_identity"] == IDENTITY
    assert judge["model"]["base_url"] == endpoint.url
    counts = {k: judge[k] for k in ("unclear_pairs", "sent", "over_cap", "judged", "failed")}
    assert counts == {"unclear_pairs": 4, "sent": 4, "over_cap": 0, "judged": 4, "failed": 0}
    assert (judge["same_problem"], judge["different_problem"]) == (1, 3)
    assert [line.split(": ")[1] for line in judge["preflight"]] == [
        "reachable",
        "model identity",
        "strict schema",
        "routing",
    ]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ({"same_problem": "yes", "reason": "same numbers"}, "schema"),
        ({"same_problem": True}, "schema"),
        ({"same_problem": True, "reason": "ok", "confidence": 0.9}, "schema"),
    ],
    ids=["not-a-boolean", "no-reason", "extra-field"],
)
def test_a_malformed_answer_leaves_no_suggestion_and_its_reason(tmp_path, content, reason):
    with Endpoint(judge_answer(lambda a, b: content)) as endpoint:
        outcome = _scan(tmp_path, endpoint)
    judged = _judged_rows(outcome)
    assert len(judged) == 4
    for row in judged.values():
        assert row["judge"]["verdict"] is None and row["judge"]["failed"] == reason
        assert row["judge"]["attempts"] == 2  # one retry, as the exam's lanes
        assert [f["reason"] for f in row["judge"]["failures"]] == [reason, reason]
        assert row["triage"]["label"] == "unclear"
    judge = outcome.report["judge"]
    assert (judge["judged"], judge["failed"]) == (0, 4)
    assert judge["failed_by_reason"] == {reason: 4}
    assert judge["failed_attempts_by_reason"] == {reason: 8}


def test_an_answer_that_is_not_json_is_a_not_json_failure(tmp_path):
    envelope = chat(IDENTITY, None)
    envelope["choices"][0]["message"]["content"] = "Yes, they are the same problem."
    with Endpoint(judge_answer(lambda a, b: (200, {}, envelope))) as endpoint:
        outcome = _scan(tmp_path, endpoint)
    assert outcome.report["judge"]["failed_by_reason"] == {"not_json": 4}


def test_an_answer_from_another_model_is_a_model_identity_failure(tmp_path):
    answer = chat("someone-else", {"same_problem": True, "reason": "same"})
    with Endpoint(judge_answer(lambda a, b: (200, {}, answer))) as endpoint:
        outcome = _scan(tmp_path, endpoint)
    assert outcome.report["judge"]["failed_by_reason"] == {"model_identity": 4}


def test_a_server_error_on_one_pair_fails_that_pair_only(tmp_path):
    def answer(a, b):
        if a == EVAL[1]["question"]:
            return 503, {}, {"error": {"message": "overloaded"}}
        return by_numbers(a, b)

    with Endpoint(judge_answer(answer)) as endpoint:
        outcome = _scan(tmp_path, endpoint)
    failed = _judged_rows(outcome)[("e1", "p2")]["judge"]
    assert failed["failed"] == "http_status"
    assert "HTTP 503: overloaded" in failed["failures"][0]["detail"]
    judge = outcome.report["judge"]
    assert (judge["judged"], judge["failed"], judge["failed_by_reason"]) == (
        3,
        1,
        {"http_status": 1},
    )


def test_a_pair_the_endpoint_answers_too_late_fails_as_timeout(tmp_path):
    def answer(a, b):
        if a == EVAL[2]["question"]:
            time.sleep(1.0)
        return by_numbers(a, b)

    with Endpoint(judge_answer(answer)) as endpoint:
        outcome = _scan(tmp_path, endpoint, model={"timeout_s": 0.3})
    assert _judged_rows(outcome)[("e2", "e3")]["judge"]["failed"] == "timeout"
    assert outcome.report["judge"]["failed_by_reason"] == {"timeout": 1}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_endpoint_stops_the_scan_at_the_preflight_and_writes_nothing(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(PreflightFailed) as caught:
        _scan(tmp_path, None, url=url)
    reachable = caught.value.failed[0]
    assert reachable.name == "reachable" and reachable.detail.startswith("unreachable: ")
    assert "nothing was written" in str(caught.value)
    artifacts = tmp_path / "ws" / "artifacts"
    assert not artifacts.exists() or list(artifacts.iterdir()) == []
    with Workspace.open(tmp_path / "ws") as ws:
        assert ws.items(queue="flagged_pairs") == []


def test_an_endpoint_that_ignores_routing_fails_the_preflight(tmp_path):
    with Endpoint(judge_answer(by_numbers), honour_routing=False) as endpoint:
        with pytest.raises(PreflightFailed) as caught:
            _scan(tmp_path, endpoint)
    assert [c.name for c in caught.value.failed] == ["routing"]
    assert _pair_bodies(endpoint) == []


def test_the_cap_sends_each_items_best_pair_before_any_items_second(tmp_path):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        outcome = _scan(tmp_path, endpoint, judge_max_pairs=3)
    sent = {asked(b) for b in _pair_bodies(endpoint)}
    # e0 has two unclear pairs: its second waits until e1 and e2 have had their first
    assert len(sent) == 3
    assert (EVAL[1]["question"], POOL[2]["text"]) in sent
    assert (EVAL[2]["question"], EVAL[3]["question"]) in sent
    assert sum(a == EVAL[0]["question"] for a, _ in sent) == 1
    judge = outcome.report["judge"]
    assert (judge["unclear_pairs"], judge["sent"], judge["over_cap"], judge["max_pairs"]) == (
        4,
        3,
        1,
        3,
    )
    assert len(_judged_rows(outcome)) == 3


def test_a_cap_of_zero_sends_no_pair(tmp_path):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        outcome = _scan(tmp_path, endpoint, judge_max_pairs=0)
    assert _pair_bodies(endpoint) == []
    assert outcome.report["judge"]["over_cap"] == 4


def test_a_dry_run_counts_what_would_be_sent_and_sends_nothing(tmp_path):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        outcome = _scan(tmp_path, endpoint, judge_dry_run=True, judge_max_pairs=2)
    assert endpoint.requests == []  # not even the preflight
    judge = outcome.report["judge"]
    assert judge["dry_run"] is True
    assert (judge["would_send"], judge["over_cap"], judge["judged"]) == (2, 2, 0)
    assert judge["model"]["request_model"] == MODEL
    assert _judged_rows(outcome) == {}


def test_a_bad_judge_config_is_refused_naming_the_file_and_field_before_any_reading(tmp_path):
    ev, pool = write_inputs(tmp_path / "data")
    config = tmp_path / "judge.json"
    config.write_text(json.dumps({"schema_version": 2, "base_url": "http://127.0.0.1:9/v1"}))
    from engine.contamination.scan import run_scan

    with Workspace.init(tmp_path / "ws") as ws:
        with pytest.raises(InputError) as caught:
            run_scan(ws, scan_config(ev, pool, config))
    assert caught.value.path == str(config) and caught.value.field == "model_identity"


# -- the command line ------------------------------------------------------------------


def _cli(sealdesk_main, tmp_path, *options):
    ev, pool = write_inputs(tmp_path / "data")
    return sealdesk_main(
        *scan_args(ev, pool, *SAMPLE_FIELDS, "--no-embed", "--jobs", "1", *options),
        workspace=tmp_path / "ws",
    )


def test_the_scan_says_what_the_judge_suggested_and_what_the_cap_held(sealdesk_main, tmp_path, ws):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        config = write_config(tmp_path / "judge.json", endpoint.url)
        proc = _cli(sealdesk_main, tmp_path, "--judge-config", config, "--judge-max-pairs", "3")
    assert proc.returncode == 0, proc.stderr
    assert (
        f"judge (suggestions beside the pairs, never decisions): 3 of 4 unclear pair(s) sent "
        f"to {MODEL} at {endpoint.url}: 1 same problem, 2 different problem; 1 over "
        "--judge-max-pairs 3, not sent"
    ) in proc.stdout


def test_the_dry_run_prints_the_count_and_the_model(sealdesk_main, tmp_path, ws):
    with Endpoint(judge_answer(by_numbers)) as endpoint:
        config = write_config(tmp_path / "judge.json", endpoint.url)
        proc = _cli(sealdesk_main, tmp_path, "--judge-config", config, "--judge-dry-run")
    assert proc.returncode == 0, proc.stderr
    assert endpoint.requests == []
    assert (
        f"judge dry run: 4 of 4 unclear pair(s) would be sent to {MODEL} at {endpoint.url}; "
        "nothing was sent"
    ) in proc.stdout


def test_a_failed_preflight_prints_each_failed_check_then_one_error(sealdesk_main, tmp_path, ws):
    config = write_config(tmp_path / "judge.json", f"http://127.0.0.1:{_closed_port()}/v1")
    proc = _cli(sealdesk_main, tmp_path, "--judge-config", config)
    assert proc.returncode == 5, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("sealdesk: preflight: judge: reachable: FAILED: unreachable: ")
    assert "preflight failed" in lines[-1] and "nothing was written" in lines[-1]


@pytest.mark.parametrize(
    ("options", "field", "reason"),
    [
        (["--judge-max-pairs", "5"], "judge-max-pairs", "applies to --judge-config"),
        (["--judge-dry-run"], "judge-dry-run", "applies to --judge-config"),
        (["--judge-config", "judge.json", "--judge-max-pairs", "-1"], "judge-max-pairs", "-1"),
    ],
)
def test_a_bad_judge_option_is_refused_in_one_line(
    sealdesk_main, tmp_path, ws, options, field, reason
):
    write_config(tmp_path / "judge.json", "http://127.0.0.1:9/v1")
    options = [str(tmp_path / o) if o == "judge.json" else o for o in options]
    proc = _cli(sealdesk_main, tmp_path, *options)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert field in line and reason in line, line
