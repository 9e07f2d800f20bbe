"""The eval set: read whole (it is small), checked row by row, content-hashed."""

from __future__ import annotations

import base64
import datetime as _dt
import math
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from engine.canonical import canonical_json
from engine.contamination.inputs.canonical_text import ContentHasher, canonical
from engine.contamination.inputs.sources import (
    Source,
    check_id,
    file_sha256,
    iter_batches,
    locate,
    row_error,
    text_fields,
)
from engine.contamination.inputs.texts import check_texts
from engine.errors import InputError


@dataclass(frozen=True)
class EvalItem:
    """One eval item: its position, id, text and the whole row it came from."""

    index: int
    id: str | int
    text: str
    canonical: str
    row: dict[str, Any]


@dataclass(frozen=True)
class EvalSet:
    """The eval items in order, with their provenance (name, split, revision, config, n, hash)."""

    source: Source
    items: tuple[EvalItem, ...]
    provenance: dict[str, Any]

    def __len__(self) -> int:
        return len(self.items)


def json_safe(value: Any) -> Any:
    """Gives a JSON value for a row cell (dates as ISO text, bytes as base64, NaN as null)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def load_eval(source: Source, *, require_fields: tuple[str, ...] = ()) -> EvalSet:
    """Gives the checked eval set; refuses a bad text, id or duplicate with its line.

    ``require_fields`` names further fields every row must carry as text
    (the probe's answer field).
    """
    items: list[EvalItem] = []
    first_row: dict[str, int] = {}
    hasher = ContentHasher()
    # closing(): a refused row stops the read mid-stream, and the reader's
    # threads must stop now, not at interpreter exit
    with closing(iter_batches(source, 4096, whole_rows=True)) as batches:
        for batch in batches:
            bad = check_texts(batch.texts)
            rows = batch.rows or []
            if bad is not None:
                message = bad.message
                row = rows[bad.row] if bad.row < len(rows) else None
                if isinstance(row, dict) and any(
                    row.get(name) is None for name in text_fields(source.text_field, row)
                ):
                    # what the row does hold, so the right --text-field is one look away
                    strings = sorted(k for k, v in row.items() if isinstance(v, str))
                    message += f"; the row's string fields are {', '.join(strings) or 'none'}"
                raise row_error(source, batch.start + bad.row, source.text_field, message)
            for offset, text in enumerate(batch.texts):
                index = batch.start + offset
                row = json_safe(rows[offset]) if offset < len(rows) else {}
                for name in require_fields:
                    if not isinstance(row.get(name), str) or not row[name].strip():
                        raise row_error(
                            source, index, name, "missing or empty (needed by the probe)"
                        )
                ident: str | int = index
                if source.id_field:
                    ident = check_id(batch.ids[offset] if batch.ids else None, source, index)
                key = canonical_json(ident).decode("utf-8")
                if key in first_row:
                    _, line = locate(source, first_row[key])
                    raise row_error(
                        source,
                        index,
                        source.id_field or "id",
                        f"duplicate id {ident!r} (first at line {line})",
                    )
                first_row[key] = index
                canon = canonical(text)
                hasher.add(canon)
                items.append(EvalItem(index, ident, text, canon, row))
    if not items:
        raise InputError("the eval set has no rows", path=source.label)
    provenance = {
        **source.provenance(),
        "n": len(items),
        "content_sha256": hasher.hexdigest(),
        "file_sha256": file_sha256(source),
    }
    return EvalSet(source, tuple(items), provenance)
