"""Reason codes and guidelines per queue: what a decision may give as its reason, and
the text a reviewer decides under.

Each queue has reason codes by default (``DEFAULTS``): a short stable code word
that the signed decision carries (``exact-copy``) and a label people read. The
lead may replace a queue's codes with a file of their own (``sealdesk reasons set
--queue QUEUE FILE``), one reason a line::

    # code          label
    exact-copy      Exact copy of a training item
    paraphrase      Paraphrase

and set the queue's guidelines (``sealdesk guidelines set --queue QUEUE FILE``): UTF-8
text shown in the review pane, whose SHA-256 every decision made while they are
set carries (``guidelines_sha256``), so that a decision says which guidelines
it was made under. Both are copied into the workspace (``reasons/<queue>.txt``,
``guidelines/<queue>.md``), checked whole before a byte is written.

Text from these files is shown only through ``engine.terminal_text.visible``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from engine.artifacts import atomic_write
from engine.canonical import sha256_hex
from engine.errors import InputError
from engine.ledger.records import RATIONALE_MAX, REASON_CODE, REASON_CODE_MAX
from engine.roles import ADJUDICATION, FLAGGED_PAIRS, QUEUES, WEAK_CATEGORIES

# One key picks a reason in the review app: 1-9.
MAX_REASONS = 9
LABEL_MAX = 80
GUIDELINES_MAX = 64 * 1024  # bytes


@dataclass(frozen=True)
class Reason:
    """One reason a decision may give: its code (signed) and its label (shown)."""

    code: str
    label: str


@dataclass(frozen=True)
class Guidelines:
    """A queue's guidelines as set by the lead: their text and its SHA-256 (UTF-8 bytes)."""

    queue: str
    text: str
    sha256: str


def _reasons(*pairs: tuple[str, str]) -> tuple[Reason, ...]:
    return tuple(Reason(code, label) for code, label in pairs)


DEFAULTS: dict[str, tuple[Reason, ...]] = {
    FLAGGED_PAIRS: _reasons(
        ("exact-copy", "Exact copy"),
        ("paraphrase", "Paraphrase"),
        ("new-numbers", "Same problem, new numbers"),
        ("template-sibling", "Template sibling"),
        ("different-problem", "Different problem"),
    ),
    # The exam rubric's cases: the four claim families a span may be, and what it
    # says not to label.
    ADJUDICATION: _reasons(
        ("historical", "Claim: historical"),
        ("structural", "Claim: structural"),
        ("repository", "Claim: repository"),
        ("runtime", "Claim: runtime"),
        ("question-or-plan", "Not a claim: question, plan or promise"),
        ("hypothetical", "Not a claim: hypothetical or negation"),
        ("quotation-or-code", "Not a claim: quotation, code or example"),
        ("attributed", "Not a claim: someone else's, not endorsed"),
        ("workflow-narration", "Not a claim: narration of the agent's workflow"),
    ),
    WEAK_CATEGORIES: _reasons(
        ("real-miss", "Real miss of the detector"),
        ("label-error", "Label error in the holdout"),
        ("out-of-scope", "Out of policy scope"),
        ("too-few-cases", "Too few cases to judge"),
        ("threshold", "Threshold needs tuning"),
    ),
}


def _check_queue(queue: str) -> None:
    if queue not in QUEUES:
        raise InputError(
            f"unknown queue {queue!r} (expected one of {', '.join(QUEUES)})", field="queue"
        )


def reasons_path(root: Path, queue: str) -> Path:
    """Gives where a workspace keeps the lead's reason codes for a queue."""
    return Path(root) / "reasons" / f"{queue}.txt"


def guidelines_path(root: Path, queue: str) -> Path:
    """Gives where a workspace keeps a queue's guidelines."""
    return Path(root) / "guidelines" / f"{queue}.md"


def parse_reasons(text: str, path: str | Path) -> tuple[Reason, ...]:
    """Gives the reasons a reason file lists, in order, or raises naming the line and
    field of the first thing wrong: one ``code label`` a line, ``#`` comments."""
    out: list[Reason] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        code, _, label = line.partition(" ")
        code, label = code.strip(), label.strip()
        if len(code) > REASON_CODE_MAX or not REASON_CODE.match(code):
            raise InputError(
                f"reason code {code[:40]!r} is not lower-case words joined by '-' "
                f"(at most {REASON_CODE_MAX} characters)",
                path=path,
                line=number,
                field="code",
            )
        if code in seen:
            raise InputError(
                f"reason code {code!r} is given twice (first on line {seen[code]})",
                path=path,
                line=number,
                field="code",
            )
        if not label or len(label) > LABEL_MAX or not label.isprintable():
            raise InputError(
                f"reason {code!r} needs a label of printable text, at most {LABEL_MAX} "
                "characters, after the code",
                path=path,
                line=number,
                field="label",
            )
        seen[code] = number
        out.append(Reason(code, label))
        if len(out) > MAX_REASONS:
            raise InputError(
                f"more than {MAX_REASONS} reasons (one key, 1-9, picks each)",
                path=path,
                line=number,
                field="code",
            )
    if not out:
        raise InputError("no reasons listed (one 'code label' a line)", path=path, field="code")
    return tuple(out)


