"""The one rule for text from data on a terminal: controls, format and invisible
characters are shown (``␛``, ``⟨U+202E⟩``), never passed raw; printed JSON reads back
as exactly the value it was made from."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.terminal_text import json_text, visible
from tests.support.hostile_text import HOSTILE, OSC52, unsafe_characters

# Any Unicode text, lone surrogates included (JSON may carry them as escapes).
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=sys.maxunicode))


@pytest.mark.parametrize(
    "raw,shown",
    [
        (OSC52, "␛]52;c;cm0gLXJmIH4vKg==␛\\"),
        ("\x1b[2J", "␛[2J"),
        ("a\x00b\x07c\x7f", "a␀b␇c␡"),
        ("\x9b2J", "⟨U+009B⟩2J"),
        ("x\u202ey", "x⟨U+202E⟩y"),
        ("\u2066i\u2069", "⟨U+2066⟩i⟨U+2069⟩"),
        ("a\u200bb\ufeff", "a⟨U+200B⟩b⟨U+FEFF⟩"),
        ("\U000e0041", "⟨U+E0041⟩"),
        ("\ud800", "⟨U+D800⟩"),
        ("one\ntwo\tthree\r", "one␊two␉three␍"),
    ],
)
def test_each_hidden_character_has_a_visible_form(raw, shown):
    assert visible(raw) == shown


def test_a_text_pane_keeps_newlines_and_tabs_but_shows_a_carriage_return():
    assert visible("one\ntwo\tthree\r\n\x1b[2J", multiline=True) == "one\ntwo\tthree␍\n␛[2J"


def test_plain_text_markup_and_emoji_pass_unchanged():
    for text in ("Natalia sold 48 clips", "[bold red]x[/]", "naïve café ❤️ 日本語 🎉", ""):
        assert visible(text) == text


def test_none_and_non_strings_are_shown_as_text():
    assert visible(None) == ""
    assert visible(0.5) == "0.5"


def test_every_control_format_and_separator_character_of_this_unicode_is_shown():
    missed = [
        f"U+{point:04X}"
        for point in range(sys.maxunicode + 1)
        if unicodedata.category(chr(point)) in {"Cc", "Cf", "Cs", "Zl", "Zp"}
        and visible(chr(point)) == chr(point)
    ]
    assert missed == []


@given(ANY_TEXT)
def test_nothing_a_terminal_would_obey_or_hide_survives(text):
    assert unsafe_characters(visible(text), allowed="") == []
    assert unsafe_characters(visible(text, multiline=True), allowed="\n\t") == []


@given(ANY_TEXT)
def test_showing_is_idempotent_and_keeps_every_visible_character(text):
    shown = visible(text)
    assert visible(shown) == shown
    kept = [
        ch
        for ch in text
        if unicodedata.category(ch) not in {"Cc", "Cf", "Cs", "Zl", "Zp"}
        # The tag block (U+E0000-U+E0FFF: tags, variation selectors, unassigned) is
        # shown by code point as a whole: invisible, or not yet anything.
        and not 0xE0000 <= ord(ch) <= 0xE0FFF
    ]
    # The visible characters of the input appear in order in the output.
    rest = iter(shown)
    assert all(ch in rest for ch in kept)


@given(st.recursive(ANY_TEXT | st.integers() | st.none(), lambda inner: st.lists(inner)))
def test_printed_json_reads_back_exactly_and_holds_no_raw_control(value):
    text = json_text(value, indent=1)
    assert json.loads(text) == value
    assert unsafe_characters(text) == []


def test_printed_json_of_the_hostile_corpus_reads_back_exactly():
    text = json_text(HOSTILE, indent=1)
    assert json.loads(text) == HOSTILE
    assert "\\u202e" in text and "\\u009b" in text and "\\udb40\\udc41" in text
    assert unsafe_characters(text) == []
