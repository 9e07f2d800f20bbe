"""What the sign-off tests build on: the team's items, the runs' artifacts, and an
independent RFC 9162 tree hash to check the signed tree head against."""

from __future__ import annotations

import hashlib

from engine.artifacts import write_json_artifact
from engine.workspace import BacklogItem
from tests.support.backlog import record_run


def mth(messages: list[bytes]) -> bytes:
    """RFC 9162 MTH written straight from its recursive definition (independent check)."""
    if not messages:
        return hashlib.sha256(b"").digest()
    if len(messages) == 1:
        return hashlib.sha256(b"\x00" + messages[0]).digest()
    k = 1
    while k * 2 < len(messages):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(messages[:k]) + mth(messages[k:])).digest()


def pair(n: int) -> BacklogItem:
    """Gives flagged pair n of run-1, scored lower the higher n is."""
    return BacklogItem.make(
        "flagged_pairs",
        f"fp-{n}",
        "run-1",
        {"summary": {"title": f"pair {n}", "score": 0.9 - n / 10, "tags": []}, "n": n},
    )


# The one weak category of the sign-off tests' run-1.
WEAK = BacklogItem.make(
    "weak_categories",
    "weak-obfuscation",
    "run-1",
    {"summary": {"title": "obfuscation", "score": 0.5, "tags": []}},
)


def write_run_artifacts(ws, signer=None) -> dict[str, str]:
    """Writes a contamination scan and clean set, an exam score and coverage evidence,
    each run's record signed by ``signer`` (by default the ``workspace`` fixture's
    founding lead); gives each artifact's SHA-256 by its path under artifacts/."""
    files = {
        "contam-1/contamination_report.json": {
            "test": {"name": "gsm", "n": 40},
            "counts": {"total_flagged_items": 5},
            "leakage_rate": 0.125,
        },
        "clean-1/clean_report.json": {
            "leakage_rate_before": 0.125,
            "leakage_rate_after": 0.0,
            "dropped": ["q1", "q7", "q9"],
            "power": {
                "before": {"min_detectable_difference": 0.21},
                "after": {"min_detectable_difference": 0.23},
            },
        },
        "exam-1/exam-score.json": {
            "status": "FAIL",
            "gates": {
                "precision": {"value": 0.75, "threshold": ">= 0.70", "passed": True},
                "recall": {"value": 0.35, "threshold": ">= 0.40", "passed": False},
            },
        },
        "cov-1/coverage-evidence.json": {
            "benchmark": {
                "eligibility": "HOLD",
                "stratified_report": [{"category": "benign"}, {"category": "obfuscation"}],
                "weak_categories": [{"category": "obfuscation", "issue": "low_recall"}],
            }
        },
    }
    hashes = {}
    for path, doc in files.items():
        run, name = path.split("/")
        write_json_artifact(ws.run_dir(run) / name, doc)
        record_run(ws, run, name, signer=signer)
        hashes[path] = hashlib.sha256((ws.artifacts_dir / path).read_bytes()).hexdigest()
    return hashes
