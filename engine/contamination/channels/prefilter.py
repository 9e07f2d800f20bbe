"""The paraphrase channel's first stage: a static model, its cache, and the candidate heap.

Scoring every pool document with a sentence-transformers model costs a
forward pass per document (about a hundred texts a second on two cores). The
first stage instead embeds each document with a *static* model, one vector
per token looked up and averaged, distilled from the very model that scores
(``model2vec``: every token of its vocabulary passed through it once, then
PCA and SIF weighting), which embeds thousands of texts a second. For every
eval item it keeps only the K pool documents whose static vectors are
nearest (a bounded heap per eval item, like the n-gram channel's index: the
eval side and K rows per item, whatever the pool's size). The second stage
(``rerank``) embeds those candidates with the full model; the flag is its
cosine against the calibrated threshold, exactly as when every document is
scored. The first stage can only lose a pair (the true neighbour outside the
K), never add one.

The distilled model is made once per source model and kept under
``cache/prefilter/<key>/`` in the workspace, where the key hashes the source
model's identity (every file of its directory) and the distillation
settings; a ``manifest.json`` beside it holds the SHA-256 of each file,
checked whenever it is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from engine.artifacts import file_sha256
from engine.canonical import canonical_sha256, sha256_hex
from engine.contamination.channels.embedding import (
    EmbeddingUnavailable,
    ModelInfo,
    TopK,
    model_files,
)
from engine.contamination.channels.kept_numbers import LANE_NUMBERS
from engine.contamination.inputs.canonical_text import canonical
from engine.errors import InputError, IntegrityError

# What a distilled model depends on besides its source model: changing any of
# these makes another cache entry, never a silently different one.
DISTILL_SETTINGS: dict[str, Any] = {
    "method": "model2vec.distill",
    "pca_dims": 256,
    "sif_coefficient": 1e-4,
    "pooling": "mean",
}
MAX_TOKENS = 512  # tokens of a text the static model averages (as model2vec encodes)
_MAX_CHARS = 64 * MAX_TOKENS  # characters read from a text: a bound no real token nears
_STATIC_FILES = ("model.safetensors", "tokenizer.json", "config.json")
_MANIFEST = "manifest.json"
_ROW_LIMIT = 1 << 32  # a heap key holds a pool row in 32 bits
_EMPTY = np.iinfo(np.int64).min
# how much a numbers-lane candidate's static cosine adds to the share of numbers it
# keeps: enough to rank equal shares, never enough to pass a larger share
LANE_COSINE_WEIGHT = 0.01
# the least weighted share of an eval item's numbers a document must keep to enter its
# numbers lane: a leak keeps them all (or all but one spelled out); two of three kept
# by chance (a pool of word problems draws from the same small numbers) stay out
LANE_MIN_SHARE = 0.7
# and the least static cosine with the item: a leak is near it under the static model
# too, only not nearest among its look-alikes (planted leaks >= 0.90 on a generated
# million-document pool, 99.8% of a real benchmark's rephrased pairs >= 0.6), while
# prose that keeps two numbers by chance sits around 0.5 and would cost the rerank a
# long text each
LANE_MIN_COSINE = 0.6
# An eval item that states two or more numbers has its numbers lane, so its nearest lane
# needs fewer documents: at most this many of its K go to the rerank. Each nearest slot
# costs about 1,300 full-model texts on a million-document generated pool of
# look-alikes (the rerank is the search's whole cost); with 10, a public benchmark's
# rephrased test set among renumbered copies keeps 1,285 of the 1,287 rephrased pairs
# over the threshold that 50 nearest and the lane hold (15 keep all, 2,600 more texts).
NEAREST_WITH_NUMBERS = 10
# float32 scores may differ from the float64 ones that rank by a few units of
# 1e-6 for unit vectors; a document within this of an eval item's K-th best is
# scored again in float64 before the heap decides
_SCREEN_MARGIN = 1e-4


@dataclass(frozen=True)
class PrefilterInfo:
    """Which static model prefilters: where it lives, its identity, where it came from."""

    path: str
    identity: str  # SHA-256 over its files (relative path and content)
    source_identity: str | None  # the model it was distilled from; None when given
    distilled_now: bool  # made by this scan (False: taken from the cache or given)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """Gives the report's description of the prefilter model."""
        return {
            "path": self.path,
            "identity_sha256": self.identity,
            "distilled_from": self.source_identity,
            "distill_settings": DISTILL_SETTINGS if self.source_identity else None,
            "distilled_by_this_scan": self.distilled_now,
            "distill_seconds": round(self.seconds, 1) if self.distilled_now else None,
        }


