"""Receipts: what a signer keeps of each acknowledged record, to catch a rollback or a fork.

When sealdesk acknowledges a record (``decide``, ``undo``, the app's keys),
it gives the signer a receipt: the record's seq and hash, and the tree head
(size and RFC 9162 root) of the ledger that ends with it. The receipt lives
with the signer, in their own state directory, never in the workspace:

    $SEALDESK_RECEIPTS, else $XDG_STATE_HOME/sealdesk/receipts, else
    ~/.local/state/sealdesk/receipts  ->  <workspace id>.jsonl, one receipt a line

A workspace copied back from an old backup has lost receipted records; a
copy that went its own way holds other records at a receipted seq. Either
way ``verify`` names the receipt the ledger no longer honours, though every
record left in it verifies: plain ``sealdesk verify`` compares the receipts
the current user keeps for this workspace, ``--receipts FILE|DIR|-`` those
gathered from others. Each says how many it compared; a receipt of another
workspace id is a failure (a swapped database has another id, and would
otherwise leave nothing to compare), and so is comparing none of those the
verifier named.

Behind ``sealdesk ssh-gate`` the signer is not on the host: each receipt is
also printed to them as one JSON line, which ``sealdesk receipts keep``
appends to their own state directory on their machine.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from engine.errors import InputError
from engine.ledger import merkle
from engine.ledger.authority import check_principal
from engine.ledger.records import Record

RECEIPT_TYPE = "sealdesk.receipt/v1"
_FIELDS = {"type", "workspace", "seq", "record_hash", "tree_size", "root", "principal", "time"}
_HEX64 = re.compile(r"[0-9a-f]{64}")
_SHAPES = (
    ("workspace", re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"), "a workspace id"),
    ("record_hash", _HEX64, "64 lowercase hex digits"),
    ("root", _HEX64, "64 lowercase hex digits"),
    ("time", re.compile(r"[0-9][0-9T:.Z+-]{0,39}"), "a record time"),
)


def default_dir() -> Path:
    """Gives the signer's receipt directory (see the module docstring)."""
    explicit = os.environ.get("SEALDESK_RECEIPTS")
    if explicit:
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state else Path.home() / ".local" / "state"
    return base / "sealdesk" / "receipts"


class TreeCache:
    """The ledger's tree head, extended record by record as it grows.

    A long-lived process (the app) hashes each record once; the prefix it
    holds is checked against the ledger (the hash of its last record) before
    it is extended, so a ledger swapped underneath starts it again.
    """

    def __init__(self) -> None:
        self._builder: merkle.TreeBuilder
        self._last_hash: str | None
        self._restart()

    def _restart(self) -> None:
        self._builder = merkle.TreeBuilder()
        self._last_hash = None

    def root_at(self, conn: sqlite3.Connection, size: int) -> bytes:
        """Gives the root of the first ``size`` records (size at or past what it holds)."""
        if self._builder.size:
            row = conn.execute(
                "SELECT record_hash FROM records WHERE seq=?", (self._builder.size,)
            ).fetchone()
            if row is None or row[0] != self._last_hash or size < self._builder.size:
                self._restart()
        for seq, record_hash, message in conn.execute(
            "SELECT seq, record_hash, message FROM records WHERE seq > ? AND seq <= ? ORDER BY seq",
            (self._builder.size, size),
        ):
            if seq != self._builder.size + 1:
                raise InputError(
                    f"the ledger has no record {self._builder.size + 1}; run sealdesk verify",
                    field="seq",
                )
            self._builder.append(merkle.leaf_hash(message.encode("utf-8")))
            self._last_hash = record_hash
        return self._builder.root()


def receipt(conn: sqlite3.Connection, record: Record, cache: TreeCache) -> dict[str, Any]:
    """Gives the receipt of a record just appended: its seq, hash and the tree head it ends."""
    return {
        "type": RECEIPT_TYPE,
        "workspace": record.body["workspace"],
        "seq": record.seq,
        "record_hash": record.record_hash,
        "tree_size": record.seq,
        "root": cache.root_at(conn, record.seq).hex(),
        "principal": record.body["principal"],
        "time": record.body["time"],
    }


