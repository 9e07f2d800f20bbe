"""Where the eval set and the pool come from, read through ``datasets``.

A source is a local JSONL, CSV or Parquet file, or a hub dataset pinned to a
40-hex commit sha (a branch or tag is refused: it moves). Rows are streamed
in batches, so a pool larger than memory is never held whole. When
``datasets`` cannot read a file, the file is read again here, line by line,
to name the line and field that are wrong.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import logging
import os
import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import artifacts
from engine.canonical import MAX_NESTING, check_nesting
from engine.contamination.inputs.texts import TextBlock
from engine.errors import InputError

_COMMIT = re.compile(r"^[0-9a-f]{40}\Z")
FORMATS = {
    ".jsonl": "json",
    ".json": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


@dataclass(frozen=True)
class Source:
    """One dataset: a local file or a pinned hub dataset, and its fields."""

    role: str  # "eval" or "pool": names the flags in messages
    name: str  # file path, or hub dataset name
    kind: str  # "file" or "hub"
    format: str | None  # "json", "csv" or "parquet" for files
    split: str | None
    revision: str | None
    config: str | None
    text_field: str
    id_field: str | None
    origin: str | None = None  # what messages call a file read from a local copy (a shard)

    @property
    def label(self) -> str:
        """Gives how messages name this source."""
        if self.kind == "file":
            return self.origin or self.name
        return f"{self.name}[{self.split}]@{self.revision}"

    def provenance(self) -> dict[str, Any]:
        """Gives the provenance fields: name, split, revision, config, and where the text is.

        n and the content hash are added by the reader.
        """
        return {
            "name": self.name,
            "split": self.split,
            "revision": self.revision,
            "config": self.config,
            "kind": self.kind,
            "format": self.format,
            "text_field": self.text_field,
            "id_field": self.id_field,
        }


@dataclass(frozen=True)
class Batch:
    """Consecutive rows: the first row's index, their text values and id values.

    Plain Arrow string columns without nulls travel as a ``TextBlock`` (two
    buffers, cheap to hand to a worker); anything else as Python values.
    """

    start: int
    count: int
    values: list[Any] | None
    block: TextBlock | None
    ids: list[Any] | None
    rows: list[dict[str, Any]] | None = None
    ids_checked: bool = False  # every id is known good (no per-row check needed)

    @property
    def texts(self) -> list[Any]:
        """Gives the text values as Python objects."""
        if self.values is not None:
            return self.values
        assert self.block is not None
        return [self.block.text(i) for i in range(len(self.block))]

    def text(self, i: int) -> Any:
        """Gives text value i as a Python object (without making the others)."""
        if self.values is not None:
            return self.values[i]
        assert self.block is not None
        return self.block.text(i)

    @property
    def matchable(self) -> list[Any] | TextBlock:
        """Gives what the matcher takes: the block when there is one."""
        return self.block if self.block is not None else self.values  # type: ignore[return-value]


def resolve_source(
    role: str,
    spec: str,
    *,
    text_field: str,
    id_field: str | None,
    split: str | None = None,
    revision: str | None = None,
    config: str | None = None,
) -> Source:
    """Gives a checked source, or refuses an unreadable file or an unpinned revision."""
    path = Path(spec)
    suffix = path.suffix.lower()
    if path.exists() or suffix in FORMATS:
        if revision is not None:
            raise InputError(
                f"--{role}-revision applies to hub datasets; {spec} is a local file",
                path=spec,
                field="revision",
            )
        if path.is_dir():
            raise InputError("is a directory; give a .jsonl, .csv or .parquet file", path=spec)
        try:
            with open(path, "rb") as handle:
                handle.read(1)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=spec) from exc
        if suffix not in FORMATS:
            raise InputError(
                f"unknown file type {suffix or '(none)'!r}; expected .jsonl, .csv or .parquet",
                path=spec,
            )
        return Source(
            role, str(path), "file", FORMATS[suffix], None, None, None, text_field, id_field
        )
    if revision is None:
        raise InputError(
            f"unpinned: no such file, and a hub dataset must be pinned to a "
            f"40-hex commit sha with --{role}-revision (a bare name silently "
            "tracks main)",
            path=spec,
            field="revision",
        )
    if not _COMMIT.match(revision):
        raise InputError(
            f"{revision!r} is not a 40-hex commit sha; a branch or tag moves, "
            "so the data could change under the scan: pin the commit sha "
            "(40 lower-case hex digits)",
            path=spec,
            field="revision",
        )
    if not split:
        raise InputError(
            f"a hub dataset needs --{role}-split (e.g. test or train)", path=spec, field="split"
        )
    return Source(role, spec, "hub", None, split, revision, config, text_field, id_field)


def quiet_datasets() -> Any:
    """Gives the datasets module, imported and quiet (a worker calls it before its first shard)."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    # Rows are only iterated here; without this, streaming imports torch
    # (seconds and ~300 MB) to subclass torch's IterableDataset.
    datasets.config.TORCH_AVAILABLE = False
    logging.getLogger("datasets").setLevel(logging.CRITICAL)
    return datasets


