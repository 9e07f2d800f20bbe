"""Sealing the exam artifact, the producing code's identity, and binding checks.

A sealed artifact is ``seal(core, human, resolution)``: the core (built by
``adjudicate.build_core``) plus what follows from it and from any human
adjudication: final decisions, gold claims, sweep status, counts, pending
reasons and the terminal status. Sealing is deterministic and holds no
timestamps, so the same inputs give byte-identical artifacts, and anyone can
re-seal a core to check that an artifact's derived parts are honest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine import __version__
from engine.canonical import canonical_json, parse_canonical, sha256_hex
from engine.endpoint.failures import NOT_RECORDED, Failure, merge, tally
from engine.errors import InputError, IntegrityError
from engine.exam.protocol import LANES, PROTOCOL_VERSION, SEED, protocol_sha256, rubric_sha256

COMPLETE = "COMPLETE"
PENDING = "PENDING_ADJUDICATION"
# Files that adjudicate and resolve never run (scoring, live labeling, whose
# output is bound by hash anyway) or that only stop a run (the preflight):
# editing them leaves earlier artifacts scoreable. Every other file must be byte-identical.
OUTSIDE_ADJUDICATION = frozenset(
    {
        "engine/exam/matcher.py",
        "engine/exam/metrics.py",
        "engine/exam/score.py",
        "engine/exam/replay.py",
        "engine/exam/label.py",
        "engine/exam/preflight.py",
    }
)
_DERIVED_CANDIDATE = ("human", "final")
_DERIVED_COMPLETION = ("gold", "sweep_status")
_DERIVED_TOP = ("counts", "status", "pending", "resolution")


def _copy(value: Any) -> Any:
    # A JSON round trip: artifacts are plain JSON, and this is far faster than deepcopy.
    return json.loads(json.dumps(value))


def code_identity() -> dict[str, Any]:
    """Gives the package version, the SHA-256 of each exam source file (and of the shared
    code it runs: canonical.py, rows.py and the endpoint client), the git checkout
    (commit, tree, dirty) and the dependency lock files.

    Only the version and the files decide whether an artifact may be scored
    by this code (``check_code``); the checkout and the lock are bound so
    that anyone can tell which tree and which dependencies sealed it.
    """
    from engine.exam.provenance import checkout, lock_files, source_root

    engine_dir = Path(__file__).resolve().parent.parent
    paths = (
        sorted(engine_dir.joinpath("exam").glob("*.py"))
        + sorted(engine_dir.joinpath("endpoint").glob("*.py"))
        + [engine_dir / "canonical.py", engine_dir / "rows.py"]
    )
    files = {
        f"engine/{p.relative_to(engine_dir).as_posix()}": sha256_hex(p.read_bytes()) for p in paths
    }
    root = source_root()
    return {
        "package": "sealdesk",
        "version": __version__,
        "files": dict(sorted(files.items())),
        "checkout": checkout(root),
        "lock": lock_files(root),
    }


def _sweep_status(completion: dict[str, Any], finals: dict[str, str]) -> str:
    status = completion["sweep"]["status"]
    if status != "ok":
        return status
    undecided = any(
        c["origin"] == "sweep" and finals[c["candidate_id"]] == "abstain"
        for c in completion["candidates"]
    )
    return "undecided" if undecided else "complete"


def _tally(values: list[str], keys: tuple[str, ...]) -> dict[str, int]:
    return {k: sum(v == k for v in values) for k in keys}


def _counts(art: dict[str, Any]) -> dict[str, Any]:
    comps = art["completions"]
    cands = [c for comp in comps for c in comp["candidates"]]
    votes = [v for c in cands for v in c["votes"]]
    third = [
        v
        for c in cands
        if c["origin"] == "union"
        for v in c["votes"]
        if v["voter"] == "adjudicator"
    ]
    lane_states = {lane: [comp["lanes"][lane]["status"] for comp in comps] for lane in LANES}
    sweeps = [comp["sweep"] for comp in comps]
    return {
        "completions": len(comps),
        "candidates": {
            "total": len(cands),
            **_tally([c["origin"] for c in cands], ("union", "sweep")),
        },
        "machine_decisions": _tally(
            [c["decision"] for c in cands], ("accept", "reject", "abstain")
        ),
        "final_decisions": _tally([c["final"] for c in cands], ("accept", "reject", "abstain")),
        "human_adjudications": sum(c["human"] is not None for c in cands),
        "gold_claims": sum(len(comp["gold"]) for comp in comps),
        "lanes": {
            lane: _tally(s, ("ok", "operational_failure", "invalid_response"))
            for lane, s in lane_states.items()
        },
        "third_votes": _tally(
            [v["vote"] for v in third], ("accept", "reject", "operational_failure", "absent")
        ),
        "sweep": _tally(
            [comp["sweep_status"] for comp in comps],
            ("complete", "undecided", "operational_failure", "invalid_response", "not_run"),
        ),
        "invalid_responses": sum(s == "invalid_response" for ss in lane_states.values() for s in ss)
        + sum(s["status"] == "invalid_response" for s in sweeps),
        "operational_failures": sum(
            s == "operational_failure" for ss in lane_states.values() for s in ss
        )
        + sum(s["status"] == "operational_failure" for s in sweeps)
        + sum(
            v["vote"] == "operational_failure"
            and v["basis"] not in ("lane_failed", "invalid_response")
            for v in votes
        ),
        # Every request the exam made or recorded: lane labeling, third votes,
        # validations and sweeps.
        "invalid_response_attempts": _attempts(comps, votes, sweeps, "invalid_response_attempts"),
        "failed_request_attempts": _attempts(comps, votes, sweeps, "failed_request_attempts"),
        "failure_reasons": _reasons(comps, votes, sweeps),
    }


def _reasons(
    comps: list[dict[str, Any]], votes: list[dict[str, Any]], sweeps: list[dict[str, Any]]
) -> dict[str, int]:
    """Gives every failed attempt of the exam per reason; attempts a recorded lane file
    counted without a reason are ``not_recorded``."""
    recorded: list[Failure] = []
    unrecorded = 0
    for comp in comps:
        for lane in LANES:
            state = comp["lanes"][lane]
            if state.get("failures") is None:
                unrecorded += state["invalid_response_attempts"] + state["failed_request_attempts"]
            else:
                recorded += [Failure.from_json(f) for f in state["failures"]]
    for holder in [*votes, *sweeps]:
        recorded += [Failure.from_json(f) for f in holder.get("failures", ())]
    return merge(tally(recorded), {NOT_RECORDED: unrecorded})


def _attempts(
    comps: list[dict[str, Any]], votes: list[dict[str, Any]], sweeps: list[dict[str, Any]], key: str
) -> dict[str, int]:
    by = {lane: sum(c["lanes"][lane][key] for c in comps) for lane in LANES}
    by["votes"] = sum(v[key] for v in votes)
    by["sweep"] = sum(s[key] for s in sweeps)
    return {"total": sum(by.values()), **by}


def seal(
    core: dict[str, Any], human: dict[str, dict[str, Any]], resolution: dict[str, Any] | None
) -> dict[str, Any]:
    """Gives the sealed artifact of a core, with human decisions on abstained candidates."""
    art = _copy(core)
    finals: dict[str, str] = {}
    for comp in art["completions"]:
        for cand in comp["candidates"]:
            cid = cand["candidate_id"]
            decided = human.get(cid) if cand["decision"] == "abstain" else None
            if cid in human and decided is None:
                raise IntegrityError(
                    f"candidate {cid} was decided by its votes; a human "
                    "adjudication applies only to abstained candidates"
                )
            cand["human"] = decided
            finals[cid] = decided["decision"] if decided else cand["decision"]
            cand["final"] = finals[cid]
        comp["gold"] = [
            {
                "candidate_id": c["candidate_id"],
                "start": c["start"],
                "end": c["end"],
                "span_exact_text": c["span_exact_text"],
                "family": c["family"],
                "entity": c["entity"],
                "entity_normalized": c["entity_normalized"],
                "decided_by": "adjudicator" if c["human"] else "votes",
            }
            for c in sorted(
                comp["candidates"], key=lambda c: (c["start"], c["end"], c["candidate_id"])
            )
            if c["final"] == "accept"
        ]
        comp["sweep_status"] = _sweep_status(comp, finals)
    known = set(finals)
    stray = sorted(set(human) - known)
    if stray:
        raise IntegrityError(f"human adjudication names unknown candidate {stray[0]}")
    pending = []
    for comp in art["completions"]:
        for cand in comp["candidates"]:
            if cand["final"] == "abstain":
                pending.append(
                    {
                        "completion_id": comp["completion_id"],
                        "candidate_id": cand["candidate_id"],
                        "reason": f"abstained: {cand['reason']}",
                    }
                )
        if comp["sweep_status"] not in ("complete", "undecided"):
            pending.append(
                {
                    "completion_id": comp["completion_id"],
                    "candidate_id": None,
                    "reason": f"completeness sweep {comp['sweep_status']}",
                }
            )
    art["pending"] = pending
    art["status"] = PENDING if pending else COMPLETE
    art["resolution"] = resolution
    art["counts"] = _counts(art)
    return art


def core_of(art: dict[str, Any]) -> dict[str, Any]:
    """Gives the core of a sealed artifact (its derived parts removed)."""
    core = _copy(art)
    for key in _DERIVED_TOP:
        core.pop(key, None)
    for comp in core.get("completions", []):
        for key in _DERIVED_COMPLETION:
            comp.pop(key, None)
        for cand in comp.get("candidates", []):
            for key in _DERIVED_CANDIDATE:
                cand.pop(key, None)
    return core


def human_of(art: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Gives the human adjudications recorded in an artifact, by candidate id."""
    return {
        c["candidate_id"]: c["human"]
        for comp in art["completions"]
        for c in comp["candidates"]
        if c.get("human")
    }


