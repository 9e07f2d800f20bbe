"""Receipts: what a signer keeps of each acknowledged record, to catch a rollback or a fork.

When sealdesk acknowledges a record (``decide``, ``undo``, the app's keys),
it gives the signer a receipt: the record's seq and hash, and the tree head
(size and RFC 9162 root) of the ledger that ends with it. The receipt lives
with the signer, in their own state directory, never in the workspace:

    $SEALDESK_RECEIPTS, else $XDG_STATE_HOME/sealdesk/receipts, else
    ~/.local/state/sealdesk/receipts  ->  <workspace id>.jsonl, one receipt a line

A workspace copied back from an old backup has lost receipted records; a
copy that went its own way holds other records at a receipted seq. Either
way ``sealdesk verify --receipts DIR`` names the receipt the ledger no
longer honours, though every record left in it verifies.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from engine.errors import InputError
from engine.ledger import merkle
from engine.ledger.records import Record

RECEIPT_TYPE = "sealdesk.receipt/v1"
_FIELDS = {"type", "workspace", "seq", "record_hash", "tree_size", "root", "principal", "time"}


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
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return path


def read_receipts(directory: Path, workspace_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Gives (where, receipt) for every receipt of the workspace under a directory.

    Any ``*.jsonl`` file below it is read (receipts gathered from several
    signers may sit side by side); lines of other workspaces are skipped, and
    a line that is not a receipt is an error naming it.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError("is not a directory of receipts", path=directory, field="--receipts")
    found = []
    for path in sorted(directory.rglob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise InputError(f"not JSON ({exc})", path=path, line=number) from exc
            if not isinstance(obj, dict) or obj.get("type") != RECEIPT_TYPE:
                raise InputError(f"not a {RECEIPT_TYPE} line", path=path, line=number, field="type")
            if obj.get("workspace") != workspace_id:
                continue
            missing = sorted(_FIELDS - set(obj))
            if missing:
                raise InputError("missing", path=path, line=number, field=missing[0])
            if type(obj["seq"]) is not int or obj["seq"] < 1 or obj["tree_size"] != obj["seq"]:
                raise InputError(
                    "must be a positive integer equal to tree_size",
                    path=path,
                    line=number,
                    field="seq",
                )
            found.append((f"{path}:{number}", obj))
    return found


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
