"""What each run recorded about the artifacts it wrote, and how a producer records them.

Every file under ``artifacts/<dir>/`` is written by an engine run whose row
in the ``runs`` table records the file's SHA-256 in its manifest's
``artifacts`` map, at the moment the run is registered. Run rows are
immutable, so that hash is what the file must hold for good: a sign-off
binds only bytes a run recorded.

A run's files normally live in ``artifacts/<run_id>/``. A step that writes
into a directory whose run row already exists (an exam score into its
adjudication run, coverage evidence into its claim run, a late benchmark
signature into its measurement) cannot amend that row; it registers a run
of its own whose manifest names the directory in ``artifacts_dir``.

A raw Ed25519 signature carries no key, and a sign-off has no trust root of
its own, so the run that writes one records the public key it verifies
under in ``signature_keys`` (name -> 64 hex).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from engine.artifacts import sidecar_path, write_sealed
from engine.canonical import SHA256_HEX, canonical_json, sha256_hex, strict_loads

ARTIFACTS_DIR = "artifacts_dir"
SIGNATURE_KEYS = "signature_keys"
_ID_PREFIX = 80  # of the directory, in a derived run id (run ids are at most 128 characters)


@dataclass(frozen=True)
class Recording:
    """One run's record of one artifact: which run, and the SHA-256 it recorded."""

    run_id: str
    sha256: str


@dataclass(frozen=True)
class RunRecords:
    """Every artifact hash the runs recorded, by path under ``artifacts/``."""

    by_path: dict[str, tuple[Recording, ...]]
    signature_keys: dict[str, tuple[str, ...]]  # signature path -> recorded public keys (hex)
    problems: tuple[str, ...]  # runs whose records cannot be trusted or read


@dataclass(frozen=True)
class WrittenRun:
    """A producer's write: the run that records it, its directory and each file's digest."""

    run_id: str
    directory: Path
    digests: dict[str, str]


def _relative_name(name: object) -> bool:
    """Says whether a recorded name stays inside its directory (no '..', not absolute)."""
    if not isinstance(name, str) or not name:
        return False
    parts = PurePosixPath(name).parts
    return not name.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def recorded_artifacts(conn: Any) -> RunRecords:
    """Gives what every run in the workspace recorded about its artifacts."""
    from engine.workspace import RUN_ID

    by_path: dict[str, list[Recording]] = {}
    keys: dict[str, list[str]] = {}
    problems: list[str] = []
    for run_id, text, digest in conn.execute(
        "SELECT run_id, manifest, manifest_sha256 FROM runs ORDER BY run_id"
    ):
        if not isinstance(text, str) or hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
            problems.append(
                f"run {run_id}: its stored manifest no longer hashes to its "
                "manifest_sha256 (edited in the database), so the artifacts it "
                "recorded cannot be checked"
            )
            continue
        try:
            manifest = strict_loads(text)
        except ValueError:
            problems.append(f"run {run_id}: its stored manifest is not JSON")
            continue
        listed = manifest.get("artifacts") if isinstance(manifest, dict) else None
        if not isinstance(listed, dict):
            continue
        directory = manifest.get(ARTIFACTS_DIR, run_id)
        if not isinstance(directory, str) or not RUN_ID.match(directory):
            problems.append(f"run {run_id}: field '{ARTIFACTS_DIR}' is not a run directory name")
            continue
        for name, sha in sorted(listed.items()):
            if not _relative_name(name) or not isinstance(sha, str) or not SHA256_HEX.match(sha):
                problems.append(
                    f"run {run_id}: field 'artifacts.{name}' is not a file name with a SHA-256"
                )
                continue
            by_path.setdefault(f"{directory}/{name}", []).append(Recording(run_id, sha))
        signed = manifest.get(SIGNATURE_KEYS, {})
        for name, key in sorted(signed.items() if isinstance(signed, dict) else ()):
            if _relative_name(name) and isinstance(key, str):
                keys.setdefault(f"{directory}/{name}", []).append(key)
    return RunRecords(
        {p: tuple(r) for p, r in by_path.items()},
        {p: tuple(k) for p, k in keys.items()},
        tuple(problems),
    )


def write_run(
    ws: Any, directory: str, outputs: dict[str, bytes], manifest: dict[str, Any], *, hint: str
) -> WrittenRun:
    """Gives the run that records ``outputs`` after writing them, sealed, into
    ``artifacts/<directory>/``.

    ``manifest`` holds at least ``kind``; its ``artifacts`` map is filled in
    here from the exact bytes written. The run is ``directory`` itself unless
    that run is already held with another manifest; then it is a new run,
    ``<directory>.<kind>-<16 hex of its manifest>``, naming the directory.
    Writing the same outputs again is a no-op. Sealed files are never
    rewritten (``hint`` says where to write instead); if the run cannot be
    recorded, the files this call created are removed again, since a file no
    run recorded is refused at sign-off.
    """
    from engine.workspace import RUN_ID

    kind = str(manifest["kind"])
    for name in outputs:
        if "/" in name or not _relative_name(name):
            raise ValueError(f"artifact name {name!r} is not a plain file name")
    recorded = {
        **manifest,
        "artifacts": {name: sha256_hex(data) for name, data in sorted(outputs.items())},
    }
    run_id = directory
    held = ws.run_manifest_sha256(directory)
    if held is not None and held != sha256_hex(canonical_json(recorded)):
        recorded[ARTIFACTS_DIR] = directory
        run_id = f"{directory[:_ID_PREFIX]}.{kind}-{sha256_hex(canonical_json(recorded))[:16]}"
        if not RUN_ID.match(run_id):
            raise ValueError(f"kind {kind!r} makes run id {run_id!r}, which is not one")
    out = ws.run_dir(directory)
    targets = {out / name: data for name, data in outputs.items()}
    created = [path for path in targets if not os.path.lexists(path)]
    digests = write_sealed(targets, hint)
    try:
        ws.ingest([], runs={run_id: recorded}, source=f"{kind} {run_id}")
    except BaseException:
        for path in created:
            for made in (path, sidecar_path(path)):
                made.unlink(missing_ok=True)
        raise
    return WrittenRun(run_id, out, {path.name: digest for path, digest in digests.items()})
