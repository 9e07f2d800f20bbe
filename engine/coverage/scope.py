"""The signed evaluation scope: what is measured, against what, until when.

The scope authority signs one canonical object binding the candidate
(digest and version), the holdout manifest digest, the approved baseline
report digest (``null`` only for an explicitly signed genesis), the
category gate, an expiry and the lineage store's lock deadline. The
promotion-stage fields a release decision needs (latency, replicas,
deployment) belong to the promotion decision, made outside sealdesk by whoever
releases a detector, and are not part of sealdesk's coverage scope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.canonical import canonical_json, sha256_hex
from engine.coverage.holdout import SHA256
from engine.coverage.policy import CategoryGatePolicy, gate_policy_from, probability
from engine.coverage.threats import FIELD as THREATS
from engine.errors import InputError, PermissionRefused

# v2: the scope signs the taxonomy's threat mappings (an empty table: none recorded).
SCHEMA = "sealdesk.coverage-scope.v2"
SCOPE_FIELDS = frozenset(
    {
        "schema_version",
        "policy_id",
        "policy_version",
        "expires_at",
        "candidate_sha256",
        "candidate_version",
        "holdout_manifest_sha256",
        "baseline_report_sha256",
        "required_categories",
        "benign_category",
        "min_category_recall",
        "max_benign_fpr",
        "max_category_regression",
        "decision_store_timeout_seconds",
        THREATS,
    }
)
# Fields a scope template supplies; the rest are computed when it is written.
TEMPLATE_FIELDS = SCOPE_FIELDS - {
    "schema_version",
    "expires_at",
    "holdout_manifest_sha256",
    "baseline_report_sha256",
}
# A template without threat mappings gets an empty table.
TEMPLATE_OPTIONAL = frozenset({THREATS})
# A scope is renewed, not signed for ever; the bound also keeps expires_at a real date.
MAX_EXPIRY = timedelta(days=3660)


@dataclass(frozen=True)
class Scope:
    """A verified scope and the gate policy it carries."""

    value: dict[str, Any]
    sha256: str
    policy: CategoryGatePolicy
    expires_at: datetime

    @property
    def genesis(self) -> bool:
        return self.value["baseline_report_sha256"] is None

    def __getitem__(self, name: str) -> Any:
        return self.value[name]


def parse_time(text: Any, *, field: str, path: str | None = None) -> datetime:
    """Gives an aware datetime from ISO 8601 text; a time without zone is refused."""
    if not isinstance(text, str) or not text:
        raise InputError("must be an ISO 8601 time with a zone", path=path, field=field)
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{text!r} is not an ISO 8601 time", path=path, field=field) from None
    if value.tzinfo is None:
        raise InputError("time has no zone (write Z or +00:00)", path=path, field=field)
    return value


def check_scope(
    value: dict[str, Any], raw: bytes, *, path: str, now: datetime | None = None, text: str = ""
) -> Scope:
    """Gives the checked scope; refuses a wrong schema, a bad digest or an expired scope."""
    if set(value) != SCOPE_FIELDS:
        odd = sorted(SCOPE_FIELDS.symmetric_difference(value))
        raise InputError(
            "scope fields differ from the coverage scope schema", path=path, field=odd[0]
        )
    if value["schema_version"] != SCHEMA:
        raise InputError(
            f"unsupported scope schema (expected {SCHEMA})", path=path, field="schema_version"
        )
    for name in ("policy_id", "policy_version", "candidate_version", "expires_at"):
        if not isinstance(value[name], str) or not value[name]:
            raise InputError("scope identity or expiry is missing", path=path, field=name)
    for name in ("candidate_sha256", "holdout_manifest_sha256"):
        if not isinstance(value[name], str) or not SHA256.match(value[name]):
            raise InputError("must be 64 lower-case hex digits", path=path, field=name)
    baseline = value["baseline_report_sha256"]
    if baseline is not None and (not isinstance(baseline, str) or not SHA256.match(baseline)):
        raise InputError(
            "must be null (genesis) or 64 lower-case hex digits",
            path=path,
            field="baseline_report_sha256",
        )
    deadline_seconds(
        value["decision_store_timeout_seconds"], path=path, field="decision_store_timeout_seconds"
    )
    expires = parse_time(value["expires_at"], field="expires_at", path=path)
    if expires <= (now or datetime.now(UTC)):
        raise PermissionRefused(f"{path}: evaluation scope expired at {value['expires_at']}")
    # Checked here under the scope's own names, which the gate policy calls otherwise.
    for name in ("min_category_recall", "max_benign_fpr", "max_category_regression"):
        probability(value[name], name, path=path)
    policy = gate_policy_from(
        {
            "required_categories": value["required_categories"],
            "benign_category": value["benign_category"],
            "min_attack_recall": value["min_category_recall"],
            "max_benign_fpr": value["max_benign_fpr"],
            "max_recall_regression": value["max_category_regression"],
            THREATS: value[THREATS],
        },
        path=path,
        text=text,
    )
    return Scope(value, sha256_hex(raw), policy, expires)


# How long a writer waits for the lineage store's lock; a day-long wait is a hang.
MAX_DEADLINE_SECONDS = 3600


def deadline_seconds(value: Any, *, field: str, path: str | None = None) -> float:
    """Gives the lineage store's lock deadline: finite, 0..MAX_DEADLINE_SECONDS."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= MAX_DEADLINE_SECONDS
    ):
        raise InputError(
            f"the lineage store deadline must be 0 to {MAX_DEADLINE_SECONDS} seconds",
            path=path,
            field=field,
        )
    return float(value)


def parse_duration(text: str) -> timedelta:
    """Gives the duration of text such as ``30d``, ``12h`` or ``90m``, at most MAX_EXPIRY."""
    units = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
    digits = text[:-1].lstrip("0")
    # str.isdigit also takes '²', which int() refuses: ASCII digits only.
    if (
        not text
        or text[-1] not in units
        or not digits
        or not digits.isascii()
        or not digits.isdigit()
    ):
        raise InputError(f"{text!r} is not a duration like 30d, 12h, 90m", field="expires_in")
    unit = timedelta(**{units[text[-1]]: 1})
    # Compare before building: a timedelta of 10**20 days overflows.
    if len(digits) > 12 or int(digits) * unit > MAX_EXPIRY:
        raise InputError(
            f"{text!r} is longer than the {MAX_EXPIRY.days}-day limit", field="expires_in"
        )
    return int(digits) * unit


def build_scope(
    template: dict[str, Any],
    *,
    holdout_manifest_sha256: str,
    baseline_report_sha256: str | None,
    expires_at: datetime,
    path: str,
    text: str = "",
) -> bytes:
    """Gives canonical scope bytes from a template plus the computed bindings
    (``text``, the template's text, places an error on its line)."""
    odd = sorted(TEMPLATE_FIELDS.symmetric_difference(template) - TEMPLATE_OPTIONAL)
    if odd:
        raise InputError(
            f"scope template fields must be exactly "
            f"{', '.join(sorted(TEMPLATE_FIELDS - TEMPLATE_OPTIONAL))} "
            f"(and optionally {', '.join(sorted(TEMPLATE_OPTIONAL))})",
            path=path,
            field=odd[0],
        )
    template = {THREATS: {}, **template}
    value = dict(
        template,
        schema_version=SCHEMA,
        expires_at=expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        holdout_manifest_sha256=holdout_manifest_sha256,
        baseline_report_sha256=baseline_report_sha256,
    )
    raw = canonical_json(value)
    check_scope(value, raw, path=path, text=text)
    return raw