def reasons_for(root: Path, queue: str) -> tuple[Reason, ...]:
    """Gives a queue's reasons: the lead's, when set in the workspace, else the defaults."""
    _check_queue(queue)
    path = reasons_path(root, queue)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return DEFAULTS[queue]
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read reasons: {exc}", path=path) from exc
    return parse_reasons(text, path)


def reason_code(root: Path, queue: str, code: str) -> str:
    """Gives ``code`` when it is one of the queue's reasons, else raises naming the field."""
    codes = [r.code for r in reasons_for(root, queue)]
    if code not in codes:
        raise InputError(
            f"unknown reason {code[:40]!r} for {queue} (expected one of {', '.join(codes)}); "
            "nothing was signed",
            field="reason",
        )
    return code


def rationale_text(text: str) -> str:
    """Gives a rationale when it is non-blank and short enough to sign, else raises."""
    if not text.strip() or len(text) > RATIONALE_MAX:
        raise InputError(
            f"a rationale is non-blank text of at most {RATIONALE_MAX} characters; "
            "nothing was signed",
            field="rationale",
        )
    return text


def _read_source(source: Path, what: str) -> str:
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", path=source) from exc
    if len(data) > GUIDELINES_MAX:
        raise InputError(f"{what} larger than {GUIDELINES_MAX} bytes", path=source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{what} is not UTF-8 text", path=source, line=line) from exc


def set_reasons(root: Path, queue: str, source: Path) -> tuple[Reason, ...]:
    """Gives the reasons of ``source`` after copying it into the workspace as the queue's
    own; a file with anything wrong writes nothing."""
    _check_queue(queue)
    text = _read_source(source, "reasons file")
    found = parse_reasons(text, source)
    atomic_write(reasons_path(root, queue), text.encode("utf-8"), mode=0o644)
    return found


def reset_reasons(root: Path, queue: str) -> tuple[Reason, ...]:
    """Gives the default reasons after removing the queue's own from the workspace."""
    _check_queue(queue)
    reasons_path(root, queue).unlink(missing_ok=True)
    return DEFAULTS[queue]


def guidelines_for(root: Path, queue: str) -> Guidelines | None:
    """Gives a queue's guidelines as set in the workspace, or None when none are."""
    _check_queue(queue)
    path = guidelines_path(root, queue)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot read guidelines: {exc.strerror or exc}", path=path) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("guidelines are not UTF-8 text", path=path) from exc
    return Guidelines(queue, text, sha256_hex(data))


def set_guidelines(root: Path, queue: str, source: Path) -> Guidelines:
    """Gives the guidelines of ``source`` after copying its exact bytes into the workspace
    as the queue's; a file that is empty, too large or not UTF-8 writes nothing."""
    _check_queue(queue)
    text = _read_source(source, "guidelines")
    if not text.strip():
        raise InputError("guidelines are empty", path=source)
    data = text.encode("utf-8")
    atomic_write(guidelines_path(root, queue), data, mode=0o644)
    return Guidelines(queue, text, sha256_hex(data))


def clear_guidelines(root: Path, queue: str) -> bool:
    """Says whether the queue had guidelines, after removing them from the workspace."""
    _check_queue(queue)
    path = guidelines_path(root, queue)
    existed = path.exists()
    path.unlink(missing_ok=True)
    return existed


_DATA_NULL = '{"data":null,'


def given(conn: sqlite3.Connection, queue: str | None = None) -> dict[str, tuple[str, str | None]]:
    """Gives, per record hash of each decision (on ``queue``) that gives a reason or a
    rationale, its (reason, rationale) as signed; read from the messages, none parsed
    in Python (most decisions carry no data and are passed over by their first bytes)."""
    sql = (
        "SELECT record_hash, json_extract(message, '$.data.reason'), "
        "json_extract(message, '$.data.rationale') FROM records "
        f"WHERE kind = 'decision' AND substr(message, 1, {len(_DATA_NULL)}) <> ?"
    )
    args: list[object] = [_DATA_NULL]
    if queue:
        sql += " AND queue = ?"
        args.append(queue)
    return {
        record_hash: (reason, rationale)
        for record_hash, reason, rationale in conn.execute(sql, args)
        if reason is not None or rationale is not None
    }
