"""The checks every artifact passes before a sign-off binds it; ``verify`` repeats some.

An artifact is any file under ``artifacts/<dir>/`` other than a ``.sha256``
sidecar. A sidecar only says the file was not damaged: whoever edits a file
can write a new sidecar too. So before the lead binds an artifact's hash,
it must

- agree with its sidecar;
- be recorded by the run that produced it, with exactly these bytes (run
  rows are immutable, so that hash was fixed when the file was written);
- if it is a signature beside another artifact (``X.sig`` next to ``X``),
  verify over that artifact;
- hold the bytes the latest sign-off bound, if it bound it: a changed
  artifact is refused, never bound again; a new result is a new run.

Each problem names the file. Nothing here decides what an artifact means.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from engine.artifacts import read_regular
from engine.canonical import strict_loads
from engine.ledger import sshsig
from engine.ledger.authority import load_authority
from engine.ledger.verify import Fault, Report
from engine.run_records import RunAuthor, RunRecords, recorded_artifacts, run_authors
from engine.signoff.run_status import (
    SIDECAR_MISMATCH,
    SIDECAR_MISSING,
    SIGNATURE_SUFFIX,
    ArtifactRef,
    RunStatus,
)

_SIGNATURE_LIMIT = 1 << 20  # an SSHSIG is a few hundred bytes, a raw Ed25519 one 64
_ED25519_BYTES = 64


def _verify_signature(signature: bytes, message: bytes, keys: tuple[str, ...]) -> str | None:
    """Gives why ``signature`` fails over ``message`` (completing "signature over X ..."),
    or None when it verifies."""
    if signature.startswith(sshsig.ARMOR_BEGIN.encode()):
        try:
            blob = sshsig.dearmor(signature.decode("ascii"))
            sshsig.verify(blob, message, sshsig.decode(blob).namespace)
        except (UnicodeDecodeError, sshsig.SignatureError) as exc:
            return f"does not verify (SSHSIG: {exc})"
        return None
    if len(signature) != _ED25519_BYTES:
        return (
            "cannot be checked: it is neither an armored SSHSIG nor a raw 64-byte Ed25519 signature"
        )
    if not keys:
        return (
            "cannot be checked: it is a raw Ed25519 signature and no run recorded the "
            "public key it verifies under"
        )
    for key in keys:
        try:
            Ed25519PublicKey.from_public_bytes(bytes.fromhex(key)).verify(signature, message)
        except (ValueError, InvalidSignature):
            return f"does not verify under the Ed25519 key its run recorded ({key[:16]}…)"
    return None


def signature_problems(
    contents: Mapping[str, bytes], refs: Iterable[ArtifactRef], records: RunRecords
) -> list[str]:
    """Gives a problem for each signature beside an artifact that does not verify over it,
    checked over the very bytes whose hashes are bound (``contents``, read once)."""
    by_path = {a.path: a for a in refs}
    problems = []
    for path in sorted(by_path):
        target = by_path.get(path.removesuffix(SIGNATURE_SUFFIX))
        if not path.endswith(SIGNATURE_SUFFIX) or target is None:
            continue
        signature, message = contents.get(path), contents.get(target.path)
        if signature is None or message is None:
            why: str | None = "cannot be checked: it or what it signs was not read"
        elif len(signature) > _SIGNATURE_LIMIT:
            why = f"cannot be checked: larger than {_SIGNATURE_LIMIT:,} bytes"
        else:
            why = _verify_signature(signature, message, records.signature_keys.get(path, ()))
        if why is not None:
            problems.append(f"artifacts/{path}: signature over artifacts/{target.path} {why}")
    return problems


def latest_signoff_problems(conn: Any, held: dict[str, str]) -> list[str]:
    """Gives a problem for each artifact or run the latest sign-off bound that changed or went.

    ``held`` maps each artifact's path under ``artifacts/`` to its SHA-256 now.
    """
    row = conn.execute(
        "SELECT seq, message FROM records WHERE kind='signoff' ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return []
    seq = row[0]
    try:
        data = strict_loads(row[1]).get("data")
    except (TypeError, ValueError, AttributeError):
        return [
            f"sign-off #{seq} cannot be read, so what it bound cannot be compared "
            "(run sealdesk verify)"
        ]
    if not isinstance(data, dict):
        return []
    problems = []
    bound = data.get("artifacts")
    if not isinstance(bound, dict):
        bound = {}
    for path, signed in sorted(bound.items()):
        now = held.get(path)
        if now is None:
            problems.append(
                f"artifacts/{path}: bound by sign-off #{seq}, is gone; a "
                "signed-off artifact stays where it is"
            )
        elif now != signed:
            problems.append(
                f"artifacts/{path}: bytes differ from what sign-off #{seq} bound "
                f"({str(signed)[:12]}…, now {now[:12]}…); a signed-off artifact "
                "is never bound again: restore it, and write a new result as a "
                "new run"
            )
    runs = data.get("runs")
    if not isinstance(runs, dict):
        runs = {}
    current = dict(conn.execute("SELECT run_id, manifest_sha256 FROM runs"))
    for run_id, signed in sorted(runs.items()):
        if current.get(run_id) != signed:
            problems.append(
                f"run {run_id}: its manifest is gone or differs from the one sign-off #{seq} bound"
            )
    return problems


def artifact_problems(status: RunStatus, conn: Any) -> tuple[list[str], list[str]]:
    """Gives (problems, warnings) about every artifact of a ``run_status``; any problem
    blocks a sign-off."""
    refs = status.artifacts
    records = recorded_artifacts(conn)
    problems, warnings = [*status.refused, *records.problems], []
    held = {a.path: a.sha256 for a in refs}
    authors = authors_of(refs, conn)
    for a in refs:
        where = f"artifacts/{a.path}"
        if a.sidecar == SIDECAR_MISMATCH:
            problems.append(f"{where}: bytes differ from its .sha256 sidecar")
        elif a.sidecar == SIDECAR_MISSING:
            warnings.append(f"{where}: no .sha256 sidecar")
        found = records.by_path.get(a.path, ())
        if not found:
            problems.append(
                f"{where}: no run recorded this file; only what an engine run "
                "wrote and recorded is signed off (move it out of artifacts/)"
            )
        for r in found:
            if r.sha256 != a.sha256:
                problems.append(
                    f"{where}: bytes differ from the hash its run manifest "
                    f"recorded (run {r.run_id}: {r.sha256[:12]}…, now "
                    f"{a.sha256[:12]}…)"
                )
        if found and all(r.sha256 == a.sha256 for r in found) and a.path not in authors:
            runs = " ".join(sorted({r.run_id for r in found}))
            problems.append(
                f"{where}: no signed run record vouches for it (run {runs} is only a "
                "row nobody signed); a sign-off binds only numbers with an author: "
                f"whoever ran it signs it (sealdesk runs sign {runs} --key FILE)"
            )
    for path, found in sorted(records.by_path.items()):
        if path not in held:
            problems.append(f"artifacts/{path}: recorded by run {found[0].run_id}, is gone")
    problems += signature_problems(status.contents, refs, records)
    problems += latest_signoff_problems(conn, held)
    return problems, warnings


def authors_of(refs: Iterable[ArtifactRef], conn: Any) -> dict[str, RunAuthor]:
    """Gives, per artifact whose exact bytes a valid signed run record binds, the
    earliest such record's author; an artifact missing here has no author."""
    signed = run_authors(conn, load_authority(conn))
    out = {}
    for a in refs:
        found = [author for sha, author in signed.get(a.path, ()) if sha == a.sha256]
        if found:
            out[a.path] = found[0]
    return out


