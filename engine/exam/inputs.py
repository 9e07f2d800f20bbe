"""Strict loading of the exam's inputs; every bad row is named by file, line, field.

Loading reads every file, checks locked SHA-256 values first, then each row's
schema, then the cross-file rules (one context and one lane row per
completion, the labeling summary's hashes and tallies). Nothing is computed
from an input until all of them have passed.
"""

from __future__ import annotations

import re
from collections.abc import Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.endpoint.chat import REQUEST_PROFILES
from engine.endpoint.failures import Failure, tally
from engine.errors import InputError
from engine.exam.failures import parse_failures
from engine.exam.protocol import FAMILIES, LANES, PROTOCOL_VERSION, RUBRIC_ID, rubric_sha256
from engine.rows import Row, check_expected, jsonl_rows, parse_json, read_bytes

LANE_STATUSES = ("ok", "operational_failure")
# How a lane's requests were routed, as its labeling summary says: strict
# (require_parameters, no fallbacks) or opted out by its config. Summaries
# written before routing was recorded say nothing: not_recorded.
PROVIDER_ROUTING = ("strict", "opted_out")
NOT_RECORDED = "not_recorded"
MESSAGE_ROLES = ("user", "assistant", "system", "tool")
_TURN = re.compile(r"^turn-(0|[1-9][0-9]{0,8})\Z")

# Anything that would let a labeler see another rater's or the detector's work.
FORBIDDEN_CONTEXT = {
    name: "forbidden in blind context: predictions, candidates, artifacts, lane output, "
    "coverage, votes and verdicts must never reach a labeler"
    for name in (
        "prediction",
        "predictions",
        "detector",
        "candidate",
        "candidates",
        "artifact",
        "artifacts",
        "label",
        "labels",
        "claims",
        "lane",
        "lanes",
        "lane_output",
        "coverage",
        "vote",
        "votes",
        "verdict",
        "verdicts",
        "decision",
        "decisions",
        "gold",
    )
}


@dataclass(frozen=True)
class Claim:
    """One labeled claim as a rater gave it (confidence fields already dropped)."""

    span_exact_text: str
    family: str
    entity: str


@dataclass(frozen=True)
class Completion:
    """One corpus row: the completion under exam."""

    completion_id: str
    session_id: str
    target_turn_id: str
    text: str


@dataclass(frozen=True)
class Message:
    """One sanitized context message."""

    role: str
    content: str


@dataclass(frozen=True)
class Context:
    """The blind context of one completion: the preceding message only."""

    completion_id: str
    preceding_turn_id: str
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class LaneRow:
    """One lane's output for one completion."""

    lane: str
    completion_id: str
    status: str
    claims: tuple[Claim, ...] | None
    request_model: str
    response_model: str | None
    attempts: int
    invalid_response_attempts: int
    failed_request_attempts: int
    line: int = 0
    failures: tuple[Failure, ...] | None = None  # None: the file records no reasons


@dataclass(frozen=True)
class LaneSpec:
    """A lane's frozen model mapping as the labeling summary records it."""

    request_model: str
    model_identity: str
    request_profile: str
    provider_routing: str = NOT_RECORDED


@dataclass(frozen=True)
class ExamInputs:
    """Everything the union needs, validated, with the SHA-256 of each file."""

    completions: tuple[Completion, ...]
    contexts: dict[str, Context]
    lanes: dict[str, dict[str, LaneRow]]
    lane_specs: dict[str, LaneSpec]
    hashes: dict[str, str]


@dataclass(frozen=True)
class InputPaths:
    """Where the inputs are, and the SHA-256 values locked on the command line."""

    corpus: Path
    context: Path
    lane_a: Path
    lane_b: Path
    labeling_summary: Path
    expected_context_sha256: str
    expected_labeling_summary_sha256: str
    expected_corpus_sha256: str | None = None
    expected_lane_a_sha256: str | None = None
    expected_lane_b_sha256: str | None = None


def parse_claim(row: Row, obj: Any, prefix: str) -> Claim:
    """Gives a checked claim; confidence fields are allowed and then ignored."""
    row.fields(
        obj,
        {"span_exact_text", "family", "entity"},
        {"confidence", "evidence_contact_visible"},
        prefix,
    )
    span = row.text(obj, "span_exact_text", prefix)
    family = row.choice(obj, "family", FAMILIES, prefix)
    entity = row.text(obj, "entity", prefix)
    if "confidence" in obj:
        value = obj["confidence"]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
            raise row.error("must be a number from 0 to 1", prefix + "confidence")
    if "evidence_contact_visible" in obj and not isinstance(obj["evidence_contact_visible"], bool):
        raise row.error("must be true or false", prefix + "evidence_contact_visible")
    return Claim(span, family, entity)


