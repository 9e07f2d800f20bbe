"""From what the channels found to the report, the flagged rows and backlog items.

Everything here is pure: the same findings give the same bytes, so a
re-scan of unchanged data gives the same item ids and the workspace keeps
one copy of each item.

The core pool and internal channels are named here; a registered channel
(``channels.registry``) is not: its flags become rows and items (a pool
channel's, pool pairs beside the core channels' own), its section of the
report, its scores and its fields beside pairs go under its key, and its
counts join the report's, whatever channel it is.
"""

from __future__ import annotations

import os
import platform
import weakref
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.backlog import BacklogItem
from engine.canonical import canonical_sha256, sha256_hex
from engine.contamination.channels.internal import InternalPair, clusters
from engine.contamination.channels.ngram import NgramSettings
from engine.contamination.channels.numbers import NumberRarity, quantities
from engine.contamination.channels.registry import ChannelRun, FlaggedPair, PairKey
from engine.contamination.inputs.canonical_text import numbers_only_differ
from engine.contamination.inputs.evalset import EvalSet
from engine.contamination.pool.merge import PoolDoc
from engine.contamination.report.spans import shared_spans
from engine.contamination.report.triage import (
    LABELS,
    item_label,
    rule_report,
    triage,
)
from engine.roles import FLAGGED_PAIRS

QUEUE = FLAGGED_PAIRS
POOL_CHANNELS = ("ngram", "containment", "embed")
INTERNAL = "internal"
COPIED = {"ngram", "containment"}  # channels that find the text itself copied
# a paraphrase flag whose cosine is this close above the threshold is a judgement call
# (a rewording or a same-template sibling): the headline counts the items resting on one
NEAR_THRESHOLD = 0.05
FLAGGED_LABEL = "flagged (pending review)"
LEAKAGE_LABEL = "leakage rate (confirmed by review)"
RECOMMENDED_ACTION = (
    "review every flagged eval item in the flagged_pairs queue (sealdesk review), likely "
    "leaks first (the default order); accept a confirmed leak or duplicate, reject a false "
    "positive (items tagged template_sibling can be filtered and checked together); then run "
    "`sealdesk contamination clean`, which drops accepted items, reports the confirmed "
    "leakage rate, writes the clean set and its content hash, and re-checks statistical "
    "power, since dropping items shrinks n"
)


@dataclass(frozen=True)
class PoolPair:
    """An eval item and a pool document, with every measure sealdesk has for them."""

    eval_index: int
    pool_index: int
    shared: int
    eval_shingles: int
    doc_shingles: int
    minhash_jaccard: float
    cosine: float | None
    in_top_k: bool
    found: Mapping[str, float] = field(default_factory=dict)  # pool channel name -> score

    @property
    def jaccard(self) -> float:
        """Gives the exact Jaccard."""
        union = self.eval_shingles + self.doc_shingles - self.shared
        return self.shared / union if union else 0.0

    @property
    def containment(self) -> float:
        """Gives the exact containment of the eval item in the document."""
        return self.shared / self.eval_shingles if self.eval_shingles else 0.0


@dataclass(frozen=True)
class Findings:
    """Everything the channels found, ready to be written."""

    eval: EvalSet
    pool_provenance: dict[str, Any]
    settings: NgramSettings
    pool_pairs: list[PoolPair]
    pool_docs: dict[int, PoolDoc]
    internal: list[InternalPair]
    internal_minhash: dict[tuple[int, int], float]
    cosine_threshold: float | None
    top_k: int
    embedding: dict[str, Any] = field(default_factory=lambda: {"enabled": False})
    search: dict[str, Any] = field(default_factory=dict)
    pool_shards: list[dict[str, Any]] = field(default_factory=list)
    pool_scan: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    # every registered channel, in the order they run, and what each found (None: not run)
    channels: tuple[ChannelRun, ...] = ()

    def flagging(self) -> list[ChannelRun]:
        """Gives the registered channels that flag eval items (not pool pairs), run or
        not; refuses one named as a core channel is."""
        return [run for run in self._named() if run.channel.pool is None]

    def reading_pool(self) -> list[ChannelRun]:
        """Gives the registered channels that flag pool pairs, run or not, in the
        registry's order; refuses one named as a core channel is."""
        return [run for run in self._named() if run.channel.pool is not None]

    def copied(self) -> set[str]:
        """Gives the channels whose flag means the eval text itself is in the document."""
        return COPIED | {
            run.channel.name
            for run in self.reading_pool()
            if run.channel.pool is not None and run.channel.pool.copied
        }

    def _named(self) -> list[ChannelRun]:
        runs = [run for run in self.channels if run.channel.flags_items]
        for run in runs:
            if run.channel.name in (*POOL_CHANNELS, INTERNAL):
                raise ValueError(
                    f"a registered channel is named {run.channel.name!r}, as a core one is"
                )
        return runs

    def pool_scores(self, pair: PoolPair) -> dict[str, float | None]:
        """Gives each registered pool channel's score of a pair under its key (those
        that matched it)."""
        return {
            run.channel.key: _r(pair.found[run.channel.name])
            for run in self.reading_pool()
            if run.channel.name in pair.found
        }

    def beside(self, key: PairKey) -> dict[str, Any]:
        """Gives what the registered channels keep beside a pair, each under its key."""
        out: dict[str, Any] = {}
        for run in self.channels:
            if run.result is not None and key in run.result.beside:
                out[run.channel.key] = run.result.beside[key]
        return out


