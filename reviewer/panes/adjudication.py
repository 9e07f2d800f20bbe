"""Adjudication candidate: the completion with the candidate span highlighted, and the votes."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from engine.exam.protocol import PROTOCOL_VERSION, RUBRIC_ID, RUBRIC_TEXT, rubric_sha256
from engine.terminal_text import visible
from reviewer.panes.common import add_row, as_list, boxed, cut, fields, get, number, section
from reviewer.panes.spans import CANDIDATE_STYLE, as_span, find_token_spans, highlight

TITLE = "adjudication candidate"


def understands(payload: dict[str, Any]) -> bool:
    """Says whether the payload has a completion and a candidate span in it."""
    return isinstance(payload.get("candidate"), dict) and (
        isinstance(payload.get("completion"), (dict, str))
    )


def _completion_text(payload: dict[str, Any]) -> tuple[str, str | None]:
    completion = payload.get("completion")
    if isinstance(completion, str):
        return completion, None
    return _as_text(get(completion, "text", "content", default="")), get(completion, "id")


def _as_text(value: Any) -> str:
    """Gives a payload's text as it is (shown through ``visible`` only when drawn, so the
    candidate's offsets still count its characters)."""
    return value if isinstance(value, str) else ("" if value is None else str(value))


def candidate_span(text: str, candidate: dict[str, Any]) -> tuple[int, int] | None:
    """Gives where the candidate is in the completion: its offsets if they hold, else a search."""
    exact = get(candidate, "span_exact_text", "text", "span_text", "span")
    span = as_span((get(candidate, "start", "char_start"), get(candidate, "end", "char_end")))
    if (
        span
        and span[1] <= len(text)
        and (not isinstance(exact, str) or text[span[0] : span[1]] == exact)
    ):
        return span
    if isinstance(exact, str) and exact:
        found = find_token_spans(text, exact, limit=1)
        if found:
            return found[0]
    return span if span and span[1] <= len(text) else None


def preceding_message(payload: dict[str, Any]) -> str | None:
    """Gives the user message before the completion, from a string or a list of turns."""
    context = get(payload, "context", "preceding", "preceding_user_message", "prompt")
    if isinstance(context, dict):
        context = get(context, "user", "text", "content", "messages", default=context)
    if isinstance(context, str):
        return context
    turns = [t for t in as_list(context) if isinstance(t, dict)]
    users = [t for t in turns if get(t, "role") == "user"] or turns
    if users:
        return _as_text(get(users[-1], "content", "text", default=""))
    return None


def _vote_row(vote: Any, source: str | None = None) -> tuple[str, str, str, str]:
    if not isinstance(vote, dict):
        return (visible(source or "?"), number(vote), "", "")
    voter = get(vote, "voter", "lane", "source", "model", default=source or "?")
    origin = get(vote, "source", "model") if get(vote, "voter", "lane") else None
    return (
        visible(voter),
        number(get(vote, "vote", "label", "decision", "verdict")),
        visible(get(vote, "reason", "why", "basis", "note", "detail", default="")),
        visible(origin or ""),
    )


def _votes(payload: dict[str, Any]) -> Table | Text:
    votes = get(payload, "votes", default=[])
    if isinstance(votes, dict):
        rows = [_vote_row(v, source) for source, v in sorted(votes.items())]
    else:
        rows = [_vote_row(v) for v in as_list(votes)]
    if not rows:
        return Text("no votes recorded", style="italic")
    # three columns, the source on its own line under the why: at 80 columns a fourth
    # column left why and source four characters wide each
    table = Table(box=None, show_edge=False, pad_edge=False, expand=False)
    table.add_column("voter", style="bold", no_wrap=True)
    table.add_column("vote", no_wrap=True)
    table.add_column("why (source)", overflow="fold")
    for voter, vote, why, origin in rows:
        cell = Text(why)
        if origin:
            cell.append(("\n" if why else "") + f"({origin})", style="dim")
        add_row(table, voter, vote, cell)
    return table


