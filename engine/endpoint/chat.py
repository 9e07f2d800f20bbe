"""An OpenAI-compatible chat endpoint asked for strict JSON-schema answers.

Shared by every model-backed channel (the exam's lanes and adjudicator, the
contamination scan's judge): one client, one config form, one reason
vocabulary.

Every request names a frozen model and a request profile, asks for a strict
JSON schema, refuses redirects, and checks that the response names exactly
the expected model identity. Requests to a routing provider carry
``provider.require_parameters: true`` and ``provider.allow_fallbacks: false``
unless a config opts out (``"strict_routing": false``), which the labeling
summary and the artifact then record. A request is tried at most twice (one
retry); each failed attempt keeps its kind and reason (``failures.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from engine.endpoint.failures import (
    FAILED_REQUEST,
    INVALID_RESPONSE,
    KIND_OF,
    Failure,
    one_line,
)
from engine.errors import InputError
from engine.rows import Row, parse_json, read_bytes

PROFILES: dict[str, dict[str, Any]] = {
    "deterministic-v1": {"temperature": 0, "seed": 0},
    # Some endpoints support neither field; their lane samples at provider defaults.
    "provider-default-v1": {},
}
REQUEST_PROFILES = tuple(PROFILES)
DEFAULT_KEY_ENV = "SEALDESK_MODEL_API_KEY"
# Only providers that honour every parameter sent (a profile's temperature and
# seed), and no silent move to another provider.
ROUTING = {"require_parameters": True, "allow_fallbacks": False}
STRICT, OPTED_OUT = "strict", "opted_out"

# Each request is tried at most this many times (one retry).
MAX_ATTEMPTS = 2
CONFIG_VERSION = 2


@dataclass(frozen=True)
class ModelSpec:
    """One frozen model mapping: where, which model, which identity, which profile."""

    name: str
    base_url: str
    request_model: str
    model_identity: str
    request_profile: str
    api_key_env: str = DEFAULT_KEY_ENV
    strict_routing: bool = True
    timeout_s: float = 120.0

    @property
    def provider_routing(self) -> str:
        """Gives how requests are routed, as artifacts record it: strict or opted_out."""
        return STRICT if self.strict_routing else OPTED_OUT

    def describe(self) -> dict[str, Any]:
        """Gives the credential-free description bound into artifacts."""
        return {
            "source": "model",
            "base_url": self.base_url,
            "request_model": self.request_model,
            "model_identity": self.model_identity,
            "request_profile": self.request_profile,
            "provider_routing": self.provider_routing,
        }


@dataclass(frozen=True)
class Outcome:
    """What asking gave: the checked answer (or None) and each failed attempt's reason."""

    value: Any
    response_model: str | None
    attempts: int
    failures: tuple[Failure, ...]

    @property
    def invalid_response_attempts(self) -> int:
        """Gives how many attempts were answered with what the protocol refuses."""
        return sum(f.kind == INVALID_RESPONSE for f in self.failures)

    @property
    def failed_request_attempts(self) -> int:
        """Gives how many attempts got no answer (transport or HTTP status)."""
        return sum(f.kind == FAILED_REQUEST for f in self.failures)


def parse_spec(
    row: Row, obj: dict[str, Any], prefix: str, name: str, defaults: dict[str, Any]
) -> ModelSpec:
    """Gives the model spec one config object describes, else the row's InputError."""
    row.fields(
        obj,
        {"request_model", "model_identity", "request_profile"},
        {"id", "base_url", "api_key_env", "strict_routing", "timeout_s"},
        prefix,
    )
    base_url = obj.get("base_url", defaults.get("base_url"))
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise row.error("must be an http:// or https:// URL", prefix + "base_url")
    key_env = obj.get("api_key_env", defaults.get("api_key_env", DEFAULT_KEY_ENV))
    # Strict routing is the default; a config opts out only by saying so.
    routing = obj.get("strict_routing", defaults.get("strict_routing", True))
    timeout = obj.get("timeout_s", defaults.get("timeout_s", 120.0))
    if not isinstance(key_env, str) or not key_env:
        raise row.error("must name an environment variable", prefix + "api_key_env")
    if not isinstance(routing, bool):
        raise row.error("must be true or false", prefix + "strict_routing")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise row.error("must be a positive number of seconds", prefix + "timeout_s")
    return ModelSpec(
        name,
        base_url.rstrip("/"),
        row.text(obj, "request_model", prefix),
        row.text(obj, "model_identity", prefix),
        row.choice(obj, "request_profile", REQUEST_PROFILES, prefix),
        key_env,
        routing,
        float(timeout),
    )


def load_model(path: Path, name: str) -> ModelSpec:
    """Gives one model's spec from a credential-free config file (schema_version 2)."""
    row = Row(parse_json(read_bytes(path), path), str(path), None)
    obj = row.value
    if not isinstance(obj, dict):
        raise row.error("must be a JSON object")
    row.version(obj, CONFIG_VERSION)
    body = {k: v for k, v in obj.items() if k != "schema_version"}
    return parse_spec(row, body, "", name, {})


