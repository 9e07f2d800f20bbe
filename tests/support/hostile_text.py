"""Hostile strings, as someone who supplies an eval set or a backlog would write them,
and the check that none of their control reached a terminal.

Each entry is what a title, a text or an eval id may hold: an OSC 52 that writes the
terminal's clipboard, an OSC 0 that sets the window title, a CSI that clears the
screen and draws a fake status line, cursor moves, the one-byte C1 CSI, bidi
overrides and isolates, zero-width characters, Rich markup, and a very long line.
"""

from __future__ import annotations

import base64
import unicodedata

# What the clipboard attack writes: if it ever shows up in tmux's buffer, it got through.
CLIPBOARD_PAYLOAD = "rm -rf ~/*"
OSC52 = "\x1b]52;c;" + base64.b64encode(CLIPBOARD_PAYLOAD.encode()).decode() + "\x1b\\"
WINDOW_TITLE = "PWNED-WINDOW-TITLE"
FAKE_STATUS = "FAKE: all items decided, ledger verified"

HOSTILE = {
    "osc52-clipboard": f"clip {OSC52} end",
    "osc0-title": f"title \x1b]0;{WINDOW_TITLE}\x07 end",
    "osc2-title-st": f"title2 \x1b]2;{WINDOW_TITLE}\x1b\\ end",
    "csi-clear": f"clear \x1b[2J\x1b[H{FAKE_STATUS}",
    "csi-cursor": "moves \x1b[5;1H\x1b[Kover\x1b[1A\x1b[99Cthere\x1b7\x1b8",
    "csi-colour": "colour \x1b[31;1mRED\x1b[0m",
    "c1-csi": "c1 \x9b2J\x9b1;1H one-byte CSI",
    "c1-osc": f"c1osc \x9d0;{WINDOW_TITLE}\x9c end",
    "bell-backspace-cr": "bell\x07 back\x08\x08 cr\r over",
    "bidi-override": "invoice_\u202eexe.txt and \u202dltr\u202c",
    "bidi-isolates": "iso \u2066left\u2069 \u2067right\u2069 \u2068first\u2069 \u200e\u200f\u061c",
    "zero-width": "ad\u200bmin \u200c\u200d\u2060\ufeff \U000e0041\U000e0042 tags",
    "line-separators": "line\u2028para\u2029nel\x85end",
    "newline-tab": "one\ntwo\tthree",
    "del": "del\x7fete",
    "rich-markup": "[bold red]RED[/bold red] [link=https://evil.example]click[/link] [/]",
    "long-line": "L" * 5000,
}

# Ids from an eval set: ingest refuses C0/C1 in an item id, so these carry what it lets
# pass (bidi, zero-width) plus Rich markup; a scan's eval ids may hold anything.
HOSTILE_IDS = {
    "bidi-id": "fp-\u202eevil",
    "zero-width-id": "fp-a\u200bb",
    "markup-id": "fp-[bold]x[/bold]",
}

# What a terminal would act on, or that draws nothing, or that moves the reading order.
_UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def unsafe_characters(output: str, *, allowed: str = "\n") -> list[str]:
    """Gives each character of output a terminal would take as control or hide, by code
    point (e.g. U+202E)."""
    return sorted(
        {
            f"U+{ord(ch):04X}"
            for ch in output
            if ch not in allowed and unicodedata.category(ch) in _UNSAFE_CATEGORIES
        }
    )