def _put(target: dict[str, Any], fields: dict[str, Any], where: str) -> None:
    """Adds a registered channel's fields to a row, a match, an item or the report;
    refuses one that would overwrite a field already there."""
    taken = sorted(set(fields) & set(target))
    if taken:
        raise ValueError(f"a registered channel's field {taken[0]!r} is taken in the {where}")
    target.update(fields)


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def pool_channels(pair: PoolPair, findings: Findings) -> list[str]:
    """Gives the channels that flag a pool pair, in the order ngram, containment, embed,
    then the registered pool channels in the registry's order."""
    out = findings.settings.channels(pair.jaccard, pair.containment)
    if (
        pair.in_top_k
        and pair.cosine is not None
        and findings.cosine_threshold is not None
        and pair.cosine >= findings.cosine_threshold
    ):
        out.append("embed")
    out.extend(
        run.channel.name for run in findings.reading_pool() if run.channel.name in pair.found
    )
    return out


def internal_via(pair: InternalPair, findings: Findings) -> list[str]:
    """Gives what makes two eval items duplicates: ngram, containment and/or embed."""
    out = findings.settings.channels(pair.jaccard, pair.containment) if pair.shared else []
    if (
        pair.cosine is not None
        and findings.cosine_threshold is not None
        and pair.cosine >= findings.cosine_threshold
    ):
        out.append("embed")
    return out


def number_rarity(findings: Findings) -> NumberRarity:
    """Gives the document frequencies the triage weighs numbers by: over the eval set and
    the pool documents the scan flagged, counted for the values the eval set states.

    Not over the whole pool: reading every number of every pool document costs about
    0.4 ms a document (400 s at a million), more than the scan it would serve. The
    flagged documents are the look-alikes themselves, so a value they restate often (a
    template's "10 minutes", "half") weighs little, as it should. About 1 s for 1,319
    eval items and 400 flagged documents; the rows and the items share one count.
    """
    cached = _RARITY.get("last")
    if cached is not None and cached[0]() is findings:
        return cached[1]
    per_item = [
        {v for q in quantities(item.text) for v in q.keys()} for item in findings.eval.items
    ]
    wanted = set().union(*per_item)
    docs = (findings.pool_docs[k].text for k in sorted(findings.pool_docs))
    pool = NumberRarity.of_texts(docs, only=wanted)
    counts = Counter(pool.counts)
    for values in per_item:
        counts.update(values)
    rarity = NumberRarity(pool.docs + len(per_item), dict(counts))
    _RARITY["last"] = (weakref.ref(findings), rarity)
    return rarity


# The last scan's count, so that its rows and its items read the pool documents once.
_RARITY: dict[str, tuple[weakref.ref[Findings], NumberRarity]] = {}


def _cluster_of(findings: Findings) -> tuple[list[list[int]], dict[int, int]]:
    groups = clusters([(p.a, p.b) for p in findings.internal])
    return groups, {member: k for k, group in enumerate(groups) for member in group}


