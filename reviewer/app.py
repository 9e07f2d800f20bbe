"""The review app: themes, keymap, help and palette around the review screen.

Screens are modular: the review screen is the default one, and others (the
jobs panel, the lead's sign-off) are pushed over it or added as modes.
"""

from __future__ import annotations

from typing import Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import ModalScreen, Screen

from engine.workspace import Workspace
from reviewer.modals import HelpScreen
from reviewer.review_screen import ReviewScreen
from reviewer.session import Session
from reviewer.theming import DEFAULT_THEME, load_themes

SEALDESK_THEMES = ("sealdesk-dark", "sealdesk-light", "sealdesk-high-contrast")


class ReviewApp(App):
    """sealdesk review: decide backlog items with signed records."""

    TITLE = "sealdesk review"
    CSS_PATH = "review.tcss"
    BINDINGS = [
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("t", "cycle_theme", "Theme", id="app.theme"),
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+p", "command_palette", "Palette", id="app.palette", priority=True,
                show=False),
    ]

    def __init__(self, ws: Workspace, session: Session, *, theme: str = DEFAULT_THEME,
                 keymap: dict[str, str] | None = None) -> None:
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
            self.notify(f"no theme named {self._start_theme!r}; using {DEFAULT_THEME} "
                        f"(themes: {', '.join(sorted(self.available_themes))})",
                        severity="warning", markup=False)
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
        """Gives (keys, description, id) for every binding, as the keymap has it now."""
        from reviewer.modals import ConfirmOverrule
        from reviewer.signoff_screen import ConfirmSignoff, SignoffScreen
        from reviewer.widgets.queue_list import QueueList

        rows = []
        for owner in (ReviewScreen, QueueList, ConfirmOverrule, SignoffScreen, ConfirmSignoff,
                      type(self)):
            for binding in owner.BINDINGS:
                if not isinstance(binding, Binding) or not binding.id:
                    continue
                keys = self._keymap.get(binding.id, binding.key)
                shown = ", ".join(self.get_key_display(Binding(k.strip(), "")) for k in
                                  keys.split(","))
                rows.append((shown, binding.description, binding.id))
        return rows

    def key_for(self, binding_id: str) -> str:
        """Gives the (first) key a binding id is bound to now, as it is shown."""
        for keys, _description, bid in self.binding_rows():
            if bid == binding_id:
                return keys.split(",")[0].strip()
        return "?"

    def key_hints(self, screen: Screen) -> list[tuple[str, str]]:
        """Gives (key, description) for the bindings a screen and the app show, as bound now."""
        shown = {b.id for owner in (type(screen), type(self)) for b in owner.BINDINGS
                 if isinstance(b, Binding) and b.show and b.id}
        return [(keys.split(",")[0], description)
                for keys, description, bid in self.binding_rows() if bid in shown]

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.binding_rows()))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from reviewer.signoff_screen import SignoffScreen

        yield from super().get_system_commands(screen)
        # The palette offers what the screen underneath it does.
        owner = screen if isinstance(screen, SignoffScreen) else self.review
        for title, help_text, callback in owner.palette_commands():
            yield SystemCommand(title, help_text, callback)
        for name in SEALDESK_THEMES:
            if name in self.available_themes:
                yield SystemCommand(f"Theme: {name}", "switch colours",
                                    lambda n=name: setattr(self, "theme", n))
        yield SystemCommand("Keys", "every key and its binding id", self.action_help)


def binding_ids() -> set[str]:
    """Gives every binding id the keymap may name."""
    from reviewer.jobs_screen import JobsScreen
    from reviewer.modals import FilterScreen, HelpScreen, NoteScreen
    from reviewer.signoff_screen import ConfirmSignoff, SignoffScreen
    from reviewer.widgets.queue_list import QueueList

    ids = set()
    for owner in (ReviewScreen, QueueList, ReviewApp, JobsScreen, FilterScreen, HelpScreen,
                  NoteScreen, SignoffScreen, ConfirmSignoff):
        ids.update(b.id for b in owner.BINDINGS if isinstance(b, Binding) and b.id)
    return ids
