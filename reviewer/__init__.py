"""The sealdesk review app (Textual): screens, widgets and bindings, no engine logic."""
