"""Witnesses: places off the workspace that keep every checkpoint, to expose forks.

A witness is a directory (often a git repository, or a share the auditor
controls) that each sign-off's checkpoint is pushed to, as
``<witness>/<workspace id>/<size>.checkpoint``. Two copies of one workspace
that went their own ways (``cp -a``, a restored backup) each verify on their
own; a witness sees both. A push that finds a checkpoint of the same log the
ledger does not extend (another root at the same size, or at any smaller
size a root its records no longer give) is a fork, and is reported, not
overwritten. ``sealdesk verify --witness DIR`` checks the workspace against
every checkpoint there; one larger than the ledger means it was rolled back.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from engine.errors import IntegrityError
from engine.ledger import merkle
from engine.ledger.checkpoint import Checkpoint, check_signature, origin_for, parse_checkpoint

META_KEY = "witnesses"


@dataclass(frozen=True)
class Pushed:
    """Where a checkpoint went, and whether the witness is a git repository it committed to."""

    path: Path
    committed: bool


def witnesses(conn) -> list[Path]:
    """Gives the witness directories configured for the workspace."""
    row = conn.execute("SELECT value FROM meta WHERE key=?", (META_KEY,)).fetchone()
    return [Path(p) for p in json.loads(row[0])] if row else []


def add_witness(conn, path: Path) -> list[Path]:
    """Gives the witnesses after adding one (an absolute directory path)."""
    from engine.sqlitedb import write_transaction

    path = Path(path).resolve()
    with write_transaction(conn):
        held = witnesses(conn)
        if path not in held:
            held.append(path)
        conn.execute(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            (META_KEY, json.dumps([str(p) for p in held])),
        )
    return held


def _log_dir(witness: Path, workspace_id: str) -> Path:
    return Path(witness) / workspace_id


def stored(witness: Path, workspace_id: str) -> list[tuple[Path, Checkpoint]]:
    """Gives the checkpoints a witness holds for a workspace, smallest tree first."""
    out: list[tuple[Path, Checkpoint]] = []
    folder = _log_dir(witness, workspace_id)
    if not folder.is_dir():
        return out
    for path in folder.glob("*.checkpoint"):
        out.append((path, parse_checkpoint(path.read_text(encoding="utf-8"), path=path)))
    return sorted(out, key=lambda pair: pair[1].size)


def conflicts(
    leaves: list[bytes], origin: str, held: list[tuple[Path, Checkpoint]]
) -> list[tuple[int, str]]:
    """Gives (seq, reason) for each stored checkpoint this ledger's leaves do not extend."""
    faults = []
    for path, cp in held:
        if cp.origin != origin:
            faults.append(
                (max(cp.size, 1), f"witness {path}: names log {cp.origin!r}, not {origin!r}")
            )
        elif cp.size > len(leaves):
            faults.append(
                (
                    len(leaves) + 1,
                    f"witness {path}: holds a checkpoint of {cp.size} records, but this "
                    f"ledger holds {len(leaves)}: it was rolled back (or is a copy "
                    "that fell behind)",
                )
            )
        elif merkle.root_of(leaves[: cp.size]) != cp.root:
            faults.append(
                (
                    max(cp.size, 1),
                    f"witness {path}: records 1..{cp.size} here do not give the root "
                    "that checkpoint signs: this workspace and the one that pushed it "
                    "share an id but forked",
                )
            )
    return faults