def keep(receipts: list[dict[str, Any]], directory: Path | None = None) -> Path:
    """Appends receipts to the signer's file for their workspace; gives the file."""
    directory = Path(directory) if directory is not None else default_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    by_workspace: dict[str, list[dict[str, Any]]] = {}
    for r in receipts:
        by_workspace.setdefault(r["workspace"], []).append(r)
    path = directory
    for workspace, rows in by_workspace.items():
        path = directory / f"{workspace}.jsonl"
        _append_whole(path, "".join(receipt_line(r) + "\n" for r in rows).encode("ascii"))
    return path


def _append_whole(path: Path, data: bytes) -> None:
    """Appends ``data`` to ``path``, or on an OSError (a full disk) cuts the file back to
    its old length and raises: a part of a line would stop the file parsing later."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def kept_file(workspace_id: str, directory: Path | None = None) -> Path:
    """Gives the file a signer's state directory keeps a workspace's receipts in."""
    return (Path(directory) if directory is not None else default_dir()) / f"{workspace_id}.jsonl"


def parse_receipt(obj: Any, where: str, number: int) -> dict[str, Any]:
    """Gives a receipt object once its fields are checked, else an InputError naming them."""
    if not isinstance(obj, dict) or obj.get("type") != RECEIPT_TYPE:
        raise InputError(f"not a {RECEIPT_TYPE} line", path=where, line=number, field="type")
    missing = sorted(_FIELDS - set(obj))
    if missing:
        raise InputError("missing", path=where, line=number, field=missing[0])
    # Receipts gathered from others are hostile text until checked: each field that
    # a verdict quotes must have its own narrow shape, so none reaches a terminal raw.
    for name, shape, what in _SHAPES:
        if not isinstance(obj[name], str) or not shape.fullmatch(obj[name]):
            raise InputError(f"must be {what}", path=where, line=number, field=name)
    try:
        check_principal(obj["principal"])
    except InputError as exc:
        raise InputError(exc.reason, path=where, line=number, field="principal") from exc
    if type(obj["seq"]) is not int or obj["seq"] < 1 or obj["tree_size"] != obj["seq"]:
        raise InputError(
            "must be a positive integer equal to tree_size",
            path=where,
            line=number,
            field="seq",
        )
    return obj


def parse_lines(text: str, where: str) -> list[tuple[str, dict[str, Any]]]:
    """Gives (where:line, receipt) for every line of a receipts file, whatever workspace
    it names; a line that is not a receipt is an error naming it."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise InputError(f"not JSON ({exc})", path=where, line=number) from exc
        found.append((f"{where}:{number}", parse_receipt(obj, where, number)))
    return found


