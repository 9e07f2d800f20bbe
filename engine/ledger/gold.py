"""Gold items: known answers a lead commits to by hash before review and reveals after.

A lead plants items whose answer is known (a known leak, a known clean pair) in a
queue, looking like any other, and signs two ``gold`` records:

- **commit**, before anyone decides them: ``{"type": "commit", "queue": Q,
  "count": N, "sha256": H}``, H the SHA-256 of the canonical JSON of
  ``{"answers": {item_id: "accept" | "reject"}, "queue": Q, "salt": S}``, S a
  random hex salt the lead keeps with the answers (so the hash does not give the
  answers away to anyone trying the few possible ones);
- **reveal**, after: ``{"type": "reveal", "commit": <the commit record's hash>,
  "answers": {...}, "salt": S}``.

Anyone holding both records checks that the answers revealed are those committed
to, and that no decision on a gold item came before its commit: nobody can choose
the gold after seeing the decisions.
"""

from __future__ import annotations

import re
from typing import Any

from engine.canonical import canonical_json, sha256_hex

GOLD_KIND = "gold"
ANSWERS = ("accept", "reject")
_HASH = re.compile(r"[0-9a-f]{64}")
_SALT = re.compile(r"[0-9a-f]{32,128}")


def commitment(queue: str, answers: dict[str, str], salt: str) -> str:
    """Gives the SHA-256 a commit record binds for these answers and salt."""
    return sha256_hex(canonical_json({"answers": answers, "queue": queue, "salt": salt}))


def answers_fault(answers: Any) -> str | None:
    if type(answers) is not dict or not answers:
        return "its answers are not a non-empty object of item id to accept or reject"
    for item_id, answer in answers.items():
        if not item_id or answer not in ANSWERS:
            return f"its answer for {item_id!r} is {answer!r}, not accept or reject"
    return None


def gold_fault(data: Any, queues: tuple[str, ...]) -> str | None:
    """Gives why a gold record's ``data`` is neither a commit nor a reveal, or None."""
    if type(data) is not dict:
        return "a gold record's 'data' is not an object"
    if data.get("type") == "commit":
        if data.keys() != {"type", "queue", "count", "sha256"}:
            return "a gold commit is not {type, queue, count, sha256}"
        if data["queue"] not in queues:
            return f"a gold commit names the unknown queue {data['queue']!r}"
        if type(data["count"]) is not int or data["count"] < 1:
            return "a gold commit's count is not a whole number of at least 1"
        if type(data["sha256"]) is not str or not _HASH.fullmatch(data["sha256"]):
            return "a gold commit's sha256 is not a SHA-256"
        return None
    if data.get("type") == "reveal":
        if data.keys() != {"type", "commit", "answers", "salt"}:
            return "a gold reveal is not {type, commit, answers, salt}"
        if type(data["commit"]) is not str or not _HASH.fullmatch(data["commit"]):
            return "a gold reveal does not name its commit record"
        if type(data["salt"]) is not str or not _SALT.fullmatch(data["salt"]):
            return "a gold reveal's salt is not 32 to 128 hex digits"
        fault = answers_fault(data["answers"])
        return None if fault is None else f"a gold reveal: {fault}"
    return "a gold record is neither a commit nor a reveal"


def reveal_fault(commit: dict[str, Any], reveal: dict[str, Any]) -> str | None:
    """Gives why a reveal's answers are not those its commit bound, or None."""
    answers = reveal["answers"]
    if len(answers) != commit["count"]:
        return f"reveals {len(answers)} answer(s); its commit bound {commit['count']}"
    if commitment(commit["queue"], answers, reveal["salt"]) != commit["sha256"]:
        return "its answers and salt do not hash to what its commit bound"
    return None