def compare(
    leaves: list[bytes], workspace_id: str, witness: Path
) -> tuple[int, list[tuple[int, str]]]:
    """Gives (how many checkpoints were compared, (seq, reason) for each failure).

    ``witness`` is a witness directory (its ``<workspace id>/`` folders) or
    one workspace's folder in it (``*.checkpoint`` files). A directory that
    does not exist, checkpoints of another workspace id (a database swapped
    for another workspace's has another id), and comparing none are
    failures: each would otherwise pass with nothing checked.
    """
    witness = Path(witness)
    if not witness.is_dir():
        return 0, [(0, f"witness {witness}: no such directory; 0 checkpoints compared")]
    origin = origin_for(workspace_id)
    if any(witness.glob("*.checkpoint")):  # one workspace's folder, named directly
        held = [
            (path, parse_checkpoint(path.read_text(encoding="utf-8"), path=path))
            for path in sorted(witness.glob("*.checkpoint"))
        ]
        others = sorted({cp.origin for _, cp in held if cp.origin != origin})
        mine = sorted(
            ((p, cp) for p, cp in held if cp.origin == origin), key=lambda pair: pair[1].size
        )
    else:
        folders = sorted(p.name for p in witness.iterdir() if any(p.glob("*.checkpoint")))
        others = [origin_for(name) for name in folders if name != workspace_id]
        mine = stored(witness, workspace_id)
    faults: list[tuple[int, str]] = []
    if others:
        faults.append(
            (
                0,
                f"witness {witness}: holds checkpoints of {', '.join(others)}, not only of "
                f"this workspace ({origin}): the database was swapped, or name this "
                f"workspace's folder ({witness / workspace_id})",
            )
        )
    if not mine:
        faults.append(
            (0, f"0 checkpoints compared: witness {witness} holds none of this workspace")
        )
    return len(mine), faults + conflicts(leaves, origin, mine)


def push(witness: Path, workspace_id: str, text: str, leaves: list[bytes], signers) -> Pushed:
    """Gives where a checkpoint was stored, after checking the witness's others against it.

    Refuses (IntegrityError, nothing written) when the witness holds a
    checkpoint of this log that these leaves do not extend: a fork.
    """
    cp = parse_checkpoint(text, path="checkpoint")
    check_signature(cp, signers)
    witness = Path(witness)
    held = stored(witness, workspace_id)
    faults = conflicts(leaves, origin_for(workspace_id), held)
    if faults:
        raise IntegrityError(
            f"fork: {faults[0][1]}; this checkpoint was not pushed", seq=faults[0][0]
        )
    folder = _log_dir(witness, workspace_id)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{cp.size:012d}.checkpoint"
    if target.exists() and target.read_text(encoding="utf-8") == text:
        return Pushed(target, False)
    from engine.artifacts import atomic_write

    atomic_write(target, text.encode("utf-8"), mode=0o644)
    committed = False
    if (witness / ".git").exists():
        rel = target.relative_to(witness)
        git = ["git", "-C", str(witness)]
        subprocess.run([*git, "add", "--", str(rel)], check=True, capture_output=True)
        subprocess.run(
            [
                *git,
                "-c",
                "user.name=sealdesk",
                "-c",
                "user.email=sealdesk@localhost",
                "commit",
                "-q",
                "-m",
                f"checkpoint {cp.origin} size {cp.size}",
                "--",
                str(rel),
            ],
            check=True,
            capture_output=True,
        )
        committed = True
    return Pushed(target, committed)


def push_latest(ws) -> list[tuple[Path, Pushed | IntegrityError]]:
    """Gives, per configured witness, where the latest sign-off's checkpoint went or the
    fork that stopped it (the sign-off itself stands either way)."""
    from engine.ledger.treehead import checkpoint_of, latest_signed_head, leaf_hashes

    targets = witnesses(ws.conn)
    if not targets or latest_signed_head(ws.conn) is None:
        return []  # nothing signed off yet: the next sign-off pushes
    _, text = checkpoint_of(ws.conn, ws.signers())
    leaves = leaf_hashes(ws.conn)
    out: list[tuple[Path, Pushed | IntegrityError]] = []
    for target in targets:
        try:
            out.append((target, push(target, ws.workspace_id, text, leaves, ws.signers())))
        except IntegrityError as exc:
            out.append((target, exc))
        except OSError as exc:
            out.append(
                (target, IntegrityError(f"cannot write to witness {target}: {exc.strerror or exc}"))
            )
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
            out.append(
                (
                    target,
                    IntegrityError(
                        f"witness {target}: git failed: {detail[-1] if detail else exc}"
                    ),
                )
            )
    return out
