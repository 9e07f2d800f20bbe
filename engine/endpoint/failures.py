"""Why a model request's attempt failed: the reason vocabulary, records and tallies.

Every failed attempt keeps one reason from a closed vocabulary, so that
"10 failed attempts" can be read as "8 unreachable, 2 model_identity" in a
lane file, an artifact, a scan's judge account, the CLI and the panes. A failed request
never reached an answer (the transport or the HTTP status failed); an
invalid response is an answer the protocol does not accept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

FAILED_REQUEST = "failed_request"
INVALID_RESPONSE = "invalid_response"
REASONS: dict[str, tuple[str, ...]] = {
    FAILED_REQUEST: (
        "unreachable",  # no connection (refused, no route, name not resolved)
        "timeout",  # connected, but no answer within the configured seconds
        "redirect",  # a 3xx: redirects are never followed
        "http_status",  # any other status than 200 (detail names it)
        "transport",  # the connection broke mid-request or spoke no HTTP
    ),
    INVALID_RESPONSE: (
        "not_chat_completion",  # the body is not a chat-completion envelope
        "model_identity",  # the answer names another model than the frozen identity
        "not_json",  # the message content is not JSON
        "schema",  # the JSON breaks the strict schema
        "wrong_id",  # the answer is about another completion or candidate
        "span",  # a claimed span cannot be placed in the completion
    ),
}
KIND_OF = {reason: kind for kind, reasons in REASONS.items() for reason in reasons}
# What a tally calls attempts whose reason a recorded file does not carry.
NOT_RECORDED = "not_recorded"
DETAIL_LIMIT = 300


def one_line(text: str, limit: int = DETAIL_LIMIT) -> str:
    """Gives text as one printable line of at most ``limit`` characters.

    Details quote what an endpoint sent back; control characters would reach
    a terminal, so they become spaces here, once, where the text enters.
    """
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Failure:
    """One failed attempt: which attempt, its kind, its reason and a one-line detail."""

    attempt: int
    kind: str
    reason: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        """Gives the failure as it is written to lane files and artifacts."""
        return {
            "attempt": self.attempt,
            "kind": self.kind,
            "reason": self.reason,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Failure:
        """Gives a failure back from its written form (already checked)."""
        return cls(obj["attempt"], obj["kind"], obj["reason"], obj["detail"])


def tally(failures: Iterable[Failure]) -> dict[str, int]:
    """Gives the number of failed attempts per reason, most frequent first."""
    counts = Counter(f.reason for f in failures)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def merge(*tallies: dict[str, int]) -> dict[str, int]:
    """Gives the sum of several per-reason tallies, most frequent first."""
    total: Counter[str] = Counter()
    for t in tallies:
        total.update(t)
    return dict(sorted(((k, v) for k, v in total.items() if v), key=lambda kv: (-kv[1], kv[0])))


def describe(counts: dict[str, int]) -> str:
    """Gives a per-reason tally as text: ``unreachable 4, model_identity 2``."""
    return ", ".join(f"{reason} {n}" for reason, n in counts.items()) or "none"
