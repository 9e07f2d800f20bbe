"""Two texts as one word diff: each side's own words marked in place, shared runs folded
with a few words of context, long one-sided runs cut to their ends, nothing hostile drawn."""

from __future__ import annotations

from reviewer.panes import word_diff as wd

EVAL = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many "
    "clips in May. How many clips did Natalia sell altogether in April and May?"
)


def _styled(text, style: str) -> list[str]:
    return [text.plain[s.start : s.end] for s in text.spans if str(s.style) == style]


def test_new_numbers_show_as_each_side_s_number_with_three_words_either_side():
    shown = wd.render(EVAL, EVAL.replace("48", "52")).plain
    # 31 words: four before the number, 26 after it, three of those shown
    assert shown == "Natalia sold clips to [-48-] {+52+} of her friends …23 shared words…"


def test_shared_runs_between_changes_fold_and_keep_their_context():
    other = EVAL.replace("48", "52").replace("altogether", "in total")
    shown = wd.render(EVAL, other).plain
    # 21 shared words between the changes: three each side shown, 15 folded; the last
    # four are shown whole (folding one word would not save room)
    assert shown == (
        "Natalia sold clips to [-48-] {+52+} of her friends …15 shared words… did Natalia "
        "sell [-altogether-] {+in total+} in April and May?"
    )
    c = wd.counts(EVAL, other)
    assert (c.shared, c.eval_only, c.match_only) == (len(EVAL.split()) - 2, 2, 3)


def test_a_short_shared_run_is_shown_whole_not_folded():
    shown = wd.render("a b c d e f g", "a b X d e Y g").plain
    assert shown == "a b [-c-] {+X+} d e [-f-] {+Y+} g"


def test_each_side_s_words_carry_their_own_style():
    text = wd.render("one two three", "one 2 three")
    assert _styled(text, wd.EVAL_STYLE) == ["[-", "two", "-]"]
    assert _styled(text, wd.MATCH_STYLE) == ["{+", "2", "+}"]


def test_a_long_one_sided_run_keeps_its_ends_and_says_how_many_words_lie_between():
    answer = " ".join(f"w{n}" for n in range(100))
    shown = wd.render(EVAL, f"{EVAL} {answer}").plain
    assert f"{{+{' '.join(f'w{n}' for n in range(wd.RUN_ENDS))} …80 more words… " in shown
    assert shown.endswith(f"{' '.join(f'w{n}' for n in range(90, 100))}+}}")


def test_the_same_texts_say_so_in_one_line():
    assert wd.render(EVAL, EVAL).plain == f"the same {len(EVAL.split())} words, in the same order"


def test_a_hostile_word_is_drawn_as_its_name_never_as_a_control_sequence():
    shown = wd.render("ok \x1b[2J wiped", "ok \x1b]52;c;cGF3bg==\x07 wiped").plain
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown.startswith("ok [-") and shown.endswith("+} wiped")
