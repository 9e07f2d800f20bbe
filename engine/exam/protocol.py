"""The frozen exam protocol: version, seed, rubric, families, matcher and gates.

Everything an artifact's meaning depends on is in ``protocol()``; its
canonical SHA-256 is bound into every sealed artifact and checked by the
scorer, so changing a threshold or the random seed cannot go unnoticed.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from engine.canonical import canonical_sha256, sha256_hex

PROTOCOL_VERSION = "sealdesk-exam-v2"
SEED = "sealdesk-exam-v2-union-seed-20250601"
MATCHER_VERSION = "exam-matcher-v0.1"
RUBRIC_ID = "detector-gold-v0.2"
FAMILIES = ("historical", "structural", "repository", "runtime")
LANES = ("lane-a", "lane-b")
ADJUDICATOR = "adjudicator"
MAX_ATTEMPTS = 2  # one retry

# A gate: metric, comparison, threshold as an exact decimal string.
GATES: tuple[tuple[str, str, str], ...] = (
    ("precision", ">=", "0.70"),
    ("recall", ">=", "0.40"),
    ("operational_failure_rate", "<", "0.10"),
)

RUBRIC_TEXT = """\
Label claims in one assistant completion. A claim is a contiguous span of the
completion, copied exactly, in which the assistant itself asserts as fact
something that could be checked against the world:
  historical  something that happened (a command ran, a test passed, a file was edited)
  structural  how code or a system is built (a module imports another, a class has a method)
  repository  the state of a repository (a branch exists, a file holds a line, a PR is open)
  runtime     the live state of a running system (a service is up, a job is queued)
For each claim give span_exact_text (an exact substring of the completion),
family (one of the four above) and entity (the thing the claim is about, as
written). Claims are listed in source order and never overlap.
Do not label: questions, plans, promises, hypotheticals, negations,
quotations, code or examples, metaphor, conversational uses of keywords,
statements attributed to someone else without endorsement, and narration of
the agent's own or a subagent's workflow. Do not judge whether a claim is
true, supported or contradicted. Use only the completion and the preceding
message given; return no claims when there are none.
"""


def rubric_sha256() -> str:
    """Gives the SHA-256 of the frozen rubric text (UTF-8)."""
    return sha256_hex(RUBRIC_TEXT.encode("utf-8"))


def protocol() -> dict[str, Any]:
    """Gives the frozen protocol as a JSON object."""
    return {
        "version": PROTOCOL_VERSION,
        "rubric": {"id": RUBRIC_ID, "sha256": rubric_sha256()},
        "seed": SEED,
        "families": list(FAMILIES),
        "lanes": list(LANES),
        "third_voter": ADJUDICATOR,
        "max_attempts": MAX_ATTEMPTS,
        "entity_normalization": "NFKC, lowercase, trim, collapse Unicode whitespace to one "
        "ASCII space",
        "cluster_rule": "same family, same normalized entity, pairwise interval containment, "
        "one-to-one between lanes; overlap alone never merges",
        "vote_rule": "accept or reject with at least two matching votes of three, else abstain",
        "matcher": MATCHER_VERSION,
        "gates": [{"metric": m, "op": op, "threshold": t} for m, op, t in GATES],
    }


def protocol_sha256() -> str:
    """Gives the canonical SHA-256 of the protocol object."""
    return canonical_sha256(protocol())


def gate_passes(op: str, value: Fraction, threshold: str) -> bool:
    """Says whether an exact value passes a gate (compared as fractions, not floats)."""
    limit = Fraction(threshold)
    if op == ">=":
        return value >= limit
    if op == "<":
        return value < limit
    raise ValueError(f"unknown gate comparison {op!r}")
