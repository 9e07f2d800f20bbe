"""Canonical text (lower-cased, whitespace collapsed, stripped) and the flat content hash
(SHA-256 over each canonical item and a NUL byte); the fast path agrees."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.contamination.channels.shingles import encode_for_hashing, word_hashes
from engine.contamination.inputs.canonical_text import (
    canonical,
    content_sha256,
    numbers_only_differ,
    word_offsets,
)
from engine.contamination.inputs.sources import Batch
from engine.contamination.pool.shard_scan import canonical_texts

# Texts drawn from characters where canonicalization is subtle: every kind of
# whitespace str.isspace() knows, upper case that lower-cases to two chars,
# NUL, accents.
_TRICKY = st.text(
    alphabet=st.sampled_from(
        list("aBz Z09.,$")
        + [
            "\t",
            "\n",
            "\r",
            "\x0b",
            "\x0c",
            "\x1c",
            "\x1f",
            "\u00a0",
            "\u2003",
            "\u3000",
            "\x85",
            "\x00",
            "İ",
            "é",
            "Σ",
            "ß",
            "\u200b",
        ]
    ),
    min_size=0,
    max_size=40,
)


def regex_canonical(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


@given(_TRICKY)
def test_canonical_is_the_whitespace_regex_formula(text):
    assert canonical(text) == regex_canonical(text)


def test_content_hash_is_sha256_of_canonical_items_each_followed_by_nul():
    expected = hashlib.sha256(b"two words\x00x\x00").hexdigest()
    assert content_sha256(["  Two\tWORDS ", "x"]) == expected


def test_content_hash_depends_on_order():
    assert content_sha256(["a", "b"]) != content_sha256(["b", "a"])


@settings(max_examples=300)
@given(st.lists(_TRICKY.filter(lambda t: bool(t.split())), min_size=1, max_size=6))
def test_fast_path_gives_the_regex_canonical_bytes_for_the_content_hash(texts):
    batch, _ = encode_for_hashing(texts)
    stream = word_hashes(batch).canonical_stream
    assert stream == b"".join(regex_canonical(t).encode("utf-8") + b"\x00" for t in texts)


@settings(max_examples=300)
@given(st.lists(_TRICKY.filter(lambda t: bool(t.split())), min_size=1, max_size=6))
def test_fast_path_hashes_a_word_the_same_whatever_its_spelling_before_canonicalization(texts):
    raw = word_hashes(encode_for_hashing(texts)[0])
    canon = word_hashes(encode_for_hashing([regex_canonical(t) for t in texts])[0])
    assert raw.hashes.tolist() == canon.hashes.tolist()
    assert raw.counts.tolist() == [len(regex_canonical(t).split(" ")) for t in texts]


def test_equal_words_get_equal_hashes_and_different_words_differ():
    words = word_hashes(encode_for_hashing(["cat dog cat", "DOG  cat\tbird"])[0]).hashes.tolist()
    cat, dog, cat2, dog2, cat3, bird = words
    assert cat == cat2 == cat3 and dog == dog2
    assert len({cat, dog, bird}) == 3


def test_word_offsets_point_at_the_original_words():
    text = "  Natalia\tsold  48 clips."
    assert [text[a:b] for a, b in word_offsets(text)] == ["Natalia", "sold", "48", "clips."]


def test_numbers_only_differ_when_just_the_numbers_change():
    assert numbers_only_differ("Tom has 12 apples and eats 3.", "Tom has 40 apples and eats 7.")


def test_numbers_only_differ_is_false_for_identical_texts_and_for_word_changes():
    assert not numbers_only_differ("Tom has 12 apples.", "tom  has 12 apples.")
    assert not numbers_only_differ("Tom has 12 apples.", "Tom has 12 pears.")


@settings(max_examples=300)
@given(st.lists(_TRICKY.filter(lambda t: bool(t.split())), min_size=1, max_size=6))
def test_the_reader_takes_each_canonical_text_from_the_workers_bytes(texts):
    # what the embedding channel is given for a batch: the worker's canonical bytes split
    # back into texts, or (a text holding a NUL) each text canonicalised again
    batch = Batch(0, len(texts), list(texts), None, None)
    stream = word_hashes(encode_for_hashing(texts)[0]).canonical_stream
    assert canonical_texts(stream, batch.matchable) == [regex_canonical(t) for t in texts]