def parse_claims(row: Row, value: Any, field: str) -> tuple[Claim, ...]:
    """Gives the claims of a list field."""
    if not isinstance(value, list):
        raise row.error("must be a list of claims", field)
    return tuple(parse_claim(row, c, f"{field}[{i}].") for i, c in enumerate(value))


def _turn_number(row: Row, obj: dict[str, Any], key: str) -> int:
    value = row.text(obj, key)
    match = _TURN.match(value)
    if not match:
        raise row.error("must be 'turn-<n>' with a non-negative integer n", key)
    return int(match.group(1))


def _unique(row: Row, seen: dict[str, int], key: str, field: str) -> None:
    if key in seen:
        raise row.error(f"{key!r} appears again (first at line {seen[key]})", field)
    seen[key] = row.line or 0


def completion_row(
    row: Row,
    fields: set[str],
    version: int,
    known: Any,
    seen: dict[str, int],
    optional: Set[str] = frozenset(),
) -> tuple[dict[str, Any], str]:
    """Gives (object, completion id) of a row of a one-row-per-completion file, checked."""
    obj = row.fields(row.value, fields, optional)
    row.version(obj, version)
    cid = row.ident(obj, "completion_id")
    if cid not in known:
        raise row.error("no corpus completion has this id", "completion_id")
    _unique(row, seen, cid, "completion_id")
    return obj, cid


def outcome(row: Row, obj: dict[str, Any], payload: str) -> str:
    """Gives a row's status, ok or operational_failure (whose payload must be null)."""
    status = row.choice(obj, "status", LANE_STATUSES)
    if status == "operational_failure" and obj[payload] is not None:
        raise row.error("must be null when status is operational_failure", payload)
    return status


def parse_corpus(data: bytes, path: Path) -> tuple[Completion, ...]:
    """Gives the corpus completions in file order; ids must be unique."""
    out: list[Completion] = []
    seen: dict[str, int] = {}
    for row in jsonl_rows(data, path):
        obj = row.fields(
            row.value,
            {"schema_version", "completion_id", "session_id", "target_turn_id", "completion_text"},
        )
        row.version(obj, 1)
        cid = row.ident(obj, "completion_id")
        _unique(row, seen, cid, "completion_id")
        _turn_number(row, obj, "target_turn_id")
        out.append(
            Completion(
                cid,
                row.ident(obj, "session_id"),
                obj["target_turn_id"],
                row.text(obj, "completion_text"),
            )
        )
    if not out:
        raise InputError("the corpus has no completions", path=path)
    return tuple(out)


def parse_context(
    data: bytes, path: Path, completions: tuple[Completion, ...]
) -> dict[str, Context]:
    """Gives the blind context per completion: exactly one row each, ids matching."""
    by_id = {c.completion_id: c for c in completions}
    out: dict[str, Context] = {}
    lines: dict[str, int] = {}
    for row in jsonl_rows(data, path):
        obj = row.fields(
            row.value,
            {
                "schema_version",
                "completion_id",
                "session_id",
                "target_turn_id",
                "preceding_turn_id",
                "messages",
            },
            forbidden=FORBIDDEN_CONTEXT,
        )
        row.version(obj, 1)
        cid = row.ident(obj, "completion_id")
        completion = by_id.get(cid)
        if completion is None:
            raise row.error("no corpus completion has this id", "completion_id")
        _unique(row, lines, cid, "completion_id")
        if obj["session_id"] != completion.session_id:
            raise row.error(f"differs from the corpus ({completion.session_id!r})", "session_id")
        if obj["target_turn_id"] != completion.target_turn_id:
            raise row.error(
                f"differs from the corpus ({completion.target_turn_id!r})", "target_turn_id"
            )
        target = _turn_number(row, obj, "target_turn_id")
        preceding = _turn_number(row, obj, "preceding_turn_id")
        if preceding != target - 1:
            raise row.error(
                f"must be the immediately preceding turn, turn-{target - 1}"
                if target > 0
                else "turn-0 has no preceding turn",
                "preceding_turn_id",
            )
        messages = obj["messages"]
        if not isinstance(messages, list) or len(messages) != 1:
            raise row.error("must hold exactly the one sanitized preceding message", "messages")
        msg = row.fields(
            messages[0], {"role", "content"}, prefix="messages[0].", forbidden=FORBIDDEN_CONTEXT
        )
        role = row.choice(msg, "role", MESSAGE_ROLES, "messages[0].")
        content = row.text(msg, "content", "messages[0].")
        if completion.text.strip() and completion.text.strip() in content:
            raise row.error(
                "repeats the target completion; context holds only the preceding message",
                "messages[0].content",
            )
        out[cid] = Context(cid, obj["preceding_turn_id"], (Message(role, content),))
    missing = [c.completion_id for c in completions if c.completion_id not in out]
    if missing:
        raise InputError(
            f"no context row for completion {missing[0]!r} (exactly one row per corpus completion)",
            path=path,
            field="completion_id",
        )
    return out