def parse_artifact(data: bytes, path: Path) -> dict[str, Any]:
    """Gives a sealed artifact after checking its form and that its derived parts re-seal.

    This proves internal honesty only (decisions, gold, counts and status
    follow from the recorded votes); ``check_bindings`` and the scorer's
    re-derivation tie it to inputs and code.
    """
    art = parse_canonical(data, path=str(path))
    if not isinstance(art, dict) or art.get("artifact") != "exam-adjudication":
        raise InputError("not an exam-adjudication artifact", path=path, field="artifact")
    if type(art.get("schema_version")) is not int or art["schema_version"] != 2:
        raise InputError(
            "only schema_version 2 (per-candidate adjudication) is accepted; "
            "whole-completion adjudication arrays are refused",
            path=path,
            field="schema_version",
        )
    try:
        resealed = canonical_json(seal(core_of(art), human_of(art), art.get("resolution")))
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"artifact structure is broken near {exc}", path=path) from exc
    if resealed != data:
        raise IntegrityError(
            f"{path}: derived parts do not follow from the recorded votes "
            f"({first_difference(seal(core_of(art), human_of(art), art.get('resolution')), art)})"
        )
    return art


def base_sha256(art: dict[str, Any]) -> str:
    """Gives the SHA-256 of the unresolved artifact this one was made from (or its own)."""
    return sha256_hex(canonical_json(seal(core_of(art), {}, None)))


