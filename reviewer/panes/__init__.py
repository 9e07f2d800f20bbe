"""Detail panes: one per queue, a JSON view for anything else, and the decision history.

``render_detail`` never raises for a bad payload: a pane that does not
understand a payload, or fails on it, gives way to the formatted JSON so the
item can still be read and decided.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from engine.reasons import Guidelines
from engine.roles import ADJUDICATION, FLAGGED_PAIRS, WEAK_CATEGORIES
from engine.terminal_text import visible
from reviewer.panes import adjudication, flagged, weak
from reviewer.panes.anchors import HISTORY, Anchor
from reviewer.panes.common import (
    CARRIED_MARK,
    REOPENED_GLYPH,
    STATUS_GLYPH,
    number,
    raw_json,
    section,
)

PANES: dict[str, ModuleType] = {
    FLAGGED_PAIRS: flagged,
    ADJUDICATION: adjudication,
    WEAK_CATEGORIES: weak,
}


def _one_line(value: Any) -> str:
    return " ".join(visible(value).split())


def header(item: dict[str, Any]) -> RenderableType:
    """Gives the item's identity line and its standing decision."""
    out = Text()
    out.append(_one_line(item.get("title") or item.get("item_id", "")), style="bold")
    out.append(f"\n{item.get('queue', '?')}/{_one_line(item.get('item_id', '?'))}")
    out.append(f"  run {_one_line(item.get('run_id', '?'))}")
    sha = item.get("item_sha256") or ""
    out.append(f"  sha256 {sha[:16]}")
    decision = item.get("decision")
    if isinstance(decision, dict):
        glyph = STATUS_GLYPH.get(str(decision.get("decision")), "?")
        out.append(
            f"\n{glyph} {decision.get('decision')} by {decision.get('principal')} "
            f"({decision.get('role')}), #{decision.get('seq')}",
            style="bold",
        )
    elif isinstance(item.get("carried_from"), dict):
        made = item["carried_from"]
        out.append(
            f"\n{STATUS_GLYPH.get(made.get('decision'), '?')}{CARRIED_MARK} {made.get('decision')} "
            f"carried: {made.get('principal')}'s {made.get('decision')} of "
            f"{str(made.get('time'))[:10]} on {visible(made.get('item_id', '?'))} "
            f"(#{made.get('seq')}), same question",
            style="bold",
        )
    elif isinstance(item.get("reopened"), dict):
        out.append(f"\n{REOPENED_GLYPH} {visible(item['reopened'].get('text', ''))}", style="bold")
    else:
        out.append("\n· undecided", style="bold")
    # The title and the id line are cut at the pane's edge rather than wrapped: wrapped,
    # they took six lines of an 80-column screen, above the evidence the item is about.
    lines = out.split("\n", allow_blank=True)
    identity = Text("\n").join(lines[:2])
    identity.no_wrap, identity.overflow = True, "ellipsis"
    return Group(identity, Text("\n").join(lines[2:]))


def render_payload(
    queue: str, payload: Any, *, full_texts: bool = False, toggle_key: str = "w"
) -> RenderableType:
    """Gives the queue's pane for a payload, or its JSON when the pane cannot show it.
    A flagged pair's texts are one word diff, or whole with ``full_texts`` (``toggle_key``
    switches, and the pane says so)."""
    pane = PANES.get(queue)
    if pane is None or not isinstance(payload, dict):
        return Group(
            Text("no pane for this item: shown as JSON\n", style="italic"), raw_json(payload)
        )
    try:
        understood = pane.understands(payload)
    except Exception:  # noqa: BLE001 - a payload must never take the app down
        understood = False
    if not understood:
        return Group(
            Text(
                f"this payload is not in the {pane.TITLE} shape the app knows: "
                "shown as JSON (it can still be decided)\n",
                style="italic",
            ),
            raw_json(payload),
        )
    try:
        if pane is flagged:
            return flagged.render(payload, full_texts=full_texts, toggle_key=toggle_key)
        return pane.render(payload)
    except Exception as exc:  # noqa: BLE001 - same: show it rather than crash
        return Group(
            Text(
                f"could not show this {pane.TITLE} ({type(exc).__name__}: "
                f"{visible(exc)}): shown as JSON\n",
                style="italic",
            ),
            raw_json(payload),
        )


def render_history(history: list[dict[str, Any]]) -> RenderableType:
    """Gives every record about the item, oldest first, with retracted ones marked; a
    record made on another item of its subject (one with ``item_id``, from
    ``Workspace.subject_history``) says which item and run it was made on."""
    if not history:
        return section("history", Text("no records yet", style="italic"))
    lines = Text()
    for rec in history:
        if lines:
            lines.append("\n")
        what = rec.get("decision") or rec.get("kind")
        if rec.get("kind") == "retract":
            what = f"retract of {str(rec.get('retracts') or '')[:12]}"
        time = str(rec.get("time") or "")[:19].replace("T", " ")
        style = "strike" if rec.get("retracted") else ""
        lines.append(
            visible(f"#{rec.get('seq')} {time} {rec.get('principal')} ({rec.get('role')}) "),
            style=style,
        )
        lines.append(str(what), style=("bold " + style).strip())
        if rec.get("retracted"):
            lines.append(" (retracted)", style="italic")
        if rec.get("item_id"):
            run = "an earlier run" if rec.get("earlier") else "a later run"
            lines.append(
                visible(f" on {rec['item_id']} ({run}: {rec.get('run_id')})"), style="italic"
            )
        if rec.get("reason"):
            lines.append(visible(f" · {rec['reason']}"), style=("bold " + style).strip())
        if rec.get("rationale"):
            lines.append(f"  “{visible(rec['rationale'])}”", style="italic")
        if rec.get("note"):
            lines.append(f"  “{visible(rec['note'])}”", style="italic")
    return section("history", lines)


def render_guidelines(guidelines: Guidelines | Exception | None) -> RenderableType:
    """Gives the queue's guidelines as the lead set them, with their SHA-256 (each
    decision made now carries it), or what is wrong with them; nothing when none are
    set. Their text is shown through the sanitiser: a file is hostile."""
    if guidelines is None:
        return Group()
    if isinstance(guidelines, Exception):
        return section("guidelines", Text(visible(f"cannot read them: {guidelines}")))
    body = Text()
    body.append(f"sha256 {guidelines.sha256} (sealdesk guidelines show)\n", style="italic")
    body.append(visible(guidelines.text.rstrip("\n"), multiline=True))
    return section("guidelines", body)


def render_detail(
    item: dict[str, Any] | None,
    history: list[dict[str, Any]],
    *,
    guidelines: Guidelines | Exception | None = None,
    full_texts: bool = False,
    toggle_key: str = "w",
) -> RenderableType:
    """Gives the whole detail pane of an item: header, its queue's pane, the queue's
    guidelines when set, its history."""
    if item is None:
        return Text("no item selected", style="italic")
    parts: list[RenderableType] = [
        header(item),
        render_payload(
            item.get("queue", ""),
            item.get("payload"),
            full_texts=full_texts,
            toggle_key=toggle_key,
        ),
        Text(""),
    ]
    if guidelines is not None:
        parts.append(render_guidelines(guidelines))
    return Group(*parts, Anchor(HISTORY), render_history(history))


__all__ = [
    "render_detail",
    "render_payload",
    "render_history",
    "render_guidelines",
    "header",
    "number",
]
