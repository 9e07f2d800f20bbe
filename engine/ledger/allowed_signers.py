"""The workspace's ``trust/allowed_signers``: who may sign in which role.

The file is in OpenSSH's ALLOWED SIGNERS format (ssh-keygen(1)), so the same
file serves ``ssh-keygen -Y verify -f trust/allowed_signers``.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from engine.errors import InputError, SigningKeyError
from engine.ledger.records import time_text
from engine.ledger.signers import PublicKey, parse_public_key
from engine.ledger.sshwire import Reader, WireError
from engine.roles import NAMESPACE_BY_ROLE, ROLES


@dataclass(frozen=True)
class Entry:
    """One line: principal patterns, options, and the key."""

    principals: tuple[str, ...]
    namespaces: tuple[str, ...] | None  # None: every namespace
    valid_after: datetime | None
    valid_before: datetime | None
    key: PublicKey
    line: int

    def matches_principal(self, principal: str) -> bool:
        """Says whether a principal name matches the line's pattern list."""
        return match_pattern_list(principal, self.principals)

    def allows_namespace(self, namespace: str) -> bool:
        """Says whether the line lets its key sign in a namespace."""
        if self.namespaces is None:
            return True
        return match_pattern_list(namespace, self.namespaces)

    @property
    def roles(self) -> tuple[str, ...]:
        """Gives the sealdesk roles this line grants."""
        return tuple(r for r in ROLES if self.allows_namespace(NAMESPACE_BY_ROLE[r]))


def match_pattern(text: str, pattern: str) -> bool:
    """Says whether text matches an OpenSSH pattern: ``*`` any run, ``?`` one character.

    Nothing else is special (``[`` is a literal), as in OpenSSH's match.c, so
    that a pattern grants here exactly what it grants to ``ssh-keygen``.
    """
    return _pattern_regex(pattern).fullmatch(text) is not None


@lru_cache(maxsize=1024)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(
        "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern),
        flags=re.DOTALL,
    )


def match_pattern_list(text: str, patterns: tuple[str, ...]) -> bool:
    """Says whether text matches a pattern list as OpenSSH's match_pattern_list does.

    A pattern starting with ``!`` that matches denies outright, whatever
    else matches; otherwise one matching pattern is enough.
    """
    granted = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if match_pattern(text, pattern[1:] if negated else pattern):
            if negated:
                return False
            granted = True
    return granted