def flagged_rows(findings: Findings) -> list[dict[str, Any]]:
    """Gives flagged_pairs.jsonl: one row per pair (indices, channel, Jaccard), ids and measures."""
    items = findings.eval.items
    rarity = number_rarity(findings)
    copied = findings.copied()
    rows: list[dict[str, Any]] = []
    for pair in sorted(findings.pool_pairs, key=lambda p: (p.eval_index, p.pool_index)):
        channels = pool_channels(pair, findings)
        if not channels:
            continue
        doc = findings.pool_docs[pair.pool_index]
        row = {
            "test_idx": pair.eval_index,
            "test_id": items[pair.eval_index].id,
            "pool_idx": pair.pool_index,
            "pool_id": doc.id,
            "channel": channels[0],
            "channels": channels,
            "jaccard": _r(pair.jaccard),
            "containment": _r(pair.containment),
            "minhash_jaccard": _r(pair.minhash_jaccard),
            "shared_shingles": pair.shared,
            "eval_shingles": pair.eval_shingles,
            "pool_shingles": pair.doc_shingles,
            "numbers_only_differ": numbers_only_differ(items[pair.eval_index].text, doc.text),
            "triage": triage(
                items[pair.eval_index].text, doc.text, bool(copied & set(channels)), rarity
            ).to_json(),
        }
        if pair.cosine is not None:
            row["cosine"] = _r(pair.cosine)
        _put(row, findings.pool_scores(pair), "pair row")
        _put(row, findings.beside(("pool", pair.eval_index, pair.pool_index)), "pair row")
        rows.append(row)
    groups, member = _cluster_of(findings)
    for twin in sorted(findings.internal, key=lambda p: (p.a, p.b)):
        via = internal_via(twin, findings)
        row = {
            "a_idx": twin.a,
            "a_id": items[twin.a].id,
            "b_idx": twin.b,
            "b_id": items[twin.b].id,
            "channel": INTERNAL,
            "channels": [INTERNAL],
            "via": via,
            "jaccard": _r(twin.jaccard),
            "containment_ab": _r(twin.containment_ab),
            "containment_ba": _r(twin.containment_ba),
            "minhash_jaccard": _r(findings.internal_minhash.get((twin.a, twin.b))),
            "shared_shingles": twin.shared,
            "cluster": member[twin.a],
            "numbers_only_differ": numbers_only_differ(items[twin.a].text, items[twin.b].text),
            "triage": triage(
                items[twin.a].text, items[twin.b].text, bool(COPIED & set(via)), rarity
            ).to_json(),
        }
        if twin.cosine is not None:
            row["cosine"] = _r(twin.cosine)
        _put(row, findings.beside(("eval", twin.a, twin.b)), "pair row")
        rows.append(row)
    for run in findings.flagging():
        for flag in run.result.flags if run.result is not None else ():
            name = run.channel.name
            row = {
                "test_idx": flag.index,
                "test_id": items[flag.index].id,
                "channel": name,
                "channels": [name],
            }
            _put(row, flag.row, "row of an item flagged")
            rows.append(row)
    return rows


def flagged_pairs(findings: Findings) -> list[FlaggedPair]:
    """Gives the pairs the pool and internal channels flagged, as a registered channel
    reads them: in the pairs artifact's order, each with both texts, its best flagging
    score and its triage label."""
    items = findings.eval.items
    out = []
    for row in flagged_rows(findings):
        if "triage" not in row:
            continue  # an item a registered channel flagged: not a pair
        label = row["triage"]["label"]
        scores = [row[k] for k in ("jaccard", "containment", "cosine") if row.get(k) is not None]
        if row["channel"] == INTERNAL:
            a, b = row["a_idx"], row["b_idx"]
            out.append(
                FlaggedPair(("eval", a, b), items[a].text, items[b].text, max(scores), label)
            )
        else:
            e, j = row["test_idx"], row["pool_idx"]
            text = findings.pool_docs[j].text
            out.append(FlaggedPair(("pool", e, j), items[e].text, text, max(scores), label))
    return out


def _match_entry(
    kind: str,
    index: int,
    ident: Any,
    text: str,
    eval_text: str,
    channels: list[str],
    scores: dict[str, Any],
    copied: bool,
    rarity: NumberRarity,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "index": index,
        "id": ident,
        "text": text,
        "channels": channels,
        "scores": {k: v for k, v in scores.items() if v is not None},
        "spans": shared_spans(eval_text, text),
        "numbers_only_differ": numbers_only_differ(eval_text, text),
        "triage": triage(eval_text, text, copied, rarity).to_json(),
    }


def _match_order(match: dict[str, Any]) -> tuple:
    """Orders an item's matches: likely leaks first, then by best score, pool before eval."""
    scores = [v for k, v in match["scores"].items() if k in ("jaccard", "containment", "cosine")]
    return (
        LABELS.index(match["triage"]["label"]),
        -max(scores, default=0.0),
        match["kind"] != "pool",
        match["index"],
    )


