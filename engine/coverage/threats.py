"""Threat mappings of the attack taxonomy: MITRE ATLAS techniques and OWASP LLM Top 10 risks.

A category gate may map each attack category to the ATLAS technique ids
(``AML.T0051``, or a sub-technique ``AML.T0051.001``) and the OWASP Top 10
for LLM Applications risk ids (``LLM01:2026``: a risk number 01 to 10 and the
edition it belongs to) that it measures. The mapping travels with the
taxonomy into the report, the signed scope and benchmark, every backlog
item and the evidence, so that a reviewer reads a weak category in the
terms a threat model uses.

Ids are checked in form only: which technique a category deserves is the
policy author's judgement, and both catalogues grow; an id that cannot be
one (a tactic ``AML.TA0005``, a risk ``LLM11``, a risk without its edition)
is refused. The benign category has no mapping. A mapping, once given,
covers every attack category, so no category silently lacks one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.errors import InputError, Location

FIELD = "threat_mappings"
ATLAS, OWASP = "mitre_atlas", "owasp_llm_top10"
MAPPING_FIELDS = (ATLAS, OWASP)
ATLAS_ID = re.compile(r"AML\.T\d{4}(?:\.\d{3})?")
OWASP_ID = re.compile(r"LLM(0[1-9]|10):(\d{4})")
# The OWASP Top 10 for LLM Applications was first published in 2023; risk numbers
# are reused across editions for different risks, so an id names its edition.
FIRST_OWASP_EDITION = 2023


@dataclass(frozen=True)
class ThreatMapping:
    """The ATLAS technique ids and OWASP LLM Top 10 ids one attack category measures."""

    category: str
    mitre_atlas: tuple[str, ...]
    owasp_llm_top10: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        return {ATLAS: list(self.mitre_atlas), OWASP: list(self.owasp_llm_top10)}

    def ids(self) -> tuple[str, ...]:
        """Gives every id of the mapping, ATLAS first."""
        return self.mitre_atlas + self.owasp_llm_top10


def _atlas_problem(value: str) -> str | None:
    if ATLAS_ID.fullmatch(value):
        return None
    if re.fullmatch(r"AML\.TA\d{4}", value):
        return f"{value!r} is an ATLAS tactic; map techniques (AML.Tnnnn or AML.Tnnnn.nnn)"
    return f"{value!r} is not an ATLAS technique id (AML.Tnnnn or AML.Tnnnn.nnn)"


def _owasp_problem(value: str) -> str | None:
    found = OWASP_ID.fullmatch(value)
    if found is None:
        if re.fullmatch(r"LLM\d{2}", value):
            return (
                f"{value!r} names no edition; risk numbers differ between editions, "
                f"write it as {value}:YYYY (e.g. {value}:2026)"
            )
        return f"{value!r} is not an OWASP LLM Top 10 id (LLM01:YYYY to LLM10:YYYY)"
    if int(found.group(2)) < FIRST_OWASP_EDITION:
        return (
            f"{value!r} names edition {found.group(2)}; the first edition is {FIRST_OWASP_EDITION}"
        )
    return None


def line_of_mapping(text: str, category: str, needle: str | None = None) -> int | None:
    """Gives the line of a category's mapping in TOML or JSON text, or of ``needle``
    (a field name or a quoted id) within it, if it can be found."""
    if not text:
        return None
    lines = text.splitlines()
    cat = re.escape(category)
    header = re.compile(rf'^\s*\[\s*{FIELD}\s*\.\s*"?{cat}"?\s*\]')
    key = re.compile(rf'(^|[\s{{,])"?{cat}"?\s*[=:]')
    inside = False
    start = None
    for number, line in enumerate(lines, start=1):
        if header.search(line):
            start = number
            break
        if FIELD in line:
            inside = True
        if inside and key.search(line):
            start = number
            break
    if start is None:
        return None
    if needle is None:
        return start
    for number in range(start, len(lines) + 1):
        if needle in lines[number - 1]:
            return number
        # A TOML table ends at the next header.
        if number > start and lines[number - 1].lstrip().startswith("["):
            break
    return start


def parse_threat_mappings(
    value: Any,
    categories: Iterable[str],
    benign: str | None,
    *,
    path: str | None = None,
    text: str = "",
    field: str = FIELD,
) -> tuple[ThreatMapping, ...]:
    """Gives the checked mappings in taxonomy order; refuses a malformed id, an unknown
    or benign category, a missing attack category, an odd field or a repeated id."""
    attacks = [c for c in categories if c != benign]
    if not isinstance(value, dict):
        first = next(
            (n for n, line in enumerate(text.splitlines(), start=1) if FIELD in line), None
        )
        raise InputError(
            "must be a table of attack category -> mitre_atlas, owasp_llm_top10",
            path=path,
            line=first,
            field=field,
        )
    if not value:
        return ()
    for category in value:
        where: Location = {
            "path": path,
            "line": line_of_mapping(text, category),
            "field": f"{field}.{category}",
        }
        if category == benign:
            raise InputError(
                f"{category!r} is the benign category; only attack categories map to threats",
                **where,
            )
        if category not in attacks:
            raise InputError(f"{category!r} is not an attack category of the taxonomy", **where)
    missing = [c for c in attacks if c not in value]
    if missing:
        raise InputError(
            f"attack category {missing[0]!r} has no mapping; once given, the "
            "mappings cover every attack category",
            path=path,
            line=line_of_mapping(text, next(iter(value))),
            field=f"{field}.{missing[0]}",
        )
    out = []
    for category in attacks:
        entry = value[category]
        base = f"{field}.{category}"
        if not isinstance(entry, dict):
            raise InputError(
                f"must be a table with {ATLAS} and {OWASP}",
                path=path,
                line=line_of_mapping(text, category),
                field=base,
            )
        odd = sorted(set(entry) ^ set(MAPPING_FIELDS))
        if odd:
            what = "unknown field" if odd[0] in entry else "missing"
            raise InputError(
                f"{what} (a mapping holds exactly {ATLAS} and {OWASP})",
                path=path,
                line=line_of_mapping(text, category, odd[0]),
                field=f"{base}.{odd[0]}",
            )
        lists = {}
        for name, problem in ((ATLAS, _atlas_problem), (OWASP, _owasp_problem)):
            ids = entry[name]
            if not isinstance(ids, list):
                raise InputError(
                    "must be a list of ids (it may be empty)",
                    path=path,
                    line=line_of_mapping(text, category, name),
                    field=f"{base}.{name}",
                )
            seen: set[str] = set()
            for i, ident in enumerate(ids):
                at: Location = {
                    "path": path,
                    "field": f"{base}.{name}[{i}]",
                    "line": line_of_mapping(
                        text, category, f'"{ident}"' if isinstance(ident, str) else name
                    ),
                }
                if not isinstance(ident, str):
                    raise InputError(f"must be an id string, got {ident!r}", **at)
                reason = problem(ident)
                if reason is not None:
                    raise InputError(reason, **at)
                if ident in seen:
                    raise InputError(f"{ident!r} is listed twice", **at)
                seen.add(ident)
            lists[name] = tuple(ids)
        if not lists[ATLAS] and not lists[OWASP]:
            raise InputError(
                "maps to nothing: give at least one ATLAS or OWASP id",
                path=path,
                line=line_of_mapping(text, category),
                field=base,
            )
        out.append(ThreatMapping(category, lists[ATLAS], lists[OWASP]))
    return tuple(out)


def mappings_json(mappings: Iterable[ThreatMapping]) -> dict[str, dict[str, list[str]]]:
    """Gives the mappings as the JSON object documents carry (category -> ids)."""
    return {m.category: m.to_json() for m in mappings}


def mapping_of(document_mappings: Any, category: str) -> dict[str, list[str]] | None:
    """Gives one category's mapping from a checked document's mappings, if it has one."""
    if isinstance(document_mappings, dict):
        found = document_mappings.get(category)
        if isinstance(found, dict):
            return {name: list(found.get(name, [])) for name in MAPPING_FIELDS}
    return None
