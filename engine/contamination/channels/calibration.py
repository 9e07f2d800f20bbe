"""Choosing the cosine threshold from labelled pairs, for the model in use.

A calibration file is JSONL, one pair a line: ``{"a": text, "b": text,
"label": "paraphrase" | "unrelated" | "numbers_changed"}``. Paraphrases are
the positives, unrelated (same-topic) pairs the negatives; the threshold is
the one that maximises F1 on them, placed in the middle of the widest gap
among the best, so it is as far as possible from both sides. Pairs that
differ only in their numbers are scored and reported, not used: whether
they are leaks is the reviewer's call.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from engine.canonical import load_json, sha256_hex
from engine.contamination.inputs.canonical_text import canonical
from engine.errors import InputError

LABELS = ("paraphrase", "unrelated", "numbers_changed")
# Package data of engine.contamination (anchored there, not beside this module, so it
# stays put when modules move), so an installed wheel calibrates as a checkout does.
DEFAULT_CALIBRATION: Traversable = resources.files("engine.contamination") / "calibration.jsonl"


@dataclass(frozen=True)
class CalibrationPair:
    """One labelled pair of texts."""

    line: int
    a: str
    b: str
    label: str


@dataclass(frozen=True)
class Calibration:
    """The chosen threshold and the evidence for it."""

    threshold: float
    path: str
    sha256: str
    model_sha256: str
    scores: tuple[tuple[str, float, int], ...]  # (label, cosine, line)
    precision: float
    recall: float
    f1: float

    def to_json(self) -> dict[str, Any]:
        """Gives the report's account of the calibration."""
        ranges: dict[str, Any] = {}
        for label in LABELS:
            values = [s for lab, s, _ in self.scores if lab == label]
            if values:
                ranges[label] = {
                    "n": len(values),
                    "min": round(min(values), 4),
                    "max": round(max(values), 4),
                }
        borderline = sorted(self.scores, key=lambda s: abs(s[1] - self.threshold))[:6]
        return {
            "threshold": round(self.threshold, 4),
            "file": self.path,
            "file_sha256": self.sha256,
            "model_weights_sha256": self.model_sha256,
            "rule": "max F1 of paraphrase vs unrelated; middle of the widest gap",
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
            "ranges": ranges,
            "borderline": [
                {"line": line, "label": lab, "cosine": round(s, 4)} for lab, s, line in borderline
            ],
        }


def labelled_rows(
    path: Path | Traversable,
    texts: tuple[str, ...],
    choices: tuple[tuple[str, tuple[str, ...]], ...],
) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """Gives a labelled JSONL file's rows with their line numbers, and its SHA-256.

    Every row must be an object, every field of texts a non-empty string and every
    (field, allowed) of choices one of the allowed values; else the InputError names
    the line and field.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from exc
    rows = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        row = load_json(raw, path=str(path), line=number)
        if not isinstance(row, dict):
            raise InputError("a row must be a JSON object", path=str(path), line=number)
        for name in texts:
            if not isinstance(row.get(name), str) or not row[name].strip():
                raise InputError("missing or empty text", path=str(path), line=number, field=name)
        for name, allowed in choices:
            if row.get(name) not in allowed:
                raise InputError(
                    f"must be one of {', '.join(allowed)}", path=str(path), line=number, field=name
                )
        rows.append((number, row))
    return rows, sha256_hex(data)


def read_calibration(path: Path | Traversable) -> tuple[list[CalibrationPair], str]:
    """Gives the labelled pairs and the file's SHA-256, or names the bad line and field."""
    rows, digest = labelled_rows(path, ("a", "b"), (("label", LABELS),))
    pairs = [CalibrationPair(number, row["a"], row["b"], row["label"]) for number, row in rows]
    labels = {p.label for p in pairs}
    if not {"paraphrase", "unrelated"} <= labels:
        raise InputError(
            "needs at least one 'paraphrase' and one 'unrelated' pair",
            path=str(path),
            field="label",
        )
    return pairs, digest


def choose_threshold(
    positives: list[float], negatives: list[float]
) -> tuple[float, float, float, float]:
    """Gives (threshold, precision, recall, F1) with the best F1 and the widest margin."""
    values = sorted(set(positives) | set(negatives))
    cuts = [(lo + hi) / 2 for lo, hi in pairwise(values)] or [values[0]]
    pos, neg = np.asarray(positives), np.asarray(negatives)
    best: tuple[float, float, float, float, float] | None = None
    for cut in cuts:
        tp = float((pos >= cut).sum())
        fp = float((neg >= cut).sum())
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / len(pos)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        above = [v for v in values if v >= cut]
        below = [v for v in values if v < cut]
        gap = (min(above) if above else 1.0) - (max(below) if below else -1.0)
        key = (f1, gap)
        if best is None or key > (best[3], best[4]):
            best = (cut, precision, recall, f1, gap)
    assert best is not None
    return best[0], best[1], best[2], best[3]


def calibrate(
    pairs: list[CalibrationPair], sha256: str, path: str, embed: Any, model_sha256: str
) -> Calibration:
    """Gives the calibrated threshold; ``embed(texts)`` gives unit vectors."""
    texts = [canonical(t) for p in pairs for t in (p.a, p.b)]
    vectors = embed(texts)
    scores = []
    for k, pair in enumerate(pairs):
        cosine = float(np.dot(vectors[2 * k], vectors[2 * k + 1]))
        scores.append((pair.label, cosine, pair.line))
    positives = [s for lab, s, _ in scores if lab == "paraphrase"]
    negatives = [s for lab, s, _ in scores if lab == "unrelated"]
    threshold, precision, recall, f1 = choose_threshold(positives, negatives)
    return Calibration(threshold, path, sha256, model_sha256, tuple(scores), precision, recall, f1)