def thresholds(findings: Findings) -> dict[str, Any]:
    """Gives the thresholds each channel flags at, as an item shows them beside its scores."""
    s = findings.settings
    return {
        "ngram_n": s.n,
        "jaccard": s.jaccard,
        "containment": s.containment,
        "cosine": None
        if findings.cosine_threshold is None
        else round(findings.cosine_threshold, 4),
    }


def eval_set_identity(provenance: dict[str, Any]) -> dict[str, Any]:
    """Gives what names an eval set across runs: for a file its name without the directory
    (the same file read from elsewhere is the same set), for a hub dataset its name,
    config and split, and the fields read from it; never a revision or content hash, so
    that a revised set still asks the same questions of the items it kept."""
    name = provenance.get("name")
    if provenance.get("kind") == "file" and isinstance(name, str):
        name = os.path.basename(name)
    return {
        "kind": provenance.get("kind"),
        "name": name,
        "config": provenance.get("config"),
        "split": provenance.get("split"),
        "text_field": provenance.get("text_field"),
        "id_field": provenance.get("id_field"),
    }


def eval_subject(findings: Findings, index: int) -> dict[str, Any]:
    """Gives the subject of an eval item's flagged_pairs item: the eval set, the item's id
    and its canonical text's SHA-256 (a changed text is another question)."""
    item = findings.eval.items[index]
    return {
        "kind": "eval_item",
        "eval_set": eval_set_identity(findings.eval.provenance),
        "eval_id": item.id,
        "text_sha256": sha256_hex(item.canonical.encode("utf-8")),
    }


def backlog_items(findings: Findings, run_id: str) -> list[BacklogItem]:
    """Gives one flagged_pairs item per flagged eval item (docs/engines/contamination.md)."""
    items = findings.eval.items
    rarity = number_rarity(findings)
    copied = findings.copied()
    matches: dict[int, list[dict[str, Any]]] = {}
    for pair in sorted(findings.pool_pairs, key=lambda p: (p.eval_index, p.pool_index)):
        channels = pool_channels(pair, findings)
        if not channels:
            continue
        doc = findings.pool_docs[pair.pool_index]
        scores = {
            "jaccard": _r(pair.jaccard),
            "containment": _r(pair.containment),
            "minhash_jaccard": _r(pair.minhash_jaccard),
            "cosine": _r(pair.cosine),
            "shared_shingles": pair.shared,
        }
        _put(scores, findings.pool_scores(pair), "match's scores")
        entry = _match_entry(
            "pool",
            pair.pool_index,
            doc.id,
            doc.text,
            items[pair.eval_index].text,
            channels,
            scores,
            bool(copied & set(channels)),
            rarity,
        )
        _put(entry, findings.beside(("pool", pair.eval_index, pair.pool_index)), "match")
        matches.setdefault(pair.eval_index, []).append(entry)
    groups, member = _cluster_of(findings)
    for twin in findings.internal:
        via = internal_via(twin, findings)
        for this, other, contained in (
            (twin.a, twin.b, twin.containment_ab),
            (twin.b, twin.a, twin.containment_ba),
        ):
            scores = {
                "jaccard": _r(twin.jaccard),
                "containment": _r(contained),
                "minhash_jaccard": _r(findings.internal_minhash.get((twin.a, twin.b))),
                "cosine": _r(twin.cosine),
                "shared_shingles": twin.shared,
            }
            entry = _match_entry(
                "eval",
                other,
                items[other].id,
                items[other].text,
                items[this].text,
                [INTERNAL],
                scores,
                bool(COPIED & set(via)),
                rarity,
            )
            entry["via"] = via
            _put(entry, findings.beside(("eval", twin.a, twin.b)), "match")
            matches.setdefault(this, []).append(entry)
    # what each registered channel flagged, by eval item: {channel name: (key, account)}
    flagged: dict[int, dict[str, tuple[str, dict[str, Any]]]] = {}
    for run in findings.flagging():
        for flag in run.result.flags if run.result is not None else ():
            by_item = flagged.setdefault(flag.index, {})
            if run.channel.name in by_item:
                raise ValueError(f"channel {run.channel.name!r} flags item {flag.index} twice")
            by_item[run.channel.name] = (run.channel.key, flag.item)
    provenance = {"eval": findings.eval.provenance, "pool": findings.pool_provenance}
    limits = thresholds(findings)
    out = []
    for index in sorted(set(matches) | set(flagged)):
        item = items[index]
        found = sorted(matches.get(index, []), key=_match_order)
        channels = sorted({c for m in found for c in m["channels"]} | set(flagged.get(index, {})))
        score_values = [
            v
            for m in found
            for k, v in m["scores"].items()
            if k in ("jaccard", "containment", "cosine")
        ]
        tags = list(channels)
        if any(m["numbers_only_differ"] for m in found):
            tags.append("numbers_only")
        label = item_label([m["triage"]["label"] for m in found])
        if label is not None:
            # a tag: the default order reads it (likely leaks first), and a filter on it
            # finds every sibling for a look (and a bulk decision) together
            tags.append(label)
        payload: dict[str, Any] = {
            "subject": eval_subject(findings, index),
            "eval": {"id": item.id, "index": item.index, "text": item.text},
            "matches": found,
            "channels": channels,
            "triage": label,
            "thresholds": limits,
            "provenance": provenance,
            "summary": {
                "title": f"{item.id}: {' '.join(item.text.split())[:70]}",
                "score": round(max(score_values), 4) if score_values else None,
                "tags": tags,
            },
        }
        if index in member:
            payload["cluster"] = [{"index": i, "id": items[i].id} for i in groups[member[index]]]
        for key, account in flagged.get(index, {}).values():
            _put(payload, {key: account}, "item")
        digest = canonical_sha256(payload)
        out.append(BacklogItem.make(QUEUE, f"fp-{digest[:16]}", run_id, payload))
    return out


