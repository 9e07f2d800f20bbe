"""Reading recorded failed attempts back from a lane file, checked against its counters.

The vocabulary and the records themselves are shared with every model-backed
channel (``engine.endpoint.failures``); what is the exam's own is the lane
file's form, read here.
"""

from __future__ import annotations

from typing import Any

from engine.endpoint.failures import FAILED_REQUEST, INVALID_RESPONSE, REASONS, Failure
from engine.rows import Row


def parse_failures(
    row: Row, obj: dict[str, Any], key: str, attempts: int, invalid: int, failed: int
) -> tuple[Failure, ...] | None:
    """Gives the recorded failures of a row (None when the row records none).

    They must agree with the row's counters: one per failed attempt, each
    kind counted where the counters count it, attempts in order.
    """
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, list):
        raise row.error("must be a list of failed attempts", key)
    out = []
    for i, entry in enumerate(value):
        p = f"{key}[{i}]."
        row.fields(entry, {"attempt", "kind", "reason", "detail"}, prefix=p)
        # Failed attempts come before the one that succeeded: 1, 2, ... in order.
        attempt = row.integer(entry, "attempt", p, low=i + 1, high=i + 1)
        kind = row.choice(entry, "kind", tuple(REASONS), p)
        reason = row.choice(entry, "reason", REASONS[kind], p)
        detail = row.text(entry, "detail", p, empty=True)
        out.append(Failure(attempt, kind, reason, detail))
    counted = {FAILED_REQUEST: failed, INVALID_RESPONSE: invalid}
    for kind, expected in counted.items():
        listed = sum(f.kind == kind for f in out)
        if listed != expected:
            raise row.error(f"lists {listed} {kind} attempt(s) but the row counts {expected}", key)
    return tuple(out)
