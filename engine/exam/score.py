"""Scoring a sealed exam artifact against a detector replay (exam-matcher-v0.1).

The scorer trusts nothing it can re-derive. It checks the artifact's sidecar
and locked SHA-256, its protocol, rubric, seed and producing code, every
input file's SHA-256, then rebuilds the whole artifact from the inputs and
the recorded rater answers and requires the same bytes; a resolved artifact
must also agree with the ledger's current adjudicator decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.artifacts import read_verified
from engine.canonical import canonical_json, sha256_hex
from engine.errors import IntegrityError
from engine.exam.adjudicate import build_core
from engine.exam.artifact import (
    COMPLETE,
    PENDING,
    base_sha256,
    check_code,
    check_protocol,
    code_identity,
    core_of,
    first_difference,
    parse_artifact,
    seal,
)
from engine.exam.inputs import ExamInputs, InputPaths, load_inputs
from engine.exam.matcher import GoldClaim, match
from engine.exam.metrics import Tallies, gates, inter_rater, metrics
from engine.exam.protocol import MATCHER_VERSION, PROTOCOL_VERSION, protocol_sha256
from engine.exam.replay import ReplayRow, parse_replay
from engine.exam.runs import RaterFiles, recorded_raters
from engine.rows import check_expected, read_bytes


@dataclass(frozen=True)
class Scored:
    """The score object and the gold rows it was computed from."""

    score: dict[str, Any]
    gold: list[dict[str, Any]]


def verified_artifact(
    ws: Any, path: Path, expected_sha256: str, paths: InputPaths, files: RaterFiles
) -> tuple[dict[str, Any], str, ExamInputs]:
    """Gives (artifact, its SHA-256, inputs) after every binding check, else raises."""
    data = read_verified(path)
    digest = check_expected(path, data, expected_sha256, "expected-adjudication-sha256")
    art = parse_artifact(data, path)
    check_protocol(art, path)
    check_code(art, code_identity(), path)
    inputs = load_inputs(paths)
    # The summary binds the others, so it is checked last: the message then
    # names the file that actually changed.
    for key in ("corpus", "context", "lane-a", "lane-b", "labeling_summary"):
        held = inputs.hashes[key]
        if art["inputs"].get(key) != held:
            raise IntegrityError(
                f"{path}: binds {key} SHA-256 {art['inputs'].get(key)}, but "
                f"the {key} file given has {held}"
            )
    raters, bound = recorded_raters(art, files, inputs.completions)
    for key, rater_sha256 in sorted(bound.items()):
        if art["inputs"].get(key) != rater_sha256:
            raise IntegrityError(
                f"{path}: binds {key} SHA-256 {art['inputs'].get(key)}, but "
                f"the {key} file given has {rater_sha256}"
            )
    rebuilt = seal(build_core(inputs, raters, bound, art["code"]), {}, None)
    if sha256_hex(canonical_json(rebuilt)) != base_sha256(art):
        where = first_difference(rebuilt, seal(core_of(art), {}, None))
        raise IntegrityError(
            f"{path}: does not re-derive from its inputs (first difference at {where})"
        )
    from engine.exam.resolve import check_against_ledger

    check_against_ledger(ws, art)
    return art, digest, inputs


def _gold(art: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"completion_id": comp["completion_id"], **g}
        for comp in art["completions"]
        for g in comp["gold"]
    ]


def score(
    art: dict[str, Any], art_sha256: str, replay: dict[str, ReplayRow], replay_sha256: str
) -> Scored:
    """Gives the score of a verified artifact against a parsed replay."""
    counts = dict(
        completions=0,
        detector_failures=0,
        detections=0,
        gold=0,
        matched=0,
        family_equal=0,
        entity_equal=0,
        full_tuple=0,
        gold_zero_completions=0,
        gold_zero_with_detection=0,
    )
    pairs = []
    for comp in art["completions"]:
        cid = comp["completion_id"]
        gold = [
            GoldClaim(
                g["candidate_id"], cid, g["start"], g["end"], g["family"], g["entity_normalized"]
            )
            for g in comp["gold"]
        ]
        row = replay[cid]
        counts["completions"] += 1
        counts["gold"] += len(gold)
        if row.status != "ok":
            counts["detector_failures"] += 1
            continue
        counts["detections"] += len(row.detections)
        if not gold:
            counts["gold_zero_completions"] += 1
            counts["gold_zero_with_detection"] += bool(row.detections)
        for m in match(gold, list(row.detections)):
            counts["matched"] += 1
            counts["family_equal"] += m.family_equal
            counts["entity_equal"] += m.entity_equal
            counts["full_tuple"] += m.full_tuple
            pairs.append(
                {
                    "completion_id": cid,
                    "gold_candidate_id": m.gold.candidate_id,
                    "detector_candidate_id": m.detection.candidate_id,
                    "family_equal": m.family_equal,
                    "entity_equal": m.entity_equal,
                }
            )
    tallies = Tallies(**counts)
    values = metrics(tallies)
    verdicts = gates(values)
    if art["status"] != COMPLETE:
        status = PENDING
    else:
        status = "PASS" if all(g["pass"] for g in verdicts) else "FAIL"
    result = {
        "artifact": "exam-score",
        "schema_version": 2,
        "protocol": {"version": PROTOCOL_VERSION, "sha256": protocol_sha256()},
        "matcher": MATCHER_VERSION,
        "adjudication": {
            "sha256": art_sha256,
            "base_sha256": base_sha256(art),
            "status": art["status"],
            "pending": len(art["pending"]),
        },
        "inputs": {**art["inputs"], "replay": replay_sha256},
        "tallies": tallies.to_json(),
        "metrics": {name: ratio.to_json() for name, ratio in values.items()},
        "gates": verdicts,
        "inter_rater_diagnostic": inter_rater(art),
        "matches": pairs,
        "status": status,
    }
    return Scored(result, _gold(art))


def load_replay(
    path: Path, expected_sha256: str, inputs: ExamInputs
) -> tuple[dict[str, ReplayRow], str]:
    """Gives the parsed replay and its SHA-256 after the lock check."""
    data = read_bytes(path)
    digest = check_expected(path, data, expected_sha256, "expected-replay-sha256")
    return parse_replay(data, path, inputs.completions), digest