NO_MODEL2VEC = (
    "the two-stage paraphrase channel needs model2vec (pip install 'sealdesk[embed]'); "
    "or pass --embed-exhaustive, or --no-embed"
)


def _files_identity(root: Path) -> tuple[str, dict[str, str]]:
    """Gives (SHA-256 over every file, {relative path: SHA-256}) of a directory."""
    digest = hashlib.sha256()
    hashes: dict[str, str] = {}
    for relative, file in model_files(root):
        if relative == _MANIFEST:
            continue
        try:
            hashes[relative] = file_sha256(file)
        except OSError as exc:
            raise InputError(
                f"cannot read: {exc.strerror}", path=str(file), field="prefilter-model"
            ) from exc
        digest.update(os.fsencode(relative) + b"\0" + hashes[relative].encode() + b"\n")
    return digest.hexdigest(), hashes


def prefilter_key(source: ModelInfo) -> str:
    """Gives the cache key of the model distilled from ``source``: its identity and the settings."""
    return canonical_sha256({"source": source.identity, "settings": DISTILL_SETTINGS})


def check_static_dir(path: Path) -> None:
    """Refuses a directory that does not hold a model2vec static model, naming what is missing."""
    if not path.is_dir():
        raise InputError(
            "not a directory holding a static (model2vec) model",
            path=str(path),
            field="prefilter-model",
        )
    missing = [name for name in _STATIC_FILES if not (path / name).is_file()]
    if missing:
        raise InputError(
            f"no {', '.join(missing)} in the directory: not a static (model2vec) model",
            path=str(path),
            field="prefilter-model",
        )


def given_prefilter(path: Path) -> PrefilterInfo:
    """Gives the description of a static model named on the command line."""
    check_static_dir(path)
    identity, _ = _files_identity(path)
    return PrefilterInfo(str(path), identity, None, False)


def prefilter_cached(cache_root: Path, source: ModelInfo) -> bool:
    """Gives whether the static model distilled from ``source`` is in the cache already."""
    return (cache_root / prefilter_key(source)[:32] / _MANIFEST).is_file()


def cached_prefilter(
    cache_root: Path, source: ModelInfo, stage: Callable[[], Any] | None = None
) -> PrefilterInfo:
    """Gives the static model distilled from ``source``, distilling it only if none is cached.

    A cached model whose files no longer match its manifest is refused, not
    silently replaced: the cache was changed by something other than a scan.
    ``stage()`` opens a progress stage, called only when distilling.
    """
    directory = cache_root / prefilter_key(source)[:32]
    manifest = directory / _MANIFEST
    if manifest.is_file():
        identity = _verify_manifest(directory, manifest)
        return PrefilterInfo(str(directory), identity, source.identity, False)
    started = time.perf_counter()
    progress = stage() if stage is not None else None
    try:
        cache_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot make the folder: {exc.strerror}", path=str(cache_root), field="prefilter"
        ) from exc
    work = Path(tempfile.mkdtemp(prefix=".distill-", dir=cache_root))
    try:
        distill_static(source, work)
        identity, hashes = _files_identity(work)
        (work / _MANIFEST).write_text(
            json.dumps(
                {
                    "source_identity_sha256": source.identity,
                    "source_name": source.name,
                    "settings": DISTILL_SETTINGS,
                    "identity_sha256": identity,
                    "files": hashes,
                },
                indent=1,
                sort_keys=True,
            )
        )
        try:
            os.rename(work, directory)
        except OSError:
            # another scan distilled the same model meanwhile: use the one in place
            if not (directory / _MANIFEST).is_file():
                raise
            identity = _verify_manifest(directory, directory / _MANIFEST)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if progress is not None:
        progress.finish()
    return PrefilterInfo(
        str(directory), identity, source.identity, True, time.perf_counter() - started
    )


