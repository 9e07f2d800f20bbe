"""Coverage policies: the category gate (report and benchmark) and the attribution policy (backlog).

A policy file is TOML (``.toml``) or JSON (``.json``) holding exactly the
policy's fields. Thresholds are compared as the decimals written in the
policy (``0.1`` is one tenth exactly), against ratios of integer counts, so
a threshold boundary behaves as a person computes it by hand.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from datetime import date, time
from fractions import Fraction
from pathlib import Path
from typing import Any

from engine.canonical import strict_loads
from engine.coverage.threats import FIELD as THREATS
from engine.coverage.threats import ThreatMapping, mappings_json, parse_threat_mappings
from engine.errors import InputError

GATE_FIELDS = (
    "required_categories",
    "benign_category",
    "min_attack_recall",
    "max_benign_fpr",
    "max_recall_regression",
)
# A gate may carry the taxonomy's threat mappings; without them none is recorded.
GATE_OPTIONAL = (THREATS,)
ATTRIBUTION_FIELDS = (
    "max_examples_per_category",
    "selection_seed",
    "tokenizer_max_length",
    "integration_steps",
    "top_tokens_per_direction",
)
# Far above what attribution needs (a classifier reads at most a few thousand
# tokens; integrated gradients converge in tens to hundreds of steps), and low
# enough that a typo is refused rather than overflowing or exhausting memory.
ATTRIBUTION_LIMITS = {"tokenizer_max_length": 8192, "integration_steps": 1000}


@dataclass(frozen=True)
class CategoryGatePolicy:
    """Which categories must be measured and the thresholds that make one weak."""

    required_categories: tuple[str, ...]
    benign_category: str
    min_attack_recall: float
    max_benign_fpr: float
    max_recall_regression: float
    threat_mappings: tuple[ThreatMapping, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Gives the policy as a JSON object (categories in policy order)."""
        return {
            "required_categories": list(self.required_categories),
            "benign_category": self.benign_category,
            "min_attack_recall": self.min_attack_recall,
            "max_benign_fpr": self.max_benign_fpr,
            "max_recall_regression": self.max_recall_regression,
            THREATS: mappings_json(self.threat_mappings),
        }


@dataclass(frozen=True)
class AttributionPolicy:
    """How misses are selected and attributed for the debug backlog."""

    max_examples_per_category: int
    selection_seed: str
    tokenizer_max_length: int
    integration_steps: int
    top_tokens_per_direction: int

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in ATTRIBUTION_FIELDS}


