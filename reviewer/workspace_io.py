"""The app's terms with the workspace: how often screens look again, how long a write
waits, and the one line shown when a write did not happen."""

from __future__ import annotations

from engine.errors import SealdeskError

# How often a screen looks for others' records and finished engine runs.
POLL_SECONDS = 1.0
# How long a decision waits for another writer (an engine run ingesting in one
# transaction) before it is refused as "busy"; the UI is frozen meanwhile.
BUSY_TIMEOUT_MS = 3000


def why_not_written(exc: Exception) -> str:
    """Gives the one line to show for a write that did not happen."""
    if isinstance(exc, SealdeskError):
        return exc.one_line()
    if "locked" in str(exc) or "busy" in str(exc):
        return (
            "the workspace is busy (another writer, such as an engine run, holds it); "
            "nothing was recorded: press the key again in a moment"
        )
    return f"nothing was recorded: database error: {exc}"
