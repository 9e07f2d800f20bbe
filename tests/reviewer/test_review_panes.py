"""Detail panes read from payloads: exact highlight offsets, every field shown, no crash."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from reviewer.panes import render_detail, render_payload
from reviewer.panes.adjudication import candidate_span, preceding_message
from reviewer.panes.spans import SHARED_STYLE, find_token_spans, highlight, shared_spans
from tests.support import review_payloads as P


def plain(renderable, width: int = 120) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, record=True)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize(
    "raw, expected",
    [
        ([{"eval": [0, 5], "match": [2, 7]}], ([(0, 5)], [(2, 7)])),
        (
            [{"eval_start": 1, "eval_end": 4, "match_start": 0, "match_end": 3}],
            ([(1, 4)], [(0, 3)]),
        ),
        ([[[0, 5], [2, 7]]], ([(0, 5)], [(2, 7)])),
        ({"eval": [[0, 5], [9, 12]], "match": [[1, 2]]}, ([(0, 5), (9, 12)], [(1, 2)])),
        # Reversed, negative, non-integer and malformed entries are dropped.
        (
            [[[5, 2], [1, 3]], {"eval": [-1, 4]}, "x", [[0, 1.5], [0, 2]], {"eval": [True, 3]}],
            ([], [(1, 3), (0, 2)]),
        ),
    ],
)
def test_shared_spans_accept_every_contract_shape(raw, expected):
    assert shared_spans(raw) == expected


def test_highlight_styles_exactly_the_spans_and_clips_past_the_end():
    text = highlight("abcdefgh", [(1, 3), (6, 99)])
    assert [(s.start, s.end, str(s.style)) for s in text.spans] == [
        (1, 3, SHARED_STYLE),
        (6, 8, SHARED_STYLE),
    ]


def test_the_eval_and_match_texts_are_highlighted_at_the_producers_offsets():
    pair = P.flagged_pair()
    left, right = shared_spans(pair["matches"][0]["shared_spans"])
    eval_text = highlight(P.EVAL_TEXT, left)
    pool_text = highlight(P.POOL_TEXT, right)
    assert [eval_text.plain[s.start : s.end] for s in eval_text.spans] == [
        "Natalia sold clips to 48 of her friends in April,",
        "half as many",
    ]
    assert [pool_text.plain[s.start : s.end] for s in pool_text.spans] == [
        "Natalia sold clips to 48 of her friends in April,",
        "half as many",
    ]


def test_flagged_pair_pane_shows_scores_channels_probe_and_provenance():
    text = plain(render_payload("flagged_pairs", P.flagged_pair(), full_texts=True))
    for shown in (
        "channels      ngram, embedding",
        "MinHash Jaccard (estimate): 0.620",
        "exact Jaccard 0.580",
        "cosine        0.940",
        "differ in     words, not only numbers",
        "reconstruction_rate: 0.770",
        "revision: e53f048856ff4f594e959d75785d2c2d37b678ee",
        "pool web-000913 (#913)",
    ):
        assert shown in text


def test_a_cluster_lists_every_member_in_either_shape():
    text = plain(render_payload("flagged_pairs", P.duplicate_cluster()))
    assert "cluster: 3 members" in text and "eval q-305 (#305): What is 12 times 14?" in text
    text = plain(render_payload("flagged_pairs", P.contamination_producer_pair(), full_texts=True))
    assert "cluster: 2 members" in text and "eval q-91 (#91)" in text
    assert "differ in     numbers only" in text and "containment   0.600" in text


def test_adjudication_pane_shows_question_context_votes_and_why():
    text = plain(render_payload("adjudication", P.exam_producer_candidate()))
    for shown in (
        "Is this span a claim",
        "How fast is it after deploy?",
        "family: metric",
        "entity: latency",
        "offsets: 17–37",
        "lane_b",
        "absent",
        "HTTP 503",
        "model-x",
        "one vote for, no second vote",
    ):
        assert shown in text


def test_candidate_offsets_that_do_not_hold_fall_back_to_the_exact_text():
    text = "I checked. The API is live."
    assert candidate_span(text, {"start": 0, "end": 5, "span_exact_text": "The API is live"}) == (
        11,
        26,
    )
    assert candidate_span(text, {"start": 11, "end": 26, "span_exact_text": "The API is live"}) == (
        11,
        26,
    )
    assert candidate_span(text, {"start": 40, "end": 50}) is None


def test_preceding_message_is_the_last_user_turn():
    assert preceding_message(P.adjudication_candidate()) == "Is the API up after the deploy?"
    assert preceding_message({"context": "plain string"}) == "plain string"


def test_weak_category_pane_shows_findings_counts_tokens_and_actions():
    text = plain(render_payload("weak_categories", P.weak_category()))
    for shown in (
        "recall_regression",
        "0.710",
        "-0.160",
        "true_positives: 22",
        "top +: ign0re 0.410, key 0.220",
        "2. raise threshold review",
        "release authority: none",
    ):
        assert shown in text
    text = plain(render_payload("weak_categories", P.coverage_producer_category()))
    assert "0.700" in text and "0.900" in text and "-0.200" in text  # 0.9 to 0.7: a fall
    assert "top +: ignore 0.500" in text and "convergence delta: 0.004" in text
    assert "attribution: not_run no model given" in text


def test_attributed_tokens_are_found_as_whole_words():
    assert find_token_spans("pls ign0re previous ign0red", "ign0re") == [(4, 10)]
    assert find_token_spans("base64: aWdub3", "base64") == [(0, 6)]


def test_an_unknown_payload_is_shown_as_json():
    text = plain(render_payload("flagged_pairs", P.unknown_shape()))
    assert "shown as JSON" in text and '"similarity": 0.9' in text


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 200)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "eval",
                    "matches",
                    "text",
                    "spans",
                    "shared_spans",
                    "candidate",
                    "completion",
                    "votes",
                    "start",
                    "end",
                    "category",
                    "findings",
                    "misses",
                    "cluster",
                    "id",
                    "context",
                    "scores",
                    "attribution",
                    "counts",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None)
@given(
    queue=st.sampled_from(["flagged_pairs", "adjudication", "weak_categories", "other"]),
    payload=st.dictionaries(
        st.sampled_from(
            [
                "eval",
                "matches",
                "candidate",
                "completion",
                "votes",
                "category",
                "findings",
                "misses",
                "cluster",
                "probe",
                "provenance",
                "context",
                "summary",
            ]
        ),
        json_values,
        max_size=6,
    ),
)
def test_no_payload_makes_a_pane_raise(queue, payload):
    item = {
        "queue": queue,
        "item_id": "x",
        "run_id": "r",
        "item_sha256": "0" * 64,
        "title": "t",
        "payload": payload,
        "decision": None,
    }
    plain(render_detail(item, []), width=60)


def test_each_score_is_shown_against_the_threshold_it_flags_at():
    payload = P.evidence_pair(sibling=True)
    payload["thresholds"]["cosine"] = 0.93
    text = plain(render_payload("flagged_pairs", payload, full_texts=True), width=80)
    # the rephrased leak: under every threshold now; the sibling too, whatever its cosine
    assert "cosine        0.852 < 0.930" in text
    assert "cosine        0.910 < 0.930" in text
    assert "containment   0.025 < 0.500" in text
    assert "flags" not in text
    # beside the word diff the same scores stand on one row: none flags
    compact = plain(render_payload("flagged_pairs", payload), width=80)
    assert "flagged by" not in compact
    assert "not by        Jaccard 0.000 < 0.800, containment 0.000 < 0.500, cosine 0.852 <" in (
        compact
    )
    # a threshold the producer did not write is never made up
    del payload["thresholds"]["jaccard"]
    text = plain(render_payload("flagged_pairs", payload, full_texts=True), width=80)
    assert "exact Jaccard 0.000" in [line.strip() for line in text.splitlines()]
    compact = plain(render_payload("flagged_pairs", payload), width=80)
    assert "not by        Jaccard 0.000, containment 0.000 < 0.500" in compact


def test_at_a_narrow_pane_each_vote_reads_on_whole_lines_with_its_source_under_it():
    import io

    from rich.console import Console

    from reviewer.panes.adjudication import _votes

    console = Console(width=46, file=io.StringIO(), record=True, color_system=None)
    console.print(_votes(P.exam_producer_candidate()))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    # three columns: the why and its source each on whole lines, never folded to a few
    # characters a line
    assert any(line.endswith("HTTP 503") for line in lines), lines
    assert any(line.endswith("(model-x)") for line in lines), lines
    assert any(line.endswith("no label") for line in lines), lines
    assert len(lines) <= 1 + 2 * 3  # a header and at most two lines a vote
