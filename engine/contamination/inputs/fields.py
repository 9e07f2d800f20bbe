"""Which field of a row holds the text and which the id, when the user did not say.

The first row of each dataset is read before anything else. A field the user
named must be in it, else the error lists the row's string fields to choose
from. A field the user did not name is taken only when the choice is
unambiguous, and always reported:

- the text: the row's only string field (leaving id-like names aside), else
  the one conventional text name among them (``question``, ``text``,
  ``prompt``, ...); two candidates are refused, naming both;
- the id: the one conventional id name (``id``, ``uid``, ``task_id``, ...)
  whose value is a string or an integer; none, or several, leave the row
  index as the id (as when no id field is named).

For the pool, a field named for the eval set (``--text-field``,
``--id-field``) is used when the pool's first row has it, as before.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.canonical import check_nesting
from engine.contamination.inputs.shards import Shard, ShardedPool, head_bytes, open_raw
from engine.contamination.inputs.sources import Source, quiet_datasets, text_fields
from engine.errors import InputError

# An eval set or pool as the CLI resolved it; given back as the same kind.
_Input = TypeVar("_Input", Source, ShardedPool)

TEXT_NAMES = (
    "text",
    "question",
    "prompt",
    "problem",
    "content",
    "input",
    "instruction",
    "query",
    "document",
    "passage",
    "sentence",
    "body",
)
ID_NAMES = (
    "id",
    "_id",
    "uid",
    "uuid",
    "idx",
    "key",
    "qid",
    "item_id",
    "example_id",
    "question_id",
    "problem_id",
    "task_id",
    "doc_id",
)
_FIRST_BYTES = 1 << 20  # enough for any first row a text dataset holds


@dataclass(frozen=True)
class FieldChoice:
    """A field used for the text or the id, and how it was chosen (for the report)."""

    field: str | None  # None: the row index is the id
    how: str  # "given", "given for the eval set", or why it was taken

    def to_json(self) -> dict[str, Any]:
        """Gives the report's account of the choice."""
        return {"field": self.field, "how": self.how}


def _id_like(name: str) -> bool:
    return name.lower() in ID_NAMES or name.lower().endswith("_id")


def string_fields(row: dict[str, Any]) -> list[str]:
    """Gives the names of a row's fields whose value is a string, sorted."""
    return sorted(k for k, v in row.items() if isinstance(v, str))


def _listing(row: dict[str, Any]) -> str:
    found = string_fields(row)
    return ", ".join(found) if found else "none"


def choose_text(
    row: dict[str, Any] | None,
    given: str | None,
    *,
    label: str,
    option: str,
    fallback: str | None = None,
    line: int | None = None,
) -> FieldChoice:
    """Gives the text field of a dataset whose first row is ``row``, or refuses naming
    the row's string fields. ``fallback``: the eval set's named field, which the pool
    uses when it has it."""
    if row is None:
        # No first row to look at (empty, or not readable): the reader proper says why.
        if given or fallback:
            return FieldChoice(given or fallback, "given" if given else "given for the eval set")
        return FieldChoice("text", "the default (no first row to look at)")
    if given is not None:
        parts = text_fields(given, row)
        for part in parts:
            if part not in row:
                raise InputError(
                    f"not in the first row, whose string fields are {_listing(row)} "
                    f"(name one with {option}, or several joined: {option} question,answer)",
                    path=label,
                    line=line,
                    field=part,
                )
        if len(parts) > 1:
            return FieldChoice(given, f"given: {' + '.join(parts)}, joined in this order")
        return FieldChoice(given, "given")
    if fallback is not None and isinstance(row.get(fallback), str):
        return FieldChoice(fallback, "given for the eval set")
    texts = [name for name in string_fields(row) if not _id_like(name)]
    if len(texts) == 1:
        return FieldChoice(texts[0], "detected: the row's only string field besides ids")
    conventional = [name for name in texts if name.lower() in TEXT_NAMES]
    if len(conventional) == 1:
        return FieldChoice(
            conventional[0],
            f"detected: the one conventional text name among {', '.join(texts)}",
        )
    if not texts:
        why = "the first row has no string field"
    elif conventional:
        why = f"several fields could hold the text ({', '.join(conventional)})"
    else:
        why = "no field has a conventional text name"
    raise InputError(
        f"which field holds the text? {why}; the first row's string fields are "
        f"{_listing(row)}: name one with {option}",
        path=label,
        line=line,
        field=option.lstrip("-"),
    )


