"""The detector replay: one row per corpus completion, its candidates or its failure.

Every corpus completion appears exactly once (an incomplete partition is a
hard failure), candidate ids are unique across the file, and each trigger
interval lies inside its completion.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.errors import InputError
from engine.exam.entities import normalize_entity
from engine.exam.inputs import Completion, completion_row, outcome
from engine.exam.protocol import FAMILIES
from engine.rows import jsonl_rows


@dataclass(frozen=True)
class Detection:
    """One detector candidate with its frozen trigger interval."""

    candidate_id: str
    completion_id: str
    start: int
    end: int
    family: str
    entity: str
    entity_normalized: str


@dataclass(frozen=True)
class ReplayRow:
    """The detector's outcome on one completion."""

    completion_id: str
    status: str  # ok | operational_failure
    detections: tuple[Detection, ...]


def parse_replay(
    data: bytes, path: Path, completions: tuple[Completion, ...]
) -> dict[str, ReplayRow]:
    """Gives the replay rows by completion id after every check."""
    texts = {c.completion_id: c.text for c in completions}
    out: dict[str, ReplayRow] = {}
    first_line: dict[str, int] = {}
    ids: dict[str, int] = {}
    for row in jsonl_rows(data, path):
        obj, cid = completion_row(
            row, {"schema_version", "completion_id", "status", "candidates"}, 1, texts, first_line
        )
        if outcome(row, obj, "candidates") == "operational_failure":
            out[cid] = ReplayRow(cid, "operational_failure", ())
            continue
        if not isinstance(obj["candidates"], list):
            raise row.error("must be a list", "candidates")
        found = []
        for i, cand in enumerate(obj["candidates"]):
            p = f"candidates[{i}]."
            row.fields(
                cand, {"candidate_id", "trigger_start", "trigger_end", "family", "entity"}, prefix=p
            )
            dcid = row.ident(cand, "candidate_id", p)
            if dcid in ids:
                raise row.error(
                    f"duplicate candidate id (first at line {ids[dcid]})", p + "candidate_id"
                )
            ids[dcid] = row.line or 0
            start = row.integer(cand, "trigger_start", p, low=0)
            end = row.integer(cand, "trigger_end", p, low=start + 1, high=len(texts[cid]))
            entity = row.text(cand, "entity", p)
            found.append(
                Detection(
                    dcid,
                    cid,
                    start,
                    end,
                    row.choice(cand, "family", FAMILIES, p),
                    entity,
                    normalize_entity(entity),
                )
            )
        out[cid] = ReplayRow(cid, "ok", tuple(found))
    missing = [c.completion_id for c in completions if c.completion_id not in out]
    if missing:
        raise InputError(
            f"no replay row for completion {missing[0]!r}: the detector "
            "partition must cover every completion",
            path=path,
            field="completion_id",
        )
    return out