def _failed_attempts(payload: dict[str, Any]) -> Table | None:
    """Gives, per vote lost to operational failure, its failed attempts counted by reason."""
    entries = [e for e in as_list(get(payload, "failed_attempts")) if isinstance(e, dict)]
    if not entries:
        return None
    table = Table(box=None, show_edge=False, pad_edge=False, expand=False)
    table.add_column("voter", style="bold", no_wrap=True)
    table.add_column("attempts by reason", overflow="fold")
    table.add_column("detail", overflow="fold")
    for entry in entries:
        reasons = get(entry, "reasons", default={})
        counted = (
            ", ".join(f"{visible(r)} ×{number(n)}" for r, n in reasons.items())
            if isinstance(reasons, dict) and reasons
            else "no reason recorded"
        )
        details = [visible(d) for d in as_list(get(entry, "details")) if isinstance(d, str)]
        add_row(
            table,
            visible(get(entry, "voter", default="?")),
            counted,
            "\n".join(details) or visible(get(entry, "source", default="")),
        )
    return table


def rubric_section(payload: dict[str, Any]) -> Group:
    """Gives the frozen rubric the candidate is judged against, with its id and SHA-256
    (what ``sealdesk exam rubric`` prints), and a warning when the item was queued
    under another protocol version than the one this rubric belongs to."""
    body = Text()
    made_under = get(get(payload, "exam", default={}), "protocol_version")
    if isinstance(made_under, str) and made_under != PROTOCOL_VERSION:
        body.append(
            f"this item was queued under {visible(made_under)}; the rubric below is "
            f"{PROTOCOL_VERSION}'s\n",
            style="bold reverse",
        )
    body.append(f"sha256 {rubric_sha256()} (sealdesk exam rubric)\n", style="italic")
    body.append(reflowed(RUBRIC_TEXT))
    return section(f"rubric {RUBRIC_ID}", body)


def reflowed(text: str) -> str:
    """Gives a hard-wrapped text with its wrapped lines joined again, so that a pane
    narrower than the text was wrapped for wraps it once, not each line twice: an
    indented line (an entry of a list) keeps its own line; a blank one ends a paragraph."""
    out: list[str] = []
    joinable = False
    for line in text.rstrip("\n").split("\n"):
        if not line.strip():
            out.append("")
            joinable = False
        elif line[0].isspace():
            out.append(line.rstrip())
            joinable = False
        elif joinable:
            out[-1] += " " + line.strip()
        else:
            out.append(line.strip())
            joinable = True
    return "\n".join(out)


def render(payload: dict[str, Any]) -> RenderableType:
    """Gives the adjudication pane for a payload this module understands."""
    candidate = payload["candidate"]
    text, completion_id = _completion_text(payload)
    span = candidate_span(text, candidate)
    parts: list[RenderableType] = []
    question = get(payload, "question")
    if isinstance(question, str) and question:
        ask = Text(visible(question, multiline=True), style="italic")
        ask.append(f"\njudged against rubric {RUBRIC_ID}, at the end of this pane")
        parts.append(section("question", ask))
    user = preceding_message(payload)
    if user:
        parts.append(
            section("preceding user message", cut(Text(visible(user, multiline=True)), 4000))
        )
    body = cut(highlight(text, [span] if span else [], CANDIDATE_STYLE))
    parts.append(
        section(
            f"completion {visible(completion_id or '')}".strip(),
            boxed(
                "candidate span highlighted" if span else "candidate span not found in the text",
                body,
            ),
        )
    )
    exact = get(candidate, "span_exact_text", "text", "span_text")
    parts.append(
        section(
            "candidate",
            fields(
                [
                    ("id", get(candidate, "id", "candidate_id")),
                    ("span", exact),
                    ("offsets", f"{span[0]}–{span[1]}" if span else None),
                    ("family", get(candidate, "family", default=get(payload, "family"))),
                    ("entity", get(candidate, "entity", default=get(payload, "entity"))),
                ]
            ),
        )
    )
    parts.append(section("votes", _votes(payload)))
    failed = _failed_attempts(payload)
    if failed is not None:
        # An adjudicator weighs a missing vote by why it is missing.
        parts.append(section("failed attempts (why a vote is missing)", failed))
    why = get(payload, "reason", "abstain_reason", "why_abstained", "abstained_because")
    if why is not None:
        parts.append(section("why it abstained", Text(number(why))))
    parts.append(rubric_section(payload))
    return Group(*parts)
