"""Makes a real paraphrase-search benchmark: GSM8K's rephrased test set against a pool
that holds the test questions among their look-alikes.

Run from the repository root:

  python sample_data/contamination/make_real_paraphrase_pool.py \\
      --test test.jsonl --train train.jsonl --rephrased rephrase_gsm8k.jsonl --out DIR
  sealdesk bench contamination --embed --embed-data DIR

The inputs are public files this repository does not ship: GSM8K's
``grade_school_math/data/test.jsonl`` and ``train.jsonl`` (``question``) and a
rephrased test set with one row per test question in the same order (``text``:
"Question: ...\\nAnswer: ...", as LLM Decontaminator's ``rephrase_gsm8k.jsonl``).

- **eval.jsonl**: every rephrased test question (the few rows that lost their
  question are left out), id ``r<n>``.
- **pool.jsonl**: every test question (``t<n>``), ``--copies`` renumbered copies of
  each (its own words, every number changed: nearer to it, for any sentence model,
  than its rephrasing is), the train questions (``a<n>``) and one renumbered copy
  of each; shuffled with a fixed seed.
- **planted.jsonl**: the true pairs, ``r<n>`` with ``t<n>``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def rephrased_question(text: str) -> str:
    """Gives the question of a "Question: ...\\nAnswer: ..." row ("" when it has none)."""
    if not re.match(r"\s*Question:", text):
        return ""
    text = re.sub(r"^\s*Question:\s*", "", text)
    return re.split(r"\n\s*Answer:", text, maxsplit=1)[0].strip()


def renumbered(text: str, rng: random.Random) -> str:
    """Gives the text with every number in digits replaced by another of its size."""

    def other(found: re.Match[str]) -> str:
        value = int(found.group())
        new = value
        while new == value:
            new = rng.randint(max(1, value // 2), max(9, value * 2))
        return str(new)

    return re.sub(r"\d+", other, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", type=Path, required=True)
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--rephrased", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    test = [row["question"] for row in _rows(args.test)]
    train = [row["question"] for row in _rows(args.train)]
    rephrased = [rephrased_question(row["text"]) for row in _rows(args.rephrased)]
    if len(rephrased) != len(test):
        raise SystemExit(f"{args.rephrased}: {len(rephrased)} rows, the test set {len(test)}")
    pool = [(f"t{n}", text) for n, text in enumerate(test)]
    pool += [
        (f"t{n}-renumbered-{c}", renumbered(text, rng))
        for n, text in enumerate(test)
        for c in range(args.copies)
    ]
    pool += [(f"a{n}", text) for n, text in enumerate(train)]
    pool += [(f"a{n}-renumbered", renumbered(text, rng)) for n, text in enumerate(train)]
    rng.shuffle(pool)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "eval.jsonl", "w", encoding="utf-8") as out:
        for n, text in enumerate(rephrased):
            if text:
                out.write(json.dumps({"id": f"r{n}", "question": text}) + "\n")
    with open(args.out / "pool.jsonl", "w", encoding="utf-8") as out:
        for ident, text in pool:
            out.write(json.dumps({"id": ident, "text": text}) + "\n")
    with open(args.out / "planted.jsonl", "w", encoding="utf-8") as out:
        for n, text in enumerate(rephrased):
            if text:
                out.write(json.dumps({"eval_id": f"r{n}", "pool_id": f"t{n}"}) + "\n")
    kept = sum(1 for text in rephrased if text)
    print(f"{args.out}: {kept} eval items, {len(pool)} pool documents, {kept} true pairs")


if __name__ == "__main__":
    main()