class AttemptError(Exception):
    """One attempt failed; ``reason`` is from the vocabulary in ``failures.py``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.kind = KIND_OF[reason]
        self.detail = one_line(detail)

    def failure(self, attempt: int) -> Failure:
        """Gives the record of this failure as attempt number ``attempt``."""
        return Failure(attempt, self.kind, self.reason, self.detail)


def client() -> httpx.Client:
    """Gives an HTTP client with redirects off and no ambient proxy or netrc."""
    return httpx.Client(follow_redirects=False, trust_env=False)


def request_body(
    spec: ModelSpec, system: str, user: str, schema_name: str, schema: dict[str, Any]
) -> dict[str, Any]:
    """Gives the body of one request: frozen model, strict schema, profile, routing."""
    body: dict[str, Any] = {
        "model": spec.request_model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "strict": True, "schema": schema},
        },
        **PROFILES[spec.request_profile],
    }
    if spec.strict_routing:
        body["provider"] = dict(ROUTING)
    return body


def _error_text(response: httpx.Response) -> str:
    # Routers explain a refusal in {"error": {"message": ...}}; say what they said.
    try:
        message = response.json()["error"]["message"]
        if isinstance(message, str):
            return message
    except (ValueError, KeyError, TypeError):
        pass
    return response.text[:200]


def post(http: httpx.Client, spec: ModelSpec, body: dict[str, Any]) -> httpx.Response:
    """Gives the endpoint's HTTP 200 response to one request, else raises AttemptError."""
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(spec.api_key_env)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = f"{spec.base_url}/chat/completions"
    try:
        response = http.post(url, json=body, headers=headers, timeout=spec.timeout_s)
    except httpx.TimeoutException:
        raise AttemptError("timeout", f"no answer from {url} within {spec.timeout_s:g} s") from None
    except httpx.ConnectError as exc:
        raise AttemptError("unreachable", f"cannot connect to {url}: {exc}") from None
    except httpx.HTTPError as exc:
        raise AttemptError("transport", f"{url}: {type(exc).__name__}: {exc}") from None
    status = response.status_code
    if 300 <= status < 400:
        raise AttemptError(
            "redirect",
            f"HTTP {status} to {response.headers.get('location')!r} (redirects are never followed)",
        )
    if status != 200:
        hint = ""
        if status in (401, 403) and not key:
            hint = f" (no API key: ${spec.api_key_env} is not set)"
        raise AttemptError("http_status", f"HTTP {status}: {_error_text(response)}{hint}")
    return response


def read_answer(
    response: httpx.Response, spec: ModelSpec, check: Callable[[Any], Any]
) -> tuple[Any, Any, list[AttemptError]]:
    """Gives (checked value, the model the answer names, every fault of the answer).

    The model identity and the content are judged independently, so that a
    preflight can report both; the value is None unless there is no fault.
    """
    try:
        envelope = response.json()
        model = envelope["model"]
        content = envelope["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return None, None, [AttemptError("not_chat_completion", f"not a chat completion: {exc!r}")]
    faults = []
    if model != spec.model_identity:
        faults.append(
            AttemptError(
                "model_identity",
                f"response model {model!r} is not the frozen identity {spec.model_identity!r}",
            )
        )
    if not isinstance(content, str):
        return (
            None,
            model,
            faults + [AttemptError("not_chat_completion", "message content is not a string")],
        )
    try:
        parsed = parse_json(content.encode("utf-8"), Path(f"<{spec.name} response>"))
    except InputError as exc:
        return None, model, faults + [AttemptError("not_json", exc.one_line())]
    try:
        value = check(parsed)
    except AttemptError as exc:
        return None, model, faults + [exc]
    except InputError as exc:
        return None, model, faults + [AttemptError("schema", exc.one_line())]
    return (None if faults else value), model, faults


def ask(
    http: httpx.Client,
    spec: ModelSpec,
    system: str,
    user: str,
    schema_name: str,
    schema: dict[str, Any],
    check: Callable[[Any], Any],
    attempts: int = MAX_ATTEMPTS,
) -> Outcome:
    """Gives the checked answer to one request, trying at most ``attempts`` times."""
    body = request_body(spec, system, user, schema_name, schema)
    failures: list[Failure] = []
    for attempt in range(1, attempts + 1):
        try:
            value, model, faults = read_answer(post(http, spec, body), spec, check)
        except AttemptError as exc:
            faults = [exc]
        if not faults:
            return Outcome(value, model, attempt, tuple(failures))
        # An answer may have several faults; the first one found is its reason.
        failures.append(faults[0].failure(attempt))
    return Outcome(None, None, attempts, tuple(failures))