def unvouched_signoff_faults(conn: Any) -> list[Fault]:
    """Gives a Fault at each sign-off for each artifact it bound that no run record
    before it binds with that hash: numbers signed off without an author.

    Each run record's own signature and enrolment are checked with every other
    record; here only what they bind is compared.
    """
    signed = run_authors(conn)
    faults = []
    for seq, message in conn.execute(
        "SELECT seq, message FROM records WHERE kind='signoff' ORDER BY seq"
    ):
        try:
            bound = strict_loads(message)["data"]["artifacts"]
            bound = dict(bound) if isinstance(bound, dict) else {}
        except (TypeError, ValueError, KeyError):
            continue  # the record checks say why it cannot be read
        for path, sha in sorted(bound.items()):
            if not any(s == sha and a.seq < seq for s, a in signed.get(str(path), ())):
                faults.append(
                    Fault(
                        seq,
                        f"sign-off #{seq} binds artifacts/{path}, which no signed run "
                        "record before it vouches for: a number without an author",
                    )
                )
    return faults


def _unreadable(exc: OSError) -> str:
    """Gives why an artifact could not be read, completing "artifacts/X ..."."""
    if isinstance(exc, FileNotFoundError):
        return "is gone"
    return f"cannot be read: {exc.strerror or exc}"


def recorded_artifact_faults(artifacts_dir: Path, conn: Any) -> list[str]:
    """Gives why each artifact a run recorded differs from that hash now, or is gone.

    Runs whose manifest does not hash right are left to the record checks,
    which report them already.
    """
    root = Path(artifacts_dir)
    faults = []
    for path, found in sorted(recorded_artifacts(conn).by_path.items()):
        try:
            now = read_regular(root, path, keep=False).sha256
        except OSError as exc:
            faults.append(
                f"artifacts/{path}: recorded by run {found[0].run_id}, {_unreadable(exc)}"
            )
            continue
        for r in found:
            if r.sha256 != now:
                faults.append(
                    f"artifacts/{path}: bytes differ from the hash run {r.run_id} "
                    f"recorded ({r.sha256[:12]}…, now {now[:12]}…)"
                )
    return faults


def verify_signed_artifacts(ws, report: Report) -> None:
    """Adds a Fault at the latest sign-off for each artifact it bound that changed or vanished.

    A sign-off binds the SHA-256 of every artifact the lead reviewed; an
    artifact rewritten afterwards (with a fresh sidecar) would otherwise pass
    every later check. Artifacts added after the sign-off are not its concern.
    """
    seq = report.last_signoff
    if seq is None or seq in {f.seq for f in report.faults}:
        return  # none yet, or its own fault already says why it cannot be trusted
    row = ws.conn.execute("SELECT message FROM records WHERE seq = ?", (seq,)).fetchone()
    try:
        data = strict_loads(row[0]).get("data")
    except (TypeError, ValueError, AttributeError):  # gone, or not a readable record
        return
    bound = data.get("artifacts") if isinstance(data, dict) else None
    if not isinstance(bound, dict):
        return
    root = ws.artifacts_dir
    for name, signed in sorted(bound.items()):
        parts = str(name).split("/")
        if str(name).startswith("/") or any(p in ("", ".", "..") for p in parts):
            report.faults.append(Fault(seq, f"sign-off names artifact {name!r} outside artifacts/"))
            continue
        try:
            held = read_regular(root, str(name), keep=False).sha256
        except OSError as exc:
            report.faults.append(
                Fault(seq, f"artifact {name} bound by sign-off #{seq} {_unreadable(exc)}")
            )
            continue
        if held != signed:
            report.faults.append(
                Fault(
                    seq,
                    f"artifact {name} changed since sign-off #{seq} "
                    f"bound it (signed {str(signed)[:12]}…, now "
                    f"{held[:12]}…)",
                )
            )
