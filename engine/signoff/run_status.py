"""What the engine runs concluded, read back from their latest artifacts.

The sign-off shows the lead, in one place, what each backlog's producer said:
what the contamination scan flagged (pending review), the leakage rate review
confirmed and what the confirmed drops cost in statistical power, the exam's
status and gates, and coverage ELIGIBLE/HOLD per category. Each producer owns
its artifact's format; this module only reads the artifacts' fixed names
(``contamination_report.json``, ``exam-score.json``, ``exam-adjudication.json``,
the coverage benchmark/evidence) tolerantly: a kind never produced is "not
run", a field it cannot find is shown as unknown, and nothing here imports a
producer.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.artifacts import read_regular

NOT_RUN = "not run"
SIDECAR_OK, SIDECAR_MISSING, SIDECAR_MISMATCH = "ok", "missing", "mismatch"
SIGNATURE_SUFFIX = ".sig"


@dataclass(frozen=True)
class ArtifactRef:
    """One artifact file: where it is, its SHA-256 and whether its sidecar agrees."""

    path: str  # relative to the workspace's artifacts/ directory, '/'-separated
    run_id: str
    sha256: str
    sidecar: str  # ok | missing | mismatch
    mtime_ns: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Gate:
    """One exam gate: the metric, its value, threshold and verdict (None when unknown)."""

    name: str
    value: float | None
    threshold: str | None
    passed: bool | None


@dataclass(frozen=True)
class PowerChange:
    """One power figure before and after the drop (e.g. minimum detectable difference)."""

    name: str
    before: float | None
    after: float | None


@dataclass(frozen=True)
class ContaminationStatus:
    """What the scan flagged (pending review), the leakage review confirmed, and the power
    the confirmed drops cost. A flagged item is a suspicion, not a leak: the leakage rate
    is known only once the clean set is written from the decisions."""

    state: str  # not run | scanned | cleaned
    flagged_rate: float | None = None  # flagged (pending review) / eval items, at the scan
    leakage_rate: float | None = None  # confirmed leaks / eval items (cleaned only)
    flagged_items: int | None = None
    confirmed_items: int | None = None  # accepted as leaks: the items the clean set dropped
    pending_items: int | None = None  # flagged and undecided (at the scan: all flagged)
    eval_size_before: int | None = None
    eval_size_after: int | None = None
    power: tuple[PowerChange, ...] = ()
    sources: tuple[str, ...] = ()

    @property
    def dropped_items(self) -> int | None:
        """Gives the items the clean set dropped: the confirmed leaks."""
        return self.confirmed_items


@dataclass(frozen=True)
class ExamStatus:
    """The exam's status (PENDING_ADJUDICATION / PASS / FAIL) with each gate."""

    state: str  # not run | PENDING_ADJUDICATION | PASS | FAIL | not scored | another status
    adjudication: str | None = None  # COMPLETE | PENDING_ADJUDICATION | None
    gates: tuple[Gate, ...] = ()
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class CategoryStatus:
    """One coverage category: ELIGIBLE, or HOLD with the findings that vetoed it, and the
    threat ids (MITRE ATLAS, then OWASP LLM Top 10) the taxonomy maps it to."""

    category: str
    eligibility: str
    findings: tuple[str, ...] = ()
    threats: tuple[str, ...] = ()


@dataclass(frozen=True)
class CoverageStatus:
    """Coverage evidence: overall ELIGIBLE/HOLD and per category, and how the reviewed
    misses were attributed (None when the evidence does not say or all were explained)."""

    state: str  # not run | ELIGIBLE | HOLD | unknown
    categories: tuple[CategoryStatus, ...] = ()
    sources: tuple[str, ...] = ()
    attribution: str | None = None


@dataclass(frozen=True)
class RunStatus:
    """The three producers' latest conclusions, and the artifact files read."""

    artifacts: tuple[ArtifactRef, ...]
    contamination: ContaminationStatus
    exam: ExamStatus
    coverage: CoverageStatus
    unreadable: tuple[str, ...] = field(default=())
    contents: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    refused: tuple[str, ...] = ()  # files refused by name: links, pipes, unreadable


