"""The registered channels: what a channel module declares, and how the scan finds them.

The pool stream is the scan's core: the n-gram, containment and embedding
channels and the duplicates inside the eval set run in one pass over the pool
(its shards, workers and resumable records), and the scan names them. Every
other channel runs on what that pass leaves, and is found, not named: its
module in this package declares ``CHANNEL = Channel(...)``, and
``registered()`` imports every module of the package and takes each
``CHANNEL`` it finds. The scan runs the enabled ones after the pool, the
report, the pairs artifact and the items take what each gives back
(``ChannelResult``) under its name and key, and nothing else in the package
lists them.

A channel sees the scan through a ``Context``: the settled options, the eval
set, what its ``prepare`` and ``preflight`` gave, the progress reporter, and
the pairs the scan flagged, each with its triage label. It gives back its
section of the report, the eval items it flags (a row of the pairs artifact
and a field of the item each), and what it keeps beside flagged pairs.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.contamination.inputs.evalset import EvalSet

# ("pool", eval index, pool index) or ("eval", lower eval index, higher eval index)
PairKey = tuple[str, int, int]


@dataclass(frozen=True)
class FlaggedPair:
    """A pair the scan flagged, as a channel reads it: its key, both texts, its best
    flagging score (Jaccard, containment or cosine) and its triage label."""

    key: PairKey
    eval_text: str
    match_text: str
    score: float
    triage: str


@dataclass(frozen=True)
class ItemFlag:
    """An eval item a channel flags: the fields of its row in the pairs artifact (beside
    the item's index and id and the channel's name), and what the item's payload holds
    under the channel's key."""

    index: int
    row: dict[str, Any]
    item: dict[str, Any]


@dataclass(frozen=True)
class ChannelResult:
    """What a channel found: its section of the report, the eval items it flags (one
    flag an item at most), and what it keeps beside flagged pairs, in their rows and
    the items' matches, under its key."""

    report: dict[str, Any]
    flags: tuple[ItemFlag, ...] = ()
    beside: Mapping[PairKey, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Context:
    """What a channel is given when it runs: the scan's settled options (a
    ``ScanOptions``, read by attribute: the options sit above the channels), the eval
    set, what its ``prepare`` and ``preflight`` gave, the progress reporter (None when
    nothing shows progress), and ``pairs``: a call giving the pairs the scan flagged, in
    the pairs artifact's order, each with its triage label (made only when called)."""

    options: Any
    eval: EvalSet
    prepared: Any
    rep: Any
    pairs: Callable[[], list[FlaggedPair]]


def _no_fields(options: Any) -> tuple[str, ...]:
    return ()


def _nothing(options: Any) -> Any:
    return None


def _as_prepared(options: Any, prepared: Any) -> Any:
    return prepared


@dataclass(frozen=True)
class Channel:
    """A channel as its module declares it (``CHANNEL = Channel(...)``).

    ``name`` names it where it flags (a row's and an item's ``channels``, the report's
    ``items_caught_by``); ``key`` names its section of the report, its field in a
    flagged item's payload and in a pair's row and match, and its counts
    (``<key>_suspected_items``, ``<key>_only_items``). ``enabled`` says from the options
    whether the scan runs it. ``flags_items``: whether it flags eval items (it is counted
    then, even when not enabled); a channel that only writes beside pairs is not.
    ``reads_pairs``: it runs after the channels that do not, on the pairs flagged.
    Before any row is read: ``eval_fields`` names the eval rows' fields it reads (a row
    without one is refused by line), ``prepare`` makes its cheap reads (a config file),
    and ``preflight``, after every channel's cheap reads, its checks that reach out.
    """

    name: str
    key: str
    enabled: Callable[[Any], bool]
    run: Callable[[Context], ChannelResult]
    flags_items: bool = True
    reads_pairs: bool = False
    eval_fields: Callable[[Any], tuple[str, ...]] = _no_fields
    prepare: Callable[[Any], Any] = _nothing
    preflight: Callable[[Any, Any], Any] = _as_prepared


@dataclass(frozen=True)
class ChannelRun:
    """A registered channel and what it found in one scan (None: not enabled)."""

    channel: Channel
    result: ChannelResult | None = None


def registered() -> tuple[Channel, ...]:
    """Gives every channel a module of this package declares as ``CHANNEL``: those that
    read only the eval set first, then those that read the flagged pairs, each group in
    order of module name; refuses two with one name or one key."""
    package = importlib.import_module(__package__ or "engine.contamination.channels")
    found: list[tuple[bool, str, Channel]] = []
    for module in pkgutil.iter_modules(package.__path__):
        declared = getattr(
            importlib.import_module(f"{package.__name__}.{module.name}"), "CHANNEL", None
        )
        if declared is None:
            continue
        if not isinstance(declared, Channel):
            raise TypeError(f"{package.__name__}.{module.name}.CHANNEL is not a Channel")
        found.append((declared.reads_pairs, module.name, declared))
    channels = tuple(channel for *_, channel in sorted(found, key=lambda f: f[:2]))
    for attribute in ("name", "key"):
        values = [getattr(c, attribute) for c in channels]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ValueError(f"two registered channels have the {attribute} {twice[0]!r}")
    return channels