def parse_lane(
    data: bytes, path: Path, lane: str, completions: tuple[Completion, ...]
) -> dict[str, LaneRow]:
    """Gives one lane's rows by completion id: exactly one per corpus completion."""
    known = {c.completion_id for c in completions}
    out: dict[str, LaneRow] = {}
    lines: dict[str, int] = {}
    for row in jsonl_rows(data, path):
        obj, cid = completion_row(
            row,
            {
                "schema_version",
                "lane",
                "completion_id",
                "status",
                "claims",
                "request_model",
                "response_model",
                "attempts",
                "invalid_response_attempts",
                "failed_request_attempts",
            },
            2,
            known,
            lines,
            optional={"failures"},
        )
        if obj["lane"] != lane:
            raise row.error(f"must be {lane!r} in this file (got {obj['lane']!r})", "lane")
        status = outcome(row, obj, "claims")
        request_model = row.text(obj, "request_model")
        attempts = row.integer(obj, "attempts", low=1, high=2)
        invalid = row.integer(obj, "invalid_response_attempts", low=0, high=2)
        failed = row.integer(obj, "failed_request_attempts", low=0, high=2)
        if status == "ok":
            claims = parse_claims(row, obj["claims"], "claims")
            response_model = row.text(obj, "response_model")
            if invalid + failed != attempts - 1:
                raise row.error("an ok row's failed attempts must number attempts - 1", "attempts")
        else:
            claims = None
            response_model = obj["response_model"]
            if response_model is not None and not isinstance(response_model, str):
                raise row.error("must be a string or null", "response_model")
            if attempts != 2 or invalid + failed != 2:
                raise row.error(
                    "an operational_failure row records two failed attempts "
                    "(invalid_response_attempts + failed_request_attempts = 2)",
                    "attempts",
                )
        failures = parse_failures(row, obj, "failures", attempts, invalid, failed)
        out[cid] = LaneRow(
            lane,
            cid,
            status,
            claims,
            request_model,
            response_model,
            attempts,
            invalid,
            failed,
            row.line or 0,
            failures,
        )
    missing = [c.completion_id for c in completions if c.completion_id not in out]
    if missing:
        raise InputError(
            f"no {lane} row for completion {missing[0]!r}; no completion may be dropped",
            path=path,
            field="completion_id",
        )
    return out


def parse_summary(data: bytes, path: Path) -> tuple[dict[str, LaneSpec], dict[str, Any]]:
    """Gives the lane specs and the raw summary object, schema-checked."""
    row = Row(parse_json(data, path), str(path), None)
    obj = row.fields(
        row.value,
        {
            "schema_version",
            "protocol_version",
            "rubric",
            "corpus_sha256",
            "context_sha256",
            "lanes",
        },
    )
    row.version(obj, 2)
    if obj["protocol_version"] != PROTOCOL_VERSION:
        raise row.error(f"must be {PROTOCOL_VERSION!r}", "protocol_version")
    rubric = row.fields(obj["rubric"], {"id", "sha256"}, prefix="rubric.")
    if rubric["id"] != RUBRIC_ID:
        raise row.error(f"must be {RUBRIC_ID!r}", "rubric.id")
    if rubric["sha256"] != rubric_sha256():
        raise row.error(
            f"is not {rubric_sha256()}, the SHA-256 of the frozen rubric text "
            "(`sealdesk exam rubric` prints the text and its hash); labels made "
            "under another rubric cannot enter this exam",
            "rubric.sha256",
        )
    row.sha256(obj, "corpus_sha256")
    row.sha256(obj, "context_sha256")
    lanes = row.fields(obj["lanes"], set(LANES), prefix="lanes.")
    specs = {}
    for lane in LANES:
        p = f"lanes.{lane}."
        entry = row.fields(
            lanes[lane],
            {
                "request_model",
                "model_identity",
                "request_profile",
                "labels_sha256",
                "rows",
                "ok",
                "operational_failure",
                "invalid_response_attempts",
                "failed_request_attempts",
            },
            {"provider_routing", "failure_reasons"},
            prefix=p,
        )
        routing = (
            row.choice(entry, "provider_routing", PROVIDER_ROUTING, p)
            if "provider_routing" in entry
            else NOT_RECORDED
        )
        specs[lane] = LaneSpec(
            row.text(entry, "request_model", p),
            row.text(entry, "model_identity", p),
            row.choice(entry, "request_profile", REQUEST_PROFILES, p),
            routing,
        )
        if "failure_reasons" in entry:
            reasons = entry["failure_reasons"]
            if not isinstance(reasons, dict):
                raise row.error("must map each reason to its count", p + "failure_reasons")
            for reason in reasons:
                row.integer(reasons, reason, p + "failure_reasons.", low=1)
        row.sha256(entry, "labels_sha256", p)
        for key in (
            "rows",
            "ok",
            "operational_failure",
            "invalid_response_attempts",
            "failed_request_attempts",
        ):
            row.integer(entry, key, p, low=0)
    return specs, obj


