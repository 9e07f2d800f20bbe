"""A scan the judge can be asked about, and a judge served on 127.0.0.1.

The eval set and pool are small and made so that the n-gram channels flag
four pool pairs and one internal pair, and the triage labels them:

    e0 ~ p0   copied, every number changed        unclear
    e0 ~ p1   copied whole                         likely leak
    e0 ~ p4   copied, every number changed again   unclear
    e1 ~ p2   copied, two of three numbers changed unclear
    e2 ~ e3   an eval item twice, numbers changed  unclear (internal)

The endpoint is ``tests.support.exam_endpoint.Endpoint`` (a real HTTP
server in a thread, which refuses a routing probe as a routing provider
does); ``judge_answer`` makes its answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.contamination.channels.judge import PREFLIGHT_PAIR, question
from engine.contamination.inputs.sources import resolve_source
from engine.contamination.scan import ScanConfig
from tests.support.exam_endpoint import chat

MODEL = "judge-model"
IDENTITY = "judge-model-2025-01"

# A long opening without numbers: the 13-word shingles before the numbers are shared,
# so a copy with its numbers changed is still flagged (containment >= 0.5).
_OPENING = (
    "On a bright and windy Sunday morning just before lunch the careful old gardener "
    "walks slowly across the quiet village to the busy market beside the river where "
    "the traders sell fruit and there "
)
_PEARS = _OPENING + (
    "Ann packs {} boxes with {} pears in each box and gives {} of the boxes to the "
    "neighbours. How many pears does Ann keep?"
)
_MILES = _OPENING + (
    "Bo drives {} miles each day for {} days and then rests for {} days at the lake "
    "house in the quiet hills far from town. How far does Bo drive?"
)
_PAINT = (
    "Cy mixes {} litres of red paint with {} litres of white paint in a big bucket in "
    "the garage of the old farm house. How much paint is there?"
)
EVAL = [
    {"id": "e0", "question": _PEARS.format(12, 8, 5)},
    {"id": "e1", "question": _MILES.format(40, 6, 3)},
    {"id": "e2", "question": _PAINT.format(7, 9)},
    {"id": "e3", "question": _PAINT.format(2, 5)},
]
POOL = [
    {"id": "p0", "text": _PEARS.format(30, 4, 7)},
    {"id": "p1", "text": _PEARS.format(12, 8, 5)},
    {"id": "p2", "text": _MILES.format(40, 9, 2)},
    {"id": "p3", "text": "nothing to see here"},
    {"id": "p4", "text": _PEARS.format(20, 6, 1)},
]
# the pairs the triage labels unclear, as the judge is asked about them
UNCLEAR = {
    (EVAL[0]["question"], POOL[0]["text"]),
    (EVAL[0]["question"], POOL[4]["text"]),
    (EVAL[1]["question"], POOL[2]["text"]),
    (EVAL[2]["question"], EVAL[3]["question"]),
}


def write_inputs(directory: Path) -> tuple[Path, Path]:
    """Gives the eval set and pool written as JSONL under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ev, pool = directory / "eval.jsonl", directory / "pool.jsonl"
    ev.write_text("".join(json.dumps(r) + "\n" for r in EVAL), encoding="utf-8")
    pool.write_text("".join(json.dumps(r) + "\n" for r in POOL), encoding="utf-8")
    return ev, pool


def write_config(path: Path, base_url: str, **extra: Any) -> Path:
    """Gives a judge config file (the exam's model config form) naming ``base_url``."""
    config = {
        "schema_version": 2,
        "base_url": base_url,
        "request_model": MODEL,
        "model_identity": IDENTITY,
        "request_profile": "deterministic-v1",
        **extra,
    }
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def scan_config(ev: Path, pool: Path, judge: Path | None, **judge_options: Any) -> ScanConfig:
    """Gives the n-gram-only scan of the two files, with the judge config if given."""
    return ScanConfig.of(
        eval=resolve_source("eval", str(ev), text_field="question", id_field="id"),
        pool=resolve_source("pool", str(pool), text_field="text", id_field="id"),
        embed=False,
        jobs=1,
        judge_config=judge,
        **judge_options,
    )


def asked(body: dict[str, Any]) -> tuple[str, str]:
    """Gives the two problems a judge request is about."""
    problems = json.loads(body["messages"][1]["content"])
    return problems["problem_a"], problems["problem_b"]


def is_preflight(body: dict[str, Any]) -> bool:
    """Says whether a request is the judge's preflight (or its routing probe)."""
    return body["messages"][1]["content"] == question(*PREFLIGHT_PAIR)


def judge_answer(
    pair: Callable[[str, str], Any],
) -> Callable[[str, dict[str, Any]], tuple[int, dict[str, str], Any]]:
    """Gives an endpoint's respond function: a well-formed verdict to the preflight, and
    ``pair(a, b)``'s answer (a verdict object, or a full (status, headers, body)) to a pair."""

    def respond(path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        if is_preflight(body):
            return 200, {}, chat(IDENTITY, {"same_problem": True, "reason": "reworded"})
        answer = pair(*asked(body))
        if isinstance(answer, tuple):
            return answer
        return 200, {}, chat(IDENTITY, answer)

    return respond


def by_numbers(a: str, b: str) -> dict[str, Any]:
    """A judge that calls two problems the same when they keep the first number."""
    same = [w for w in a.split() if w.isdigit()][:1] == [w for w in b.split() if w.isdigit()][:1]
    return {
        "same_problem": same,
        "reason": "the first quantity is kept" if same else "the quantities differ",
    }
