"""Resume records: what each scanned shard gave, kept in the workspace by content hash.

A record lives at ``cache/shards/<scan key>/<shard sha256>-<format>-<compression>.npz``.
The scan key is the hash of everything a shard's result depends on besides
its bytes (the eval set's content hash, the n-gram settings, the fields read,
for the paraphrase channel the model, k, threshold and eval vectors, and each
registered pool channel's settings), so
a record is only ever reused for the same question about the same bytes; the
shard's own name plays no part (a renamed or copied shard is still found).

A record is one ``.npz`` (arrays, and the rest as canonical JSON), written
atomically once its shard is done; a run that dies keeps every record it
finished, so the next run scans only the rest. A record that cannot be read
back is ignored and its shard scanned again.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from engine.artifacts import atomic_write
from engine.canonical import canonical_json, canonical_sha256
from engine.contamination.channels.ngram import PairScore
from engine.contamination.inputs.pool_hash import TreePiece
from engine.contamination.pool.shard_scan import ShardOutcome, ShardTopK

VERSION = 2


def scan_key(settings: dict[str, Any]) -> str:
    """Gives the key of the records a scan with these settings can reuse."""
    return canonical_sha256({"records": VERSION, **settings})


class ShardRecords:
    """The records of one scan key, under the workspace's cache."""

    def __init__(self, root: Path, key: str) -> None:
        self.directory = Path(root) / "cache" / "shards" / key[:32]

    def names(self) -> frozenset[str]:
        """Gives the record names held (a shard's ``record_name``)."""
        if not self.directory.is_dir():
            return frozenset()
        return frozenset(p.stem for p in self.directory.glob("*.npz"))

    def save(self, name: str, outcome: ShardOutcome) -> None:
        """Keeps a shard's outcome (atomically: a reader sees all of it or none)."""
        meta = {
            "version": VERSION,
            "url": outcome.url,
            "file_sha256": outcome.file_sha256,
            "n": outcome.n,
            "content_sha256": outcome.content_sha256,
            "candidates": outcome.candidates,
            "cut": outcome.piece.cut,
            "pairs": [
                [p.eval_index, p.doc, p.shared, p.eval_shingles, p.doc_shingles]
                for p in outcome.pairs
            ],
            "docs": [[row, ident, text] for row, (ident, text) in sorted(outcome.docs.items())],
            "seconds": round(outcome.seconds, 3),
        }
        if outcome.hits:
            meta["hits"] = {key: [list(h) for h in found] for key, found in outcome.hits.items()}
        arrays: dict[str, np.ndarray] = {
            "head": np.frombuffer(outcome.piece.head, dtype=np.uint8),
            "blocks": np.frombuffer(outcome.piece.blocks, dtype=np.uint8),
            "tail": np.frombuffer(outcome.piece.tail, dtype=np.uint8),
        }
        if outcome.id_hashes is not None:
            arrays["id_hashes"] = outcome.id_hashes
        if outcome.topk is not None:
            arrays["topk_scores"] = outcome.topk.scores
            arrays["topk_rows"] = outcome.topk.rows
            meta["topk_docs"] = [
                [row, ident, text] for row, (ident, text) in sorted(outcome.topk.docs.items())
            ]
            meta["embedded"], meta["cached"] = outcome.topk.embedded, outcome.topk.cached
            meta["topk_over_bound"] = outcome.topk.over_bound
        arrays["meta"] = np.frombuffer(canonical_json(meta), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez(buffer, allow_pickle=False, **arrays)
        atomic_write(self.directory / f"{name}.npz", buffer.getvalue())

    def load(self, name: str, position: int, url: str) -> ShardOutcome | None:
        """Gives a held record as this run's outcome for the shard, or None if unreadable."""
        try:
            with np.load(self.directory / f"{name}.npz", allow_pickle=False) as data:
                arrays = {key: data[key] for key in data.files}
            meta = json.loads(arrays.pop("meta").tobytes())
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            return None
        if meta.get("version") != VERSION:
            return None
        piece = TreePiece(
            meta["n"],
            meta["cut"],
            arrays["head"].tobytes(),
            arrays["blocks"].tobytes(),
            arrays["tail"].tobytes(),
        )
        topk = None
        if "topk_scores" in arrays:
            topk = ShardTopK(
                arrays["topk_scores"],
                arrays["topk_rows"],
                {row: (ident, text) for row, ident, text in meta["topk_docs"]},
                0,
                0,
                meta.get("topk_over_bound", 0),
            )
        return ShardOutcome(
            position,
            url,
            meta["file_sha256"],
            meta["n"],
            meta["content_sha256"],
            piece,
            tuple(PairScore(*p) for p in meta["pairs"]),
            {row: (ident, text) for row, ident, text in meta["docs"]},
            meta["candidates"],
            arrays.get("id_hashes"),
            topk,
            meta["seconds"],
            0,
            0,
            from_record=True,
            hits={
                key: tuple((e, row, score) for e, row, score in found)
                for key, found in meta.get("hits", {}).items()
            },
        )
