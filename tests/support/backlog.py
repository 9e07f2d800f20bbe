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


def record_run(ws, run_id: str, *names: str, signer=None) -> None:
    """Registers run_id as the run that wrote artifacts/<run_id>/<name> for each name,
    recording each file's SHA-256 as it is now, as a producer records its outputs, and
    signs its run record as whoever ran it does: ``signer``, by default the founding
    lead of a workspace made by the ``workspace`` fixture (its key lies in keys/ beside
    the workspace)."""
    from engine.artifacts import file_sha256
    from engine.ledger.signers import FileSigner
    from engine.run_records import sign_runs
    from tests.conftest import FOUNDER

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
    if signer is None:
        key = ws.root.parent / "keys" / FOUNDER
        assert key.is_file(), f"no founder key at {key}: pass signer="
        signer = FileSigner(key)
    assert sign_runs(ws, signer, [run_id]), f"run {run_id} was not signed"


def sign_held_runs(ws, signer) -> None:
    """Signs the run record of every run held that recorded files, as whoever ran the
    producers (called through the library, not the command line) would."""
    from engine.run_records import sign_runs

    sign_runs(ws, signer, [r for (r,) in ws.conn.execute("SELECT run_id FROM runs")])