@dataclass(frozen=True)
class ArtifactScan:
    """Every artifact read once: each file's hash, the bytes of the ones that are parsed
    or checked (JSON, signatures and what they sign) and why any file was refused."""

    refs: tuple[ArtifactRef, ...]
    contents: Mapping[str, bytes]  # path under artifacts/ -> exactly the bytes hashed
    refused: tuple[str, ...] = ()  # links, pipes, files that vanished: each blocks a sign-off


def _listed(root: Path) -> tuple[list[str], list[str]]:
    """Gives (every artifact-like path under root, '/'-separated; the directories that are
    links), walking without following links."""
    files, links = [], []
    for here, dirs, names in os.walk(root):
        rel = Path(here).relative_to(root)
        for d in dirs:
            if os.path.islink(os.path.join(here, d)):
                links.append((rel / d).as_posix())
        # Hidden entries (the atomic writer's temporary files) are not artifacts.
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if rel.parts:
            files += [(rel / n).as_posix() for n in names if not n.startswith(".")]
    return sorted(files), sorted(links)


def _kept(paths: list[str]) -> set[str]:
    """Gives the paths whose bytes the sign-off parses or checks: JSON documents,
    signatures, and the files a signature beside them signs."""
    listed = set(paths)
    return {
        p
        for p in paths
        if p.endswith((".json", SIGNATURE_SUFFIX)) or p + SIGNATURE_SUFFIX in listed
    }


def scan_artifacts(artifacts_dir: Path) -> ArtifactScan:
    """Gives every artifact under ``artifacts/<run>/`` read once: its hash, its sidecar
    state and, for those parsed or checked, the very bytes hashed.

    Nothing is followed through a symbolic link, and only regular files are
    read (``engine.artifacts.read_regular``): a link or a pipe put in an
    artifact's place is refused by name, not hashed from one file and shown
    from another.
    """
    root = Path(artifacts_dir)
    if not root.is_dir():
        return ArtifactScan((), {})
    paths, links = _listed(root)
    refused = [
        f"artifacts/{d}: is a symbolic link to a directory (links are not followed)" for d in links
    ]
    sidecars = {p for p in paths if p.endswith(".sha256")}
    keep = _kept([p for p in paths if p not in sidecars])
    found: list[ArtifactRef] = []
    contents: dict[str, bytes] = {}
    for rel in paths:
        if rel in sidecars:
            continue
        try:
            held = read_regular(root, rel, keep=rel in keep)
        except OSError as exc:
            refused.append(
                f"artifacts/{rel}: {exc.strerror or exc}; only regular files are signed off"
            )
            continue
        if rel in keep:
            contents[rel] = held.data
        state = _sidecar_state(root, rel + ".sha256", held.sha256, refused)
        found.append(ArtifactRef(rel, rel.split("/", 1)[0], held.sha256, state, held.mtime_ns))
    return ArtifactScan(tuple(found), contents, tuple(refused))


def _sidecar_state(root: Path, rel: str, digest: str, refused: list[str]) -> str:
    """Gives whether the sidecar at ``rel`` names ``digest``; a sidecar that is a link or
    cannot be read is refused too."""
    try:
        words = read_regular(root, rel).data.decode("utf-8", errors="replace").split()
    except FileNotFoundError:
        return SIDECAR_MISSING
    except OSError as exc:
        refused.append(f"artifacts/{rel}: {exc.strerror or exc}")
        return SIDECAR_MISMATCH
    return SIDECAR_OK if words and words[0] == digest else SIDECAR_MISMATCH


def _latest(refs: Iterable[ArtifactRef], match: Callable[[str], bool]) -> list[ArtifactRef]:
    """Gives the matching artifacts, newest first (mtime, then path for ties)."""
    return sorted(
        (r for r in refs if match(r.name)), key=lambda r: (r.mtime_ns, r.path), reverse=True
    )


def _load(
    contents: Mapping[str, bytes], ref: ArtifactRef, unreadable: list[str]
) -> dict[str, Any] | None:
    """Gives the JSON object an artifact holds, parsed from the bytes its hash was taken
    of (never read again)."""
    try:
        value = json.loads(contents[ref.path])
    except (KeyError, ValueError, RecursionError) as exc:
        unreadable.append(f"{ref.path}: {exc}")
        return None
    if not isinstance(value, dict):
        unreadable.append(f"{ref.path}: not a JSON object")
        return None
    return value


