"""Builders shared by the ledger tests: a workspace with items and decisions."""

from __future__ import annotations

from engine.canonical import canonical_json
from engine.workspace import BacklogItem


def make_items(n: int, queue: str = "flagged_pairs", run_id: str = "run-1") -> list[BacklogItem]:
    return [
        BacklogItem.make(
            queue,
            f"item-{i}",
            run_id,
            {"summary": {"title": f"item {i}", "score": i / max(n, 1)}, "text": f"eval text {i}"},
        )
        for i in range(n)
    ]


def write_items_file(path, items) -> None:
    path.write_bytes(b"".join(canonical_json(i.to_json()) + b"\n" for i in items))


def record_run(ws, run_id: str, *names: str) -> None:
    """Registers run_id as the run that wrote artifacts/<run_id>/<name> for each name,
    recording each file's SHA-256 as it is now, as a producer records its outputs."""
    from engine.artifacts import file_sha256

    ws.ingest(
        [],
        runs={
            run_id: {
                "kind": "test",
                "inputs": {},
                "artifacts": {
                    name: file_sha256(ws.artifacts_dir / run_id / name) for name in names
                },
            }
        },
    )
