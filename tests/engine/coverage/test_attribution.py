"""Debug backlog, step 2: integrated gradients on a real, locally trained transformers classifier.

The classifier is trained here, once per module, on the demo's debug rows
(no download). These tests need the ``attribution`` extra and import torch,
so they are marked slow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("captum")

from engine.coverage.attribution import explain_miss, load_detector, top_tokens  # noqa: E402
from engine.coverage.misses import Miss, rank_key  # noqa: E402
from engine.coverage.policy import AttributionPolicy  # noqa: E402
from engine.coverage.tiny_detector import train_tiny_detector  # noqa: E402
from engine.errors import InputError  # noqa: E402
from tests.conftest import REPO

pytestmark = pytest.mark.slow
ROWS = REPO / "sample_data" / "coverage" / "debug_rows.jsonl"
POLICY = AttributionPolicy(3, "seed", 64, 32, 3)


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [json.loads(line) for line in ROWS.read_text().splitlines()]


@pytest.fixture(scope="module")
def detector(tmp_path_factory, rows):
    out = tmp_path_factory.mktemp("tiny") / "model"
    train_tiny_detector([r["text"] for r in rows], [r["label"] for r in rows], out)
    return load_detector(out)


def miss_of(row: dict) -> Miss:
    return Miss(
        row["case_id"],
        row["text"],
        row["text_sha256"],
        row["label"],
        row["pred"],
        row["category"],
        row["detector_sha256"],
        rank_key("seed", row["case_id"]),
    )


def logits(detector, ids):
    import torch

    with torch.no_grad():
        return detector.model(
            input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long)
        ).logits[0]


def test_training_a_few_steps_fits_the_training_texts(detector, rows):
    import torch

    batch = detector.tokenizer([r["text"] for r in rows], return_tensors="pt", padding=True)
    with torch.no_grad():
        predicted = detector.model(**batch).logits.argmax(dim=-1).tolist()
    accuracy = sum(p == r["label"] for p, r in zip(predicted, rows, strict=True)) / len(rows)
    assert accuracy >= 0.75


def test_every_token_of_the_miss_gets_a_score(detector, rows):
    miss = miss_of(next(r for r in rows if r["case_id"] == "d-obfu-01"))
    explained = explain_miss(detector, miss, POLICY)
    ids = detector.tokenizer(miss.text)["input_ids"]
    assert explained["token_ids"] == ids
    assert explained["tokens"] == detector.tokenizer.convert_ids_to_tokens(ids)
    assert len(explained["token_scores"]) == len(ids)
    assert explained["target_label"] == 1


def test_scores_sum_to_the_true_label_logit_gain_over_the_padding_baseline(detector, rows):
    # Completeness: sum of attributions = f(x) - f(baseline) + convergence delta,
    # where f is the logit of the true label and the baseline is all [PAD].
    for row in rows:
        if row["label"] == row["pred"]:
            continue
        explained = explain_miss(detector, miss_of(row), POLICY)
        ids = explained["token_ids"]
        gain = (
            logits(detector, ids)[row["label"]]
            - logits(detector, [detector.tokenizer.pad_token_id] * len(ids))[row["label"]]
        )
        assert sum(explained["token_scores"]) - float(gain) == pytest.approx(
            explained["convergence_delta"], abs=1e-4
        )
        assert abs(explained["convergence_delta"]) < 0.05


def test_trained_model_gives_nonzero_attributions(detector, rows):
    explained = explain_miss(
        detector, miss_of(next(r for r in rows if r["case_id"] == "d-beni-01")), POLICY
    )
    assert max(abs(s) for s in explained["token_scores"]) > 1e-3


def test_top_tokens_leave_out_special_tokens_and_are_ordered(detector, rows):
    explained = explain_miss(
        detector, miss_of(next(r for r in rows if r["case_id"] == "d-cont-01")), POLICY
    )
    positive, negative = top_tokens(explained, 3)
    assert len(positive) == len(negative) == 3
    assert not {t["token"] for t in positive + negative} & {"[CLS]", "[SEP]", "[PAD]"}
    assert [t["score"] for t in positive] == sorted((t["score"] for t in positive), reverse=True)
    assert [t["score"] for t in negative] == sorted(t["score"] for t in negative)
    word_scores = [
        s
        for s, i in zip(explained["token_scores"], explained["token_ids"], strict=True)
        if i not in explained["special_token_ids"]
    ]
    assert positive[0]["score"] == max(word_scores) and negative[0]["score"] == min(word_scores)


def test_a_correct_prediction_is_not_attributed_as_a_miss(detector, rows):
    hit = next(r for r in rows if r["label"] == r["pred"])
    with pytest.raises(InputError, match="not a binary detector miss"):
        explain_miss(detector, miss_of(hit), POLICY)


def test_a_directory_without_a_model_is_refused(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a local transformers sequence classifier"):
        load_detector(tmp_path / "empty")


def test_backlog_run_with_a_model_carries_attributed_misses(detector, tmp_path, workspace):
    from engine.coverage.run_backlog import run_backlog
    from tests.support.coverage import sample_source

    source = sample_source(tmp_path)
    # The sample benchmark measured a stand-in digest, not this model: a stated reason.
    run = run_backlog(
        workspace,
        source,
        ROWS,
        REPO / "sample_data" / "coverage" / "attribution.toml",
        Path(detector.path),
        override_reason="tiny model trained on the debug rows",
    )
    for item in run.items:
        assert item.payload["attribution"]["model_sha256"] == detector.sha256
        assert item.payload["attribution"]["binding"] == "override"
        for miss in item.payload["misses"]:
            attribution = miss["attribution"]
            assert attribution["status"] == "explained"
            assert attribution["target_label"] == miss["label"] != miss["prediction"]
            assert len(attribution["top_positive_tokens"]) == 3
    explanations = json.loads((run.run_dir / "attributions.json").read_text())
    assert {e["case_id"] for e in explanations} == {
        m["case_id"] for i in run.items for m in i.payload["misses"]
    }