def _machine() -> dict[str, Any]:
    memory = None
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    memory = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "memory_gb": memory,
        "python": platform.python_version(),
    }


def _near_threshold(
    rows: list[dict[str, Any]],
    pool_items: set[int],
    threshold: float | None,
    pool_names: tuple[str, ...] = POOL_CHANNELS,
) -> int:
    """Gives how many items flagged against the pool rest only on paraphrase flags within
    NEAR_THRESHOLD above the cosine threshold (no copied text, no clearer paraphrase, and
    no registered pool channel's flag: a second channel's own evidence is not resting
    on the paraphrase)."""
    if threshold is None:
        return 0
    clear: set[int] = set()
    bar = round(threshold + NEAR_THRESHOLD, 6)  # cosines are rounded in the rows
    for row in rows:
        if row["channel"] not in pool_names:
            continue  # an internal duplicate, or an item a registered channel flagged
        cosine = row.get("cosine")
        if set(row["channels"]) - {"embed"} or cosine is None or cosine >= bar:
            clear.add(row["test_idx"])
    return len(pool_items - clear)


def headline(flagged: int, n: int) -> dict[str, Any]:
    """Gives the report's two rates, labelled: what the scan flagged, pending review, and
    the leakage rate, which only review can confirm (``contamination clean`` reports it)."""
    return {
        "flagged": {
            "label": FLAGGED_LABEL,
            "items": flagged,
            "rate": round(flagged / n, 4) if n else 0.0,
        },
        "leakage": {
            "label": LEAKAGE_LABEL,
            "rate": None,
            "confirmed_items": None,
            "pending_review": flagged,
            "how": "decide the flagged_pairs queue, then run `sealdesk contamination clean`: "
            "accepted items are the confirmed leaks",
        },
    }


def _triage_counts(rows: list[dict[str, Any]], items: list[BacklogItem]) -> dict[str, Any]:
    pairs = dict.fromkeys(LABELS, 0)
    for row in rows:
        if "triage" in row:
            pairs[row["triage"]["label"]] += 1
    flagged_items = dict.fromkeys(LABELS, 0)
    for item in items:
        label = item.payload.get("triage")
        if label in flagged_items:
            flagged_items[label] += 1
    return {"pairs": pairs, "items": flagged_items}


