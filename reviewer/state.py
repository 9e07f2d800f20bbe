"""What the review app remembers for its user between sessions: each queue's filter and
sort, and the theme last chosen in the app.

It is the user's, not the workspace's: one small JSON file per workspace beside
the user's config file, never in the workspace (others share that, and a
read-only copy has nowhere to write)::

    $XDG_CONFIG_HOME/sealdesk/state/<workspace id>.json
    (else ~/.config/sealdesk/state/<workspace id>.json)

The file is written whole and atomically (a temporary file, then rename), mode
0600. One that cannot be read or does not hold what this module writes is set
aside with a warning, never fatal: the app starts with the defaults.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from engine.errors import InputError
from engine.item_query import SORTS, ItemFilter
from engine.roles import QUEUES

STATE_TYPE = "sealdesk.review-state/v1"
# The filter fields kept: everything a person sets (who "me" is comes from the session).
FILTER_FIELDS = ("status", "tag", "score_min", "score_max", "text", "decided_by")
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True)
class QueueView:
    """How one queue was browsed: its filter (without whose "me") and sort."""

    filters: ItemFilter = field(default_factory=ItemFilter)
    sort: str = "score_desc"


@dataclass(frozen=True)
class ReviewState:
    """What is remembered for one workspace."""

    theme: str | None = None
    views: dict[str, QueueView] = field(default_factory=dict)
    warning: str | None = None  # why a file that was there is not used (not saved)


def state_dir() -> Path:
    """Gives the folder the state files are in (see the module docstring)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sealdesk" / "state"


def state_path(workspace_id: str) -> Path:
    """Gives the state file of a workspace.

    The id comes from the workspace's own database, which anyone may have
    made: one that is not a plain name (say ``../../x``) is hashed, so the
    file is always inside ``state_dir()``.
    """
    name = (
        workspace_id
        if _SAFE_ID.fullmatch(workspace_id)
        else hashlib.sha256(workspace_id.encode("utf-8")).hexdigest()
    )
    return state_dir() / f"{name}.json"


def _view_from(queue: str, data: Any, path: Path | None) -> QueueView:
    def bad(name: str, why: str) -> InputError:
        return InputError(why, path=path, field=f"views.{queue}{name}")

    if not isinstance(data, dict) or set(data) - {"filters", "sort"}:
        raise bad("", "expected an object of filters and sort")
    sort = data.get("sort", "score_desc")
    if sort not in SORTS:
        raise bad(".sort", f"unknown sort {sort!r}")
    raw = data.get("filters", {})
    if not isinstance(raw, dict) or set(raw) - set(FILTER_FIELDS):
        raise bad(".filters", f"expected only {', '.join(FILTER_FIELDS)}")
    for name in ("status", "tag", "text", "decided_by"):
        if not isinstance(raw.get(name), (str, type(None))):
            raise bad(f".filters.{name}", "expected a string")
    for name in ("score_min", "score_max"):
        value = raw.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise bad(f".filters.{name}", "expected a number")
    filters = ItemFilter(**raw)
    try:
        # "me"/"others" needs a principal to check; any one does for the check.
        replace(filters, principal="someone").validate()
    except InputError as exc:
        raise bad(f".filters.{exc.field}", exc.reason) from None
    return QueueView(filters, sort)


def parse_state(text: str, path: Path | None = None) -> ReviewState:
    """Gives the state a file's text holds, or raises InputError naming the field."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"not JSON: {exc}", path=path) from None
    if not isinstance(data, dict) or data.get("type") != STATE_TYPE:
        raise InputError(f"expected {STATE_TYPE!r}", path=path, field="type")
    for name in sorted(set(data) - {"type", "theme", "views"}):
        raise InputError("unknown field", path=path, field=name)
    theme = data.get("theme")
    if not isinstance(theme, (str, type(None))):
        raise InputError("expected a string", path=path, field="theme")
    views = data.get("views", {})
    if not isinstance(views, dict) or set(views) - set(QUEUES):
        raise InputError(f"expected only {', '.join(QUEUES)}", path=path, field="views")
    return ReviewState(theme, {q: _view_from(q, v, path) for q, v in views.items()})


def load_state(workspace_id: str) -> ReviewState:
    """Gives the remembered state of a workspace: empty if there is none, and empty with
    a warning to show when a file was there but could not be used."""
    path = state_path(workspace_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ReviewState()
    except (OSError, UnicodeDecodeError) as exc:
        return ReviewState(warning=f"{path}: cannot read the saved view ({exc}); using defaults")
    try:
        return parse_state(text, path)
    except InputError as exc:
        return ReviewState(
            warning=f"{exc.one_line()}; using defaults (the file is replaced on the next change)"
        )


def state_json(state: ReviewState) -> str:
    """Gives the file's text for a state (only fields that differ from the defaults)."""
    views: dict[str, Any] = {}
    for queue, view in state.views.items():
        kept = {
            f.name: getattr(view.filters, f.name)
            for f in fields(view.filters)
            if f.name in FILTER_FIELDS and getattr(view.filters, f.name) is not None
        }
        if kept or view.sort != "score_desc":
            views[queue] = {"filters": kept, "sort": view.sort}
    data: dict[str, Any] = {"type": STATE_TYPE, "views": views}
    if state.theme:
        data["theme"] = state.theme
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def save_state(workspace_id: str, state: ReviewState) -> Path:
    """Writes a workspace's state file whole (atomically, 0600); gives its path."""
    path = state_path(workspace_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(state_json(state))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