def _verify_manifest(directory: Path, manifest: Path) -> str:
    try:
        recorded = json.loads(manifest.read_text())
        files = recorded["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IntegrityError(
            f"{manifest}: the distilled prefilter's manifest cannot be read; remove "
            f"{directory} to distill it again"
        ) from exc
    identity, hashes = _files_identity(directory)
    if hashes != files:
        changed = sorted(set(hashes.items()) ^ set(files.items()))
        raise IntegrityError(
            f"{directory}: the distilled prefilter's files changed since it was made "
            f"({changed[0][0]}); remove the folder to distill it again"
        )
    return identity


def _transformer_dir(source: ModelInfo) -> Path:
    """Gives the folder of a sentence-transformers model's transformer module."""
    root = Path(source.path)
    try:
        modules = json.loads((root / "modules.json").read_text())
    except (OSError, ValueError):
        return root
    for module in modules if isinstance(modules, list) else []:
        if isinstance(module, dict) and str(module.get("type", "")).endswith("Transformer"):
            return root / str(module.get("path", ""))
    return root


def distill_static(source: ModelInfo, out: Path) -> None:
    """Writes into ``out`` the static model distilled from the sentence-transformers ``source``.

    Offline: the transformer is read from the model directory only.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")  # sealdesk draws its own progress
    try:
        from model2vec.distill import distill
    except ImportError as exc:
        raise EmbeddingUnavailable(NO_MODEL2VEC) from exc
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
    except ImportError:
        pass
    # model2vec draws a tqdm bar per vocabulary batch on stderr; tqdm read
    # TQDM_DISABLE when it was first imported (by datasets, long before this),
    # so the bar is kept off stderr here, where sealdesk draws its own progress
    chatter = io.StringIO()
    try:
        with contextlib.redirect_stderr(chatter):
            model = distill(
                model_name=str(_transformer_dir(source)),
                pca_dims=DISTILL_SETTINGS["pca_dims"],
                sif_coefficient=DISTILL_SETTINGS["sif_coefficient"],
                pooling=DISTILL_SETTINGS["pooling"],
            )
    except Exception as exc:  # a directory transformers cannot load as a model
        raise InputError(
            f"cannot distill a static model from it: {' '.join(str(exc).split())[:300]}",
            path=source.path,
            field="model",
        ) from exc
    model.save_pretrained(str(out))


class StaticEncoder:
    """A static model: one vector per token, averaged over a text's tokens and normalised.

    Picklable (it is shipped to every worker): the tokenizer travels as its
    JSON and is rebuilt where it is used. A text's vector depends on that
    text alone (the rows of its first 512 tokens summed in order), never on
    its batch.

    With a tokenizer that cuts words at whitespace before anything else
    (BERT's, as MiniLM's), a text's tokens are its words' tokens in turn, so
    each distinct word is tokenized once and remembered: pool text repeats
    its words, and the tokenizer, not the arithmetic, is what costs.
    """

    _WORD_SPLIT = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}
    _WORDS_KEPT = 1 << 21  # words remembered before the memory is emptied

    def __init__(self, table: np.ndarray, tokenizer_json: str, unk_id: int | None) -> None:
        self.table = np.ascontiguousarray(table, dtype=np.float32)
        self.tokenizer_json = tokenizer_json
        self.unk_id = unk_id
        self.dim = int(self.table.shape[1])
        pre = (json.loads(tokenizer_json).get("pre_tokenizer") or {}).get("type")
        self.by_word = pre in self._WORD_SPLIT
        self._tokenizer: Any = None
        self._words: dict[str, tuple[int, ...]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_tokenizer"], state["_words"] = None, {}
        return state

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_str(self.tokenizer_json)
            tokenizer.no_padding()
            tokenizer.no_truncation()
            self._tokenizer = tokenizer
        encoded = self._tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        if self.unk_id is None:
            return [e.ids for e in encoded]
        return [[i for i in e.ids if i != self.unk_id] for e in encoded]

    def _ids(self, texts: list[str]) -> list[list[int]]:
        """Gives each text's first MAX_TOKENS token ids (unknown tokens left out)."""
        cut = [t[:_MAX_CHARS] for t in texts]
        if not self.by_word:
            return [ids[:MAX_TOKENS] for ids in self._token_ids(cut)]
        words = [t.split() for t in cut]
        known = self._words
        if len(known) > self._WORDS_KEPT:
            known.clear()
        new = sorted(set().union(*words) - known.keys())
        if new:
            for word, ids in zip(new, self._token_ids(new), strict=True):
                known[word] = tuple(ids)
        return [list(chain.from_iterable(map(known.__getitem__, w)))[:MAX_TOKENS] for w in words]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Gives one float32 unit vector per text (zeros for a text with no known token)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, ids in enumerate(self._ids(texts)):
            if ids:
                out[row] = self.table.take(ids, axis=0).sum(axis=0) / len(ids)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def load_static(path: Path) -> StaticEncoder:
    """Gives the static model saved in ``path`` (model2vec's format), ready to encode."""
    check_static_dir(path)
    try:
        from model2vec import StaticModel
    except ImportError as exc:
        raise EmbeddingUnavailable(NO_MODEL2VEC) from exc
    try:
        model = StaticModel.from_pretrained(str(path))
    except Exception as exc:
        raise InputError(
            f"cannot load as a static (model2vec) model: {' '.join(str(exc).split())[:300]}",
            path=str(path),
            field="prefilter-model",
        ) from exc
    table = np.asarray(model.embedding, dtype=np.float32)
    if model.token_mapping is not None:
        table = table[np.asarray(model.token_mapping)]
    if model.weights is not None:
        table = table * np.asarray(model.weights, dtype=np.float32)[:, None]
    return StaticEncoder(table, model.tokenizer.to_str(), model.unk_token_id)


