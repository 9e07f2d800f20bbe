"""An OpenAI-compatible chat endpoint asked for strict JSON-schema answers.

Every request names a frozen model and a request profile, asks for a strict
JSON schema, refuses redirects, and checks that the response names exactly
the expected model identity. A request is tried at most twice (one retry);
each failed attempt is counted as an invalid response (bad JSON, schema,
span, model identity) or a failed request (transport, HTTP status).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import httpx

from engine.errors import InputError
from engine.exam.inputs import REQUEST_PROFILES
from engine.exam.protocol import FAMILIES, LANES, MAX_ATTEMPTS
from engine.exam.schema import Row, parse_json, read_bytes

PROFILES: dict[str, dict[str, Any]] = {
    "deterministic-v1": {"temperature": 0, "seed": 0},
    # Some endpoints support neither field; their lane samples at provider defaults.
    "provider-default-v1": {},
}
DEFAULT_KEY_ENV = "SEALDESK_MODEL_API_KEY"

CLAIM_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["span_exact_text", "family", "entity"],
    "properties": {"span_exact_text": {"type": "string"},
                   "family": {"type": "string", "enum": list(FAMILIES)},
                   "entity": {"type": "string"}},
}
# schema_version is constrained redundantly (const, minimum, maximum) because
# some providers ignore const.
_VERSION = {"type": "integer", "const": 2, "minimum": 2, "maximum": 2}
CLAIMS_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["schema_version", "completion_id", "claims"],
    "properties": {"schema_version": _VERSION, "completion_id": {"type": "string"},
                   "claims": {"type": "array", "items": CLAIM_SCHEMA}},
}
VOTE_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["schema_version", "candidate_id", "vote"],
    "properties": {"schema_version": _VERSION, "candidate_id": {"type": "string"},
                   "vote": {"type": "string", "enum": ["accept", "reject"]}},
}


class InvalidAnswer(Exception):
    """The endpoint answered, but not with what the protocol accepts."""


@dataclass(frozen=True)
class ModelSpec:
    """One frozen model mapping: where, which model, which identity, which profile."""

    name: str
    base_url: str
    request_model: str
    model_identity: str
    request_profile: str
    api_key_env: str = DEFAULT_KEY_ENV
    strict_routing: bool = False
    timeout_s: float = 120.0

    def describe(self) -> dict[str, Any]:
        """Gives the credential-free description bound into artifacts."""
        return {"source": "model", "base_url": self.base_url,
                "request_model": self.request_model, "model_identity": self.model_identity,
                "request_profile": self.request_profile}


@dataclass(frozen=True)
class Outcome:
    """What asking gave: the checked answer (or None) and the attempt counters."""

    value: Any
    response_model: str | None
    attempts: int
    invalid_response_attempts: int
    failed_request_attempts: int
    error: str | None


def _spec(row: Row, obj: dict[str, Any], prefix: str, name: str,
          defaults: dict[str, Any]) -> ModelSpec:
    row.fields(obj, {"request_model", "model_identity", "request_profile"},
               {"id", "base_url", "api_key_env", "strict_routing", "timeout_s"}, prefix)
    base_url = obj.get("base_url", defaults.get("base_url"))
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise row.error("must be an http:// or https:// URL", prefix + "base_url")
    key_env = obj.get("api_key_env", defaults.get("api_key_env", DEFAULT_KEY_ENV))
    routing = obj.get("strict_routing", defaults.get("strict_routing", False))
    timeout = obj.get("timeout_s", defaults.get("timeout_s", 120.0))
    if not isinstance(key_env, str) or not key_env:
        raise row.error("must name an environment variable", prefix + "api_key_env")
    if not isinstance(routing, bool):
        raise row.error("must be true or false", prefix + "strict_routing")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise row.error("must be a positive number of seconds", prefix + "timeout_s")
    return ModelSpec(name, base_url.rstrip("/"), row.text(obj, "request_model", prefix),
                     row.text(obj, "model_identity", prefix),
                     row.choice(obj, "request_profile", REQUEST_PROFILES, prefix),
                     key_env, routing, float(timeout))


def load_labelers(path: Path) -> dict[str, ModelSpec]:
    """Gives the two lanes' model specs from a credential-free config file."""
    row = Row(parse_json(read_bytes(path), path), str(path), None)
    obj = row.fields(row.value, {"schema_version", "labelers"},
                     {"base_url", "api_key_env", "strict_routing", "timeout_s"})
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
        specs[entry["id"]] = _spec(row, entry, prefix, entry["id"], obj)
    return specs


def load_adjudicator(path: Path) -> ModelSpec:
    """Gives the adjudicator model's spec from a credential-free config file."""
    row = Row(parse_json(read_bytes(path), path), str(path), None)
    obj = row.value
    if not isinstance(obj, dict):
        raise row.error("must be a JSON object")
    row.version(obj, 2)
    body = {k: v for k, v in obj.items() if k != "schema_version"}
    return _spec(row, body, "", "adjudicator", {})


def client() -> httpx.Client:
    """Gives an HTTP client with redirects off and no ambient proxy or netrc."""
    return httpx.Client(follow_redirects=False, trust_env=False)


def _attempt(http: httpx.Client, spec: ModelSpec, body: dict[str, Any],
             check: Callable[[Any], Any]) -> tuple[Any, str | None]:
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(spec.api_key_env)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    response = http.post(f"{spec.base_url}/chat/completions", json=body, headers=headers,
                         timeout=spec.timeout_s)
    if response.status_code != 200:
        raise httpx.HTTPStatusError(f"HTTP {response.status_code}", request=response.request,
                                    response=response)
    try:
        envelope = response.json()
        model = envelope["model"]
        content = envelope["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise InvalidAnswer(f"not a chat completion: {exc!r}") from exc
    if model != spec.model_identity:
        raise InvalidAnswer(f"response model {model!r} is not the frozen identity "
                            f"{spec.model_identity!r}")
    if not isinstance(content, str):
        raise InvalidAnswer("message content is not a string")
    try:
        value = parse_json(content.encode("utf-8"), Path(f"<{spec.name} response>"))
        return check(value), model
    except InputError as exc:
        raise InvalidAnswer(exc.one_line()) from exc


def ask(http: httpx.Client, spec: ModelSpec, system: str, user: str, schema_name: str,
        schema: dict[str, Any], check: Callable[[Any], Any]) -> Outcome:
    """Gives the checked answer to one request, trying at most twice."""
    body: dict[str, Any] = {
        "model": spec.request_model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": schema_name, "strict": True,
                                            "schema": schema}},
        **PROFILES[spec.request_profile],
    }
    if spec.strict_routing:
        body["provider"] = {"require_parameters": True, "allow_fallbacks": False}
    invalid = failed = 0
    error = None
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            value, model = _attempt(http, spec, body, check)
            return Outcome(value, model, attempt, invalid, failed, None)
        except InvalidAnswer as exc:
            invalid += 1
            error = f"invalid response: {exc}"
        except httpx.HTTPError as exc:
            failed += 1
            error = f"request failed: {exc}"
    return Outcome(None, None, MAX_ATTEMPTS, invalid, failed, error)
