"""The review app: themes, keymap, help and palette around the review screen.

Screens are modular: the review screen is the default one, and others (the
jobs panel, the lead's sign-off, the dialogs) are pushed over it with
``push_screen(screen, callback)`` and hand their result back through the
callback; no screen reaches into another. Keys, help and the palette all
read one table, ``reviewer.actions``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from functools import partial

from textual.actions import parse as parse_action
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen

from engine.errors import InputError
from engine.item_query import ItemFilter
from engine.terminal_text import visible
from engine.workspace import Workspace
from reviewer.actions import (
    OFF_OVER_DIALOGS,
    binding_ids,
    bindings,
    in_palette,
    keyed,
    keymap_clashes,
)
from reviewer.modals import HelpScreen
from reviewer.review_screen import ReviewScreen
from reviewer.session import Session
from reviewer.state import QueueView, ReviewState, load_state, save_state
from reviewer.theming import DEFAULT_THEME, load_themes

__all__ = ["ReviewApp", "binding_ids"]

SEALDESK_THEMES = ("sealdesk-dark", "sealdesk-light", "sealdesk-high-contrast")


class ReviewApp(App):
    """sealdesk review: decide backlog items with signed records."""

    TITLE = "sealdesk review"
    CSS_PATH = "review.tcss"
    SCOPE = "app"
    BINDINGS = bindings(SCOPE)

    def __init__(
        self,
        ws: Workspace,
        session: Session,
        *,
        theme: str | None = None,
        keymap: dict[str, str] | None = None,
        saved: ReviewState | None = None,
        ask_reason: Iterable[str] = (),
    ) -> None:
        """``theme`` None starts in the theme last chosen in the app (``saved``, read from
        the user's state file when not given), else the default."""
        # NO_COLOR: no colour at all, the terminal's own foreground on its own
        # background. Textual's answer for a truecolor app (greying every colour)
        # turns an ANSI theme's colours all into black (30;40 throughout), so the app
        # runs as a native-ANSI one, whose colours Textual then drops; every highlight
        # carries reverse, bold or underline instead (review.tcss, the :ansi rules).
        super().__init__(ansi_color=True if "NO_COLOR" in os.environ else None)
        self.ws = ws
        self.session = session
        # Under a review plan, what the lists and the history show depends on who reads.
        ws.viewer = session.principal
        self.ask_reason = frozenset(ask_reason)  # queues whose a and x ask for a reason
        self._start_keymap = dict(keymap or {})
        clashes = keymap_clashes(self._start_keymap)
        if clashes:
            raise InputError(clashes[0].message, field=f"keymap.{clashes[0].binding_id}")
        self.saved = saved if saved is not None else load_state(ws.workspace_id)
        self._start_theme = theme or self.saved.theme or DEFAULT_THEME
        self._theme_chosen = False  # True once the start theme is set: later ones are kept
        self._keep_failed = False  # the state file could not be written (said once)
        for t in load_themes().values():
            self.register_theme(t)

    def on_mount(self) -> None:
        if self.saved.warning:
            self.notify(self.saved.warning, severity="warning", timeout=8, markup=False)
        if self._start_theme in self.available_themes:
            self.theme = self._start_theme
        else:
            self.theme = DEFAULT_THEME
            self.notify(
                f"no theme named {self._start_theme!r}; using {DEFAULT_THEME} "
                f"(themes: {', '.join(sorted(self.available_themes))})",
                severity="warning",
                markup=False,
            )
        if self._start_keymap:
            self.set_keymap(self._start_keymap)
        self._theme_chosen = True

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Shows a notification (every screen's and widget's comes here): its text is
        shown through ``visible`` and never read as markup, since refusals and errors
        quote ids, paths and input."""
        super().notify(
            visible(message, multiline=True),
            title=visible(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def watch_theme(self, theme: str) -> None:
        # A theme chosen in the app (t, the palette) is the one the next session opens in.
        if self._theme_chosen and theme != self.saved.theme:
            self._keep(replace(self.saved, theme=theme))

    def remember_view(self, queue: str, filters: ItemFilter, sort: str) -> None:
        """Keeps a queue's filter and sort for this user's next session on the workspace."""
        views = {**self.saved.views, queue: QueueView(replace(filters, principal=None), sort)}
        self._keep(replace(self.saved, views=views))

    def _keep(self, state: ReviewState) -> None:
        self.saved = state
        try:
            save_state(self.ws.workspace_id, state)
        except OSError as exc:
            # Nothing of the review depends on it: say so once and go on.
            if not self._keep_failed:
                self._keep_failed = True
                self.notify(
                    f"the view will not be remembered for next time: {exc}",
                    severity="warning",
                    markup=False,
                )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Over a dialog, letters belong to the dialog: q, t and ? must not quit,
        # restyle or open help while someone is filling in a filter or a note.
        if action in OFF_OVER_DIALOGS and isinstance(self.screen, ModalScreen):
            return False
        return True

    def get_default_screen(self) -> Screen:
        self._review = ReviewScreen(self.ws, self.session, views=self.saved.views)
        return self._review

    @property
    def review(self) -> ReviewScreen:
        """Gives the review screen (the default one, under any pushed screens)."""
        return self._review

    def action_cycle_theme(self) -> None:
        names = [n for n in SEALDESK_THEMES if n in self.available_themes]
        index = names.index(self.theme) + 1 if self.theme in names else 0
        self.theme = names[index % len(names)]
        self.notify(f"theme {self.theme}", timeout=2, markup=False)

    def binding_rows(self) -> list[tuple[str, str, str]]:
        """Gives (keys, description, id) for every keyed action, as the keymap has it now."""
        rows = []
        for action in keyed():
            keys = self._keymap.get(action.id, action.key or "")
            shown = ", ".join(self.get_key_display(Binding(k.strip(), "")) for k in keys.split(","))
            rows.append((shown, action.description, action.id))
        return rows

    def key_for(self, binding_id: str) -> str:
        """Gives the (first) key a binding id is bound to now, as it is shown."""
        for keys, _description, bid in self.binding_rows():
            if bid == binding_id:
                return keys.split(",")[0].strip()
        return "?"

    def keys_of(self, binding_id: str) -> frozenset[str]:
        """Gives every key a binding id is bound to now, as Textual names keys."""
        for action in keyed():
            if action.id == binding_id:
                keys = self._keymap.get(action.id, action.key or "")
                return frozenset(k.strip() for k in keys.split(",") if k.strip())
        return frozenset()

    def asks_reason(self, queue: str) -> bool:
        """Says whether accept and reject on the queue ask for a reason (config
        ``ask_reason``); A and X ask on every queue."""
        return queue in self.ask_reason

    def key_hints(self, screen: Screen) -> list[tuple[str, str, int, str]]:
        """Gives (key, description, rank, id) for the actions a screen and the app show in
        the key line, as bound now (rank: how much the line needs it, 0 the most)."""
        scopes = {getattr(screen, "SCOPE", None), self.SCOPE}
        shown = {a.id: a.rank for a in keyed() if a.show and a.scope in scopes}
        return [
            (keys.split(",")[0], description, shown[bid], bid)
            for keys, description, bid in self.binding_rows()
            if bid in shown
        ]

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.binding_rows()))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        # The palette offers what the screen underneath it does (the review's, over a
        # dialog), each entry running the same action method as its key.
        owner = screen if in_palette(getattr(screen, "SCOPE", "")) else self.review
        yield from self._palette(owner)
        for name in SEALDESK_THEMES:
            if name in self.available_themes:
                yield SystemCommand(
                    f"Theme: {name}", "switch colours", lambda n=name: setattr(self, "theme", n)
                )
        yield from self._palette(self)

    def _palette(self, owner: App | Screen) -> Iterable[SystemCommand]:
        for action in in_palette(getattr(owner, "SCOPE", "")):
            # The action method its key runs. Not through run_action: check_action
            # keeps stray letters in a dialog from quitting or opening help, and the
            # palette, a dialog itself, may still be closing when its choice runs.
            _, name, params = parse_action(action.action)
            yield SystemCommand(
                action.title or action.description,
                action.palette_help,
                partial(getattr(owner, f"action_{name}"), *params),
            )
