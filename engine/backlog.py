"""The backlog contract: what one thing a human must decide looks like, checked.

Every producer (the contamination scan, the exam, coverage) makes its items
as ``BacklogItem``s; ``sealdesk ingest`` reads them from JSONL files through
``read_items_files``, which checks every field of every item (naming file, line
and field) before the workspace holds any. The workspace stores them; this
module knows nothing of where they are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import subjects
from engine.canonical import canonical_sha256, parse_canonical, sha256_hex
from engine.errors import InputError
from engine.roles import QUEUES

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
RUN_ID_RULE = (
    "must match [A-Za-z0-9][A-Za-z0-9._-]* and be at most 128 characters (it names a directory)"
)
_ITEM_FIELDS = {"queue", "item_id", "run_id", "payload", "item_sha256"}
# Derived from the payload; a file may state it (then it must agree) or leave it out,
# as files written before subjects existed do.
_OPTIONAL_ITEM_FIELDS = {"subject"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _fits_float(number: int) -> bool:
    try:
        float(number)
    except OverflowError:  # beyond about 1.8e308
        return False
    return True


@dataclass(frozen=True)
class BacklogItem:
    """One thing a human must decide (docs/reference/workspace.md, "Backlog items")."""

    queue: str
    item_id: str
    run_id: str
    payload: dict[str, Any]
    item_sha256: str

    @classmethod
    def make(cls, queue: str, item_id: str, run_id: str, payload: dict[str, Any]) -> BacklogItem:
        """Gives an item whose hash is computed from its payload."""
        return cls(queue, item_id, run_id, payload, canonical_sha256(payload))

    @property
    def subject(self) -> str | None:
        """Gives what the item asks, independent of its evidence (``engine.subjects``)."""
        return subjects.subject_of(self.queue, self.payload)

    def to_json(self) -> dict[str, Any]:
        """Gives the contract's JSON object."""
        return {
            "queue": self.queue,
            "item_id": self.item_id,
            "run_id": self.run_id,
            "subject": self.subject,
            "payload": self.payload,
            "item_sha256": self.item_sha256,
        }


def validate_item(obj: Any, *, path: str | None = None, line: int | None = None) -> BacklogItem:
    """Gives a checked backlog item from its JSON object, or raises naming the field."""

    def bad(message: str, field: str | None = None) -> InputError:
        return InputError(message, path=path, line=line, field=field)

    if not isinstance(obj, dict):
        raise bad("a backlog item must be a JSON object")
    missing = sorted(_ITEM_FIELDS - set(obj))
    if missing:
        raise bad("missing", missing[0])
    extra = sorted(set(obj) - _ITEM_FIELDS - _OPTIONAL_ITEM_FIELDS)
    if extra:
        raise bad("unknown field", extra[0])
    if obj["queue"] not in QUEUES:
        raise bad(f"unknown queue {obj['queue']!r} (expected {', '.join(QUEUES)})", "queue")
    if not isinstance(obj["item_id"], str) or not obj["item_id"] or len(obj["item_id"]) > 256:
        raise bad("must be a non-empty string of at most 256 characters", "item_id")
    if _CONTROL.search(obj["item_id"]):  # a NUL or an escape would reach terminals and SQL
        raise bad("must not hold control characters", "item_id")
    if not isinstance(obj["run_id"], str) or not RUN_ID.match(obj["run_id"]):
        raise bad(RUN_ID_RULE, "run_id")
    if not isinstance(obj["payload"], dict):
        raise bad("must be a JSON object", "payload")
    summary = obj["payload"].get("summary")
    score = summary.get("score") if isinstance(summary, dict) else None
    if isinstance(score, int) and not isinstance(score, bool) and not _fits_float(score):
        raise bad(
            "is too large for a score (the backlog sorts by it as a float)", "payload.summary.score"
        )
    expected = canonical_sha256(obj["payload"])
    if obj["item_sha256"] != expected:
        raise bad(f"is not the SHA-256 of the canonical payload ({expected})", "item_sha256")
    problem = subjects.subject_problem(obj["payload"])
    if problem is not None:
        raise bad(problem, "payload.subject")
    if "subject" in obj:
        derived = subjects.subject_of(obj["queue"], obj["payload"])
        if obj["subject"] != derived:
            said = "null" if derived is None else derived
            raise bad(f"is not the subject the payload names ({said})", "subject")
    return BacklogItem(
        obj["queue"], obj["item_id"], obj["run_id"], obj["payload"], obj["item_sha256"]
    )


@dataclass(frozen=True)
class ItemsFile:
    """One JSONL file of items as read: its path, SHA-256, and each item with ``FILE:LINE``."""

    path: Path
    sha256: str
    items: tuple[tuple[BacklogItem, str], ...]


def read_items_files(paths: Iterable[str | Path]) -> list[ItemsFile]:
    """Gives every file's items after checking all of them; all or nothing.

    An item id given twice with different payloads, in one file or across
    two, is an error naming both places.
    """
    out: list[ItemsFile] = []
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for path in map(Path, paths):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
        found = []
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            obj = parse_canonical(raw.rstrip(b"\r"), path=str(path), line=number)
            item = validate_item(obj, path=str(path), line=number)
            key, where = (item.queue, item.item_id), f"{path}:{number}"
            if key in seen and seen[key][0] != item.item_sha256:
                raise InputError(
                    f"item {item.item_id} is also given at {seen[key][1]} with a different payload",
                    path=path,
                    line=number,
                    field="item_id",
                )
            seen.setdefault(key, (item.item_sha256, where))
            found.append((item, where))
        out.append(ItemsFile(path, sha256_hex(data), tuple(found)))
    return out


def summary_columns(payload: dict[str, Any]) -> tuple[str, float | None, str]:
    """Gives the title, score and tags of a payload's summary, as the listing columns hold them."""
    summary = payload.get("summary")
    if not isinstance(summary, dict):
        return "", None, ""
    title = summary.get("title")
    title = title if isinstance(title, str) else ""
    score = summary.get("score")
    score = (
        float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None
    )
    tags = summary.get("tags")
    tags = ",".join(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ""
    return title, score, tags
