"""The ingest of backlog items and the runs that made them into a workspace."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine import subjects
from engine.backlog import (
    RUN_ID,
    RUN_ID_RULE,
    BacklogItem,
    summary_columns,
    validate_item,
)
from engine.canonical import canonical_json, sha256_hex
from engine.errors import (
    ConflictError,
    InputError,
)
from engine.ledger.records import utc_now
from engine.sqlitedb import write_transaction
from engine.workspace.claiming import Claiming


@dataclass(frozen=True)
class IngestResult:
    """How many items were new and how many were already held unchanged; ``related``
    counts the new ones about a subject the workspace already held items on."""

    added: int
    unchanged: int
    related: int = 0


class Ingesting(Claiming):
    """Backlog items and their runs, ingested."""

    def ingest(
        self,
        items: Iterable[BacklogItem],
        *,
        runs: dict[str, dict[str, Any]] | None = None,
        source: str = "api",
        origins: dict[tuple[str, str], str] | None = None,
        run_defaults: dict[str, dict[str, Any]] | None = None,
    ) -> IngestResult:
        """Gives counts after adding items in one transaction; all or nothing.

        ``runs`` maps run_id to its manifest (kind, artifact hashes, inputs); a
        held run given another manifest is a conflict. ``run_defaults`` gives
        manifests used only for runs not held yet; a run named by neither is
        registered with a manifest naming ``source``. ``origins`` may name, per
        (queue, item_id), where an item was read, for error messages.
        """
        items = list(items)
        origins = origins or {}
        run_defaults = run_defaults or {}
        for item in items:
            validate_item(item.to_json(), path=source)
        runs = dict(runs or {})
        # Who signs the runs is settled before anything is written: a key that cannot
        # sign refuses the whole ingest.
        sign_runs = self.run_signing(self, runs) if self.run_signing and runs else None
        now = utc_now()
        added = unchanged = related = 0
        with write_transaction(self.conn):
            for run_id in sorted({i.run_id for i in items} | set(runs) | set(run_defaults)):
                self._register_run(run_id, runs.get(run_id), run_defaults.get(run_id), source, now)
            for item in items:
                row = self.conn.execute(
                    "SELECT item_sha256 FROM items WHERE queue=? AND item_id=?",
                    (item.queue, item.item_id),
                ).fetchone()
                if row is not None:
                    if row[0] != item.item_sha256:
                        where = origins.get((item.queue, item.item_id), source)
                        raise ConflictError(
                            f"{where}: item {item.queue}/{item.item_id} already exists with "
                            f"different bytes (held {row[0][:12]}…, new "
                            f"{item.item_sha256[:12]}…); items are immutable, give the new "
                            "content a new item_id"
                        )
                    unchanged += 1
                    continue
                title, score, tags = summary_columns(item.payload)
                subject = item.subject
                self.conn.execute(
                    "INSERT INTO items (queue, item_id, run_id, item_sha256, payload, title, "
                    "score, tags, ingested_at, subject) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        item.queue,
                        item.item_id,
                        item.run_id,
                        item.item_sha256,
                        canonical_json(item.payload).decode("utf-8"),
                        title or item.item_id,
                        score,
                        tags,
                        now,
                        subject,
                    ),
                )
                if subject is not None and subjects.link(
                    self.conn, item.queue, item.item_id, subject, item.payload
                ):
                    related += 1
                added += 1
        if sign_runs is not None:
            sign_runs()
        return IngestResult(added, unchanged, related)

    def _register_run(
        self,
        run_id: str,
        manifest: dict[str, Any] | None,
        default: dict[str, Any] | None,
        source: str,
        now: str,
    ) -> None:
        """Registers a run once; a held run given again with another manifest is refused.

        Every decision binds its run's manifest hash: a run id silently kept
        with its old manifest would bind artifacts that are no longer on disk.
        """
        if not RUN_ID.match(run_id):
            raise InputError(f"run id {run_id!r} {RUN_ID_RULE}", field="run_id")
        row = self.conn.execute(
            "SELECT manifest_sha256 FROM runs WHERE run_id=?", (run_id,)
        ).fetchone()
        if row is not None and manifest is None:
            return  # items of a held run need not repeat its manifest
        if manifest is None:
            manifest = default if default is not None else {"kind": "ingest", "source": source}
        blob = canonical_json(manifest)
        digest = sha256_hex(blob)
        if row is not None:
            if row[0] != digest:
                raise ConflictError(
                    f"{source}: run {run_id} is already held with another manifest (held "
                    f"{row[0][:12]}…, new {digest[:12]}…); runs are immutable, give the new "
                    "run another run id"
                )
            return
        self.conn.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?)",
            (run_id, str(manifest.get("kind", "run")), blob.decode("utf-8"), digest, now),
        )

    def run_manifest_sha256(self, run_id: str) -> str | None:
        row = self.conn.execute(
            "SELECT manifest_sha256 FROM runs WHERE run_id=?", (run_id,)
        ).fetchone()
        return None if row is None else row[0]
