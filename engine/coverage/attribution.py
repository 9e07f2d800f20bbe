"""Integrated-gradients attribution of detector misses (debug backlog, step 2).

Needs the optional extra ``sealdesk[attribution]`` (torch, transformers,
captum), imported only when attribution runs. The model is a local
transformers sequence classifier directory (``save_pretrained`` layout);
nothing is downloaded. Attribution is a debugging aid for selected misses:
not causal proof, not a promotion metric, not authority to change a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.artifacts import file_sha256
from engine.canonical import canonical_sha256
from engine.coverage.misses import Miss
from engine.coverage.policy import ATTRIBUTION_LIMITS, AttributionPolicy, positive_integer
from engine.errors import InputError, SealdeskError

EXTRA_HINT = "attribution needs the optional extra: pip install 'sealdesk[attribution]'"


class AttributionUnavailable(SealdeskError):
    """The attribution extra is not installed, or the model cannot be attributed."""

    exit_code = 2


@dataclass(frozen=True)
class Detector:
    """A loaded local classifier, its tokenizer and the digest of its files."""

    model: Any
    tokenizer: Any
    sha256: str
    path: str


def directory_digest(directory: Path) -> str:
    """Gives the SHA-256 of the canonical map of every file's relative path to its SHA-256."""
    files = {
        str(p.relative_to(directory)): file_sha256(p)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }
    if not files:
        raise InputError("model directory holds no files", path=directory)
    return canonical_sha256(files)


def load_detector(directory: str | Path) -> Detector:
    """Gives the classifier and tokenizer saved in a local directory (no download)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError("model is not a directory", path=directory)
    try:
        import captum  # noqa: F401
        import torch  # noqa: F401
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise AttributionUnavailable(f"{EXTRA_HINT} ({exc.name} is missing)") from exc
    # sealdesk draws its own progress; transformers' bars would interleave.
    hf_logging.disable_progress_bar()
    try:
        model = AutoModelForSequenceClassification.from_pretrained(directory, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise InputError(
            f"not a local transformers sequence classifier: {exc}", path=directory
        ) from exc
    if model.get_input_embeddings() is None or tokenizer.pad_token_id is None:
        raise AttributionUnavailable(
            f"{directory}: the model has no input-embedding layer or "
            "the tokenizer no pad token to use as the baseline"
        )
    model.eval()
    return Detector(model, tokenizer, directory_digest(directory), str(directory))


def explain_miss(detector: Detector, miss: Miss, policy: AttributionPolicy) -> dict[str, Any]:
    """Gives every token's integrated-gradients score toward the true label, with the
    convergence delta, for one miss."""
    import torch
    from captum.attr import LayerIntegratedGradients

    max_length = positive_integer(
        policy.tokenizer_max_length,
        "tokenizer_max_length",
        maximum=ATTRIBUTION_LIMITS["tokenizer_max_length"],
    )
    steps = positive_integer(
        policy.integration_steps,
        "integration_steps",
        maximum=ATTRIBUTION_LIMITS["integration_steps"],
    )
    if miss.label == miss.pred or miss.label not in (0, 1):
        raise InputError(f"case {miss.case_id!r} is not a binary detector miss", field="label")
    model, tokenizer = detector.model, detector.tokenizer
    device = next(model.parameters()).device
    encoded = tokenizer(miss.text, return_tensors="pt", truncation=True, max_length=max_length)
    input_ids = encoded["input_ids"].to(device)
    attention_mask = encoded["attention_mask"].to(device)
    # The all-padding sequence is the "no evidence" input the path starts from.
    baseline = torch.full_like(input_ids, tokenizer.pad_token_id)

    def forward(ids, mask):
        return model(input_ids=ids, attention_mask=mask).logits

    explainer = LayerIntegratedGradients(forward, model.get_input_embeddings())
    attributions, delta = explainer.attribute(
        inputs=input_ids,
        baselines=baseline,
        additional_forward_args=(attention_mask,),
        target=miss.label,
        n_steps=steps,
        return_convergence_delta=True,
    )
    scores = [float(s) for s in attributions.sum(dim=-1).squeeze(0).detach().cpu().tolist()]
    ids = [int(i) for i in input_ids.squeeze(0).detach().cpu().tolist()]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    convergence = float(delta.detach().cpu().reshape(-1)[0])
    if len(tokens) != len(scores) or not all(math.isfinite(v) for v in scores + [convergence]):
        raise InputError(
            f"attribution of {miss.case_id!r} gave non-finite scores or a token "
            "count that differs from its scores",
            field="token_scores",
        )
    return {
        "case_id": miss.case_id,
        "category": miss.category,
        "text_sha256": miss.text_sha256,
        "detector_sha256": miss.detector_sha256,
        "model_sha256": detector.sha256,
        "target_label": miss.label,
        "token_ids": ids,
        "tokens": tokens,
        "token_scores": scores,
        "special_token_ids": sorted(int(i) for i in tokenizer.all_special_ids),
        "convergence_delta": convergence,
        "tokenizer_max_length": max_length,
        "integration_steps": steps,
    }


def top_tokens(explanation: dict[str, Any], k: int) -> tuple[list[dict], list[dict]]:
    """Gives the k most positive and k most negative word tokens (special tokens left out;
    they stay in the full explanation)."""
    positive_integer(k, "top_tokens_per_direction")
    special = set(explanation["special_token_ids"])
    ranked = [
        {"token": tok, "score": score, "position": i}
        for i, (tok, tid, score) in enumerate(
            zip(
                explanation["tokens"],
                explanation["token_ids"],
                explanation["token_scores"],
                strict=True,
            )
        )
        if tid not in special
    ]
    # Ties break by position so the lists are reproducible.
    positive = sorted(ranked, key=lambda t: (-t["score"], t["position"]))[:k]
    negative = sorted(ranked, key=lambda t: (t["score"], t["position"]))[:k]
    return positive, negative
