"""The sealdesk review app (Textual): screens, widgets and bindings, no engine logic.

``reviewer.main`` is the ``sealdesk`` program: the engine's command tree with the
app's commands (``review``, ``bench review``) added from the outside.
"""
