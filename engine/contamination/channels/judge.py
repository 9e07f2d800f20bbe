"""The judge: a model's suggestion on the pairs the triage calls unclear.

The decontamination literature asks a language model, after the embedding
search, whether two items are the same problem. sealdesk does so only where
its own triage cannot tell (a match that is neither a likely leak nor a
template sibling) and only when asked (``--judge-config``). The answer is a
*suggestion* written beside the pair: it changes no label, no order and no
decision; the reviewer reads it with the texts and decides.

A judge is a model config of the exam's form (``engine.endpoint.chat``): a
frozen model and identity, a request profile, strict routing unless opted
out. It passes the same preflight as the exam's models before any pair is
sent, each pair is asked with a strict schema (``VERDICT_SCHEMA``) and tried
at most twice, and a pair without an answer keeps the failure reasons of the
exam's vocabulary. A cap bounds what a scan spends: each eval item's
best-scoring unclear pair goes before any item's second, and pairs over the
cap are counted, never sent. A dry run counts and sends nothing.

A registered channel (``CHANNEL``) that flags nothing: with ``--judge-config``
the scan reads the config and runs the preflight before the first row, and runs
the judge last, on the flagged pairs; its suggestions go beside the pairs under
``judge``, and its account into the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.canonical import canonical_json, sha256_hex
from engine.contamination.channels.registry import (
    Channel,
    ChannelResult,
    Context,
    FlaggedPair,
    PairKey,
)
from engine.endpoint.chat import ModelSpec, ask, client, load_model, request_body
from engine.endpoint.failures import Failure, tally
from engine.endpoint.preflight import Check, Synthetic, preflight, require
from engine.rows import Row

# The triage label of the pairs the judge is asked about (report.triage.UNCLEAR: the
# report sits above the channels, and hands each pair's label down as text).
UNCLEAR = "unclear"
SCHEMA_NAME = "same_problem_verdict"
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["same_problem", "reason"],
    "properties": {
        "same_problem": {"type": "boolean"},
        "reason": {"type": "string"},
    },
}
TASK = """\
You are shown two problems, problem_a and problem_b, as JSON. Say whether they
are the same problem: problem_b asks the same question about the same
quantities as problem_a, perhaps reworded, reordered, renamed or shortened, so
that an answer to one is an answer to the other. Problems with the same story
shape but other numbers, other quantities or another question are different
problems, however alike they read. Judge only from the two texts.
Answer with same_problem (true or false) and reason: one short sentence naming
what decides it.
"""
# The reason is the model's text, kept beside the pair; a runaway answer is cut here.
REASON_LIMIT = 1000
SUGGESTION = "suggestion: shown beside the pair; never a label, an order or a decision"
# A synthetic pair for the preflight (a reworded copy: the same problem).
PREFLIGHT_PAIR = (
    "A baker has 12 trays with 8 rolls on each. How many rolls does the baker have?",
    "How many rolls are there on 12 trays if each tray holds 8 rolls?",
)


@dataclass(frozen=True)
class Verdict:
    """What the judge answered: the same problem or not, and why."""

    same_problem: bool
    reason: str


@dataclass(frozen=True)
class Judged:
    """One pair's request: the verdict (None when every attempt failed) and its failures."""

    verdict: Verdict | None
    attempts: int
    failures: tuple[Failure, ...]

    def to_json(self, model_identity: str) -> dict[str, Any]:
        """Gives what is kept beside the pair in the pairs artifact and the item."""
        out: dict[str, Any] = {
            "role": "suggestion",
            "model": model_identity,
            "attempts": self.attempts,
            "failures": [f.to_json() for f in self.failures],
        }
        if self.verdict is None:
            return {**out, "verdict": None, "reason": None, "failed": self.failures[-1].reason}
        verdict = "same_problem" if self.verdict.same_problem else "different_problem"
        return {**out, "verdict": verdict, "reason": self.verdict.reason}


@dataclass(frozen=True)
class JudgeResult:
    """What the judge did in one scan: the pairs sent and their answers, and the counts."""

    spec: ModelSpec
    max_pairs: int
    unclear: int
    to_send: int  # within the cap (sent, unless a dry run)
    dry_run: bool
    judged: dict[PairKey, Judged] = field(default_factory=dict)
    preflight: tuple[Check, ...] = ()

    @property
    def over_cap(self) -> int:
        """Gives how many unclear pairs the cap kept from the judge."""
        return self.unclear - self.to_send

    def beside(self) -> dict[PairKey, dict[str, Any]]:
        """Gives what the pairs artifact and the items keep beside each pair sent."""
        return {key: j.to_json(self.spec.model_identity) for key, j in self.judged.items()}

    def to_json(self) -> dict[str, Any]:
        """Gives the report's account: the model, what was sent, answered, failed and why."""
        answered = [j.verdict for j in self.judged.values() if j.verdict is not None]
        failed = [j for j in self.judged.values() if j.verdict is None]
        return {
            "role": SUGGESTION,
            "model": self.spec.describe(),
            "selects": "pairs the triage labels unclear",
            "task_sha256": sha256_hex(TASK.encode("utf-8")),
            "schema": SCHEMA_NAME,
            "dry_run": self.dry_run,
            "max_pairs": self.max_pairs,
            "unclear_pairs": self.unclear,
            "would_send" if self.dry_run else "sent": self.to_send,
            "over_cap": self.over_cap,
            "judged": len(answered),
            "same_problem": sum(v.same_problem for v in answered),
            "different_problem": sum(not v.same_problem for v in answered),
            "failed": len(failed),
            # a failed pair's reason is its last attempt's; every failed attempt is tallied too
            "failed_by_reason": tally(j.failures[-1] for j in failed),
            "failed_attempts_by_reason": tally(f for j in self.judged.values() for f in j.failures),
            "preflight": [c.line() for c in self.preflight],
        }


