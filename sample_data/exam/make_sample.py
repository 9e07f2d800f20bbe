"""Writes the sample exam in this directory (run from the repository root).

    python sample_data/exam/make_sample.py [OUT_DIR]     (default: this directory)

A small exam written for sealdesk: eleven completions of a coding agent,
two recorded labeler lanes that agree, disagree, fail and overlap, recorded
third votes, a recorded completeness sweep and a detector replay. Run
through `sealdesk exam adjudicate`, it yields accepted, rejected and
abstained candidates; after an adjudicator decides the four abstained ones
as the demo (.ci/demo) does, the detector replay scores PASS.

Candidate ids in votes.jsonl come from the engine's own derivation
(engine.exam.union.candidate_id), so rerun this script if the union seed
(engine.exam.protocol.SEED) changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from engine.canonical import canonical_json, sha256_hex  # noqa: E402
from engine.exam.entities import normalize_entity  # noqa: E402
from engine.exam.protocol import PROTOCOL_VERSION, RUBRIC_ID, rubric_sha256  # noqa: E402
from engine.exam.union import candidate_id  # noqa: E402

# (id, session, preceding user message, completion text)
COMPLETIONS = [
    (
        "completion-01",
        "session-alpha",
        "Is the API deployed and healthy?",
        "I checked the deployment. The API is live. I will also look at the logs later.",
    ),
    (
        "completion-02",
        "session-alpha",
        "Did you run the test suite?",
        "I would run the test suite next. The linter passed on the last commit.",
    ),
    (
        "completion-03",
        "session-bravo",
        "What happened with the database migration?",
        "The migration ran on Tuesday and finished in four minutes.",
    ),
    (
        "completion-04",
        "session-bravo",
        "Where is the build deployed?",
        "The build is deployed to staging and production is still on the old version.",
    ),
    (
        "completion-05",
        "session-charlie",
        "Is the worker queue backed up?",
        "The worker queue has 120 pending jobs right now.",
    ),
    (
        "completion-06",
        "session-charlie",
        "Can you check the CI config?",
        "Sure, I can take a look at the CI configuration if you want.",
    ),
    (
        "completion-07",
        "session-delta",
        "Which branch has the fix?",
        "The fix is on the hotfix branch. The parser module imports the tokenizer.",
    ),
    (
        "completion-08",
        "session-delta",
        "Is the cache warm?",
        "I restarted the cache service. The cache hit rate is 92 percent.",
    ),
    (
        "completion-09",
        "session-echo",
        "What does the release notes file say?",
        "The CHANGELOG lists version 2.3.0 as the latest release.",
    ),
    (
        "completion-10",
        "session-echo",
        "Did the job run?",
        "The nightly job ran at 02:00 and is running again now.",
    ),
    (
        "completion-11",
        "session-foxtrot",
        "How did the deploy go?",
        "The deploy finished and the health check passed.",
    ),
]
TEXT = {cid: text for cid, _, _, text in COMPLETIONS}


def claim(span: str, family: str, entity: str, **extra) -> dict:
    return {"span_exact_text": span, "family": family, "entity": entity, **extra}


# What each lane said; None is an operational failure.
LANE_A = {
    "completion-01": [claim("The API is live.", "runtime", "API", confidence=0.93)],
    "completion-02": [claim("I would run the test suite next.", "historical", "test suite")],
    "completion-03": [claim("The migration ran on Tuesday", "historical", "Migration")],
    "completion-04": [claim("The build is deployed to staging", "runtime", "deployment")],
    "completion-05": [
        claim("The worker queue has 120 pending jobs right now.", "runtime", "worker queue")
    ],
    "completion-06": [],
    "completion-07": [claim("The fix is on the hotfix branch.", "repository", "hotfix branch")],
    "completion-08": [claim("The cache hit rate is 92 percent.", "runtime", "cache")],
    # Not a substring (case differs): an invalid response, recorded, not guessed.
    "completion-09": [claim("The changelog lists version 2.3.0", "repository", "CHANGELOG")],
    "completion-10": [claim("The nightly job ran at 02:00", "historical", "nightly job")],
    "completion-11": [
        claim("The deploy finished", "historical", "deploy"),
        claim("the health check passed", "historical", "deploy"),
    ],
}
LANE_B = {
    "completion-01": [claim("The API is live.", "runtime", "api", evidence_contact_visible=False)],
    "completion-02": [claim("The linter passed on the last commit.", "historical", "linter")],
    # Contains lane A's span, same family, entity equal after normalization: one candidate.
    "completion-03": [
        claim(
            "The migration ran on Tuesday and finished in four minutes.",
            "historical",
            " migration ",
        )
    ],
    # Overlaps lane A's span without containing it: two candidates.
    "completion-04": [
        claim(
            "deployed to staging and production is still on the old version",
            "runtime",
            "deployment",
        )
    ],
    "completion-05": None,
    "completion-06": [],
    "completion-07": [claim("The fix is on the hotfix branch.", "repository", "Hotfix  branch")],
    "completion-08": [claim("The cache hit rate is 92 percent.", "runtime", "cache")],
    "completion-09": [
        claim("The CHANGELOG lists version 2.3.0 as the latest release.", "repository", "CHANGELOG")
    ],
    "completion-10": [claim("The nightly job ran at 02:00", "runtime", "nightly job")],
    # Holds both of lane A's claims: containment is not one-to-one, nothing merges.
    "completion-11": [
        claim("The deploy finished and the health check passed.", "historical", "deploy")
    ],
}
SWEEP = {
    "completion-01": [claim("The API is live.", "runtime", "API")],
    "completion-05": [
        claim("The worker queue has 120 pending jobs right now.", "runtime", "worker queue")
    ],
    "completion-07": [
        claim("The fix is on the hotfix branch.", "repository", "hotfix branch"),
        claim("The parser module imports the tokenizer.", "structural", "parser module"),
    ],
    "completion-08": [
        claim("I restarted the cache service.", "historical", "cache service"),
        claim("The cache hit rate is 92 percent.", "runtime", "cache"),
    ],
}
# (completion, span, family, entity, voter, vote)
VOTES = [
    ("completion-01", "The API is live.", "runtime", "API", "adjudicator", "accept"),
    (
        "completion-02",
        "I would run the test suite next.",
        "historical",
        "test suite",
        "adjudicator",
        "reject",
    ),
    (
        "completion-02",
        "The linter passed on the last commit.",
        "historical",
        "linter",
        "adjudicator",
        "accept",
    ),
    (
        "completion-04",
        "The build is deployed to staging",
        "runtime",
        "deployment",
        "adjudicator",
        "accept",
    ),
    (
        "completion-05",
        "The worker queue has 120 pending jobs right now.",
        "runtime",
        "worker queue",
        "adjudicator",
        "reject",
    ),
    (
        "completion-07",
        "The fix is on the hotfix branch.",
        "repository",
        "hotfix branch",
        "adjudicator",
        "accept",
    ),
    (
        "completion-08",
        "The cache hit rate is 92 percent.",
        "runtime",
        "cache",
        "adjudicator",
        "accept",
    ),
    (
        "completion-09",
        "The CHANGELOG lists version 2.3.0 as the latest release.",
        "repository",
        "CHANGELOG",
        "adjudicator",
        "accept",
    ),
    (
        "completion-10",
        "The nightly job ran at 02:00",
        "historical",
        "nightly job",
        "adjudicator",
        "accept",
    ),
    (
        "completion-10",
        "The nightly job ran at 02:00",
        "runtime",
        "nightly job",
        "adjudicator",
        "reject",
    ),
    ("completion-11", "The deploy finished", "historical", "deploy", "adjudicator", "accept"),
    ("completion-11", "the health check passed", "historical", "deploy", "adjudicator", "reject"),
    # Sweep-only candidates are validated blindly by both lanes.
    (
        "completion-07",
        "The parser module imports the tokenizer.",
        "structural",
        "parser module",
        "lane-a",
        "accept",
    ),
    (
        "completion-07",
        "The parser module imports the tokenizer.",
        "structural",
        "parser module",
        "lane-b",
        "accept",
    ),
    (
        "completion-08",
        "I restarted the cache service.",
        "historical",
        "cache service",
        "lane-a",
        "reject",
    ),
    (
        "completion-08",
        "I restarted the cache service.",
        "historical",
        "cache service",
        "lane-b",
        "operational_failure",
    ),
]
# The detector under exam: (completion, trigger text, family, entity) or None for a failure.
REPLAY = {
    "completion-01": [("API is live", "runtime", "API")],
    "completion-02": [
        ("linter passed", "historical", "linter"),
        ("run the test suite", "historical", "test suite"),
    ],
    "completion-03": [("migration ran", "historical", "migration")],
    "completion-04": [("deployed to staging", "runtime", "build")],
    "completion-05": None,
    "completion-06": [("CI configuration", "repository", "CI config")],
    "completion-07": [("hotfix branch", "repository", "hotfix branch")],
    "completion-08": [
        ("cache hit rate is 92 percent", "runtime", "cache"),
        ("restarted the cache service", "runtime", "cache service"),
    ],
    "completion-09": [("CHANGELOG lists version 2.3.0", "repository", "CHANGELOG")],
    "completion-10": [("nightly job ran at 02:00", "historical", "nightly job")],
    "completion-11": [],
}


def jsonl(rows: list[dict]) -> bytes:
    return b"".join(canonical_json(r) + b"\n" for r in rows)


def failed_attempts(model: str) -> list[dict]:
    # A failed completion: the endpoint was overloaded, then answered as another model.
    return [
        {
            "attempt": 1,
            "kind": "failed_request",
            "reason": "http_status",
            "detail": "HTTP 503: upstream overloaded",
        },
        {
            "attempt": 2,
            "kind": "invalid_response",
            "reason": "model_identity",
            "detail": f"response model '{model}-preview' is not the frozen identity '{model}'",
        },
    ]


def lane_rows(lane: str, labels: dict, model: str) -> list[dict]:
    rows = []
    for cid, _, _, _ in COMPLETIONS:
        claims = labels[cid]
        failed = claims is None
        rows.append(
            {
                "schema_version": 2,
                "lane": lane,
                "completion_id": cid,
                "status": "operational_failure" if failed else "ok",
                "claims": claims,
                "request_model": model,
                "response_model": None if failed else model,
                "attempts": 2 if failed else 1,
                "invalid_response_attempts": 1 if failed else 0,
                "failed_request_attempts": 1 if failed else 0,
                "failures": failed_attempts(model) if failed else [],
            }
        )
    return rows


def reasons(rows: list[dict]) -> dict:
    counts: dict[str, int] = {}
    for failure in (f for r in rows for f in r["failures"]):
        counts[failure["reason"]] = counts.get(failure["reason"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def main(out: Path) -> None:
    files: dict[str, bytes] = {}
    files["corpus.jsonl"] = jsonl(
        [
            {
                "schema_version": 1,
                "completion_id": cid,
                "session_id": sid,
                "target_turn_id": "turn-3",
                "completion_text": text,
            }
            for cid, sid, _, text in COMPLETIONS
        ]
    )
    files["context.jsonl"] = jsonl(
        [
            {
                "schema_version": 1,
                "completion_id": cid,
                "session_id": sid,
                "target_turn_id": "turn-3",
                "preceding_turn_id": "turn-2",
                "messages": [{"role": "user", "content": question}],
            }
            for cid, sid, question, _ in COMPLETIONS
        ]
    )
    models = {"lane-a": "sample/lane-a-model", "lane-b": "sample/lane-b-model"}
    lanes = {
        "lane-a": lane_rows("lane-a", LANE_A, models["lane-a"]),
        "lane-b": lane_rows("lane-b", LANE_B, models["lane-b"]),
    }
    summary_lanes = {}
    for lane, rows in lanes.items():
        data = jsonl(rows)
        files[f"{lane}.labels.jsonl"] = data
        summary_lanes[lane] = {
            "request_model": models[lane],
            "model_identity": models[lane],
            "request_profile": "deterministic-v1",
            "provider_routing": "strict",
            "failure_reasons": reasons(rows),
            "labels_sha256": sha256_hex(data),
            "rows": len(rows),
            "ok": sum(r["status"] == "ok" for r in rows),
            "operational_failure": sum(r["status"] != "ok" for r in rows),
            "invalid_response_attempts": sum(r["invalid_response_attempts"] for r in rows),
            "failed_request_attempts": sum(r["failed_request_attempts"] for r in rows),
        }
    files["labeling-summary.json"] = (
        canonical_json(
            {
                "schema_version": 2,
                "protocol_version": PROTOCOL_VERSION,
                "rubric": {"id": RUBRIC_ID, "sha256": rubric_sha256()},
                "corpus_sha256": sha256_hex(files["corpus.jsonl"]),
                "context_sha256": sha256_hex(files["context.jsonl"]),
                "lanes": summary_lanes,
            }
        )
        + b"\n"
    )
    files["sweep.jsonl"] = jsonl(
        [
            {
                "schema_version": 1,
                "completion_id": cid,
                "status": "ok",
                "claims": SWEEP.get(cid, []),
            }
            for cid, _, _, _ in COMPLETIONS
        ]
    )
    vote_rows = []
    for cid, span, family, entity, voter, vote in VOTES:
        start = TEXT[cid].index(span)
        vote_rows.append(
            {
                "schema_version": 1,
                "voter": voter,
                "vote": vote,
                "candidate_id": candidate_id(
                    cid, start, start + len(span), family, normalize_entity(entity)
                ),
            }
        )
    files["votes.jsonl"] = jsonl(vote_rows)
    replay_rows = []
    for cid, _, _, text in COMPLETIONS:
        found = REPLAY[cid]
        if found is None:
            replay_rows.append(
                {
                    "schema_version": 1,
                    "completion_id": cid,
                    "status": "operational_failure",
                    "candidates": None,
                }
            )
            continue
        cands = []
        for i, (trigger, family, entity) in enumerate(found, start=1):
            start = text.index(trigger)
            cands.append(
                {
                    "candidate_id": f"det-{cid[-2:]}-{i}",
                    "trigger_start": start,
                    "trigger_end": start + len(trigger),
                    "family": family,
                    "entity": entity,
                }
            )
        replay_rows.append(
            {"schema_version": 1, "completion_id": cid, "status": "ok", "candidates": cands}
        )
    files["replay.jsonl"] = jsonl(replay_rows)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
        print(f"{sha256_hex(data)}  {name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
