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
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
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
    from engine.backlog import RUN_ID

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
    from engine.backlog import RUN_ID

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


# -- who produced the numbers: a signed ``run`` record per producer run ------------------
#
# A row in ``runs`` is written by whoever can write the database, so on its own it
# says nothing about who produced the numbers in the files it records. Whoever runs a
# producer signs a ``run`` record in the ledger (with the key the command was given or
# the agent's enrolled key), binding the run's manifest hash and the SHA-256 of each
# file it wrote; a sign-off binds only files a valid run record vouches for, and
# names its signer. A run row nobody signed (a hand-made INSERT) vouches for nothing.

RUN_KIND = "run"


@dataclass(frozen=True)
class RunAuthor:
    """Who vouched for an artifact: the signed run record binding its path and hash."""

    run_id: str
    principal: str
    role: str
    seq: int
    record_hash: str


def run_record_data(run_id: str, manifest_sha256: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """Gives a run record's data: the run, its producer and manifest hash, and each
    file it recorded by path under ``artifacts/``."""
    directory = manifest.get(ARTIFACTS_DIR, run_id)
    listed = manifest.get("artifacts")
    return {
        "type": RUN_KIND,
        "run_id": run_id,
        "producer": str(manifest.get("kind", "run")),
        "manifest_sha256": manifest_sha256,
        "artifacts": {f"{directory}/{n}": sha for n, sha in sorted(dict(listed or {}).items())},
    }


def _held_run(conn: Any, run_id: str) -> tuple[str, dict[str, Any]]:
    """Gives (manifest hash, manifest) of a held run whose manifest still hashes right."""
    from engine.errors import InputError, IntegrityError

    row = conn.execute(
        "SELECT manifest, manifest_sha256 FROM runs WHERE run_id=?", (run_id,)
    ).fetchone()
    if row is None:
        raise InputError(f"no run {run_id!r} in this workspace", field="run_id")
    text, digest = row
    if not isinstance(text, str) or sha256_hex(text.encode("utf-8")) != digest:
        raise IntegrityError(
            f"run {run_id}: its stored manifest no longer hashes to its manifest_sha256 "
            "(edited in the database); nothing was signed"
        )
    manifest = strict_loads(text)
    if not isinstance(manifest, dict):
        raise IntegrityError(f"run {run_id}: its stored manifest is not a JSON object")
    return digest, manifest


def _run_entry_data(ws: Any, run_id: str, conn: Any) -> dict[str, Any] | None:
    """Gives the body fields of the run record for ``run_id``, checked against the files
    on disk, or None when it records no file or a run record vouches for it already."""
    from engine.artifacts import read_regular
    from engine.errors import IntegrityError

    digest, manifest = _held_run(conn, run_id)
    data = run_record_data(run_id, digest, manifest)
    signed = conn.execute(
        "SELECT 1 FROM records WHERE kind=? AND json_extract(message, '$.data.run_id')=? "
        "AND json_extract(message, '$.data.manifest_sha256')=?",
        (RUN_KIND, run_id, digest),
    ).fetchone()
    if not data["artifacts"] or signed is not None:
        return None
    for path, sha in data["artifacts"].items():
        try:
            now = read_regular(ws.artifacts_dir, path, keep=False).sha256
        except OSError as exc:
            raise IntegrityError(
                f"artifacts/{path}: recorded by run {run_id}, cannot be read "
                f"({exc.strerror or exc}); nothing was signed"
            ) from exc
        if now != sha:
            raise IntegrityError(
                f"artifacts/{path}: bytes differ from the hash run {run_id} recorded; "
                "nothing was signed"
            )
    return {"data": data}


def sign_runs(
    ws: Any, signer: Any, run_ids: list[str], *, principal: str | None = None
) -> list[Any]:
    """Gives the run records appended, one per run that records files and has none yet,
    each binding the run's manifest hash and every file's SHA-256 as it is on disk now
    (a file that differs is refused: nothing is signed)."""
    from datetime import UTC, datetime

    from engine.ledger import store
    from engine.roles import ROLES

    who, role = ws.identify(signer, principal)
    # Signed in the highest role the person holds: the summary says who stood behind it.
    held = ws.authority().roles_for(who, signer.public_key.blob, datetime.now(UTC))
    role = max([role, *held], key=lambda r: ROLES.index(r) if r in ROLES else -1)
    entries = [
        store.Entry(RUN_KIND, {}, partial(_run_entry_data, ws, run_id))
        for run_id in sorted(set(run_ids))
    ]
    made = store.append_many(
        ws.db, signer, workspace_id=ws.workspace_id, principal=who, role=role, entries=entries
    )
    return [r for r in made if r is not None]


def run_authors(conn: Any, auth: Any = None) -> dict[str, list[tuple[str, RunAuthor]]]:
    """Gives, per artifact path, each (SHA-256, author) a run record in the ledger binds.

    With ``auth`` (the ledger's authority), only records whose hash, SSHSIG and
    signer's enrolment (principal, key and role at that record) hold are taken:
    a row inserted into the records table vouches for nothing. Without it the
    signed bytes are read as they stand (``verify`` checks every record anyway).
    """
    out: dict[str, list[tuple[str, RunAuthor]]] = {}
    for seq, record_hash, message, signature in conn.execute(
        "SELECT seq, record_hash, message, signature FROM records WHERE kind=? ORDER BY seq",
        (RUN_KIND,),
    ):
        try:
            body = strict_loads(message)
            data = body["data"]
            author = RunAuthor(
                str(data["run_id"]), str(body["principal"]), str(body["role"]), seq, record_hash
            )
            listed = dict(data["artifacts"])
            if auth is not None and not _signed_by_author(auth, body, message, signature):
                continue
        except (TypeError, ValueError, KeyError, AttributeError):
            continue  # not a readable run record: it vouches for nothing (verify says why)
        if sha256_hex(str(message).encode("utf-8")) != record_hash:
            continue
        for path, sha in listed.items():
            out.setdefault(str(path), []).append((str(sha), author))
    return out


def _signed_by_author(auth: Any, body: dict[str, Any], message: str, signature: str) -> bool:
    """Says whether a run record's SSHSIG verifies under a key its principal held in its
    role at its seq and time."""
    from engine.ledger import sshsig
    from engine.roles import namespace_for

    try:
        sig = sshsig.verify(
            sshsig.dearmor(signature), message.encode("utf-8"), namespace_for(body["role"])
        )
    except (sshsig.SignatureError, ValueError):
        return False
    return sshsig.fingerprint(sig.public_key) == body["key"] and auth.allows(
        body["principal"], sig.public_key, body["role"], body["seq"], body["time"]
    )


class RunSigning:
    """How a command signs the runs its producer registers: with the key it was given,
    else the ssh-agent's enrolled key; with neither, the runs stay unsigned and
    ``warn`` says so (their files are then refused at sign-off until someone signs
    them: ``sealdesk runs sign``)."""

    def __init__(self, key: str | None, warn: Callable[[str], None]) -> None:
        self.key = key
        self.warn = warn

    def __call__(self, ws: Any, runs: dict[str, dict[str, Any]]) -> Callable[[], None] | None:
        """Gives what signs ``runs`` once they are registered, or None when none records a
        file or there is no key; a key that cannot sign is refused here, before anything
        is written."""
        from engine.errors import SealdeskError
        from engine.identity import choose_signer

        if not any(m.get("artifacts") for m in runs.values()):
            return None
        names = ", ".join(sorted(runs))
        if self.key is None and not os.environ.get("SSH_AUTH_SOCK"):
            self.warn(
                f"run {names} is not signed (no --key and no ssh-agent): a sign-off "
                f"refuses its files until its author signs it (sealdesk runs sign {names})"
            )
            return None
        try:
            signer = choose_signer(self.key, ws.signers())
            ws.identify(signer)
        except SealdeskError as exc:
            if self.key is not None:
                raise
            self.warn(f"run {names} is not signed ({exc.one_line()})")
            return None

        def sign() -> None:
            # The runs are registered by now: a failure here leaves them unsigned, not gone.
            try:
                sign_runs(ws, signer, list(runs))
            except SealdeskError as exc:
                self.warn(
                    f"run {names} was recorded but not signed ({exc.one_line()}); "
                    f"sign it with: sealdesk runs sign {names}"
                )

        return sign
