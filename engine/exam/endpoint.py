"""The exam's requests to its models: the claims and vote schemas, the lane configs.

The client, the config form of one model, strict routing and the reason
vocabulary are shared with the scan's judge (``engine.endpoint``); what is
the exam's own is here: the schemas its answers follow, a labelers file of
exactly the two lanes, and the protocol's number of attempts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from engine.endpoint.chat import (
    ModelSpec,
    Outcome,
    load_model,
    parse_spec,
)
from engine.endpoint.chat import ask as ask_endpoint
from engine.exam.protocol import FAMILIES, LANES, MAX_ATTEMPTS
from engine.rows import Row, parse_json, read_bytes

CLAIM_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["span_exact_text", "family", "entity"],
    "properties": {
        "span_exact_text": {"type": "string"},
        "family": {"type": "string", "enum": list(FAMILIES)},
        "entity": {"type": "string"},
    },
}
# schema_version is constrained redundantly (const, minimum, maximum) because
# some providers ignore const.
_VERSION = {"type": "integer", "const": 2, "minimum": 2, "maximum": 2}
CLAIMS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "completion_id", "claims"],
    "properties": {
        "schema_version": _VERSION,
        "completion_id": {"type": "string"},
        "claims": {"type": "array", "items": CLAIM_SCHEMA},
    },
}
VOTE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "candidate_id", "vote"],
    "properties": {
        "schema_version": _VERSION,
        "candidate_id": {"type": "string"},
        "vote": {"type": "string", "enum": ["accept", "reject"]},
    },
}


def load_labelers(path: Path) -> dict[str, ModelSpec]:
    """Gives the two lanes' model specs from a credential-free config file."""
    row = Row(parse_json(read_bytes(path), path), str(path), None)
    obj = row.fields(
        row.value,
        {"schema_version", "labelers"},
        {"base_url", "api_key_env", "strict_routing", "timeout_s"},
    )
    row.version(obj, 2)
    labelers = obj["labelers"]
    if not isinstance(labelers, list) or len(labelers) != len(LANES):
        raise row.error(f"must list exactly the lanes {', '.join(LANES)}", "labelers")
    specs = {}
    for i, entry in enumerate(labelers):
        prefix = f"labelers[{i}]."
        if not isinstance(entry, dict) or entry.get("id") not in LANES:
            raise row.error(f"must be one of {', '.join(LANES)}", prefix + "id")
        if entry["id"] in specs:
            raise row.error("lane listed twice", prefix + "id")
        specs[entry["id"]] = parse_spec(row, entry, prefix, entry["id"], obj)
    return specs


def load_adjudicator(path: Path) -> ModelSpec:
    """Gives the adjudicator model's spec from a credential-free config file."""
    return load_model(path, "adjudicator")


def ask(
    http: httpx.Client,
    spec: ModelSpec,
    system: str,
    user: str,
    schema_name: str,
    schema: dict[str, Any],
    check: Callable[[Any], Any],
) -> Outcome:
    """Gives the checked answer to one request, tried as often as the protocol allows."""
    return ask_endpoint(http, spec, system, user, schema_name, schema, check, MAX_ATTEMPTS)