def _number(value: Any) -> float | None:
    # NaN/Infinity (which json.loads lets through) cannot go into a canonical signed record.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _count(value: Any) -> int | None:
    if isinstance(value, list):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _first(obj: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in obj:
            return obj[name]
    return None


def _object_at(doc: dict[str, Any] | None, key: str) -> dict[str, Any]:
    """Gives the JSON object under ``key``, or an empty one when there is none."""
    value = doc.get(key) if doc else None
    return value if isinstance(value, dict) else {}


def _before_after(obj: dict[str, Any], names: tuple[str, ...]) -> tuple[Any, Any] | None:
    """Finds a before/after pair under any of the shapes a report might use."""
    for name in names:
        if f"{name}_before" in obj or f"{name}_after" in obj:
            return obj.get(f"{name}_before"), obj.get(f"{name}_after")
        inner = obj.get(name)
        if isinstance(inner, dict) and ("before" in inner or "after" in inner):
            return inner.get("before"), inner.get("after")
        before, after = obj.get("before"), obj.get("after")
        if (
            isinstance(before, dict)
            and isinstance(after, dict)
            and (name in before or name in after)
        ):
            return before.get(name), after.get(name)
    return None


_SIZE = ("n", "eval_size", "size", "items")
_POWER = (
    "min_detectable_difference",
    "minimum_detectable_difference",
    "mde",
    "minimum_detectable_effect",
    "power",
)


def _flagged(report: dict[str, Any]) -> tuple[float | None, int | None]:
    """Gives (flagged rate, flagged items) of a scan report. Reports from before the
    flagged rate had its own name called it ``leakage_rate``: it counted flagged items."""
    items = _count(_object_at(report, "counts").get("total_flagged_items"))
    flagged = report.get("flagged")
    if isinstance(flagged, dict):
        found = _count(flagged.get("items"))
        return _number(flagged.get("rate")), found if found is not None else items
    return _number(report.get("leakage_rate")), items


def contamination_status(
    contents: Mapping[str, bytes], refs: Iterable[ArtifactRef], unreadable: list[str]
) -> ContaminationStatus:
    """Gives the flagged rate, the confirmed leakage and the power change from the latest
    scan report and clean-set report."""
    reports = _latest(refs, lambda n: n == "contamination_report.json")
    cleans = _latest(refs, lambda n: n.endswith(".json") and "clean" in n)
    report = _load(contents, reports[0], unreadable) if reports else None
    clean = _load(contents, cleans[0], unreadable) if cleans else None
    if report is None and clean is None:
        return ContaminationStatus(NOT_RUN)
    sources = tuple(r[0].path for r in (reports, cleans) if r)
    flagged_rate, flagged = _flagged(report) if report else (None, None)
    test_meta = _object_at(report, "test")
    size_before = _count(test_meta.get("n"))
    if clean is None:
        return ContaminationStatus(
            "scanned",
            flagged_rate=flagged_rate,
            flagged_items=flagged,
            pending_items=flagged,
            eval_size_before=size_before,
            sources=sources,
        )
    sizes = _before_after(clean, _SIZE)
    if sizes and _count(sizes[0]) is not None:
        size_before = _count(sizes[0])
    leak = _object_at(clean, "leakage")
    # leaks from the pool as the clean report counts them (accepted internal duplicates
    # apart), else what it dropped
    confirmed = _count(leak.get("confirmed_items"))
    if confirmed is None:
        confirmed = _count(
            _first(clean, "dropped", "dropped_items", "n_dropped", "confirmed_leaks", "dropped_ids")
        )
    rate = _number(leak.get("rate"))
    if rate is None and confirmed is not None and size_before:
        rate = confirmed / size_before  # a clean report that did not state it
    pending = _count(leak.get("pending_review"))
    if pending is None:
        pending = _count(_first(clean, "kept_undecided", "undecided"))
    inner = _object_at(leak, "flagged")
    if _number(inner.get("rate")) is not None:
        flagged_rate = _number(inner.get("rate"))
    power_obj = _object_at(clean, "power")
    power = []
    for scope in (power_obj, clean):
        for name in _POWER:
            pair = _before_after(scope, (name,))
            if pair and (_number(pair[0]) is not None or _number(pair[1]) is not None):
                power.append(PowerChange(name, _number(pair[0]), _number(pair[1])))
        if power:
            break
    return ContaminationStatus(
        "cleaned",
        flagged_rate=flagged_rate,
        leakage_rate=rate,
        flagged_items=flagged,
        confirmed_items=confirmed,
        pending_items=pending,
        eval_size_before=size_before,
        eval_size_after=_count(sizes[1]) if sizes else None,
        power=tuple(power),
        sources=sources,
    )


def _percent(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.2%}"


def contamination_words(c: ContaminationStatus) -> tuple[str, str]:
    """Gives the two labelled rates as a summary says them: what the scan flagged
    (pending review), and the leakage rate, which only review confirms."""
    of = f" of {c.eval_size_before}" if c.eval_size_before is not None else ""
    flagged_items = "unknown" if c.flagged_items is None else str(c.flagged_items)
    flagged = (
        f"flagged (pending review) {flagged_items}{of} eval items ({_percent(c.flagged_rate)})"
    )
    if c.state != "cleaned":
        return flagged, (
            "leakage rate not confirmed yet: decide the flagged items, then run "
            "sealdesk contamination clean"
        )
    confirmed = "unknown" if c.confirmed_items is None else str(c.confirmed_items)
    pending = "unknown" if c.pending_items is None else str(c.pending_items)
    return flagged, (
        f"leakage rate {_percent(c.leakage_rate)} confirmed ({confirmed}{of} eval items "
        f"accepted as leaks), {pending} pending review"
    )


def _gates(value: Any) -> tuple[Gate, ...]:
    rows: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        rows = list(value.items())
    elif isinstance(value, list):
        rows = [
            (str(_first(g, "name", "metric", "gate") or f"gate {i + 1}"), g)
            for i, g in enumerate(value)
            if isinstance(g, dict)
        ]
    gates = []
    for name, gate in rows:
        if not isinstance(gate, dict):
            passed = gate if isinstance(gate, bool) else None
            gates.append(Gate(str(name), None, None, passed))
            continue
        threshold = _first(gate, "threshold", "rule", "condition")
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
            op = _first(gate, "op", "operator", "comparison")
            threshold = f"{op} {threshold}" if op else str(threshold)
        verdict = _first(gate, "passed", "pass", "ok", "result", "status")
        if isinstance(verdict, str):
            verdict = {"pass": True, "passed": True, "fail": False, "failed": False}.get(
                verdict.lower()
            )
        gates.append(
            Gate(
                str(name),
                _number(_first(gate, "value", "actual")),
                None if threshold is None else str(threshold),
                verdict if isinstance(verdict, bool) else None,
            )
        )
    return tuple(gates)


def exam_status(
    contents: Mapping[str, bytes], refs: Iterable[ArtifactRef], unreadable: list[str]
) -> ExamStatus:
    """Gives the exam status and gates from the latest exam-score/exam-adjudication."""
    scores = _latest(refs, lambda n: n == "exam-score.json")
    adjs = _latest(refs, lambda n: n == "exam-adjudication.json")
    score = _load(contents, scores[0], unreadable) if scores else None
    adj = _load(contents, adjs[0], unreadable) if adjs else None
    if score is None and adj is None:
        return ExamStatus(NOT_RUN)
    sources = tuple(r[0].path for r in (scores, adjs) if r)
    adj_state = None
    if adj is not None:
        found = _first(adj, "status", "terminal_status")
        adj_state = found if isinstance(found, str) else None
    if score is None:
        state = "PENDING_ADJUDICATION" if adj_state == "PENDING_ADJUDICATION" else "not scored"
        return ExamStatus(state, adj_state, (), sources)
    found = _first(score, "status", "final_status", "exam_status")
    return ExamStatus(
        found if isinstance(found, str) else "unknown",
        adj_state,
        _gates(score.get("gates")),
        sources,
    )


def _json_naming(word: str) -> Callable[[str], bool]:
    """Gives a match for JSON artifact names that hold ``word``."""
    return lambda name: name.endswith(".json") and word in name


def _eligibility_doc(doc: dict[str, Any]) -> dict[str, Any] | None:
    """Gives the object holding ``eligibility``: the document, or a benchmark inside it."""
    if doc.get("eligibility") in ("ELIGIBLE", "HOLD"):
        return doc
    for key in ("benchmark", "evidence", "report"):
        inner = doc.get(key)
        if isinstance(inner, dict) and inner.get("eligibility") in ("ELIGIBLE", "HOLD"):
            return inner
    return None


def coverage_status(
    contents: Mapping[str, bytes], refs: Iterable[ArtifactRef], unreadable: list[str]
) -> CoverageStatus:
    """Gives ELIGIBLE/HOLD overall and per category from the latest evidence or benchmark."""
    # Evidence (benchmark plus the ledger records that reviewed it) outranks a bare benchmark.
    for word in ("evidence", "benchmark"):
        for ref in _latest(refs, _json_naming(word)):
            doc = _load(contents, ref, unreadable)
            if not doc:
                continue
            bench = _eligibility_doc(doc)
            if bench is not None:
                return CoverageStatus(
                    bench["eligibility"],
                    _categories(bench),
                    (ref.path,),
                    _attribution(doc) if doc is not bench else None,
                )
    return CoverageStatus(NOT_RUN)


def _attribution(doc: dict[str, Any]) -> str | None:
    """Gives what evidence says about misses reviewed without the measured detector's
    attribution, or None when it says they were all explained (or says nothing)."""
    stated = doc.get("attribution")
    if not isinstance(stated, dict) or stated.get("state") in (None, "explained"):
        return None
    parts = [p for p in stated.get("categories") or [] if isinstance(p, dict)]
    unexplained = sorted(str(p.get("category")) for p in parts if p.get("status") != "explained")
    overridden = sorted(str(p.get("category")) for p in parts if p.get("binding") == "override")
    said = []
    if unexplained:
        said.append(f"not run for {', '.join(unexplained)}")
    if overridden:
        said.append(f"another model than the measured detector for {', '.join(overridden)}")
    return "; ".join(said) or str(stated.get("state"))


def _threat_ids(bench: dict[str, Any], category: str) -> tuple[str, ...]:
    mapping = bench.get("threat_mappings")
    entry = mapping.get(category) if isinstance(mapping, dict) else None
    if not isinstance(entry, dict):
        return ()
    ids = []
    for name in ("mitre_atlas", "owasp_llm_top10"):
        ids += [i for i in entry.get(name) or [] if isinstance(i, str)]
    return tuple(ids)


def _categories(bench: dict[str, Any]) -> tuple[CategoryStatus, ...]:
    findings: dict[str, list[str]] = {}
    for weak in bench.get("weak_categories") or []:
        if isinstance(weak, dict) and isinstance(weak.get("category"), str):
            findings.setdefault(weak["category"], []).append(str(weak.get("issue", "weak")))
    names: list[str] = []
    for row in bench.get("stratified_report") or []:
        if isinstance(row, dict) and isinstance(row.get("category"), str):
            names.append(row["category"])
    names += [c for c in findings if c not in names]
    return tuple(
        CategoryStatus(
            c,
            "HOLD" if c in findings else "ELIGIBLE",
            tuple(findings.get(c, ())),
            _threat_ids(bench, c),
        )
        for c in names
    )


def run_status(artifacts_dir: Path) -> RunStatus:
    """Gives every artifact and the three producers' latest conclusions, each artifact
    read once: the conclusions come from the bytes whose hashes are listed."""
    scan = scan_artifacts(Path(artifacts_dir))
    unreadable: list[str] = []
    refs = list(scan.refs)
    return RunStatus(
        scan.refs,
        contamination_status(scan.contents, refs, unreadable),
        exam_status(scan.contents, refs, unreadable),
        coverage_status(scan.contents, refs, unreadable),
        tuple(unreadable),
        scan.contents,
        scan.refused,
    )