def refuse_deep_rows(source: Source) -> None:
    """Gives nothing, or raises the InputError naming the first line of a local JSONL
    file that nests too deeply: Arrow's parser, which reads it next, would crash the
    process on it (see ``canonical.MAX_NESTING``)."""
    with open(source.name, "rb") as handle:
        for block_start, block in _line_blocks(handle):
            for index, line in _bracket_heavy_lines(block):
                check_nesting(line, path=source.label, line=block_start + index)


def _bracket_heavy_lines(block: bytes) -> list[tuple[int, bytes]]:
    """Gives (index, bytes) of the lines of a block that open more than MAX_NESTING
    brackets: the only ones that can nest that deep.

    Counted with numpy over the whole block: a million rows of about 85 bytes
    took 1.5 s here (a busy shared machine), against 4.2 s for two counts per
    line in Python.
    """
    import numpy as np

    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(data == ord("\n"))
    starts = np.concatenate(([0], ends + 1))
    starts = starts[starts < len(data)]  # a block ending in a newline starts no line after it
    if not len(starts):
        return []
    opens = ((data == ord("[")) | (data == ord("{"))).view(np.uint8)
    per_line = np.add.reduceat(opens, starts, dtype=np.int64)
    out = []
    for index in np.flatnonzero(per_line > MAX_NESTING).tolist():
        start = int(starts[index])
        end = int(starts[index + 1]) if index + 1 < len(starts) else len(block)
        out.append((index, block[start:end]))
    return out


def _line_blocks(handle: Any, size: int = 1 << 22) -> Generator[tuple[int, bytes], None, None]:
    """Gives (number of its first line, bytes) of blocks of whole lines of a file."""
    line, carry = 1, b""
    for chunk in iter(lambda: handle.read(size), b""):
        data = carry + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            continue
        block, carry = data[:cut], data[cut:]
        yield line, block
        line += block.count(b"\n")
    if carry:
        yield line, carry


def _open(source: Source) -> Any:
    if source.kind == "file" and source.format == "json":
        refuse_deep_rows(source)
    datasets = quiet_datasets()
    if source.kind == "hub":
        return datasets.load_dataset(
            source.name, source.config, split=source.split, revision=source.revision, streaming=True
        )
    options: dict[str, Any] = {}
    if source.format == "csv":
        _check_csv_width(source)
        # Every cell as the exact string written: no "NA" -> NaN, no "42" -> int.
        fields = [*text_fields(source.text_field), source.id_field]
        options = {"na_filter": False, "converters": {f: str for f in fields if f}}
    # data_files is a pattern to datasets: escaped, 'pool[1].jsonl' is that file, not pool1.
    return datasets.load_dataset(
        source.format, data_files=glob.escape(source.name), split="train", streaming=True, **options
    )