def _split_fields(text: str) -> list[str]:
    """Splits on whitespace outside double quotes, keeping quotes in fields."""
    fields, current, quoted = [], [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
            current.append(ch)
        elif ch.isspace() and not quoted:
            if current:
                fields.append("".join(current))
                current = []
        else:
            current.append(ch)
    if quoted:
        raise ValueError("unterminated quote")
    if current:
        fields.append("".join(current))
    return fields


def _split_options(text: str) -> list[str]:
    opts, current, quoted = [], [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
            current.append(ch)
        elif ch == "," and not quoted:
            opts.append("".join(current))
            current = []
        else:
            current.append(ch)
    opts.append("".join(current))
    return [o for o in opts if o]


def _parse_time(value: str) -> datetime:
    value = value.strip('"')
    utc = value.endswith("Z")
    digits = value.rstrip("Z")
    fmt = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}.get(len(digits))
    if fmt is None:
        raise ValueError(f"bad time {value!r}")
    parsed = datetime.strptime(digits, fmt)
    if utc:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


@dataclass(frozen=True)
class Skipped:
    """A well-formed line that can never authorise a sealdesk record (ssh-keygen takes it)."""

    principals: tuple[str, ...]
    key_type: str
    line: int
    why: str


# OpenSSH key types a shared allowed_signers file may hold (for git or other
# signatures), with the number of wire strings in each one's public-key blob.
# sealdesk never signs or accepts them, so their lines authorise nothing here;
# refusing the whole file over them would lock a team out.
FOREIGN_KEY_TYPES = {
    "ssh-rsa": 3,
    "ssh-dss": 5,
    "ecdsa-sha2-nistp256": 3,
    "ecdsa-sha2-nistp384": 3,
    "ecdsa-sha2-nistp521": 3,
    "sk-ecdsa-sha2-nistp256@openssh.com": 4,
    "sk-ssh-ed25519@openssh.com": 3,
}
_QUOTED_OPTIONS = ("namespaces", "valid-after", "valid-before")


def parse_line(text: str, *, path: str, line: int) -> Entry | Skipped | None:
    """Gives the entry on one line, Skipped for a line that authorises nothing here (another
    key type, a certificate authority), None for a blank or comment line."""
    stripped = text.strip()
    if not stripped or stripped.startswith("#"):
        return None
    try:
        fields = _split_fields(stripped)
    except ValueError as exc:
        raise InputError(str(exc), path=path, line=line) from exc
    if len(fields) < 3:
        raise InputError("expected: principals [options] ssh-ed25519 KEY", path=path, line=line)
    principals = tuple(p for p in fields[0].strip('"').split(",") if p)
    rest = fields[1:]
    namespaces = valid_after = valid_before = None
    authority = False
    if not rest[0].startswith(("ssh-", "ecdsa-", "sk-")):
        seen: set[str] = set()
        for opt in _split_options(rest[0]):
            name, equals, value = opt.partition("=")
            name = name.lower()
            if name in seen:
                raise InputError(
                    f"option {name!r} given twice", path=path, line=line, field="options"
                )
            seen.add(name)
            if name == "cert-authority" and not equals:
                authority = True
                continue
            if name not in _QUOTED_OPTIONS:
                raise InputError(f"unknown option {name!r}", path=path, line=line, field="options")
            if len(value) < 2 or value[0] != '"' or value[-1] != '"':
                # ssh-keygen refuses an unquoted value; sealdesk must not grant on it
                raise InputError(
                    f'the value must be in double quotes ({name}="...")',
                    path=path,
                    line=line,
                    field=name,
                )
            value = value[1:-1]
            try:
                if name == "namespaces":
                    namespaces = tuple(v for v in value.split(",") if v)
                elif name == "valid-after":
                    valid_after = _parse_time(value)
                else:
                    valid_before = _parse_time(value)
            except ValueError as exc:
                raise InputError(str(exc), path=path, line=line, field=name) from exc
        rest = rest[1:]
    if rest and rest[0] in FOREIGN_KEY_TYPES:
        if len(rest) < 2 or not _well_formed_blob(rest[0], rest[1]):
            raise InputError(f"malformed {rest[0]} key", path=path, line=line, field="key")
        key_type = rest[0]
    else:
        try:
            key = parse_public_key(" ".join(rest), source=f"{path}:{line}")
        except SigningKeyError as exc:
            raise InputError(
                str(exc).split(": ", 1)[-1], path=path, line=line, field="key"
            ) from exc
        if not authority:
            return Entry(principals, namespaces, valid_after, valid_before, key, line)
        key_type = "ssh-ed25519"
    if authority:  # vouches for certificates only; a sealdesk record is signed by a plain key
        return Skipped(
            principals,
            f"cert-authority {key_type}",
            line,
            "certificate authorities sign no sealdesk record",
        )
    return Skipped(principals, key_type, line, "sealdesk signs and checks ssh-ed25519 only")


def _well_formed_blob(key_type: str, text: str) -> bool:
    """Says whether base64 text holds a public-key blob of that type: its name, then the
    type's other wire strings, and nothing after."""
    try:
        reader = Reader(base64.b64decode(text, validate=True))
        if reader.string() != key_type.encode("ascii"):
            return False
        for _ in range(FOREIGN_KEY_TYPES[key_type] - 1):
            if not reader.string():
                return False
        return reader.at_end()
    except (binascii.Error, WireError):
        return False


class AllowedSigners:
    """The parsed allowed_signers file."""

    def __init__(
        self, entries: list[Entry], path: Path | None = None, skipped: list[Skipped] | None = None
    ) -> None:
        self.entries = entries
        self.path = path
        self.skipped = skipped or []

    @classmethod
    def load(cls, path: Path) -> AllowedSigners:
        """Gives the parsed file; a bad line is an error naming it."""
        path = Path(path)
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return cls([], path)
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read: {exc}", path=path) from exc
        entries, skipped = [], []
        # Lines end at LF only, as ssh-keygen reads them: a CR or any other
        # Unicode line break inside a line must not start an entry of its own.
        for number, raw in enumerate(text.split("\n"), start=1):
            entry = parse_line(raw, path=str(path), line=number)
            if isinstance(entry, Skipped):
                skipped.append(entry)
            elif entry is not None:
                entries.append(entry)
        return cls(entries, path, skipped)

    def authorizes(
        self, principal: str, key_blob: bytes, namespace: str, when: datetime | None = None
    ) -> bool:
        """Says whether principal may sign in namespace with this key (at a time)."""
        at = time_text(when) if when is not None else None
        return any(
            at is None or after <= at < before
            for after, before in self.windows(principal, key_blob, namespace)
        )

    def windows(
        self, principal: str, key_blob: bytes, namespace: str
    ) -> tuple[tuple[str, str], ...]:
        """Gives when principal may sign in namespace with the key, one (from, until) per
        line that allows it, as record-time texts (``records.time_text``): from inclusive,
        until exclusive, "" and "~" where the line sets no bound."""
        return tuple(
            (
                time_text(e.valid_after) if e.valid_after else "",
                time_text(e.valid_before) if e.valid_before else "~",
            )
            for e in self.entries
            if e.key.blob == key_blob
            and e.matches_principal(principal)
            and e.allows_namespace(namespace)
        )

    def principals_for(self, key_blob: bytes) -> list[str]:
        """Gives the literal principals enrolled with a key, in file order."""
        names: list[str] = []
        for entry in self.entries:
            if entry.key.blob == key_blob:
                names.extend(p for p in entry.principals if not any(c in p for c in "*?!"))
        return list(dict.fromkeys(names))

    def roles_for(self, principal: str, key_blob: bytes, when: datetime | None = None) -> list[str]:
        """Gives the roles a principal holds with a key (at a time, when given)."""
        roles = []
        for role, ns in NAMESPACE_BY_ROLE.items():
            if self.authorizes(principal, key_blob, ns, when):
                roles.append(role)
        return roles

    def roles_of_key(self, key_blob: bytes, when: datetime | None = None) -> set[str]:
        """Gives the roles any name enrolled with the key holds (at a time, when given)."""
        return {
            role
            for name in self.principals_for(key_blob)
            for role in self.roles_for(name, key_blob, when)
        }

    def keys(self) -> list[PublicKey]:
        """Gives every distinct enrolled key."""
        seen: dict[bytes, PublicKey] = {}
        for entry in self.entries:
            seen.setdefault(entry.key.blob, entry.key)
        return list(seen.values())
