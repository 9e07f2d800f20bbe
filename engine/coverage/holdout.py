"""The sealed out-of-loop holdout: exact bytes, exact signature, exact population.

A holdout is accepted only when its bytes hash to the digest the signed
scope names, the holdout authority's key signed exactly those bytes, and
the manifest is canonical JSON with a complete, unique, well-formed
population. Its cases stay out of training, mining, tuning and attribution:
sealdesk reads them only to measure. A benchmark lists the sealed case ids
and the hashes of the sealed texts in canonical form (never the texts), so
that a debug population built from them is recognised and refused.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.canonical import SHA256_HEX as SHA256
from engine.canonical import canonical_json, sha256_hex
from engine.coverage.tables import Table
from engine.coverage.trust import TrustRoot
from engine.errors import InputError, IntegrityError

SCHEMA = "sealdesk.coverage-holdout.v1"
MANIFEST_FIELDS = frozenset({"schema_version", "holdout_id", "version", "created_at", "samples"})
SAMPLE_FIELDS = frozenset({"case_id", "text", "label_int", "category", "source_ref"})
HOLDOUT_COLUMNS = {
    "case_id": "id",
    "text": "text",
    "label_int": "binary",
    "category": "name",
    "source_ref": "name",
}


@dataclass(frozen=True)
class SealedHoldout:
    """A verified holdout: its identity, digests and samples in manifest order."""

    holdout_id: str
    version: str
    created_at: str
    samples: tuple[dict[str, Any], ...]
    manifest_sha256: str
    signature_sha256: str
    path: str

    def by_case(self) -> dict[str, tuple[int, dict[str, Any]]]:
        """Gives case_id -> (index in the manifest, sample)."""
        return {s["case_id"]: (i, s) for i, s in enumerate(self.samples)}

    def text_hashes(self) -> list[str]:
        """Gives the sorted, distinct canonical text hashes of the sealed cases (sorted,
        so that the list does not pair a hash with its case)."""
        return sorted({canonical_text_sha256(s["text"]) for s in self.samples})


_WHITESPACE = re.compile(r"\s+")


def canonical_text(text: str) -> str:
    """Gives the form two texts share when they differ only in ways a reader does not
    see: NFKC, invisible format characters (zero-width spaces, joiners, marks) removed,
    case folded, whitespace runs as one space, ends stripped."""
    visible = "".join(
        ch for ch in unicodedata.normalize("NFKC", text) if unicodedata.category(ch) != "Cf"
    )
    return _WHITESPACE.sub(" ", visible.casefold()).strip()


def canonical_text_sha256(text: str) -> str:
    """Gives the SHA-256 of a text's canonical form (UTF-8): how a sealed case's text is
    listed, so that a copy of it is recognised without the text being handed out."""
    return sha256_hex(canonical_text(text).encode("utf-8"))


def _read(path: Path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", path=path) from exc


def check_manifest(manifest: Any, *, path: str) -> None:
    """Raises naming the field unless the manifest has the holdout schema and a
    complete population of unique, well-formed samples."""
    if not isinstance(manifest, dict) or set(manifest) != MANIFEST_FIELDS:
        raise InputError(
            f"holdout manifest fields must be exactly {', '.join(sorted(MANIFEST_FIELDS))}",
            path=path,
        )
    if manifest["schema_version"] != SCHEMA:
        raise InputError(
            f"unsupported holdout schema (expected {SCHEMA})", path=path, field="schema_version"
        )
    for name in ("holdout_id", "version", "created_at"):
        if not isinstance(manifest[name], str) or not manifest[name]:
            raise InputError(
                "holdout identity is incomplete: must be a non-empty string", path=path, field=name
            )
    samples = manifest["samples"]
    if not isinstance(samples, list) or not samples:
        raise InputError("the holdout population is empty", path=path, field="samples")
    seen: set[str] = set()
    for i, sample in enumerate(samples):
        field = f"samples[{i}]"
        if not isinstance(sample, dict) or set(sample) != SAMPLE_FIELDS:
            raise InputError(
                f"sample fields must be exactly {', '.join(sorted(SAMPLE_FIELDS))}",
                path=path,
                field=field,
            )
        case_id = sample["case_id"]
        if not isinstance(case_id, str) or not case_id or case_id in seen:
            raise InputError(
                f"case id {case_id!r} is empty or duplicated", path=path, field=f"{field}.case_id"
            )
        seen.add(case_id)
        if not isinstance(sample["text"], str) or not sample["text"].strip():
            raise InputError("must be non-blank text", path=path, field=f"{field}.text")
        label = sample["label_int"]
        if isinstance(label, bool) or not isinstance(label, int) or label not in (0, 1):
            raise InputError("must be the integer 0 or 1", path=path, field=f"{field}.label_int")
        for name in ("category", "source_ref"):
            if not isinstance(sample[name], str) or not sample[name]:
                raise InputError("must be a non-empty string", path=path, field=f"{field}.{name}")


def load_holdout(
    manifest_path: str | Path,
    signature_path: str | Path,
    expected_manifest_sha256: str,
    trust: TrustRoot,
) -> SealedHoldout:
    """Gives the verified holdout, or raises at the first digest, signature or
    population fault (digest first: wrong bytes are refused before parsing)."""
    if not isinstance(expected_manifest_sha256, str) or not SHA256.match(expected_manifest_sha256):
        raise InputError(
            "expected holdout digest is not 64 lower-case hex", field="holdout_manifest_sha256"
        )
    path = str(manifest_path)
    payload = _read(Path(manifest_path), "holdout manifest")
    signature = _read(Path(signature_path), "holdout signature")
    actual = sha256_hex(payload)
    if actual != expected_manifest_sha256:
        raise IntegrityError(
            f"{path}: holdout bytes (sha256 {actual[:16]}…) differ from the "
            f"digest the signed scope names ({expected_manifest_sha256[:16]}…)"
        )
    manifest = trust.verify_document("holdout", payload, signature, what=path)
    check_manifest(manifest, path=path)
    return SealedHoldout(
        holdout_id=manifest["holdout_id"],
        version=manifest["version"],
        created_at=manifest["created_at"],
        samples=tuple(manifest["samples"]),
        manifest_sha256=actual,
        signature_sha256=sha256_hex(signature),
        path=path,
    )


def build_manifest(table: Table, holdout_id: str, version: str, created_at: str) -> bytes:
    """Gives the canonical manifest bytes sealing a table of holdout rows."""
    manifest = {
        "schema_version": SCHEMA,
        "holdout_id": holdout_id,
        "version": version,
        "created_at": created_at,
        "samples": [dict(r) for r in table.rows],
    }
    check_manifest(manifest, path=table.path)
    return canonical_json(manifest)