def _check_csv_width(source: Source) -> None:
    """Refuses a CSV whose first row has more cells than its header: pandas would take
    the first column for a row index and shift every field by one, silently."""
    try:
        with open(source.name, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            row = next(reader, None)
    except (OSError, UnicodeDecodeError, csv.Error):
        return  # the reader proper names these
    if header is not None and row is not None and len(row) > len(header):
        raise InputError(
            f"expected {len(header)} fields (as the header), got {len(row)}",
            path=source.label,
            line=reader.line_num,
        )


def iter_batches(
    source: Source, batch_size: int, *, whole_rows: bool = False
) -> Generator[Batch, None, None]:
    """Gives the rows in batches, streamed; a read failure names the line at fault.

    ``whole_rows`` also gives every row as a dict (for the small eval set,
    whose rows the clean set is written from).
    """
    try:
        # Arrow tables, not dicts of rows: columns come out as lists in C.
        dataset = _open(source).with_format("arrow")
        start = 0
        for table in dataset.iter(batch_size=batch_size):
            count = table.num_rows
            names = set(table.column_names)
            values, block = _texts(table, source.text_field, count)
            ids = None
            checked = False
            if source.id_field:
                if source.id_field in names:
                    column = table.column(source.id_field)
                    ids = _values(column)
                    checked = _ids_known_good(column)
                else:
                    ids = [None] * count
            rows = None
            if whole_rows:
                columns = {name: _values(table.column(name)) for name in table.column_names}
                rows = [
                    dict(zip(columns, cells, strict=True))
                    for cells in zip(*columns.values(), strict=True)
                ]
            yield Batch(start, count, values, block, ids, rows, checked)
            start += count
    except InputError:
        raise
    except Exception as exc:  # datasets/pyarrow/pandas raise many kinds
        raise diagnose(source, exc) from exc


JOIN = "\n"  # between the fields of a joined text (canonical text makes it one space)


def text_fields(field: str, names: Iterable[str] = ()) -> list[str]:
    """Gives the fields a text is read from: ``field`` itself when the data has a field of
    that name, else its comma-separated names (``question,answer``: joined in order)."""
    if field in names or "," not in field:
        return [field]
    return [part.strip() for part in field.split(",")]


def _texts(table: Any, field: str, count: int) -> tuple[list[Any] | None, TextBlock | None]:
    """Gives a text column as a TextBlock when it is null-free Arrow strings, else as values.
    Several fields are joined row by row (a row missing one has no text)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fields = text_fields(field, table.column_names)
    if any(name not in table.column_names for name in fields):
        return [None] * count, None
    columns = [table.column(name) for name in fields]
    if all(
        c.null_count == 0 and (pa.types.is_string(c.type) or pa.types.is_large_string(c.type))
        for c in columns
    ):
        if len(columns) == 1:
            return None, TextBlock.from_arrow(columns[0].combine_chunks())
        # one string type for every column and the separator (CSV reads large_string)
        kind = (
            pa.large_string()
            if any(pa.types.is_large_string(c.type) for c in columns)
            else pa.string()
        )
        joined = pc.binary_join_element_wise(
            *(c.combine_chunks().cast(kind) for c in columns), pa.scalar(JOIN, type=kind)
        )
        return None, TextBlock.from_arrow(joined)
    if len(columns) == 1:
        return _values(columns[0]), None
    rows = zip(*(_values(c) for c in columns), strict=True)
    # a row whose fields are not all strings gives its first other value: the checks
    # then say what it is (missing, a number, ...)
    return [
        JOIN.join(parts)
        if all(isinstance(p, str) for p in parts)
        else next(p for p in parts if not isinstance(p, str))
        for parts in rows
    ], None


def _values(column: Any) -> list[Any]:
    """Gives a column's Python values; a column of mixed JSON types comes as JSON text."""
    values = column.to_pylist()
    if getattr(column.type, "extension_name", "") == "arrow.json":
        return [None if v is None else json.loads(v) for v in values]
    return values


def _ids_known_good(column: Any) -> bool:
    """Gives True when an Arrow id column has no null, and only integers or non-blank strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count:
        return False
    if pa.types.is_integer(column.type):
        return True
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        if not len(column):
            return True
        shortest = pc.min(pc.utf8_length(pc.utf8_trim_whitespace(column))).as_py()
        return bool(shortest)
    return False


def count_rows(source: Source) -> int | None:
    """Gives the number of rows when it is cheap to know (for progress), else None."""
    if source.kind != "file":
        return None
    if source.format == "parquet":
        try:
            import pyarrow.parquet as pq

            return pq.ParquetFile(source.name).metadata.num_rows
        except Exception:
            return None
    count = 0
    with open(source.name, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            count += block.count(b"\n")
    if source.format == "csv":
        count -= 1
    return max(count, 0)


# -- naming the line at fault ------------------------------------------------
def locate(source: Source, row: int) -> tuple[str, int]:
    """Gives (file label, line) of a 0-based row; rows for Parquet and hub data."""
    if source.kind == "file" and source.format == "json":
        seen = -1
        with open(source.name, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if raw.strip():
                    seen += 1
                    if seen == row:
                        return source.label, number
    if source.kind == "file" and source.format == "csv":
        with open(source.name, encoding="utf-8", errors="surrogateescape", newline="") as f:
            reader = csv.reader(f)
            last = 0
            for index, _record in enumerate(reader):
                begins = last + 1
                last = reader.line_num
                if index == row + 1:  # record 0 is the header
                    return source.label, begins
    return source.label, row + 1


def row_error(source: Source, row: int, field: str, message: str) -> InputError:
    """Gives the one-line error for a bad value at a row."""
    label, line = locate(source, row)
    return InputError(message, path=label, line=line, field=field)


def _field_with_surrogates(value: Any, prefix: str = "") -> str | None:
    if isinstance(value, str):
        return prefix or None if any("\udc80" <= ch <= "\udcff" for ch in value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if any("\udc80" <= ch <= "\udcff" for ch in str(key)):
                return name
            found = _field_with_surrogates(item, name)
            if found:
                return found
    if isinstance(value, list):
        for item in value:
            found = _field_with_surrogates(item, prefix)
            if found:
                return found
    return None


def _diagnose_json(source: Source) -> InputError | None:
    with open(source.name, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                field = None
                try:
                    field = _field_with_surrogates(
                        json.loads(raw.decode("utf-8", "surrogateescape"))
                    )
                except ValueError:
                    pass
                return InputError(
                    f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                    path=source.label,
                    line=number,
                    field=field,
                )
            try:
                value = json.loads(text)
            except ValueError as exc:
                return InputError(f"not valid JSON: {exc}", path=source.label, line=number)
            if not isinstance(value, dict):
                return InputError("a row must be a JSON object", path=source.label, line=number)
    return None


def _diagnose_csv(source: Source) -> InputError | None:
    with open(source.name, "rb") as handle:
        data = handle.read()
    header: list[str] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            field = None
            text = raw.decode("utf-8", "surrogateescape")
            cells = next(csv.reader(io.StringIO(text)), [])
            for column, cell in enumerate(cells):
                if _field_with_surrogates(cell, "x") and column < len(header):
                    field = header[column]
            return InputError(
                f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                path=source.label,
                line=number,
                field=field,
            )
        if number == 1:
            header = next(csv.reader(io.StringIO(raw.decode("utf-8"))), [])
    return None


def diagnose(source: Source, exc: BaseException) -> InputError:
    """Gives the one-line error for a source that ``datasets`` could not read."""
    found = None
    if source.kind == "file":
        try:
            if os.path.getsize(source.name) == 0:  # datasets says only "StopIteration"
                what = "eval set" if source.role == "eval" else "pool"
                return InputError(f"the file is empty: the {what} has no rows", path=source.label)
            if source.format == "json":
                found = _diagnose_json(source)
            elif source.format == "csv":
                found = _diagnose_csv(source)
        except OSError as err:
            return InputError(f"cannot read: {err.strerror}", path=source.label)
    if found is not None:
        return found
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return InputError(
        f"cannot be read as {source.format or 'a hub dataset'}: {reason}", path=source.label
    )


def check_id(value: Any, source: Source, row: int) -> str | int:
    """Gives a row's id value, refusing a missing or unusable one."""
    if value is None:
        raise row_error(source, row, source.id_field or "id", "missing (absent or null)")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise row_error(
            source,
            row,
            source.id_field or "id",
            f"must be a string or an integer, got {type(value).__name__}",
        )
    if isinstance(value, str) and not value.strip():
        raise row_error(source, row, source.id_field or "id", "empty id")
    return value


def file_sha256(source: Source) -> str | None:
    """Gives the SHA-256 of a local source file's bytes (None for hub data)."""
    if source.kind != "file":
        return None
    return artifacts.file_sha256(Path(source.name))