def build_report(
    findings: Findings,
    rows: list[dict[str, Any]],
    run_id: str,
    date: str,
    timing: dict[str, float],
    items: list[BacklogItem],
) -> dict[str, Any]:
    """Gives contamination_report.json: provenance, counts, rates, thresholds, and the rest.

    ``leakage_rate`` is null here: a flagged item is not a leak until a
    reviewer confirms it, so the scan reports the flagged rate, labelled as pending
    review, and ``contamination clean`` the confirmed leakage rate.
    """
    n = len(findings.eval.items)
    registered = findings.flagging()
    item_channels = [run.channel.name for run in registered]  # they flag items, not pairs
    readers = findings.reading_pool()
    pool_names = (*POOL_CHANNELS, *(run.channel.name for run in readers))
    by_channel: dict[str, set[int]] = {c: set() for c in (*pool_names, INTERNAL, *item_channels)}
    combos: dict[str, int] = {}
    numbers_only = 0
    for row in rows:
        if row["channel"] == INTERNAL:
            by_channel[INTERNAL] |= {row["a_idx"], row["b_idx"]}
        else:
            for channel in row["channels"]:
                by_channel[channel].add(row["test_idx"])
        if row["channel"] not in item_channels:
            combo = "+".join(row["channels"])
            combos[combo] = combos.get(combo, 0) + 1
        numbers_only += bool(row.get("numbers_only_differ"))
    flagged = set().union(*by_channel.values())
    # the flagged items split so that the parts add up: against the pool (a registered
    # pool channel's items among them), else internal duplicates only, else each
    # registered item channel's own (in the order they ran)
    pool_items = set().union(*(by_channel[c] for c in pool_names))
    internal_only = by_channel[INTERNAL] - pool_items
    registered_counts: dict[str, int] = {
        f"{run.channel.key}_suspected_items": len(by_channel[run.channel.name])
        for run in readers  # what it alone caught is in items_caught_only_by, as for ngram
    }
    counted = pool_items | by_channel[INTERNAL]
    for run in registered:
        caught = by_channel[run.channel.name]
        registered_counts[f"{run.channel.key}_suspected_items"] = len(caught)
        registered_counts[f"{run.channel.key}_only_items"] = len(caught - counted)
        counted = counted | caught
    near = _near_threshold(rows, pool_items, findings.cosine_threshold, pool_names)
    only = {
        c: len(items - set().union(*(v for k, v in by_channel.items() if k != c)))
        for c, items in by_channel.items()
    }
    groups, _ = _cluster_of(findings)
    evals = findings.eval.items
    s = findings.settings
    counts: dict[str, Any] = {
        "ngram_overlap_items": len(by_channel["ngram"]),
        "containment_overlap_items": len(by_channel["containment"]),
        "paraphrase_overlap_items": len(by_channel["embed"]),
        "internal_duplicate_pairs": len(findings.internal),
        "internal_clusters": len(groups),
        "total_flagged_items": len(flagged),
        "pool_flagged_items": len(pool_items),
        "internal_only_items": len(internal_only),
        "near_threshold_items": near,
        "near_threshold_margin": NEAR_THRESHOLD,
        "flagged_pairs": len(rows),
        "numbers_only_pairs": numbers_only,
    }
    _put(counts, registered_counts, "report's counts")
    report = {
        "test": findings.eval.provenance,
        "pool": findings.pool_provenance,
        # each shard's bytes hash, rows and the flat content hash of its items alone
        "pool_shards": findings.pool_shards,
        "counts": counts,
        "channels": {
            "items_caught_by": {c: len(v) for c, v in by_channel.items()},
            "items_caught_only_by": only,
            "pairs_by_channels": dict(sorted(combos.items())),
        },
        "internal": {
            "pairs": [
                {"a_idx": p.a, "b_idx": p.b, "a_id": evals[p.a].id, "b_id": evals[p.b].id}
                for p in sorted(findings.internal, key=lambda p: (p.a, p.b))
            ],
            "clusters": [[{"index": i, "id": evals[i].id} for i in g] for g in groups],
        },
        **headline(len(flagged), n),
        "leakage_rate": None,
        "triage": {**rule_report(settings=s), **_triage_counts(rows, items)},
        "thresholds": {
            "ngram_n": s.n,
            "jaccard_flag": s.jaccard,
            "containment_flag": s.containment,
            "lsh_threshold": s.lsh_threshold,
            "num_perm": s.num_perm,
            "cosine_flag": None
            if findings.cosine_threshold is None
            else round(findings.cosine_threshold, 4),
            "top_k": findings.top_k,
        },
        "fields": findings.fields,
        "embedding": findings.embedding,
        "ngram_search": findings.search,
        "pool_scan": findings.pool_scan,
        "recommended_action": RECOMMENDED_ACTION,
        "provenance": {"date": date, "run_id": run_id, "machine": _machine()},
        "timing_s": {k: round(v, 3) for k, v in timing.items()},
    }
    # each registered channel's section, under its key: null when the scan did not run it
    sections = {
        run.channel.key: None if run.result is None else run.result.report
        for run in findings.channels
    }
    _put(report, sections, "report")
    return report