def load_judge(path: Path) -> ModelSpec:
    """Gives the judge's model spec from its config file (the exam's model config form)."""
    return load_model(path, "judge")


def check_verdict(value: Any) -> Verdict:
    """Gives the verdict an answer holds, or raises InputError (a ``schema`` failure)."""
    row = Row(value, "<judge answer>", None)
    obj = row.fields(value, {"same_problem", "reason"})
    if not isinstance(obj["same_problem"], bool):
        raise row.error("must be true or false", "same_problem")
    return Verdict(obj["same_problem"], row.text(obj, "reason", empty=True)[:REASON_LIMIT])


def question(eval_text: str, match_text: str) -> str:
    """Gives the user message of one request: both problems as canonical JSON."""
    return canonical_json({"problem_a": eval_text, "problem_b": match_text}).decode("utf-8")


def synthetic(spec: ModelSpec) -> Synthetic:
    """Gives the judge's preflight request, built exactly as a pair's request is."""
    return Synthetic(
        request_body(spec, TASK, question(*PREFLIGHT_PAIR), SCHEMA_NAME, VERDICT_SCHEMA),
        check_verdict,
        "the answer follows the strict verdict schema",
    )


def require_judge_preflight(spec: ModelSpec) -> list[Check]:
    """Gives the judge's four preflight checks when none failed; else PreflightFailed."""
    return require(preflight([(spec, synthetic(spec))]))


def choose(pairs: list[FlaggedPair], max_pairs: int) -> list[FlaggedPair]:
    """Gives the pairs within the cap: every eval item's best-scoring unclear pair before
    any item's second, so one item with many look-alikes cannot spend the cap alone."""
    by_item: dict[int, list[FlaggedPair]] = {}
    for pair in pairs:
        by_item.setdefault(pair.key[1], []).append(pair)
    ranked = []
    for item, found in by_item.items():
        for rank, pair in enumerate(sorted(found, key=lambda p: (-p.score, p.key))):
            ranked.append((rank, item, pair.key, pair))
    ranked.sort(key=lambda r: r[:3])
    return [pair for *_, pair in ranked[:max_pairs]]


def run_judge(
    spec: ModelSpec,
    pairs: list[FlaggedPair],
    max_pairs: int,
    *,
    dry_run: bool = False,
    checks: tuple[Check, ...] = (),
    advance: Callable[[], None] | None = None,
) -> JudgeResult:
    """Gives the judge's answers on the chosen pairs (none sent in a dry run)."""
    chosen = choose(pairs, max_pairs)
    judged: dict[PairKey, Judged] = {}
    if not dry_run and chosen:
        with client() as http:
            for pair in chosen:
                outcome = ask(
                    http,
                    spec,
                    TASK,
                    question(pair.eval_text, pair.match_text),
                    SCHEMA_NAME,
                    VERDICT_SCHEMA,
                    check_verdict,
                )
                judged[pair.key] = Judged(outcome.value, outcome.attempts, outcome.failures)
                if advance is not None:
                    advance()
    return JudgeResult(spec, max_pairs, len(pairs), len(chosen), dry_run, judged, checks)


def _preflight(options: Any, spec: ModelSpec) -> tuple[ModelSpec, tuple[Check, ...]]:
    """Gives the judge's spec and its passed preflight checks (none in a dry run, which
    sends nothing at all)."""
    return spec, () if options.judge_dry_run else tuple(require_judge_preflight(spec))


def judge_unclear_pairs(context: Context) -> ChannelResult:
    """Gives the judge's account, and its suggestions beside the unclear pairs it was sent."""
    spec, checks = context.prepared
    o = context.options
    pairs = [pair for pair in context.pairs() if pair.triage == UNCLEAR]
    stage = None
    if context.rep is not None and not o.judge_dry_run:
        total = min(len(pairs), o.judge_max_pairs)
        stage = context.rep.stage("judging unclear pairs", total=total, unit="pairs")
    result = run_judge(
        spec,
        pairs,
        o.judge_max_pairs,
        dry_run=o.judge_dry_run,
        checks=checks,
        advance=(lambda: stage.advance(1)) if stage is not None else None,
    )
    if stage is not None:
        stage.finish()
    return ChannelResult(result.to_json(), beside=result.beside())


CHANNEL = Channel(
    name="judge",
    key="judge",
    enabled=lambda options: options.judge_config is not None,
    run=judge_unclear_pairs,
    flags_items=False,
    reads_pairs=True,
    prepare=lambda options: load_judge(options.judge_config),
    preflight=_preflight,
)
