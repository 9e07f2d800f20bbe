"""The registered channels: what a channel module declares, and how the scan finds them.

Every channel but the core ones is found, not named: its module in this
package declares ``CHANNEL = Channel(...)``, and ``registered()`` imports
every module of the package and takes each ``CHANNEL`` it finds. The report,
the pairs artifact and the items take what each gives back under its name
and key, and nothing else in the package lists them. The core channels
(n-gram, containment, embedding, and the duplicates inside the eval set) are
the pool pass's own and are named by the scan.

A channel runs in one of two places. One that declares ``pool`` (a
``PoolReading``) reads every pool document in the pool pass itself, beside
the core channels: its matcher is made once from the eval set, shipped to
every worker (and every shard), and asked of each batch; its matches are kept
in the shards' resume records and become flagged pool pairs. Every other
channel runs after the pool pass on what it left: the eval set and the pairs
flagged.

A channel sees the scan through a ``Context``: the settled options, the eval
set, what its ``prepare`` and ``preflight`` gave, the progress reporter, the
pairs the scan flagged, each with its triage label, and its own pool matches.
It gives back its section of the report, the eval items it flags (a row of
the pairs artifact and a field of the item each), and what it keeps beside
flagged pairs.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.contamination.inputs.evalset import EvalSet

# ("pool", eval index, pool index) or ("eval", lower eval index, higher eval index)
PairKey = tuple[str, int, int]
# a pool channel's match: (eval index, pool index, score); in a batch, the document's
# position in the batch stands for the pool index
PoolHit = tuple[int, int, float]


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
    hits: tuple[PoolHit, ...] = ()  # a pool channel's own matches over the whole pool


@dataclass(frozen=True)
class PoolReading:
    """How a channel reads every pool document, in the pool pass.

    ``matcher(options, eval_texts)`` is called once, in the scan's process, with the
    eval items' canonical texts; what it gives must pickle (it is shipped to every
    worker, local or Ray). ``match(matcher, texts)`` is called in a worker with a batch
    of pool documents' canonical texts and gives each match as (eval index, position
    in the batch, score): a module-level function, so that a worker imports it by
    name. ``settings(options)`` names everything its matches depend on besides the
    eval set and the pool's bytes (its thresholds, its version): it keys the shards'
    resume records, so a record is reused only for the same question. ``copied``: a
    match means the eval text itself is in the document (the triage then weighs the
    pair as a copy, as it does an n-gram or containment flag).
    """

    matcher: Callable[[Any, list[str]], Any]
    match: Callable[[Any, list[str]], Iterable[PoolHit]]
    settings: Callable[[Any], dict[str, Any]]
    copied: bool = False


def _no_fields(options: Any) -> tuple[str, ...]:
    return ()


def _nothing(options: Any) -> Any:
    return None


def _as_prepared(options: Any, prepared: Any) -> Any:
    return prepared


def hits_report(context: Context) -> ChannelResult:
    """Gives a pool channel's section of the report when it declares no ``run`` of its
    own: how many pairs it matched, and over how many eval items."""
    return ChannelResult(
        {"pairs": len(context.hits), "items": len({e for e, _, _ in context.hits})}
    )


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
    ``pool``: it reads every pool document in the pool pass (``PoolReading``); its
    matches are flagged pool pairs, and the eval items in them flagged items (so
    ``flags_items`` stays True); its ``run`` then gets its matches as ``context.hits``
    and gives its section of the report (by default, ``hits_report``).
    Before any row is read: ``eval_fields`` names the eval rows' fields it reads (a row
    without one is refused by line), ``prepare`` makes its cheap reads (a config file),
    and ``preflight``, after every channel's cheap reads, its checks that reach out.
    """

    name: str
    key: str
    enabled: Callable[[Any], bool]
    run: Callable[[Context], ChannelResult] = hits_report
    pool: PoolReading | None = None
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


def _checked(declared: Any, where: str) -> Channel:
    """Gives a module's declaration, refusing one that is not a Channel, a channel that
    reads no pool and has no run, and a pool channel that would read the pairs or not
    flag what it matches."""
    if not isinstance(declared, Channel):
        raise TypeError(f"{where} is not a Channel")
    if declared.pool is None and declared.run is hits_report:
        raise TypeError(f"{where} reads no pool: give it a run")
    if declared.pool is not None and declared.reads_pairs:
        raise TypeError(f"{where} reads the pool, before any pair is flagged: not the pairs")
    if declared.pool is not None and not declared.flags_items:
        raise TypeError(f"{where} reads the pool: its matches flag pairs, so it flags items")
    return declared


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
        declared = _checked(declared, f"{package.__name__}.{module.name}.CHANNEL")
        found.append((declared.reads_pairs, module.name, declared))
    channels = tuple(channel for *_, channel in sorted(found, key=lambda f: f[:2]))
    for attribute in ("name", "key"):
        values = [getattr(c, attribute) for c in channels]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ValueError(f"two registered channels have the {attribute} {twice[0]!r}")
    return channels
