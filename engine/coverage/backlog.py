"""The ``weak_categories`` debug backlog, from selected, attributed misses: one item per category.

An item carries the category's findings with values and thresholds, its
counts, the selected misses (case id, text, label, prediction, the top
positive and negative tokens and the convergence delta when attributed),
the proposed actions, the category's threat mappings (ATLAS and OWASP LLM
Top 10 ids, when the taxonomy carries them), how the misses were attributed
(by the measured detector, by another model for a recorded reason, or not
at all) and ``release_authority: "none"``: a reviewer accepts a category
into the next hardening cycle or rejects it with a note; nothing here
changes a model or a release. The item's subject is the category under the
detector (its digest) and the holdout (the source's evaluation set id): a
later backlog run for them, with other misses or findings, is about the same
subject, so an earlier review carries by the rule of ``engine.subjects``.
"""

from __future__ import annotations

from typing import Any

from engine.backlog import BacklogItem
from engine.canonical import canonical_sha256
from engine.coverage.attribution import top_tokens
from engine.coverage.findings import FindingSource
from engine.coverage.misses import MissSelection
from engine.coverage.policy import AttributionPolicy
from engine.coverage.weak import severity
from engine.errors import InputError
from engine.roles import WEAK_CATEGORIES

QUEUE = WEAK_CATEGORIES
ITEM_KIND = "coverage.weak_category"

GENERIC_ACTIONS = (
    "review tokenizer and normalization behaviour on the selected misses",
    "test each hypothesis in a separately approved experiment",
)
ISSUE_ACTIONS = {
    "low_recall": "generate governed adversarial variants for {category} (AID-H-026.002)",
    "recall_regression": "compare the previous and current detector on {category} to find "
    "what the change lost",
    "high_fpr": "mine governed benign counterexamples near the false positives of {category}",
}


def _finding_text(finding: dict[str, Any]) -> str:
    if finding["issue"] == "recall_regression":
        return (
            f"recall_regression {finding['previous']:.3g}→{finding['current']:.3g} "
            f"(Δ {finding['delta']:.3g} > {finding['threshold']:.3g})"
        )
    sign = "<" if finding["issue"] == "low_recall" else ">"
    return f"{finding['issue']} {finding['value']:.3g} {sign} {finding['threshold']:.3g}"


def _miss_entry(
    miss, explanation: dict[str, Any] | None, policy: AttributionPolicy, reason: str | None
) -> dict[str, Any]:
    entry = {
        "case_id": miss.case_id,
        "text": miss.text,
        "text_sha256": miss.text_sha256,
        "label": miss.label,
        "prediction": miss.pred,
        "rank_key": miss.rank_key,
    }
    if explanation is None:
        entry["attribution"] = {"status": "not_run", "reason": reason}
        return entry
    positive, negative = top_tokens(explanation, policy.top_tokens_per_direction)
    entry["attribution"] = {
        "status": "explained",
        "method": "layer_integrated_gradients",
        "target_label": explanation["target_label"],
        "convergence_delta": explanation["convergence_delta"],
        "top_positive_tokens": positive,
        "top_negative_tokens": negative,
    }
    return entry


BINDINGS = ("measured_detector", "override")


def attribution_record(
    *,
    explained: bool,
    model_sha256: str | None,
    detector_sha256: str | None,
    binding: str | None,
    override_reason: str | None,
    not_run_reason: str | None,
    policy: AttributionPolicy,
) -> dict[str, Any]:
    """Gives what an item records about how its misses were attributed."""
    if explained and (model_sha256 is None or binding not in BINDINGS):
        raise InputError(
            "an attributed item names its model and how it is bound to the measured detector",
            field="attribution",
        )
    if (binding == "override") != (override_reason is not None):
        raise InputError(
            "a model that is not the measured detector needs a reason, and only it", field="reason"
        )
    return {
        "status": "explained" if explained else "not_run",
        "model_sha256": model_sha256,
        "detector_sha256": detector_sha256,
        "binding": binding,
        "override_reason": override_reason,
        "not_run_reason": None if explained else not_run_reason,
        "policy": policy.to_json(),
    }


def build_items(
    source: FindingSource,
    selection: MissSelection,
    explanations: dict[str, dict[str, Any]],
    policy: AttributionPolicy,
    *,
    run_id: str,
    model_sha256: str | None,
    binding: str | None = None,
    override_reason: str | None = None,
    not_run_reason: str | None = None,
) -> list[BacklogItem]:
    """Gives one backlog item per weak category, reconciled with every selected miss.

    ``explanations`` maps case_id to its attribution; when empty the misses
    carry ``status: not_run`` with ``not_run_reason``. ``binding`` says whether
    the model is the measured detector or attributes by ``override_reason``.
    """
    weak = sorted({f["category"] for f in source.findings})
    if sorted(selection.selected) != weak:
        raise InputError("miss selection does not cover exactly the weak categories")
    selected_ids = {m.case_id for ms in selection.selected.values() for m in ms}
    if explanations and set(explanations) != selected_ids:
        raise InputError("explanations do not reconcile with the selected misses")
    items = []
    for category in weak:
        findings = [f for f in source.findings if f["category"] == category]
        row = source.row(category)
        issues = [f["issue"] for f in findings]
        actions = [ISSUE_ACTIONS[i].format(category=category) for i in issues]
        payload = {
            "subject": {
                "kind": "weak_category",
                "category": category,
                "detector_sha256": source.detector_sha256,
                "holdout": source.evaluation_set_id,
            },
            "kind": ITEM_KIND,
            "category": category,
            "findings": findings,
            "counts": {
                "sample_count": row["sample_count"],
                "positive_count": row["positive_count"],
                "negative_count": row["negative_count"],
                "true_positive_count": row["true_positive_count"],
                "false_positive_count": row["false_positive_count"],
                "eligible_misses": len(selection.eligible[category]),
                "selected_misses": len(selection.selected[category]),
            },
            "misses": [
                _miss_entry(m, explanations.get(m.case_id), policy, not_run_reason)
                for m in selection.selected[category]
            ],
            "proposed_actions": actions + list(GENERIC_ACTIONS),
            "release_authority": "none",
            "source": source.to_json(),
            "threats": source.threats(category),
            "attribution": attribution_record(
                explained=bool(explanations),
                model_sha256=model_sha256,
                detector_sha256=source.detector_sha256,
                binding=binding,
                override_reason=override_reason,
                not_run_reason=not_run_reason,
                policy=policy,
            ),
            "summary": {
                "title": f"{category}: " + "; ".join(_finding_text(f) for f in findings),
                "score": round(max(severity(f) for f in findings), 6),
                "tags": issues + ([source.eligibility] if source.eligibility else []),
            },
        }
        digest = canonical_sha256({"queue": QUEUE, "category": category, "payload": payload})
        items.append(BacklogItem.make(QUEUE, f"wc-{digest[:16]}", run_id, payload))
    return items
