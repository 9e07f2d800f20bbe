"""Widgets of the review app: the queue list and the bars around it."""
