"""Canonical JSON and SHA-256: the two encodings every hash in sealdesk uses.

Canonical JSON is UTF-8, keys sorted, separators ``(",", ":")``,
``ensure_ascii=False`` and ``allow_nan=False``, no trailing newline: what every
hash and signature covers (docs/reference/workspace.md, "Canonical JSON and hashes").
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from engine.errors import InputError

# One encoder for every call: building a JSONEncoder per call costs more than
# encoding a small record.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def _unencodable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The C encoder JSONEncoder.encode builds anew on every call, built once:
# verify re-encodes every record, and the per-call set-up was a third of it.
# No circular-reference markers: a value parsed from JSON cannot be circular,
# and a circular Python value still fails (RecursionError).
# Imported from _json, which json.encoder re-exports as c_make_encoder: the stubs type
# _json's constructor and not the re-export.
_C_ENCODE: Callable[[object, int], Iterable[str]] | None
try:
    from _json import encode_basestring as _encode_basestring
    from _json import make_encoder as _c_make_encoder
except ImportError:  # pragma: no cover - CPython always has the C accelerator
    _C_ENCODE = None
else:
    _C_ENCODE = _c_make_encoder(
        None, _unencodable, _encode_basestring, None, ":", ",", True, False, False
    )


def canonical_json(value: Any) -> bytes:
    """Gives the canonical UTF-8 bytes of a JSON value; NaN and Infinity refused."""
    try:
        if _C_ENCODE is not None and not isinstance(value, str):
            text = "".join(_C_ENCODE(value, 0))
        else:
            text = _ENCODER.encode(value)
    except ValueError as exc:  # NaN / Infinity
        raise InputError(f"value cannot be canonical JSON: {exc}") from exc
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate (from argv or a \ud800 escape)
        raise InputError(
            "value cannot be canonical JSON: a string holds a lone surrogate "
            f"(position {exc.start}), which is not Unicode text"
        ) from exc


def canonical_jsonl(rows: Iterable[Any]) -> bytes:
    """Gives one canonical JSON value per line, each line ending in LF."""
    return b"".join(canonical_json(row) + b"\n" for row in rows)


SHA256_HEX = re.compile(r"^[0-9a-f]{64}\Z")  # what sha256_hex gives


def sha256_hex(data: bytes) -> str:
    """Gives the lower-case hex SHA-256 of the bytes."""
    return hashlib.sha256(data).hexdigest()


def canonical_sha256(value: Any) -> str:
    """Gives the SHA-256 hex of a value's canonical JSON."""
    return sha256_hex(canonical_json(value))


def subject_sha256(queue: str, subject: Any) -> str:
    """Gives the key of the question an item asks: the SHA-256 of its queue and the
    subject its payload states (the items table's ``subject`` column, and a review
    plan's draw key, are this)."""
    return canonical_sha256({"queue": queue, "subject": subject})


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, val in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = val
    return result


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e400: valid JSON, but no float holds it and no hash could
        raise ValueError(f"number {text[:40]} is beyond a 64-bit float")
    return value


# A lone surrogate can only come from a \uD800-\uDFFF escape; most texts have none,
# so the walk that finds one runs only when this cheap search hits.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


# Deeper than any real row or payload, and shallow enough that no parser meets a
# deeper one: Python's recursive decoder raises RecursionError near 1,000 levels, and
# the C++ parser that datasets/pyarrow read JSONL with crashes the whole process
# (a segmentation fault, which nothing can catch) on rows nested 100,000 deep.
MAX_NESTING = 500
# A JSON string (whose brackets do not count) or one bracket. Possessive, and the
# closing quote optional (an unterminated string runs to the end): each byte is read
# once, so no crafted line makes the search backtrack.
_DEEP_TOKENS = re.compile(rb'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]')


class NestedTooDeep(ValueError):
    """JSON nested more than MAX_NESTING levels; ``field`` is the top-level key whose
    value nests so (None when the top level is not an object)."""

    def __init__(self, field: str | None) -> None:
        super().__init__(f"nested too deeply to parse (more than {MAX_NESTING} levels)")
        self.field = field


def refuse_deep(text: str | bytes) -> None:
    """Gives nothing, or raises NestedTooDeep for JSON text nested more than
    MAX_NESTING levels (read without parsing it, so no parser meets it)."""
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= MAX_NESTING:
            return  # the common case: two scans in C
        text = text.encode("utf-8", "surrogatepass")
    elif text.count(b"[") + text.count(b"{") <= MAX_NESTING:
        return
    depth, key = 0, None
    for token in _DEEP_TOKENS.finditer(text):
        mark = token.group()
        if mark[:1] == b'"':
            if depth == 1:
                key = mark  # a key, or a value before the next key: either precedes a nest
        elif mark in (b"[", b"{"):
            depth += 1
            if depth > MAX_NESTING:
                raise NestedTooDeep(_key_text(key) if text.lstrip()[:1] == b"{" else None)
        else:
            depth -= 1


def _key_text(token: bytes | None) -> str | None:
    """Gives a JSON string token's text, or None if it does not read as one."""
    if token is None:
        return None
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def strict_loads(text: str | bytes) -> Any:
    """Gives the parsed JSON value; duplicate keys, NaN, Infinity, numbers beyond a
    float, lone surrogates and nesting deeper than MAX_NESTING are refused."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    refuse_deep(text)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
        )
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                "a string holds a lone surrogate escape (\\ud800-\\udfff), "
                "which is not Unicode text"
            ) from None
    return value


def load_json(raw: bytes, *, path: str | Path | None = None, line: int | None = None) -> Any:
    """Gives the JSON value of bytes (strict_loads), or an InputError naming file and line
    (and the field, for nesting too deep)."""
    try:
        return strict_loads(raw)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 ({exc.reason})", path=path, line=line) from exc
    except NestedTooDeep as exc:
        raise _too_deep(exc, path, line) from None
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", path=path, line=line) from exc


def check_nesting(raw: bytes, *, path: str | Path | None = None, line: int | None = None) -> None:
    """Gives nothing, or raises the InputError ``load_json`` would for a line nested too
    deeply: for rows that another parser (Arrow's) is about to read."""
    try:
        refuse_deep(raw)
    except NestedTooDeep as exc:
        raise _too_deep(exc, path, line) from None


def _too_deep(exc: NestedTooDeep, path: str | Path | None, line: int | None) -> InputError:
    return InputError(f"not valid JSON: {exc}", path=path, line=line, field=exc.field)


def parse_canonical(raw: bytes, *, path: str | None = None, line: int | None = None) -> Any:
    """Gives the value of bytes that must already be canonical JSON, else raises."""
    value = load_json(raw, path=path, line=line)
    if canonical_json(value) != raw:
        raise InputError(
            "JSON is not canonical (keys sorted, separators ',' ':', no spaces, "
            "non-ASCII unescaped)",
            path=path,
            line=line,
        )
    return value
