"""The review app: themes, keymap, help and palette around the review screen.

Screens are modular: the review screen is the default one, and others (the
jobs panel, the lead's sign-off, the dialogs) are pushed over it with
``push_screen(screen, callback)`` and hand their result back through the
callback; no screen reaches into another. Keys, help and the palette all
read one table, ``reviewer.actions``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from textual.actions import parse as parse_action
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import ModalScreen, Screen

from engine.workspace import Workspace
from reviewer.actions import binding_ids, bindings, in_palette, keyed
from reviewer.modals import HelpScreen
from reviewer.review_screen import ReviewScreen
from reviewer.session import Session
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
        theme: str = DEFAULT_THEME,
        keymap: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.ws = ws
        self.session = session
        self._start_theme = theme
        self._start_keymap = dict(keymap or {})
        for t in load_themes().values():
            self.register_theme(t)

    def on_mount(self) -> None:
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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Over a dialog, letters belong to the dialog: q, t and ? must not quit,
        # restyle or open help while someone is filling in a filter or a note.
        if action in ("quit", "cycle_theme", "help") and isinstance(self.screen, ModalScreen):
            return False
        return True

    def get_default_screen(self) -> Screen:
        self._review = ReviewScreen(self.ws, self.session)
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

    def key_hints(self, screen: Screen) -> list[tuple[str, str]]:
        """Gives (key, description) for the actions a screen and the app show, as bound now."""
        scopes = {getattr(screen, "SCOPE", None), self.SCOPE}
        shown = {a.id for a in keyed() if a.show and a.scope in scopes}
        return [
            (keys.split(",")[0], description)
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
