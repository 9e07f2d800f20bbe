"""Builders of small exam input files for the exam tests (each test makes its own)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.canonical import canonical_json, sha256_hex
from engine.exam.entities import normalize_entity
from engine.exam.protocol import PROTOCOL_VERSION, RUBRIC_ID, rubric_sha256
from engine.exam.union import candidate_id


def claim(span: str, family: str = "runtime", entity: str = "API") -> dict[str, Any]:
    """Gives one claim object."""
    return {"span_exact_text": span, "family": family, "entity": entity}


def cand_id(text: str, span: str, family: str, entity: str, cid: str = "c1") -> str:
    """Gives the candidate id the engine derives for a span of a text."""
    start = text.index(span)
    return candidate_id(cid, start, start + len(span), family, normalize_entity(entity))


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(canonical_json(r) + b"\n" for r in rows)


@dataclass
class Exam:
    """An exam on disk: paths, their hashes, and the CLI options that name them."""

    dir: Path
    texts: dict[str, str]
    paths: dict[str, Path] = field(default_factory=dict)

    def sha(self, name: str) -> str:
        return sha256_hex(self.paths[name].read_bytes())

    def input_paths(self):
        from engine.exam.inputs import InputPaths

        return InputPaths(
            self.paths["corpus"],
            self.paths["context"],
            self.paths["lane-a"],
            self.paths["lane-b"],
            self.paths["summary"],
            self.sha("context"),
            self.sha("summary"),
        )

    def rater_files(self):
        from engine.exam.runs import RaterFiles

        votes = self.paths.get("votes")
        sweep = self.paths.get("sweep")
        return RaterFiles(
            votes, self.sha("votes") if votes else None, sweep, self.sha("sweep") if sweep else None
        )

    def context_args(self) -> list:
        """Gives the options naming the corpus and the context, with the context's hash."""
        return [
            "--corpus",
            self.paths["corpus"],
            "--context",
            self.paths["context"],
            "--expected-context-sha256",
            self.sha("context"),
        ]

    def label_args(self, config: object, out: object) -> tuple:
        """Gives ``exam label`` on this exam with a labelers config, writing into out."""
        return ("exam", "label", *self.context_args(), "--config", config, "--out-dir", out)

    def lanes_args(self, lane_a: Path, lane_b: Path, summary: Path) -> list:
        """Gives the inputs of ``exam adjudicate``: the corpus and context, both lanes' label
        files and the labeling summary, with its hash."""
        return [
            *self.context_args(),
            "--lane-a",
            lane_a,
            "--lane-b",
            lane_b,
            "--labeling-summary",
            summary,
            "--expected-labeling-summary-sha256",
            sha256_hex(summary.read_bytes()),
        ]

    def cli_inputs(self) -> list[str]:
        args = self.lanes_args(self.paths["lane-a"], self.paths["lane-b"], self.paths["summary"])
        for name in ("votes", "sweep"):
            if name in self.paths:
                args += [f"--{name}", self.paths[name], f"--expected-{name}-sha256", self.sha(name)]
        return [str(a) for a in args]


def lane_rows(lane: str, labels: dict[str, list | None]) -> list[dict[str, Any]]:
    """Gives lane rows: a list of claims is ok, None an operational failure."""
    rows = []
    for cid, claims in labels.items():
        failed = claims is None
        rows.append(
            {
                "schema_version": 2,
                "lane": lane,
                "completion_id": cid,
                "status": "operational_failure" if failed else "ok",
                "claims": claims,
                "request_model": f"m-{lane}",
                "response_model": None if failed else f"m-{lane}",
                "attempts": 2 if failed else 1,
                "invalid_response_attempts": 0,
                "failed_request_attempts": 2 if failed else 0,
            }
        )
    return rows


