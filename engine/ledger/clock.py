"""The ledger's time: what time a new record gets, and how a lead undoes a poisoned one.

A record's time is taken at append from the appending host's clock, and times
never go back along the chain (so a key past its ``valid-before`` cannot claim
an earlier moment). Hosts of one review differ a little, so a new record gets
``max(head's time, now)`` as long as the head is at most ``SKEW_S`` ahead of
this host's clock: no record is ever written more than ``SKEW_S`` ahead of the
clock of the host that appends it.

A head further ahead than that (a signer whose clock said 2099, or a record
crafted with such a time) would otherwise make every later record either
claim 2099 or fail. So it stops ordinary appends, with a message naming it,
and a lead appends a **clock** record: signed as lead, dated by the lead's
own clock, naming the time it steps back from. It is the only record whose
time may be earlier than the one before it, and only by more than
``SKEW_S`` (it resets a poisoned time; it cannot backdate). ``keys revoke``
appends one first by itself when the head is poisoned, so a lead can always
revoke the signer who caused it. ``verify`` faults a record dated more than
``SKEW_S`` ahead of the verifier's clock that no later clock record reset,
and reports every reset with the records it stepped back over.
"""

from __future__ import annotations

from typing import Any

from engine.errors import ConflictError, IntegrityError
from engine.ledger.records import parse_time

# How far hosts of one review may disagree: a head this far ahead of the appending
# host's clock is carried forward; further ahead, it is a broken or forged time.
SKEW_S = 300.0
CLOCK_KIND = "clock"
CLOCK_TYPE = "sealdesk.clock/v1"
RESET_HINT = (
    "if this host's clock is right, a lead resets the ledger's time with: "
    "sealdesk keys reset-clock (sealdesk keys revoke does it by itself)"
)


def seconds_ahead(later: str, earlier: str) -> float:
    """Gives how many seconds record time ``later`` is after ``earlier`` (negative if before)."""
    return (parse_time(later) - parse_time(earlier)).total_seconds()


def next_time(head: tuple[int, str, str] | None, now: str, kind: str) -> str:
    """Gives the time of a new record of ``kind`` appended after ``head`` ((seq, time,
    principal) of the chain head, or None) on a host whose clock says ``now``.

    Raises IntegrityError when the head is more than SKEW_S ahead of now (only a
    clock record may follow it), and ConflictError for a clock record when it is
    not (there is nothing to reset).
    """
    if head is None:
        if kind == CLOCK_KIND:
            raise ConflictError("the ledger is empty: there is no time to reset")
        return now
    seq, last, principal = head
    try:
        ahead = seconds_ahead(last, now)
    except ValueError:
        return now  # an unreadable head time is verify's to report
    if kind == CLOCK_KIND:
        if ahead <= SKEW_S:
            raise ConflictError(
                f"the last record (#{seq}) claims time {last}, not more than {SKEW_S:.0f} s "
                "ahead of this host's clock: the ledger's time needs no reset"
            )
        return now
    if ahead <= 0:
        return now
    if ahead <= SKEW_S:
        return last
    raise IntegrityError(
        f"the last record (#{seq}, signed by {principal}) claims time {last}, "
        f"{ahead:.0f} s ahead of this host's clock (more than the {SKEW_S:.0f} s hosts "
        f"may differ): nothing follows it until its time is reset; {RESET_HINT}",
        seq=seq,
    )


def clock_data(resets: str, reason: str | None) -> dict[str, Any]:
    """Gives a clock record's data: the head time it steps back from, and why."""
    if reason is not None and not isinstance(reason, str):
        raise ValueError("a clock record's reason must be text or null")
    return {"type": CLOCK_TYPE, "resets": resets, "reason": reason}


def data_fault(data: Any) -> str | None:
    """Gives why a clock record's data is not ``clock_data``'s shape, or None."""
    if (
        type(data) is not dict
        or data.keys() != {"type", "resets", "reason"}
        or data["type"] != CLOCK_TYPE
        or type(data["resets"]) is not str
        or not (data["reason"] is None or type(data["reason"]) is str)
    ):
        return (
            'a clock record\'s \'data\' is not {"type": "sealdesk.clock/v1", "resets": '
            '<time>, "reason": <text or null>}'
        )
    try:
        parse_time(data["resets"])
    except ValueError:
        return f"a clock record resets {data['resets'][:40]!r}, which is not a record time"
    return None


def reset_fault(time: str, resets: str, prev_time: str | None) -> str | None:
    """Gives why a clock record at ``time`` naming ``resets`` may not step back from the
    record before it (signed at ``prev_time``), or None."""
    if prev_time is None or resets != prev_time:
        return (
            f"resets the ledger's time from {resets}, but the record before it claims {prev_time}"
        )
    back = seconds_ahead(resets, time)
    if back <= SKEW_S:
        return (
            f"steps the ledger's time back only {back:.0f} s (from {resets}): a clock record "
            f"resets only a time more than {SKEW_S:.0f} s ahead of its own, so it cannot "
            "backdate"
        )
    return None
