"""Shared spans of two texts, as character offsets in both originals.

Spans are the runs of identical canonical words in an order-preserving
alignment of the two texts (difflib's matching blocks), kept when at least
``min_words`` long, or when they cover a shorter text whole. Word ``k`` of
the canonical text is word ``k`` of the original, so word runs map back to
exact character offsets that the app can highlight.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import TypedDict

from engine.contamination.inputs.canonical_text import canonical_words, word_offsets

MIN_WORDS = 3
MAX_SPANS = 50


class Span(TypedDict):
    """One shared run: [start, end) in the eval text and in the matched text."""

    eval: list[int]
    match: list[int]
    words: int


def shared_spans(eval_text: str, match_text: str, *, min_words: int = MIN_WORDS) -> list[Span]:
    """Gives the shared word runs of two texts, longest first, at most ``MAX_SPANS``."""
    a_words, b_words = canonical_words(eval_text), canonical_words(match_text)
    a_at, b_at = word_offsets(eval_text), word_offsets(match_text)
    need = min(min_words, len(a_words), len(b_words))
    matcher = SequenceMatcher(None, a_words, b_words, autojunk=False)
    spans: list[Span] = []
    for block in matcher.get_matching_blocks():
        if block.size == 0 or block.size < need:
            continue
        spans.append(
            {
                "eval": [a_at[block.a][0], a_at[block.a + block.size - 1][1]],
                "match": [b_at[block.b][0], b_at[block.b + block.size - 1][1]],
                "words": block.size,
            }
        )
    spans.sort(key=lambda s: (-s["words"], s["eval"][0]))
    return spans[:MAX_SPANS]