def read_receipts(source: Path, stdin_text: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Gives (where, receipt) for every receipt in a file, under a directory, or on stdin.

    A directory is read whole: every ``*.jsonl`` file below it (receipts
    gathered from several signers may sit side by side). ``-`` is the text
    given as ``stdin_text`` (what a remote user sends over the gate).
    """
    if str(source) == "-":
        return parse_lines(stdin_text or "", "<stdin>")
    source = Path(source)
    if source.is_file():
        return parse_lines(source.read_text(encoding="utf-8"), str(source))
    if not source.is_dir():
        raise InputError("no such file or directory of receipts", path=source, field="--receipts")
    found = []
    for path in sorted(source.rglob("*.jsonl")):
        found += parse_lines(path.read_text(encoding="utf-8"), str(path))
    return found


def read_own(workspace_id: str, directory: Path | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Gives the receipts the signer's state directory keeps for one workspace (its own
    file only: the directory holds a file for every workspace they signed in)."""
    path = kept_file(workspace_id, directory)
    return parse_lines(path.read_text(encoding="utf-8"), str(path)) if path.is_file() else []


def foreign(
    receipts: list[tuple[str, dict[str, Any]]], workspace_id: str
) -> list[tuple[str, dict[str, Any]]]:
    """Gives the receipts that name another workspace than this one."""
    return [(where, r) for where, r in receipts if r["workspace"] != workspace_id]


def compare(
    conn: sqlite3.Connection,
    workspace_id: str,
    receipts: list[tuple[str, dict[str, Any]]],
    source: str,
    *,
    require_some: bool,
) -> tuple[int, list[tuple[int, str]]]:
    """Gives (how many receipts were compared, (seq, reason) for each failure).

    A receipt of another workspace is a failure, not skipped: a database
    swapped for another workspace's has another id, and would otherwise
    leave nothing to compare. With ``require_some`` (receipts the verifier
    named), comparing none is a failure too.
    """
    others = foreign(receipts, workspace_id)
    faults: list[tuple[int, str]] = []
    if others:
        where, r = others[0]
        more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
        faults.append(
            (
                0,
                f"receipt {where}{more} is of workspace {r['workspace']}, not this one "
                f"({workspace_id}): the database was swapped, or the receipts are "
                "another workspace's",
            )
        )
    mine = [(where, r) for where, r in receipts if r["workspace"] == workspace_id]
    if require_some and not mine:
        faults.append((0, f"0 receipts compared: {source} holds no receipt of this workspace"))
    return len(mine), faults + check_receipts(conn, mine)


def check_receipts(
    conn: sqlite3.Connection, receipts: list[tuple[str, dict[str, Any]]]
) -> list[tuple[int, str]]:
    """Gives (seq, reason) for every receipt the ledger no longer honours."""
    faults = []
    head = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM records").fetchone()[0]
    cache = TreeCache()
    for where, r in sorted(receipts, key=lambda pair: pair[1]["seq"]):
        seq = r["seq"]
        if seq > head:
            faults.append(
                (
                    seq,
                    f"receipt {where}: record {seq} ({str(r['record_hash'])[:12]}…, "
                    f"signed by {r['principal']} at {r['time']}) is gone; the "
                    f"ledger holds {head} record(s): it was rolled back (restored "
                    "from an older copy?)",
                )
            )
            continue
        row = conn.execute("SELECT record_hash FROM records WHERE seq=?", (seq,)).fetchone()
        if row is None or row[0] != r["record_hash"]:
            held = row[0][:12] + "…" if row else "nothing"
            faults.append(
                (
                    seq,
                    f"receipt {where}: record {seq} is "
                    f"{str(r['record_hash'])[:12]}… in the receipt but {held} "
                    "here: this ledger forked from the one the signer saw",
                )
            )
            continue
        if cache.root_at(conn, seq).hex() != r["root"]:
            faults.append(
                (
                    seq,
                    f"receipt {where}: records 1..{seq} no longer hash to the "
                    "receipt's tree root: an earlier record was replaced",
                )
            )
    return faults


def held(directory: Path | None = None) -> list[tuple[str, int]]:
    """Gives (workspace id, receipts kept) for each workspace file in a state directory."""
    directory = Path(directory) if directory is not None else default_dir()
    if not directory.is_dir():
        return []
    return [
        (
            path.stem,
            sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()),
        )
        for path in sorted(directory.glob("*.jsonl"))
    ]


def pick(text: str, where: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Gives (the receipts, every other line) of a command's output.

    A review host behind the gate prints each receipt as one JSON line among
    its other output; a line that claims to be a receipt but is not a whole
    one is an error naming it, never quietly passed on.
    """
    receipts, rest = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if RECEIPT_TYPE not in line:
            rest.append(line)
            continue
        # A terminal session's log (the app through ssh -t, tee'd) can put the
        # terminal's own bytes round a line: the receipt is the object inside.
        start, end = line.find('{"'), line.rfind("}")
        try:
            obj = json.loads(line[start : end + 1] if 0 <= start < end else line)
        except ValueError as exc:
            raise InputError(f"a broken receipt line ({exc})", path=where, line=number) from exc
        receipts.append(parse_receipt(obj, where, number))
    return receipts, rest


def kept_of(workspace_id: str, seqs: set[int], principal: str) -> list[dict[str, Any]]:
    """Gives the receipts kept in the state directory for these seqs of one signer's
    (what a session acknowledged, to hand to a signer who is not on this host)."""
    return [
        r for _, r in read_own(workspace_id) if r["seq"] in seqs and r["principal"] == principal
    ]


def receipt_line(r: dict[str, Any]) -> str:
    """Gives a receipt as the one JSON line it is kept as (ASCII only: its text escaped)."""
    return json.dumps(r, sort_keys=True)
