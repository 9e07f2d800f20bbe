"""The user's sealdesk config file: theme, signing key and keymap.

Read from ``$SEALDESK_CONFIG``, else ``~/.config/sealdesk/config.toml``::

    theme = "sealdesk-light"          # or dark, light, high-contrast, any Textual theme
    key = "~/.ssh/id_ed25519"         # used when ssh-agent is not available
    principal = "rita"                # when the key is enrolled under several names
    ask_reason = true                 # a and x ask for a reason (or a list of queues)

    [keymap]                          # binding id = key(s), comma-separated
    "review.accept" = "y"
    "review.reject" = "n,x"

A missing file is an empty config; a bad one is an error naming file, line
and field, and the app does not start on it. So is a keymap that gives one key
to two actions live on the same screen (``"review.accept" = "x"`` would leave
reject without its key): the error names both bindings.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import InputError, Location
from engine.roles import QUEUES
from reviewer.actions import keymap_clashes

_KNOWN = {"theme", "key", "principal", "keymap", "ask_reason"}


@dataclass(frozen=True)
class Config:
    """What the config file says; every field optional."""

    path: Path | None = None
    theme: str | None = None
    key: str | None = None
    principal: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    # queues whose accept and reject keys ask for a reason first (A and X always ask)
    ask_reason: tuple[str, ...] = ()


def config_path() -> Path:
    """Gives where the config file is looked for."""
    env = os.environ.get("SEALDESK_CONFIG")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sealdesk" / "config.toml"


def _line_of(text: str, key: str) -> int | None:
    pattern = re.compile(rf'^\s*"?{re.escape(key)}"?\s*=', re.MULTILINE)
    m = pattern.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def load_config(path: Path | None = None, *, known_binding_ids: set[str] | None = None) -> Config:
    """Gives the config at path (default: config_path()). Only the default file may be
    absent (then the config is empty): a file named by --config or $SEALDESK_CONFIG
    that is not there is an error, since its settings would be silently dropped."""
    named = path is not None or bool(os.environ.get("SEALDESK_CONFIG"))
    path = Path(path) if path is not None else config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if named:
            raise InputError(
                "config file not found (named by --config or $SEALDESK_CONFIG)", path=path
            ) from None
        return Config()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read config: {exc}", path=path) from exc
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise InputError(
            f"not valid TOML: {exc}", path=path, line=int(m.group(1)) if m else None
        ) from exc
    for key in sorted(set(data) - _KNOWN):
        raise InputError(
            f"unknown setting (known: {', '.join(sorted(_KNOWN))})",
            path=path,
            line=_line_of(text, key),
            field=key,
        )
    for key in ("theme", "key", "principal"):
        if key in data and not isinstance(data[key], str):
            raise InputError("must be a string", path=path, line=_line_of(text, key), field=key)
    ask = data.get("ask_reason", False)
    if isinstance(ask, bool):
        ask_reason = QUEUES if ask else ()
    elif isinstance(ask, list) and all(q in QUEUES for q in ask):
        ask_reason = tuple(ask)
    else:
        raise InputError(
            f"must be true, false or a list of queues ({', '.join(QUEUES)})",
            path=path,
            line=_line_of(text, "ask_reason"),
            field="ask_reason",
        )
    keymap = data.get("keymap", {})
    if not isinstance(keymap, dict):
        raise InputError(
            'must be a table of binding id = "key"',
            path=path,
            line=_line_of(text, "keymap"),
            field="keymap",
        )
    for binding_id, keys in keymap.items():
        where: Location = {
            "path": path,
            "line": _line_of(text, binding_id),
            "field": f"keymap.{binding_id}",
        }
        if not isinstance(keys, str) or not keys.strip():
            raise InputError('must be a key name such as "y" or "ctrl+y"', **where)
        if known_binding_ids is not None and binding_id not in known_binding_ids:
            raise InputError(
                f"no binding has this id (ids: {', '.join(sorted(known_binding_ids))})", **where
            )
    if known_binding_ids is not None:
        # A key given to two actions that are live together would quietly leave one
        # of them without a key: refused here, before any screen is drawn.
        clashes = keymap_clashes(keymap)
        if clashes:
            clash = clashes[0]
            raise InputError(
                clash.message,
                path=path,
                line=_line_of(text, clash.binding_id),
                field=f"keymap.{clash.binding_id}",
            )
    return Config(
        path=path,
        theme=data.get("theme"),
        key=str(Path(data["key"]).expanduser()) if data.get("key") else None,
        principal=data.get("principal"),
        keymap=dict(keymap),
        ask_reason=ask_reason,
    )
