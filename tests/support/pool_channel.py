"""A channel that reads every pool document, for the tests: the same words in any order.

It flags a pool document whose words are exactly an eval item's words, each as
often, in any order: a leak the n-gram channels cannot see once the order is
shuffled. Its matcher (a dict from a text's sorted words to the eval items
holding them) is made once by the scan and shipped to every worker; ``match``
is a module-level function, so that a worker imports it by name, here from the
tests' package as a worker of a real channel would from the channels package.

``channel_module`` puts a module declaring a channel in a folder on the
channels package's path for the length of a block, the way
``registry.registered`` finds every channel.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import engine.contamination.channels as channels_package
from engine.contamination.channels.registry import Channel, PoolReading

# a module that declares this file's channel
DECLARES_WORD_BAG = "from tests.support.pool_channel import CHANNEL  # noqa: F401\n"


@contextmanager
def channel_module(
    folder: Path, monkeypatch: pytest.MonkeyPatch, source: str, name: str = "wordbag"
) -> Iterator[None]:
    """Puts a module of the given source on the channels package's path for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    full = f"{channels_package.__name__}.{name}"
    sys.modules.pop(full, None)
    with monkeypatch.context() as patch:
        patch.setattr(channels_package, "__path__", [*channels_package.__path__, str(folder)])
        try:
            yield
        finally:
            sys.modules.pop(full, None)


def with_shuffled_copies(
    rows: list[dict[str, Any]], eval_rows: list[dict[str, Any]], indexes: tuple[int, ...]
) -> list[dict[str, Any]]:
    """Gives the pool rows with the words of the eval items at ``indexes`` shuffled into
    new documents (``shuffled-0``, ...), one every thousand rows: leaks no n-gram sees."""
    out = list(rows)
    rng = random.Random(7)
    for k, index in enumerate(indexes):
        words = eval_rows[index]["question"].split()
        rng.shuffle(words)
        out.insert(1000 * (k + 1), {"id": f"shuffled-{k}", "text": " ".join(words)})
    return out


def _bag(text: str) -> tuple[str, ...]:
    return tuple(sorted(text.split()))


def word_bags(options: Any, eval_texts: list[str]) -> dict[tuple[str, ...], list[int]]:
    """Gives each eval item's sorted words, to the items that hold them."""
    bags: dict[tuple[str, ...], list[int]] = {}
    for index, text in enumerate(eval_texts):
        bags.setdefault(_bag(text), []).append(index)
    return bags


def same_words(
    bags: dict[tuple[str, ...], list[int]], texts: list[str]
) -> Iterator[tuple[int, int, float]]:
    """Gives (eval index, position, 1.0) for each document holding an eval item's words."""
    for position, text in enumerate(texts):
        for index in bags.get(_bag(text), ()):
            yield index, position, 1.0


CHANNEL = Channel(
    name="same_words",
    key="word_bag",
    enabled=lambda options: True,
    pool=PoolReading(
        word_bags, same_words, lambda options: {"rule": "same words, any order"}, copied=True
    ),
)