def choose_id(
    row: dict[str, Any] | None,
    given: str | None,
    *,
    label: str,
    option: str,
    fallback: str | None = None,
    line: int | None = None,
) -> FieldChoice:
    """Gives the id field of a dataset whose first row is ``row`` (None: the row index)."""
    if given is not None:
        if row is not None and given not in row:
            raise InputError(
                f"not in the first row, whose fields are {', '.join(sorted(row)) or 'none'} "
                f"(name one with {option}, or leave it out for the row index)",
                path=label,
                line=line,
                field=given,
            )
        return FieldChoice(given, "given")
    if row is None:
        return FieldChoice(fallback, "given for the eval set" if fallback else "the row index")
    if fallback is not None and fallback in row:
        return FieldChoice(fallback, "given for the eval set")
    usable = [
        name
        for name in sorted(row)
        if name.lower() in ID_NAMES
        and isinstance(row[name], (str, int))
        and not isinstance(row[name], bool)
    ]
    if len(usable) == 1:
        return FieldChoice(usable[0], "detected: the row's one conventional id field")
    if usable:
        return FieldChoice(
            None, f"the row index: several fields could be the id ({', '.join(usable)})"
        )
    return FieldChoice(None, "the row index: no conventional id field")


# -- the first row of each kind of source --------------------------------------------
def _first_json(data: bytes, label: str) -> tuple[dict[str, Any] | None, int | None]:
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            check_nesting(raw, path=label, line=number)  # json.loads would recurse out
            try:
                value = json.loads(raw)
            except ValueError:
                return None, None  # the reader proper names the line and what is wrong
            return (value, number) if isinstance(value, dict) else (None, None)
    return None, None


def _first_csv(data: bytes) -> tuple[dict[str, Any] | None, int | None]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data[: exc.start].decode("utf-8")
    reader = csv.DictReader(io.StringIO(text))
    try:
        row = next(reader, None)
    except csv.Error:
        return None, None
    if row is None:
        return None, None
    return {k: v for k, v in row.items() if k is not None}, reader.line_num


def _first_parquet(handle: Any) -> dict[str, Any] | None:
    import pyarrow.parquet as pq

    try:
        for batch in pq.ParquetFile(handle).iter_batches(batch_size=1):
            rows = batch.to_pylist()
            if rows:
                return rows[0]
    except Exception:  # noqa: BLE001 - the reader proper says what is wrong with the file
        return None
    return None


def _first_of_bytes(fmt: str, data: bytes, label: str) -> tuple[dict[str, Any] | None, int | None]:
    return _first_json(data, label) if fmt == "json" else _first_csv(data)


def _first_of_shard(shard: Shard) -> tuple[dict[str, Any] | None, int | None]:
    if shard.format == "parquet":
        with open_raw(shard) as raw:
            return _first_parquet(raw), None
    return _first_of_bytes(shard.format, head_bytes(shard, _FIRST_BYTES), shard.url)


def first_row(source: Source | ShardedPool) -> tuple[dict[str, Any] | None, int | None]:
    """Gives the first row of a dataset as a dict and its line in the file (None for
    Parquet and hub data), or (None, None) when it has no row, or when the reader proper
    is better placed to say what is wrong with it."""
    try:
        if isinstance(source, ShardedPool):
            return _first_of_shard(source.shards[0]) if source.shards else (None, None)
        if source.kind == "file":
            if source.format == "parquet":
                return _first_parquet(source.name), None
            with open(source.name, "rb") as handle:
                return _first_of_bytes(
                    source.format or "json", handle.read(_FIRST_BYTES), source.label
                )
        datasets = quiet_datasets()
        rows = datasets.load_dataset(
            source.name, source.config, split=source.split, revision=source.revision, streaming=True
        )
        return next(iter(rows), None), None
    except InputError:
        raise
    except (OSError, ValueError, StopIteration):
        return None, None


def with_fields(
    source: _Input,
    text: str | None,
    ident: str | None,
    *,
    options: tuple[str, str],
    fallback: tuple[str | None, str | None] = (None, None),
) -> tuple[_Input, dict[str, Any]]:
    """Gives the source reading the chosen fields, and the report's account of them."""
    row, line = first_row(source)
    if isinstance(source, ShardedPool):
        label = source.shards[0].url if source.shards else source.spec
    else:
        label = source.label
    text_choice = choose_text(
        row, text, label=label, option=options[0], fallback=fallback[0], line=line
    )
    id_choice = choose_id(
        row, ident, label=label, option=options[1], fallback=fallback[1], line=line
    )
    chosen = dataclasses.replace(
        source,
        text_field=text_choice.field,  # type: ignore[arg-type]
        id_field=id_choice.field,
    )
    return chosen, {"text": text_choice.to_json(), "id": id_choice.to_json()}


def describe(role: str, fields: dict[str, Any]) -> str:
    """Gives one line saying which fields a dataset is read from and why."""
    text, ident = fields["text"], fields["id"]
    id_part = f"id {ident['field']!r} ({ident['how']})" if ident["field"] else f"id: {ident['how']}"
    return f"  {role}: text {text['field']!r} ({text['how']}); {id_part}"