def check_protocol(art: dict[str, Any], path: Path) -> None:
    """Refuses an artifact sealed under another protocol, rubric or seed."""
    checks = (
        ("protocol.version", art["protocol"]["version"], PROTOCOL_VERSION),
        ("protocol.sha256", art["protocol"]["sha256"], protocol_sha256()),
        ("rubric.sha256", art["rubric"]["sha256"], rubric_sha256()),
        ("seed", art["seed"], SEED),
    )
    for field, held, current in checks:
        if held != current:
            raise IntegrityError(
                f"{path}: {field} is {held!r}, this code's is {current!r}; "
                "an artifact is scored only under the protocol it was "
                "sealed with"
            )


def check_code(art: dict[str, Any], current: dict[str, Any], path: Path) -> None:
    """Refuses an artifact made by other adjudication code (scoring files may differ)."""
    held = art["code"]
    if held.get("version") != current["version"]:
        raise IntegrityError(
            f"{path}: made by sealdesk {held.get('version')}, this is {current['version']}"
        )
    names = (set(held["files"]) | set(current["files"])) - OUTSIDE_ADJUDICATION
    for name in sorted(names):
        if held["files"].get(name) != current["files"].get(name):
            raise IntegrityError(
                f"{path}: code identity differs at {name} (artifact "
                f"{str(held['files'].get(name))[:12]}, this code "
                f"{str(current['files'].get(name))[:12]}); re-run adjudicate "
                "with this code"
            )


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """Gives the first JSON path at which two values differ (for error messages)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}".lstrip(".") + " present in only one"
            if a[key] != b[key]:
                return first_difference(a[key], b[key], f"{path}.{key}")
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):  # lengths compared below
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            return f"{path} has {len(a)} vs {len(b)} entries".lstrip(".")
    return path.lstrip(".") or "(top level)"
