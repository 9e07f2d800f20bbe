"""The adjudication pane's rubric wraps once at the pane's width: its hard-wrapped lines
are joined again, so a narrow pane does not wrap each of them a second time."""

from __future__ import annotations

import io

from rich.console import Console

from engine.exam.protocol import RUBRIC_TEXT
from reviewer.panes.adjudication import reflowed, rubric_section


def drawn(renderable, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text().splitlines()


def test_the_words_and_list_entries_of_the_rubric_are_kept():
    assert reflowed(RUBRIC_TEXT).split() == RUBRIC_TEXT.split()
    entries = [line for line in RUBRIC_TEXT.splitlines() if line.startswith("  ")]
    assert entries and all(entry in reflowed(RUBRIC_TEXT).splitlines() for entry in entries)


def test_at_a_pane_width_no_line_inside_a_paragraph_is_a_stray_fragment():
    width = 50
    lines = drawn(rubric_section({}), width)
    start = next(n for n, line in enumerate(lines) if line.strip().startswith("Label claims"))
    body = [line.rstrip() for line in lines[start:]]
    # where a line of the rubric starts (a paragraph or a list entry): a break is due there
    starts = {" ".join(line.split()[:3]) for line in reflowed(RUBRIC_TEXT).splitlines() if line}
    checked = 0
    for line, after in zip(body, body[1:], strict=False):
        if not after.strip() or " ".join(after.split()[:3]) in starts:
            continue
        # more of the same line of the rubric follows: the pane's wrapping broke here only
        # because the next word did not fit (a hard break would leave room for it)
        checked += 1
        assert len(line) + 1 + len(after.split()[0]) > width, (line, after)
    assert checked > 10
