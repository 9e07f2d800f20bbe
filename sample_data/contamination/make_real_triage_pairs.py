"""Makes labelled triage pairs from a real benchmark: GSM8K test against its train set.

Run from the repository root, with the embed extra installed:

  python sample_data/contamination/make_real_triage_pairs.py \\
      --test test.jsonl --train train.jsonl --rephrased rephrase_gsm8k.jsonl --out real.jsonl

The inputs are public files that this repository does not ship: GSM8K's
``grade_school_math/data/test.jsonl`` and ``train.jsonl`` (``question`` field) and
a rephrased test set with one row per test question in the same order (``text``:
"Question: ...\\nAnswer: ...", as LLM Decontaminator's ``rephrase_gsm8k.jsonl``).

- **leak**: a test question against its rephrasing (the rephraser kept the problem,
  numbers and all, in its own words; some numbers come out as words).
- **sibling**: a test question against a train question that the sentence-embedding
  channel would flag beside it: among the test item's three nearest train questions
  (the scan's top 3) at a cosine at or above the scan's default threshold. GSM8K's
  train and test sets hold different problems, so every such pair is a look-alike,
  not a leak; the ones that pass the threshold are the siblings a real scan shows.

Every third test question (by position) is ``holdout``, the rest ``tune``, so a
question's leak and siblings share a split. The output is the labelled pair format
of ``sealdesk bench contamination --triage`` (one JSON object a line: ``eval``,
``match``, ``label``, ``split``, ``id``).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

TOP_K = 3


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def rephrased_question(text: str) -> str:
    """Gives the question of a "Question: ...\\nAnswer: ..." row ("" when it has none)."""
    if not re.match(r"\s*Question:", text):
        return ""  # a few rows hold only "Answer: ...": the rephraser lost the question
    text = re.sub(r"^\s*Question:\s*", "", text)
    return re.split(r"\n\s*Answer:", text, maxsplit=1)[0].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", type=Path, required=True)
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--rephrased", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from engine.contamination.channels.calibration import (
        DEFAULT_CALIBRATION,
        calibrate,
        read_calibration,
    )
    from engine.contamination.channels.embedding import Embedder, identify_model
    from engine.contamination.inputs.canonical_text import canonical

    test = [row["question"] for row in _rows(args.test)]
    train = [row["question"] for row in _rows(args.train)]
    rephrased = [rephrased_question(row["text"]) for row in _rows(args.rephrased)]
    if len(rephrased) != len(test):
        raise SystemExit(f"{args.rephrased}: {len(rephrased)} rows, the test set has {len(test)}")
    info = identify_model(None)
    embedder = Embedder(info)
    pairs, sha = read_calibration(DEFAULT_CALIBRATION)
    threshold = calibrate(pairs, sha, "calibration.jsonl", embedder.encode, info.sha256).threshold
    a = embedder.encode([canonical(t) for t in test])
    b = embedder.encode([canonical(t) for t in train])
    scores = a @ b.T
    out = []
    for i, question in enumerate(test):
        split = "holdout" if i % 3 == 2 else "tune"
        if rephrased[i]:
            out.append(
                {
                    "eval": question,
                    "match": rephrased[i],
                    "label": "leak",
                    "split": split,
                    "id": f"gsm8k-test-{i}-rephrased",
                }
            )
        nearest = np.argsort(-scores[i])[:TOP_K]
        for j in nearest:
            if scores[i, j] >= threshold:
                out.append(
                    {
                        "eval": question,
                        "match": train[j],
                        "label": "sibling",
                        "split": split,
                        "id": f"gsm8k-test-{i}-train-{int(j)}",
                        "cosine": round(float(scores[i, j]), 4),
                    }
                )
    args.out.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in out), "utf-8")
    siblings = sum(row["label"] == "sibling" for row in out)
    print(
        f"{args.out}: {len(out) - siblings} leaks, {siblings} siblings (threshold {threshold:.4f})"
    )


if __name__ == "__main__":
    main()
