"""Evaluation tables (CSV, JSONL, Parquet) read into checked rows that know their line.

Every coverage input is a table with an exact column set: no column missing,
none undeclared. Values are checked by kind, strictly: a label is the
integer 0 or 1 (``"1.0"``, ``true`` and ``1.0`` are refused), an id is a
non-empty string, a digest is 64 lower-case hex. A bad value is reported
with the file, the line (JSONL, CSV) or row (Parquet) and the column.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.canonical import SHA256_HEX as SHA256
from engine.canonical import load_json, sha256_hex
from engine.errors import InputError


def _non_empty(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        raise ValueError("must be a non-empty string")
    return value


def _text(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be non-blank text")
    return value


def _binary(value: Any) -> int:
    # CSV cells are text: only the exact strings "0" and "1" are binary.
    if isinstance(value, str):
        if value in ("0", "1"):
            return int(value)
        raise ValueError(f"must be the integer 0 or 1, got {value!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1):
        raise ValueError(f"must be the integer 0 or 1, got {value!r}")
    return int(value)


def _sha256(value: Any) -> str:
    if not isinstance(value, str) or not SHA256.match(value):
        raise ValueError("must be 64 lower-case hex digits (a SHA-256)")
    return value


def _verdict(value: Any) -> str:
    if value not in ("malicious", "benign"):
        raise ValueError(f"must be 'malicious' or 'benign', got {value!r}")
    return value


KINDS: dict[str, Callable[[Any], Any]] = {
    "id": _non_empty,
    "name": _non_empty,
    "text": _text,
    "binary": _binary,
    "sha256": _sha256,
    "verdict": _verdict,
}

# The tables coverage reads, column -> kind.
EVAL_COLUMNS = {
    "case_id": "id",
    "label": "binary",
    "pred": "binary",
    "category": "name",
    "source": "name",
}
DEBUG_COLUMNS = {
    "case_id": "id",
    "text": "text",
    "text_sha256": "sha256",
    "label": "binary",
    "pred": "binary",
    "category": "name",
    "detector_sha256": "sha256",
}
DETECTOR_RESULT_COLUMNS = {
    "case_id": "id",
    "label": "verdict",
    "detector_sha256": "sha256",
    "request_id": "id",
}


@dataclass(frozen=True)
class Table:
    """Checked rows of one file, each with the line (or Parquet row) it came from."""

    path: str
    rows: tuple[dict[str, Any], ...]
    lines: tuple[int, ...]
    sha256: str  # of exactly the bytes the rows were parsed from

    def line_of(self, index: int) -> int:
        return self.lines[index]


def _csv_records(text: str) -> list[tuple[int, int]]:
    """Gives (line the record starts on, its field count) of each non-blank CSV record."""
    # pandas gives values but not where a quoted multi-line record starts,
    # nor a ragged row (it takes a row one field longer than the header as
    # an index); the csv module gives both, skipping blank lines as pandas does.
    records: list[tuple[int, int]] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    previous_end = 0
    for record in reader:
        start = previous_end + 1
        previous_end = reader.line_num
        if record:
            records.append((start, len(record)))
    return records


def _raw_rows(path: Path, data: bytes) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    """Gives (columns, raw rows, line per row) of a CSV, JSONL or Parquet file's bytes."""
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows, lines, columns = [], [], []
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            obj = load_json(raw, path=path, line=number)
            if not isinstance(obj, dict):
                raise InputError("each line must be a JSON object", path=path, line=number)
            for key in obj:
                if key not in columns:
                    columns.append(key)
            rows.append(obj)
            lines.append(number)
        return columns, rows, lines
    if suffix == ".csv":
        text = data.decode("utf-8")
        header = next(csv.reader(io.StringIO(text, newline="")), [])
        twice = sorted({c for c in header if header.count(c) > 1})
        if twice:
            raise InputError(
                "column appears twice in the header", path=path, line=1, field=twice[0]
            )
        records = _csv_records(text)[1:]
        for start, count in records:
            if count != len(header):
                raise InputError(
                    f"expected {len(header)} fields, got {count}", path=path, line=start
                )
        frame = pd.read_csv(
            io.BytesIO(data), dtype=str, keep_default_na=False, na_filter=False, encoding="utf-8"
        )
        starts = [start for start, _ in records]
        lines = starts if len(starts) == len(frame) else [i + 2 for i in range(len(frame))]
        # dtype=str and a CSV header make every column name a str; the stubs say Hashable.
        return list(frame.columns), frame.to_dict(orient="records"), lines  # type: ignore[return-value]
    if suffix == ".parquet":
        frame = pd.read_parquet(io.BytesIO(data))
        # Keys as the header this gives back names the columns.
        parquet_rows = [
            {str(k): _native(v) for k, v in r.items()} for r in frame.to_dict(orient="records")
        ]
        return [str(c) for c in frame.columns], parquet_rows, [i + 1 for i in range(len(frame))]
    raise InputError("tables are .csv, .jsonl or .parquet", path=path)


def _native(value: Any) -> Any:
    # Parquet cells arrive as numpy scalars; keep their true type (a numpy
    # bool stays a bool and is refused as a label, an int64 becomes an int).
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def read_table(
    path: str | Path, columns: dict[str, str], *, unique: str | None = "case_id", what: str = "row"
) -> Table:
    """Gives the checked rows of a table whose columns are exactly ``columns``.

    ``unique`` names a column whose values must not repeat; the second
    occurrence is reported with the line of the first.
    """
    path = Path(path)
    try:
        # Read once: the rows and the hash that binds them come from the same bytes.
        data = path.read_bytes()
        names, raw_rows, lines = _raw_rows(path, data)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 ({exc.reason})", path=path) from exc
    except (ValueError, ImportError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"cannot read table: {exc}", path=path) from exc
    if not raw_rows:
        raise InputError(f"holds no {what}s: the population is empty", path=path)
    header_line = 1 if path.suffix.lower() == ".csv" else None
    missing = [c for c in columns if c not in names]
    extra = [c for c in names if c not in columns]
    if path.suffix.lower() != ".jsonl":
        if missing:
            raise InputError("column is missing", path=path, line=header_line, field=missing[0])
        if extra:
            raise InputError(
                f"undeclared column (expected exactly {', '.join(columns)})",
                path=path,
                line=header_line,
                field=extra[0],
            )
    rows: list[dict[str, Any]] = []
    first_seen: dict[Any, int] = {}
    for raw, line in zip(raw_rows, lines, strict=True):
        for name in columns:
            if name not in raw:
                raise InputError("missing", path=path, line=line, field=name)
        for name in raw:
            if name not in columns:
                raise InputError(
                    f"undeclared field (expected exactly {', '.join(columns)})",
                    path=path,
                    line=line,
                    field=name,
                )
        row = {}
        for name, kind in columns.items():
            try:
                row[name] = KINDS[kind](raw[name])
            except ValueError as exc:
                raise InputError(str(exc), path=path, line=line, field=name) from None
        if unique is not None:
            key = row[unique]
            if key in first_seen:
                raise InputError(
                    f"{key!r} repeats line {first_seen[key]}: ids must be unique",
                    path=path,
                    line=line,
                    field=unique,
                )
            first_seen[key] = line
        rows.append(row)
    return Table(str(path), tuple(rows), tuple(lines), sha256_hex(data))