def lane_tallies(rows: dict[str, LaneRow]) -> dict[str, int]:
    """Gives the counts a labeling summary records for one lane."""
    values = list(rows.values())
    return {
        "rows": len(values),
        "ok": sum(r.status == "ok" for r in values),
        "operational_failure": sum(r.status == "operational_failure" for r in values),
        "invalid_response_attempts": sum(r.invalid_response_attempts for r in values),
        "failed_request_attempts": sum(r.failed_request_attempts for r in values),
    }


def _check_summary(
    summary: dict[str, Any],
    path: Path,
    hashes: dict[str, str],
    lanes: dict[str, dict[str, LaneRow]],
    specs: dict[str, LaneSpec],
    lane_paths: dict[str, Path],
) -> None:
    row = Row(summary, str(path), None)
    for key, name in (("corpus_sha256", "corpus"), ("context_sha256", "context")):
        if summary[key] != hashes[name]:
            raise row.error(
                f"records {summary[key]} but the {name} file given has {hashes[name]}", key
            )
    for lane in LANES:
        spec = specs[lane]
        for lane_row in lanes[lane].values():
            lane_path, line = lane_paths[lane], lane_row.line
            if lane_row.request_model != spec.request_model:
                raise InputError(
                    f"{lane_row.request_model!r} is not the summary's {spec.request_model!r}",
                    path=lane_path,
                    line=line,
                    field="request_model",
                )
            if lane_row.status == "ok" and lane_row.response_model != spec.model_identity:
                raise InputError(
                    f"{lane_row.response_model!r} is not the frozen identity "
                    f"{spec.model_identity!r}",
                    path=lane_path,
                    line=line,
                    field="response_model",
                )
        entry = summary["lanes"][lane]
        if entry["labels_sha256"] != hashes[lane]:
            raise row.error(
                f"records {entry['labels_sha256']} but {lane_paths[lane]} has {hashes[lane]}",
                f"lanes.{lane}.labels_sha256",
            )
        for key, value in lane_tallies(lanes[lane]).items():
            if entry[key] != value:
                raise row.error(
                    f"records {entry[key]} but the {lane} file has {value}", f"lanes.{lane}.{key}"
                )
        if "failure_reasons" in entry:
            rows = lanes[lane].values()
            if any(r.failures is None for r in rows):
                raise row.error(
                    f"counts failure reasons but {lane_paths[lane]} does not record them",
                    f"lanes.{lane}.failure_reasons",
                )
            held = tally(f for r in rows for f in r.failures or ())
            if entry["failure_reasons"] != held:
                raise row.error(
                    f"records {entry['failure_reasons']} but the {lane} file has {held}",
                    f"lanes.{lane}.failure_reasons",
                )


def load_inputs(paths: InputPaths) -> ExamInputs:
    """Gives the validated inputs; raises on the first bad file, row or field."""
    raw = {
        "corpus": read_bytes(paths.corpus),
        "context": read_bytes(paths.context),
        "lane-a": read_bytes(paths.lane_a),
        "lane-b": read_bytes(paths.lane_b),
        "labeling_summary": read_bytes(paths.labeling_summary),
    }
    hashes = {
        "corpus": check_expected(
            paths.corpus, raw["corpus"], paths.expected_corpus_sha256, "expected-corpus-sha256"
        ),
        "context": check_expected(
            paths.context, raw["context"], paths.expected_context_sha256, "expected-context-sha256"
        ),
        "lane-a": check_expected(
            paths.lane_a, raw["lane-a"], paths.expected_lane_a_sha256, "expected-lane-a-sha256"
        ),
        "lane-b": check_expected(
            paths.lane_b, raw["lane-b"], paths.expected_lane_b_sha256, "expected-lane-b-sha256"
        ),
        "labeling_summary": check_expected(
            paths.labeling_summary,
            raw["labeling_summary"],
            paths.expected_labeling_summary_sha256,
            "expected-labeling-summary-sha256",
        ),
    }
    completions = parse_corpus(raw["corpus"], paths.corpus)
    contexts = parse_context(raw["context"], paths.context, completions)
    lane_paths = {"lane-a": paths.lane_a, "lane-b": paths.lane_b}
    lanes = {lane: parse_lane(raw[lane], lane_paths[lane], lane, completions) for lane in LANES}
    specs, summary = parse_summary(raw["labeling_summary"], paths.labeling_summary)
    _check_summary(summary, paths.labeling_summary, hashes, lanes, specs, lane_paths)
    return ExamInputs(completions, contexts, lanes, specs, hashes)
