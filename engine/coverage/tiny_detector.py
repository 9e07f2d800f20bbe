"""A tiny local prompt-injection classifier, trained in seconds, for trying attribution.

It is a one-layer BERT with a word vocabulary built from the training
texts, trained for a few full-batch steps on CPU. The demo and the tests
use it so that integrated gradients run on a real, trained transformers
classifier without downloading anything. It is not a useful detector.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from engine.errors import InputError

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_WORDS = re.compile(r"\w+|[^\w\s]")


def train_tiny_detector(
    texts: Sequence[str],
    labels: Sequence[int],
    out_dir: str | Path,
    *,
    steps: int = 20,
    seed: int = 0,
) -> Path:
    """Gives the directory after training and saving a tiny classifier and its tokenizer."""
    from engine.coverage.attribution import EXTRA_HINT, AttributionUnavailable

    try:
        import torch
        from transformers import BertConfig, BertForSequenceClassification, BertTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise AttributionUnavailable(f"{EXTRA_HINT} ({exc.name} is missing)") from exc
    hf_logging.disable_progress_bar()
    if len(texts) != len(labels) or not texts or set(labels) - {0, 1} or len(set(labels)) < 2:
        raise InputError("training needs texts with labels 0 and 1, one label per text")
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise InputError("output directory is not empty", path=out)
    torch.manual_seed(seed)
    # One thread: a few tiny steps gain nothing from more, and on a shared
    # machine extra threads mostly wait on each other.
    torch.set_num_threads(1)
    words = sorted({w for t in texts for w in _WORDS.findall(t.lower())})
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(SPECIALS + words)})
    config = BertConfig(
        vocab_size=len(SPECIALS) + len(words),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        # PreTrainedConfig takes num_labels through **kwargs, which BertConfig's
        # dataclass fields do not declare.
        num_labels=2,  # type: ignore[call-arg]
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=0.1,
        pad_token_id=tokenizer.pad_token_id,
    )
    # Wider initial weights and no dropout let twenty full-batch steps learn
    # input-dependent logits without saturating the pooler, so integrated
    # gradients have a smooth path (convergence delta near zero).
    model = BertForSequenceClassification(config)
    batch = tokenizer(
        list(texts), return_tensors="pt", padding=True, truncation=True, max_length=128
    )
    target = torch.tensor(list(labels))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(**batch, labels=target).loss
        loss.backward()
        optimizer.step()
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
