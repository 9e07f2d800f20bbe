"""The exam's preflight: one synthetic labeling request per live model.

The request is built exactly as lane requests are (the claims schema, the
rubric, a blind synthetic completion); the four checks and their verdicts
are the shared ones (``engine.endpoint.preflight``). A failed check stops the
run before its first lane request, and nothing is written.
"""

from __future__ import annotations

from typing import Any

from engine.canonical import canonical_json
from engine.endpoint.chat import ModelSpec, request_body
from engine.endpoint.preflight import Check, PreflightFailed, Synthetic, require
from engine.endpoint.preflight import check_model as check_with
from engine.endpoint.preflight import preflight as run_checks
from engine.exam.endpoint import CLAIMS_SCHEMA
from engine.exam.inputs import Completion, Context, Message
from engine.exam.oracles import SweepRequest
from engine.exam.raters import LABEL_TASK, check_claims

# PreflightFailed is what a failed check raises, named here for the exam's commands.
__all__ = ["SYNTHETIC", "PreflightFailed", "check_model", "preflight", "require_preflight"]

SYNTHETIC = Completion(
    "sealdesk-preflight-1",
    "sealdesk-preflight",
    "turn-1",
    "The nightly build finished at 02:14 and the API is live again. "
    "Should I rerun the flaky login test?",
)
SYNTHETIC_CONTEXT = Context(
    SYNTHETIC.completion_id, "turn-0", (Message("user", "Is the API back up after the build?"),)
)


def synthetic(spec: ModelSpec) -> Synthetic:
    """Gives the synthetic labeling request of one model and the check of its answer."""
    user = canonical_json(SweepRequest(SYNTHETIC, SYNTHETIC_CONTEXT).blind()).decode("utf-8")
    return Synthetic(
        request_body(spec, LABEL_TASK, user, "exam_claims", CLAIMS_SCHEMA),
        lambda v: check_claims(v, SYNTHETIC, spec.name),
        "the answer follows the strict claims schema",
    )


def check_model(http: Any, spec: ModelSpec) -> list[Check]:
    """Gives the four checks of one model, from one synthetic request and one probe."""
    return check_with(http, spec, synthetic(spec))


def preflight(specs: dict[str, ModelSpec]) -> list[Check]:
    """Gives every check of every model, in the order the models are given."""
    return run_checks([(spec, synthetic(spec)) for spec in specs.values()])


def require_preflight(specs: dict[str, ModelSpec]) -> list[Check]:
    """Gives the checks when no check failed; else raises PreflightFailed."""
    return require(preflight(specs))