# -- the candidate heap -------------------------------------------------------
def _keys(scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Gives int64 keys ordered as (higher score, then earlier row): one comparison ranks."""
    bits = scores.astype(np.float32).view(np.int32).astype(np.int64)
    ordered = np.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)  # float order as integer order
    return (ordered << 32) | (_ROW_LIMIT - 1 - rows)


def _decode(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gives (float32 scores, int64 rows) of keys; -inf and -1 where a slot is empty."""
    ordered = keys >> 32
    bits = np.where(ordered >= 0, ordered, ordered ^ 0x7FFFFFFF).astype(np.int32)
    scores = bits.view(np.float32).copy()
    rows = (_ROW_LIMIT - 1) - (keys & (_ROW_LIMIT - 1))
    empty = keys == _EMPTY
    scores[empty] = -np.inf
    rows[empty] = -1
    return scores, rows


class CandidateHeap:
    """The pool documents each eval item's full-model pass will score, kept while streaming.

    Two lanes of candidates per eval item, whose union is reranked:

    - the ``k`` documents nearest it under the static model;
    - with ``kept`` (a ``kept_numbers.KeptNumbers``), the ``k_numbers``
      documents that keep the most of its numbers (at least two of them and
      ``LANE_MIN_SHARE`` of their weight, at a static cosine of at least
      ``LANE_MIN_COSINE``), the nearer under the static model first among
      equals. A renumbered
      copy and a same-template look-alike are as near to the static model
      as the rephrased leak that kept every number, and can fill all ``k``
      nearest slots; this lane keeps the leak whatever fills them.

    Holds the eval side's static vectors, the keys of each lane and the text
    of each document a lane holds: its size does not grow with the pool. A
    tie goes to the earlier document, as in ``embedding.TopK``, so the
    candidates are the same however the pool is batched or sharded.
    """

    def __init__(
        self, eval_vectors: np.ndarray, k: int, kept: Any = None, k_numbers: int = 0
    ) -> None:
        self.eval = np.asarray(eval_vectors, dtype=np.float32)
        self._eval64 = self.eval.astype(np.float64)
        self.k = k
        self.kept = kept if k_numbers else None
        self.k_numbers = k_numbers if kept is not None else 0
        # the items whose nearest lane is cut to NEAREST_WITH_NUMBERS at the rerank
        self._numeric = (
            np.asarray([len(n) >= LANE_NUMBERS for n in kept.numbers], dtype=bool)
            if self.kept is not None
            else np.zeros(len(self.eval), dtype=bool)
        )
        self.keys = np.full((len(self.eval), k), _EMPTY, dtype=np.int64)
        self.lane = np.full((len(self.eval), self.k_numbers), _EMPTY, dtype=np.int64)
        self.docs: dict[int, tuple[Any, str]] = {}
        self.encoded = 0
        self.over_bound = 0  # merged like embedding.TopK's; candidates have no bound

    @staticmethod
    def _best(held: np.ndarray, keys: np.ndarray, k: int) -> np.ndarray:
        """Gives the k highest of the held keys and ``keys``, best first."""
        both = np.concatenate([held, keys], axis=1)
        if both.shape[1] > k:
            cut = both.shape[1] - k
            both = np.partition(both, cut, axis=1)[:, cut:]
        # best first, empty slots last: one layout for one content (negating would not
        # do: the empty key is the least int64, which negation leaves where it is)
        return np.sort(both, axis=1)[:, ::-1]

    def _take(self, keys: np.ndarray, items: np.ndarray | None = None) -> None:
        """Keeps the k highest of the held keys and ``keys`` (of ``items``, else of every one)."""
        if items is None:
            self.keys = self._best(self.keys, keys, self.k)
        else:
            self.keys[items] = self._best(self.keys[items], keys, self.k)

    def _take_lane(self, keys: np.ndarray, items: np.ndarray | None = None) -> None:
        if items is None:
            self.lane = self._best(self.lane, keys, self.k_numbers)
        else:
            self.lane[items] = self._best(self.lane[items], keys, self.k_numbers)

    def _floor(self) -> np.ndarray:
        """Gives each eval item's K-th best score (-inf while it holds fewer than K)."""
        scores, _ = _decode(self.keys[:, -1:])
        return scores[:, 0]

    def add(self, vectors: np.ndarray, start: int, ids: list[Any], texts: list[str]) -> None:
        """Merges a batch of pool vectors (rows start, start+1, ...)."""
        if not len(vectors):
            return
        if start + len(vectors) > _ROW_LIMIT:
            raise InputError(
                f"more than {_ROW_LIMIT - 1} rows in one pool stream or shard: the prefilter "
                "counts rows in 32 bits; split the pool into shards",
                field="pool",
            )
        self.encoded += len(vectors)
        vectors64 = vectors.astype(np.float64)
        self._add_nearest(vectors, vectors64, start)
        if self.kept is not None:
            self._add_keepers(vectors64, start, texts)
        self._keep_docs(start, ids, texts)

    def _add_nearest(self, vectors: np.ndarray, vectors64: np.ndarray, start: int) -> None:
        # a float32 product screens out the documents far below every eval item's
        # K-th best (nearly all of them, once the heaps fill); the few left are
        # scored in float64, so that a score does not depend on its batch (see
        # embedding.TopK), and only those reach the heaps
        screen = self.eval @ vectors.T
        screen -= self._floor()[:, None] - _SCREEN_MARGIN
        items, docs = np.nonzero(screen >= 0)
        del screen
        if not len(items):
            return
        if len(items) > len(self.eval) * len(vectors) // 8:
            # the heaps are still filling: every pair, as one product
            sims = (self._eval64 @ vectors64.T).astype(np.float32)
            rows = np.arange(start, start + len(vectors), dtype=np.int64)
            dense = _keys(sims, np.broadcast_to(rows, sims.shape))
            if dense.shape[1] > self.k:
                cut = dense.shape[1] - self.k
                dense = np.partition(dense, cut, axis=1)[:, cut:]
            self._take(dense)
            return
        exact = np.einsum("ij,ij->i", self._eval64[items], vectors64[docs]).astype(np.float32)
        touched, grid = _grid(items, _keys(exact, docs.astype(np.int64) + start))
        self._take(grid, touched)

    def _add_keepers(self, vectors64: np.ndarray, start: int, texts: list[str]) -> None:
        """The numbers lane: a document's score is the weighted share of the item's
        numbers it keeps, its static cosine (a tenth) ranking equal shares."""
        assert self.kept is not None
        items, docs, shares = self.kept.keepers(texts)
        enough = shares >= LANE_MIN_SHARE
        items, docs, shares = items[enough], docs[enough], shares[enough]
        if not len(items):
            return
        near = np.einsum("ij,ij->i", self._eval64[items], vectors64[docs])
        close = near >= LANE_MIN_COSINE
        items, docs, shares, near = items[close], docs[close], shares[close], near[close]
        if not len(items):
            return
        score = (shares + LANE_COSINE_WEIGHT * near).astype(np.float32)
        touched, grid = _grid(items, _keys(score, docs + start))
        self._take_lane(grid, touched)

    def _keep_docs(self, start: int, ids: list[Any], texts: list[str]) -> None:
        """Keeps the text of every document a heap holds, and only those."""
        held = self._held()
        for row in held - self.docs.keys():
            offset = row - start
            if 0 <= offset < len(texts):
                self.docs[row] = (ids[offset], texts[offset])
        for row in self.docs.keys() - held:
            del self.docs[row]

    def _held(self) -> set[int]:
        _, rows = _decode(np.concatenate([self.keys, self.lane], axis=1))
        return set(rows[rows >= 0].tolist())

    def absorb(
        self, scores: np.ndarray, rows: np.ndarray, docs: dict[int, tuple[Any, str]], offset: int
    ) -> None:
        """Merges another heap's candidates (a shard's ``candidates()``, rows counted from
        ``offset``): its first ``k`` columns the nearest, the rest the numbers lane.

        The candidates of every eval item over the whole pool are among the
        union of the shards' candidates, and the same order picks them.
        """
        valid = rows >= 0
        shifted = np.where(valid, rows + offset, 0)
        if valid.any() and int(shifted.max()) >= _ROW_LIMIT:
            raise InputError(
                f"more than {_ROW_LIMIT - 1} pool rows: the prefilter counts rows in 32 bits",
                field="pool",
            )
        keys = np.where(valid, _keys(scores, shifted), _EMPTY)
        self._take(keys[:, : self.k])
        if self.k_numbers:
            self._take_lane(keys[:, self.k :])
        held = self._held()
        for row, doc in docs.items():
            if row + offset in held:
                self.docs[row + offset] = doc
        for row in self.docs.keys() - held:
            del self.docs[row]

    def candidates(self) -> tuple[np.ndarray, np.ndarray]:
        """Gives (scores, rows), eval items x (K + numbers lane), each lane best first; -inf
        and -1 in empty slots, and past the NEAREST_WITH_NUMBERS nearest of an item that
        has a numbers lane. A document can be in both lanes of an item."""
        scores, rows = _decode(np.concatenate([self.keys, self.lane], axis=1))
        if self.k > NEAREST_WITH_NUMBERS and self._numeric.any():
            cut = np.ix_(self._numeric, np.arange(NEAREST_WITH_NUMBERS, self.k))
            scores[cut] = -np.inf
            rows[cut] = -1
        return scores, rows


def _grid(items: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gives (the eval items touched, their keys as rows padded with empty slots)."""
    order = np.argsort(items, kind="stable")
    items, keys = items[order], keys[order]
    touched, first, counts = np.unique(items, return_index=True, return_counts=True)
    grid = np.full((len(touched), int(counts.max())), _EMPTY, dtype=np.int64)
    grid[
        np.repeat(np.arange(len(touched)), counts),
        np.arange(len(items)) - np.repeat(first, counts),
    ] = keys
    return touched, grid


def rerank(
    heap: CandidateHeap,
    eval_vectors: np.ndarray,
    embed: Callable[[list[str]], np.ndarray],
    top_k: int,
    threshold: float,
    kept: Any = None,
) -> tuple[TopK, int]:
    """Gives the matches at the threshold by the full model's cosine among the candidates
    (an ``embedding.TopK``, numbers-keeping first), and how many candidates it scored.

    ``embed(texts)`` gives the full model's unit vectors (through the
    embedding cache). Each candidate is embedded once, however many eval
    items or lanes hold it; its cosine is computed as ``embedding.TopK``
    computes it.
    """
    _, rows = heap.candidates()
    unique = sorted(set(rows[rows >= 0].tolist()))
    topk = TopK(eval_vectors, top_k, threshold, kept)
    if not unique:
        return topk, 0
    vectors = embed([canonical(heap.docs[row][1]) for row in unique]).astype(np.float64)
    position = np.searchsorted(np.asarray(unique, dtype=np.int64), np.where(rows >= 0, rows, 0))
    eval64 = np.asarray(eval_vectors, dtype=np.float64)
    scores = np.full(rows.shape, -np.inf, dtype=np.float32)
    for e in range(len(rows)):
        held = np.flatnonzero(rows[e] >= 0)
        if len(held):
            sims = eval64[e : e + 1] @ vectors[position[e, held]].T
            scores[e, held] = sims[0].astype(np.float32)
    topk.absorb(scores, rows, {row: heap.docs[row] for row in unique}, 0)
    return topk, len(unique)


def eval_vectors_sha256(vectors: np.ndarray) -> str:
    """Gives the hash of a set of eval vectors (part of a shard record's key)."""
    return sha256_hex(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
