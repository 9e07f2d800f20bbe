"""Entity normalization shared by the union and the matcher."""

from __future__ import annotations

import re
import unicodedata

_WHITESPACE = re.compile(r"\s+")


def normalize_entity(text: str) -> str:
    """Gives NFKC, lowercased, trimmed text with whitespace runs as one ASCII space.

    Punctuation, aliases, word order and stems are deliberately left alone:
    ``"API"`` and ``"api "`` are one entity, ``"the API"`` and ``"API"`` are two.
    """
    folded = unicodedata.normalize("NFKC", text).lower().strip()
    return _WHITESPACE.sub(" ", folded)