def probability(
    value: Any, name: str, *, path: str | None = None, line: int | None = None
) -> float:
    """Gives value as a float in [0, 1]; booleans, strings, NaN and infinities refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError("must be a number in [0, 1]", path=path, line=line, field=name)
    result = float(value)
    if not math.isfinite(result) or not 0.0 <= result <= 1.0:
        raise InputError(
            f"must be finite and in [0, 1], got {value!r}", path=path, line=line, field=name
        )
    return result


def positive_integer(
    value: Any,
    name: str,
    *,
    path: str | None = None,
    line: int | None = None,
    maximum: int | None = None,
) -> int:
    """Gives value if it is an int of at least 1 and at most ``maximum`` (booleans refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError("must be a positive integer", path=path, line=line, field=name)
    if maximum is not None and value > maximum:
        raise InputError(
            f"must be at most {maximum}, got {value}", path=path, line=line, field=name
        )
    return value


def exact(value: float) -> Fraction:
    """Gives the decimal a float was written as (its shortest repr), exactly."""
    return Fraction(repr(float(value)))


def validate_gate_policy(policy: CategoryGatePolicy, *, path: str | None = None) -> None:
    """Raises unless the policy names two or more distinct categories including benign."""
    cats = policy.required_categories
    if not isinstance(cats, tuple) or len(cats) < 2:
        raise InputError(
            "must list at least two categories (attacks and the benign one)",
            path=path,
            field="required_categories",
        )
    if any(not isinstance(c, str) or not c for c in cats):
        raise InputError(
            "every category must be a non-empty string", path=path, field="required_categories"
        )
    if len(set(cats)) != len(cats):
        twice = sorted({c for c in cats if cats.count(c) > 1})
        raise InputError(
            f"category {twice[0]!r} is listed twice", path=path, field="required_categories"
        )
    if not isinstance(policy.benign_category, str) or policy.benign_category not in cats:
        raise InputError(
            f"{policy.benign_category!r} is not one of required_categories",
            path=path,
            field="benign_category",
        )
    for name in ("min_attack_recall", "max_benign_fpr", "max_recall_regression"):
        probability(getattr(policy, name), name, path=path)


def read_document(path: Path) -> tuple[dict[str, Any], str]:
    """Gives the top-level table of a TOML or JSON file and its text."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 ({exc.reason})", path=path) from exc
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            value: Any = tomllib.loads(text)
        elif suffix == ".json":
            value = strict_loads(text)
        else:
            raise InputError("policy files are .toml or .json", path=path)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"not valid TOML: {exc}", path=path, line=line) from exc
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", path=path) from exc
    if not isinstance(value, dict):
        raise InputError("must hold one object of policy fields", path=path)
    for key, inner in value.items():
        odd = _not_json(inner, key)
        if odd is not None:
            raise InputError(odd[1], path=path, line=line_of(text, key), field=odd[0])
    return value, text


def _not_json(value: Any, name: str) -> tuple[str, str] | None:
    """Gives (field, reason) of the first value within that JSON cannot hold, if any."""
    # TOML has dates, times, nan and inf; what is hashed or signed is canonical JSON.
    if isinstance(value, (date, time)):  # a datetime is a date
        return name, (
            f"a TOML {type(value).__name__} is not a JSON value; write it as a quoted string"
        )
    if isinstance(value, float) and not math.isfinite(value):
        return name, f"{value!r} is not a JSON number (no NaN or infinity)"
    inner = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in inner:
        odd = _not_json(item, f"{name}.{key}" if isinstance(value, dict) else f"{name}[{key}]")
        if odd is not None:
            return odd
    return None


def line_of(text: str, key: str) -> int | None:
    """Gives the 1-based line on which a key is written in TOML or JSON text, if found."""
    pattern = re.compile(
        rf'^\s*("{re.escape(key)}"\s*:|{re.escape(key)}\s*=)|"{re.escape(key)}"\s*:'
    )
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.search(line):
            return number
    return None


def exact_fields(
    value: dict[str, Any],
    fields: tuple[str, ...],
    path: Path,
    text: str,
    optional: tuple[str, ...] = (),
) -> None:
    """Raises naming the first missing or unknown field of a policy document."""
    missing = [f for f in fields if f not in value]
    if missing:
        raise InputError("missing", path=path, field=missing[0])
    extra = sorted(set(value) - set(fields) - set(optional))
    if extra:
        raise InputError(
            f"unknown field (expected only {', '.join(fields + optional)})",
            path=path,
            line=line_of(text, extra[0]),
            field=extra[0],
        )


def gate_policy_from(
    value: dict[str, Any], *, path: str | None = None, text: str = ""
) -> CategoryGatePolicy:
    """Gives a checked gate policy from a mapping holding GATE_FIELDS and perhaps the
    threat mappings."""
    cats = value["required_categories"]
    if not isinstance(cats, list):
        raise InputError(
            "must be a list of category names",
            path=path,
            line=line_of(text, "required_categories"),
            field="required_categories",
        )
    for name in ("min_attack_recall", "max_benign_fpr", "max_recall_regression"):
        probability(value[name], name, path=path, line=line_of(text, name))
    policy = CategoryGatePolicy(
        tuple(cats),
        value["benign_category"],
        float(value["min_attack_recall"]),
        float(value["max_benign_fpr"]),
        float(value["max_recall_regression"]),
    )
    validate_gate_policy(policy, path=path)
    if THREATS in value:
        mappings = parse_threat_mappings(
            value[THREATS], policy.required_categories, policy.benign_category, path=path, text=text
        )
        policy = CategoryGatePolicy(
            policy.required_categories,
            policy.benign_category,
            policy.min_attack_recall,
            policy.max_benign_fpr,
            policy.max_recall_regression,
            mappings,
        )
    return policy


def load_gate_policy(path: Path) -> CategoryGatePolicy:
    """Gives the category gate policy of a TOML or JSON file, checked."""
    value, text = read_document(path)
    exact_fields(value, GATE_FIELDS, Path(path), text, GATE_OPTIONAL)
    return gate_policy_from(value, path=str(path), text=text)


def load_attribution_policy(path: Path) -> AttributionPolicy:
    """Gives the attribution policy of a TOML or JSON file, checked."""
    value, text = read_document(path)
    exact_fields(value, ATTRIBUTION_FIELDS, Path(path), text)
    for name in ATTRIBUTION_FIELDS:
        if name == "selection_seed":
            if not isinstance(value[name], str) or not value[name]:
                raise InputError(
                    "must be a non-empty string", path=path, line=line_of(text, name), field=name
                )
        else:
            positive_integer(
                value[name],
                name,
                path=str(path),
                line=line_of(text, name),
                maximum=ATTRIBUTION_LIMITS.get(name),
            )
    return AttributionPolicy(**{name: value[name] for name in ATTRIBUTION_FIELDS})