def summary_for(
    corpus: bytes, context: bytes, lanes: dict[str, bytes], rows: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """Gives a labeling summary consistent with the given files."""
    entries = {}
    for lane, data in lanes.items():
        r = rows[lane]
        entries[lane] = {
            "request_model": f"m-{lane}",
            "model_identity": f"m-{lane}",
            "request_profile": "deterministic-v1",
            "labels_sha256": sha256_hex(data),
            "rows": len(r),
            "ok": sum(x["status"] == "ok" for x in r),
            "operational_failure": sum(x["status"] != "ok" for x in r),
            "invalid_response_attempts": sum(x["invalid_response_attempts"] for x in r),
            "failed_request_attempts": sum(x["failed_request_attempts"] for x in r),
        }
    return {
        "schema_version": 2,
        "protocol_version": PROTOCOL_VERSION,
        "rubric": {"id": RUBRIC_ID, "sha256": rubric_sha256()},
        "corpus_sha256": sha256_hex(corpus),
        "context_sha256": sha256_hex(context),
        "lanes": entries,
    }


def write_exam(
    directory: Path,
    texts: dict[str, str],
    lane_a: dict[str, list | None],
    lane_b: dict[str, list | None],
    *,
    votes: list[dict[str, Any]] | None = None,
    sweep: dict[str, list | str | None] | None = None,
) -> Exam:
    """Writes corpus, context, both lanes, a consistent summary, and optional rater files."""
    directory.mkdir(parents=True, exist_ok=True)
    exam = Exam(directory, texts)
    corpus = jsonl(
        [
            {
                "schema_version": 1,
                "completion_id": cid,
                "session_id": "s1",
                "target_turn_id": "turn-1",
                "completion_text": text,
            }
            for cid, text in texts.items()
        ]
    )
    context = jsonl(
        [
            {
                "schema_version": 1,
                "completion_id": cid,
                "session_id": "s1",
                "target_turn_id": "turn-1",
                "preceding_turn_id": "turn-0",
                "messages": [{"role": "user", "content": f"question for {cid}?"}],
            }
            for cid in texts
        ]
    )
    rows = {"lane-a": lane_rows("lane-a", lane_a), "lane-b": lane_rows("lane-b", lane_b)}
    lanes = {lane: jsonl(r) for lane, r in rows.items()}
    files = {
        "corpus": corpus,
        "context": context,
        **lanes,
        "summary": canonical_json(summary_for(corpus, context, lanes, rows)),
    }
    names = {
        "corpus": "corpus.jsonl",
        "context": "context.jsonl",
        "lane-a": "lane-a.labels.jsonl",
        "lane-b": "lane-b.labels.jsonl",
        "summary": "labeling-summary.json",
    }
    if votes is not None:
        files["votes"] = jsonl([{"schema_version": 1, **v} for v in votes])
        names["votes"] = "votes.jsonl"
    if sweep is not None:
        # per completion: a list of claims (ok), None (operational_failure) or "not_run"
        files["sweep"] = jsonl(
            [
                {
                    "schema_version": 1,
                    "completion_id": cid,
                    "status": (
                        "not_run"
                        if c == "not_run"
                        else "operational_failure"
                        if c is None
                        else "ok"
                    ),
                    "claims": c if isinstance(c, list) else None,
                }
                for cid, c in sweep.items()
            ]
        )
        names["sweep"] = "sweep.jsonl"
    for key, data in files.items():
        path = directory / names[key]
        path.write_bytes(data)
        exam.paths[key] = path
    return exam


def build(exam: Exam) -> dict[str, Any]:
    """Gives the sealed (unresolved) artifact of an exam, built in process."""
    from engine.exam.adjudicate import build_core
    from engine.exam.artifact import code_identity, seal
    from engine.exam.inputs import load_inputs
    from engine.exam.runs import open_raters

    inputs = load_inputs(exam.input_paths())
    raters, bound = open_raters(exam.rater_files(), inputs.completions)
    return seal(build_core(inputs, raters, bound, code_identity()), {}, None)


def candidates(art: dict[str, Any], cid: str = "c1") -> list[dict[str, Any]]:
    """Gives one completion's candidates, sorted by (start, end, family) for readable tests."""
    comp = next(c for c in art["completions"] if c["completion_id"] == cid)
    return sorted(comp["candidates"], key=lambda c: (c["start"], c["end"], c["family"]))


def votes_of(cand: dict[str, Any]) -> list[str]:
    """Gives the vote values of a candidate in voter order (lane-a, lane-b, adjudicator)."""
    return [v["vote"] for v in cand["votes"]]


def write_artifact_file(path: Path, art: dict[str, Any]) -> str:
    """Writes a sealed artifact with its sidecar; gives its SHA-256."""
    from engine.artifacts import write_json_artifact

    return write_json_artifact(path, art)


def write_replay(path: Path, rows: dict[str, list[tuple] | None], texts: dict[str, str]) -> Path:
    """Writes a detector replay: per completion a list of (id, trigger, family, entity) or None."""
    out = []
    for cid, found in rows.items():
        if found is None:
            out.append(
                {
                    "schema_version": 1,
                    "completion_id": cid,
                    "status": "operational_failure",
                    "candidates": None,
                }
            )
            continue
        cands = []
        for did, trigger, family, entity in found:
            start = texts[cid].index(trigger)
            cands.append(
                {
                    "candidate_id": did,
                    "trigger_start": start,
                    "trigger_end": start + len(trigger),
                    "family": family,
                    "entity": entity,
                }
            )
        out.append({"schema_version": 1, "completion_id": cid, "status": "ok", "candidates": cands})
    path.write_bytes(jsonl(out))
    return path


def split_exam_run(directory: Path, ws, run_id: str = "ex1") -> dict[str, str]:
    """Gives {span: item id} after adjudicating a run whose lanes split on two candidates
    (no third vote, sweep complete): the run stays PENDING_ADJUDICATION until an
    adjudicator decides both and ``exam resolve`` folds the decisions in."""
    from engine.exam.runs import adjudicate

    text = "The API is live. The cache is warm."
    exam = write_exam(
        directory,
        {"c1": text},
        {"c1": [claim("The API is live.", "runtime", "API")]},
        {"c1": [claim("The cache is warm.", "runtime", "cache")]},
        sweep={"c1": []},
    )
    result = adjudicate(ws, exam.input_paths(), exam.rater_files(), run_id)
    assert result.status == "PENDING_ADJUDICATION" and result.queued == 2
    return {i["title"].split("'")[1]: i["item_id"] for i in ws.items(queue="adjudication")}
