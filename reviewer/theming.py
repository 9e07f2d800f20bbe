"""Themes from the top-level ``themes/`` folder (TOML), and which one to start with.

The built-in themes are package data of ``reviewer`` (``reviewer/themes`` links
to ``themes/``), read through ``importlib.resources`` so that an installed
wheel finds them as a checkout does.

A theme file names Textual theme colours (``primary``, ``background``, ...,
ANSI names allowed with ``ansi = true``) and optional ``[variables]``. Users
add their own in ``~/.config/sealdesk/themes/`` or ``$SEALDESK_THEMES_DIR``.
"""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from textual.theme import Theme

from engine.errors import InputError

DEFAULT_THEME = "sealdesk-dark"
# Short names people type.
ALIASES = {
    "dark": "sealdesk-dark",
    "light": "sealdesk-light",
    "high-contrast": "sealdesk-high-contrast",
    "hc": "sealdesk-high-contrast",
}
_FIELDS = {
    "name",
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "dark",
    "ansi",
    "luminosity_spread",
    "text_alpha",
    "variables",
}


def theme_dirs() -> list[Traversable]:
    """Gives the folders themes are read from, later ones overriding earlier ones."""
    dirs: list[Traversable] = [resources.files("reviewer") / "themes"]
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    dirs.append(Path(base) / "sealdesk" / "themes")
    if os.environ.get("SEALDESK_THEMES_DIR"):
        dirs.append(Path(os.environ["SEALDESK_THEMES_DIR"]))
    return [d for d in dirs if d.is_dir()]


def load_theme(path: Path | Traversable) -> Theme:
    """Gives the Textual theme a TOML file describes, or an error naming the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot read theme: {exc}", path=str(path)) from exc
    for key in sorted(set(data) - _FIELDS):
        raise InputError("unknown theme field", path=str(path), field=key)
    for key in ("name", "primary"):
        if not isinstance(data.get(key), str):
            raise InputError("missing (a string is required)", path=str(path), field=key)
    return Theme(**data)


def load_themes() -> dict[str, Theme]:
    """Gives every theme found, by name."""
    themes: dict[str, Theme] = {}
    for folder in theme_dirs():
        for path in sorted(
            (p for p in folder.iterdir() if p.name.endswith(".toml")), key=lambda p: p.name
        ):
            theme = load_theme(path)
            themes[theme.name] = theme
    return themes


def resolve_theme_name(name: str | None) -> str | None:
    """Gives the full theme name for a name or alias."""
    if not name:
        return None
    return ALIASES.get(name, name)


def sixteen_colours() -> bool:
    """Says whether the terminal draws only the 16 ANSI colours (as Rich detects it)."""
    if os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return False
    term = os.environ.get("TERM", "")
    return bool(term) and "256color" not in term and term not in ("xterm-kitty", "alacritty")


def choose_theme(flag: str | None, config: str | None, saved: str | None = None) -> str:
    """Gives the starting theme: --theme, else $TEXTUAL_THEME, else the one last chosen
    in the app on this workspace (saved), else config, else dark (or high-contrast
    where the terminal has only 16 colours, e.g. TERM=screen)."""
    default = "sealdesk-high-contrast" if sixteen_colours() else DEFAULT_THEME
    return (
        resolve_theme_name(flag)
        or resolve_theme_name(os.environ.get("TEXTUAL_THEME"))
        or resolve_theme_name(saved)
        or resolve_theme_name(config)
        or default
    )
