"""Field-by-field checks of JSON rows, each failure naming file, line and field."""

from __future__ import annotations

import re
from collections.abc import Iterator, Set
from pathlib import Path
from typing import Any

from engine.canonical import SHA256_HEX as SHA256_PATTERN
from engine.canonical import load_json, sha256_hex
from engine.errors import InputError

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\Z")


class Row:
    """One JSON object read from a file, with the place it came from."""

    def __init__(self, value: Any, path: str, line: int | None) -> None:
        self.value = value
        self.path = path
        self.line = line

    def error(self, message: str, field: str | None = None) -> InputError:
        """Gives an InputError naming this row's file, line and the field."""
        return InputError(message, path=self.path, line=self.line, field=field)

    def fields(
        self,
        obj: Any,
        required: Set[str],
        optional: Set[str] = frozenset(),
        prefix: str = "",
        forbidden: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Gives obj after checking it is an object with exactly the allowed keys."""
        where = prefix.rstrip(".") or None
        if not isinstance(obj, dict):
            raise self.error("must be a JSON object", where)
        for key in sorted(obj):
            if forbidden and key in forbidden:
                raise self.error(forbidden[key], prefix + key)
        missing = sorted(required - set(obj))
        if missing:
            raise self.error("missing", prefix + missing[0])
        extra = sorted(set(obj) - required - set(optional))
        if extra:
            raise self.error("unknown field", prefix + extra[0])
        return obj

    def text(self, obj: dict[str, Any], key: str, prefix: str = "", *, empty: bool = False) -> str:
        """Gives a string field (non-empty unless allowed)."""
        value = obj[key]
        if not isinstance(value, str):
            raise self.error("must be a string", prefix + key)
        if not empty and not value.strip():
            raise self.error("must not be empty", prefix + key)
        return value

    def ident(self, obj: dict[str, Any], key: str, prefix: str = "") -> str:
        """Gives an identifier field ([A-Za-z0-9][A-Za-z0-9._:-]*, at most 128)."""
        value = obj[key]
        if not isinstance(value, str) or not ID_PATTERN.match(value):
            raise self.error(
                "must be an identifier: [A-Za-z0-9][A-Za-z0-9._:-]*, at most 128 characters",
                prefix + key,
            )
        return value

    def integer(
        self,
        obj: dict[str, Any],
        key: str,
        prefix: str = "",
        *,
        low: int | None = None,
        high: int | None = None,
    ) -> int:
        """Gives an integer field within bounds (booleans refused)."""
        value = obj[key]
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error("must be an integer", prefix + key)
        if low is not None and value < low:
            raise self.error(f"must be at least {low}", prefix + key)
        if high is not None and value > high:
            raise self.error(f"must be at most {high}", prefix + key)
        return value

    def choice(
        self, obj: dict[str, Any], key: str, allowed: tuple[str, ...], prefix: str = ""
    ) -> str:
        """Gives a field that must be one of the allowed strings."""
        value = obj[key]
        if value not in allowed or not isinstance(value, str):
            raise self.error(f"must be one of {', '.join(allowed)} (got {value!r})", prefix + key)
        return value

    def version(self, obj: dict[str, Any], expected: int) -> None:
        """Checks schema_version."""
        version = obj.get("schema_version")
        if type(version) is not int or version != expected:  # 2.0 == 2 and True == 1 in Python
            raise self.error(f"must be {expected}", "schema_version")

    def sha256(self, obj: dict[str, Any], key: str, prefix: str = "") -> str:
        """Gives a lower-case 64-hex SHA-256 field."""
        value = obj[key]
        if not isinstance(value, str) or not SHA256_PATTERN.match(value):
            raise self.error("must be 64 lower-case hex digits", prefix + key)
        return value


def read_bytes(path: Path) -> bytes:
    """Gives a file's bytes, or an InputError naming it."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc


def check_expected(path: Path, data: bytes, expected: str | None, option: str) -> str:
    """Gives the file's SHA-256 after checking it against the expected one, if given."""
    digest = sha256_hex(data)
    if expected is None:
        return digest
    if not SHA256_PATTERN.match(expected):
        raise InputError(
            "expected SHA-256 must be 64 lower-case hex digits", path=path, field=option
        )
    if digest != expected:
        raise InputError(
            f"file SHA-256 is {digest}, not the expected {expected} "
            "(the file changed since it was locked)",
            path=path,
            field=option,
        )
    return digest


def parse_json(data: bytes, path: Path, line: int | None = None) -> Any:
    """Gives the JSON value of bytes (duplicate keys, NaN refused), naming the place."""
    return load_json(data, path=path, line=line)


def jsonl_rows(data: bytes, path: Path) -> Iterator[Row]:
    """Yields one Row per line of JSONL bytes; a blank line inside is an error."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        raw = raw.rstrip(b"\r")
        if not raw.strip():
            raise InputError("empty line", path=path, line=number)
        yield Row(parse_json(raw, path, number), str(path), number)
