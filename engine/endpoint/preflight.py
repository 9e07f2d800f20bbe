"""The synthetic preflight of every live model, before any request that counts.

Per model, one synthetic request, built exactly as the requests that count
are (frozen model, request profile, strict schema, routing parameters),
checks four things:

  reachable       the endpoint answers HTTP 200; a router that finds no
                  provider honouring every parameter of the profile refuses
                  here, with its reason
  model identity  the answer names exactly the frozen model identity
  strict schema   the answer is JSON the strict schema accepts (and, for
                  the exam, about the synthetic completion, every span in
                  its text)
  routing         a routing probe, the same request restricted to a provider
                  that does not exist with fallbacks off, must be refused:
                  an endpoint that answers it ignores the routing parameters.
                  A refused probe is never generated, so it costs nothing. A
                  model whose config opted out of strict routing gets no
                  probe, and the check says so.

Each request is tried once. A failed check stops the run before its first
request that counts, and nothing is written. The exam's lanes and
adjudicator (``engine.exam.preflight``) and the contamination scan's judge
each bring their own synthetic request; the checks are these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.endpoint.chat import (
    ROUTING,
    AttemptError,
    ModelSpec,
    client,
    post,
    read_answer,
)
from engine.errors import NotReadyError

REACHABLE, IDENTITY, SCHEMA, ROUTING_CHECK = (
    "reachable",
    "model identity",
    "strict schema",
    "routing",
)
CHECKS = (REACHABLE, IDENTITY, SCHEMA, ROUTING_CHECK)
# A provider slug no router serves: a request limited to it, without fallbacks,
# has nowhere to go unless the limit is ignored.
PROBE_PROVIDER = "sealdesk-preflight-no-such-provider"


@dataclass(frozen=True)
class Check:
    """One preflight check of one model: passed, failed, or not checked (``ok`` None)."""

    model: str
    name: str
    ok: bool | None
    detail: str

    def line(self) -> str:
        """Gives the check as one line: model, check, verdict, detail."""
        verdict = {True: "ok", False: "FAILED", None: "not checked"}[self.ok]
        return f"{self.model}: {self.name}: {verdict}: {self.detail}"


class PreflightFailed(NotReadyError):
    """A model failed its preflight; ``failed`` holds every failed check."""

    def __init__(self, failed: list[Check]) -> None:
        self.failed = failed
        names = ", ".join(f"{c.model} {c.name}" for c in failed)
        super().__init__(
            f"preflight failed ({len(failed)} check(s): {names}); no request "
            "was made beyond the preflight and nothing was written"
        )


def _routing(http: Any, spec: ModelSpec, body: dict[str, Any]) -> Check:
    if not spec.strict_routing:
        return Check(
            spec.name,
            ROUTING_CHECK,
            None,
            'opted out ("strict_routing": false): no provider parameters are sent, '
            "and the labeling summary and artifact record the opt-out",
        )
    probe = {**body, "provider": {**ROUTING, "only": [PROBE_PROVIDER]}, "max_tokens": 16}
    try:
        post(http, spec, probe)
    except AttemptError as exc:
        if exc.reason == "http_status" and exc.detail.startswith("HTTP 4"):
            return Check(
                spec.name,
                ROUTING_CHECK,
                True,
                f"require_parameters and allow_fallbacks sent; a request limited to "
                f"a provider that does not exist was refused ({exc.detail})",
            )
        return Check(
            spec.name,
            ROUTING_CHECK,
            False,
            f"could not be checked: the routing probe got {exc.reason} ({exc.detail})",
        )
    return Check(
        spec.name,
        ROUTING_CHECK,
        False,
        f"routing parameters ignored: a request limited to provider "
        f"{PROBE_PROVIDER!r} with allow_fallbacks false was answered; if this "
        'endpoint is no routing provider, set "strict_routing": false in its config '
        "(the artifact records the opt-out)",
    )


@dataclass(frozen=True)
class Synthetic:
    """A model's synthetic request: its body, the check of its answer, what passing says."""

    body: dict[str, Any]
    check: Callable[[Any], Any]
    passed: str  # e.g. "the answer follows the strict claims schema"


def check_model(http: Any, spec: ModelSpec, synthetic: Synthetic) -> list[Check]:
    """Gives the four checks of one model, from one synthetic request and one probe."""
    body = synthetic.body
    try:
        response = post(http, spec, body)
    except AttemptError as exc:
        hint = ""
        if spec.strict_routing and exc.detail.startswith("HTTP 400"):
            # A plain OpenAI-compatible server may refuse the unknown provider block.
            hint = (
                '; if this endpoint is no routing provider, set "strict_routing": false '
                "in its config (the artifact records the opt-out)"
            )
        return [Check(spec.name, REACHABLE, False, f"{exc.reason}: {exc.detail}{hint}")] + [
            Check(spec.name, name, None, "no answer to check") for name in CHECKS[1:]
        ]
    out = [Check(spec.name, REACHABLE, True, f"HTTP 200 from {spec.base_url}")]
    _, model, faults = read_answer(response, spec, synthetic.check)
    by_reason = {f.reason: f for f in faults}
    if "not_chat_completion" in by_reason and model is None:
        detail = by_reason["not_chat_completion"].detail
        out += [
            Check(spec.name, IDENTITY, False, f"not_chat_completion: {detail}"),
            Check(spec.name, SCHEMA, None, "no message to check"),
        ]
    else:
        wrong = by_reason.get("model_identity")
        out.append(
            Check(
                spec.name,
                IDENTITY,
                wrong is None,
                f"model_identity: {wrong.detail}"
                if wrong
                else f"answered as {spec.model_identity!r}",
            )
        )
        content = [f for f in faults if f.reason != "model_identity"]
        out.append(
            Check(
                spec.name,
                SCHEMA,
                not content,
                f"{content[0].reason}: {content[0].detail}" if content else synthetic.passed,
            )
        )
    out.append(_routing(http, spec, body))
    return out


def preflight(models: list[tuple[ModelSpec, Synthetic]]) -> list[Check]:
    """Gives every check of every model, in the order the models are given."""
    checks = []
    with client() as http:
        for spec, synthetic in models:
            checks += check_model(http, spec, synthetic)
    return checks


def require(checks: list[Check]) -> list[Check]:
    """Gives the checks when no check failed; else raises PreflightFailed."""
    failed = [c for c in checks if c.ok is False]
    if failed:
        raise PreflightFailed(failed)
    return checks
