"""The review app's real terminal output is readable in every colour depth and theme.

The app runs in tmux (as people run it), and the screen is read back with its
colours and attributes (``capture-pane -e``): on every built-in theme, at 16
colours, 256 and truecolor, with and without NO_COLOR, no text is drawn in its
own background's colour (on a dark or a light terminal profile alike), and
each highlight (the cursor row, each side's own words in a pair's word diff,
the shared spans of its whole texts, the field being edited in a dialog)
differs from plain text by an attribute or a colour.
"""

from __future__ import annotations

import sys

import pytest

from tests.conftest import REPO
from tests.support.ansi_screen import PROFILES, Pen, contrast, parse, pens, seen

pytestmark = [pytest.mark.needs_tmux, pytest.mark.slow]

THEMES = ("dark", "light", "high-contrast")
TERMINALS = {
    # name: environment the app starts in
    "16": {"TERM": "screen"},
    "256": {"TERM": "xterm-256color"},
    "truecolor": {"TERM": "xterm-256color", "COLORTERM": "truecolor"},
}
# Below this WCAG ratio text is unreadable by any account (the same colour is 1.0).
UNREADABLE = 1.5


def _start(tmux, desk, tmp_path, theme: str, terminal: str, no_color: bool) -> None:
    env = {**TERMINALS[terminal], "LANG": "C.UTF-8", "PYTHONPATH": str(REPO)}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "user-config")
    if no_color:
        env["NO_COLOR"] = "1"
    unset = "" if "COLORTERM" in env else "unset COLORTERM; "
    exports = "".join(f"export {k}='{v}'; " for k, v in env.items())
    command = (
        f"{unset}unset NO_COLOR; {exports}cd {REPO} && {sys.executable} -m reviewer "
        f"--workspace {desk.ws.root} review --key {desk.rita} --theme {theme}"
    )
    tmux.new("app", command, width=100, height=30)
    tmux.wait_for("app", "rita as reviewer")


def _capture(tmux) -> list[list[tuple[str, Pen]]]:
    return parse(tmux("capture-pane", "-e", "-p", "-t", "app"))


def unreadable(rows) -> list[str]:
    """Gives, for each cell whose text cannot be seen, where and why."""
    bad = []
    for y, row in enumerate(rows):
        for x, (ch, pen) in enumerate(row):
            if not ch.strip():
                continue
            for profile in PROFILES:
                fg, bg = seen(pen, profile)
                if contrast(fg, bg) < UNREADABLE:
                    bad.append(f"row {y} col {x} {ch!r} on a {profile} terminal: {pen}")
    return bad


def marked(highlight: set[Pen], plain: set[Pen]) -> bool:
    """Says whether every pen of a highlight differs from every pen of plain text by an
    attribute or by the colours seen, on a dark and on a light terminal."""
    return all(
        h.attributes() != p.attributes() or all(seen(h, t) != seen(p, t) for t in PROFILES)
        for h in highlight
        for p in plain
    )


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
@pytest.mark.parametrize("terminal", sorted(TERMINALS))
@pytest.mark.parametrize("theme", THEMES)
def test_text_and_highlights_are_visible(tmux, desk, tmp_path, theme, terminal, no_color):
    _start(tmux, desk, tmp_path, theme, terminal, no_color)
    review = _capture(tmux)
    tmux.keys("app", "w")  # the pair's texts whole, with their shared spans marked
    tmux.wait_for("app", "spans are shown")
    whole = _capture(tmux)
    tmux.keys("app", "f")
    tmux.wait_for("app", "decided by")
    dialog = _capture(tmux)

    assert unreadable(review) == []
    assert unreadable(whole) == []
    assert unreadable(dialog) == []
    # The cursor row (the first undecided pair) against the row below it.
    assert marked(pens(review, "1.000 pair 0"), pens(review, "0.968 pair 1"))
    # The word diff ("eval text 0" against "pool text 0"): each side's own word against
    # the words both share.
    assert marked(pens(review, "[-eval-]"), pens(review, "text 0"))
    assert marked(pens(review, "{+pool+}"), pens(review, "text 0"))
    # The spans a pair shares, against the sentence around the legend's sample.
    assert marked(pens(whole, "like this"), pens(whole, "spans are shown"))
    # The filter field being edited (status) against one that is not (decided by).
    assert marked(pens(dialog, "any status"), pens(dialog, "anyone"))
