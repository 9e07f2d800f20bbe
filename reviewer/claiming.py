"""The item on a reviewer's screen is theirs while they look at it: the app claims it
(``engine.claims``), so that a colleague's app, looking for the next undecided item,
passes over it, and says who holds an item someone opens anyway.

The app holds one claim at a time: the undecided item it shows, in a queue the
session decides, that no review plan samples (a plan says itself who decides
its items). Moving to another item ends the claim on the last one in the same
step; quitting ends it; a crashed app's claim runs out after
``APP_LEASE_SECONDS``, and while the item stays on screen the claim is renewed
halfway through. A claim is advice: failing to take one never stops anybody
from reviewing or deciding.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime

from engine.claims import APP_LEASE_SECONDS, Claim
from engine.errors import ConflictError, SealdeskError
from engine.item_query import ItemFilter, ItemRow
from engine.workspace import Workspace


class Claiming:
    """The claim a review session holds, and what it says about others' claims."""

    def __init__(self, ws: Workspace, principal: str | None, may_decide) -> None:
        """``may_decide(queue)`` says whether the session decides that queue's items."""
        self.ws = ws
        self.principal = principal
        self.may_decide = may_decide
        self.held: Claim | None = None

    def _claimable(self, row: ItemRow) -> bool:
        if self.principal is None or row.status != "undecided" or not self.may_decide(row.queue):
            return False
        current = self.ws.plan()
        return current is None or not current.planned(row.queue, row.item_id)

    def holder(self, row: ItemRow) -> Claim | None:
        """Gives someone else's live claim on an undecided row, else None."""
        if row.status != "undecided":
            return None
        claim = self.ws.claims(row.queue).get((row.queue, row.item_id))
        return claim if claim is not None and claim.principal != self.principal else None

    def take(self, row: ItemRow) -> bool:
        """Claims the row's item for this session (ending the claim held before); gives
        False when someone else holds it, or when it was decided since the row was read
        (a listing drawn a moment ago can be behind a colleague). Nothing is taken for a
        row that is not this session's to claim, and a claim that cannot be written is
        let go."""
        now = time.time()
        if not self._claimable(row):
            self.release()
            return self.holder(row) is None
        here = (row.queue, row.item_id)
        held = self.held
        if held is not None and (held.queue, held.item_id) == here:
            if held.until - now > APP_LEASE_SECONDS / 2:
                return True  # held and fresh: nothing to read or write
        fresh = ItemFilter(items=(row.item_id,), status="undecided")
        if self.ws.count(row.queue, fresh) == 0:
            return False
        try:
            (self.held,) = self.ws.claim(
                row.queue,
                [row.item_id],
                seconds=APP_LEASE_SECONDS,
                replacing=(held.queue, held.item_id) if held is not None else None,
                now=now,
            )
        except ConflictError:
            return False
        except (SealdeskError, sqlite3.Error):
            self.held = None  # advice only: reviewing goes on without it
        return True

    def renew(self) -> None:
        """Claims the held item again once half its lease has passed."""
        held = self.held
        if held is None or held.until - time.time() > APP_LEASE_SECONDS / 2:
            return
        try:
            (self.held,) = self.ws.claim(held.queue, [held.item_id], seconds=APP_LEASE_SECONDS)
        except (SealdeskError, sqlite3.Error):
            self.held = None

    def release(self) -> None:
        """Ends the claim this session holds, if any."""
        held, self.held = self.held, None
        if held is None:
            return
        try:
            self.ws.release_claims(held.queue, [held.item_id])
        except (SealdeskError, sqlite3.Error):
            pass  # it runs out on its own

    def shown(self, row: ItemRow, next_key: str) -> str | None:
        """Claims the row's item as the screen shows it (``take``); gives the detail pane's
        line when someone else holds it, else None (a claim taken reads nothing more)."""
        if self.take(row):
            return None
        other = self.holder(row)
        if other is None:
            return None
        since = datetime.fromtimestamp(other.since, UTC).strftime("%H:%M")
        return (
            f"{other.principal} is on this item since {since} UTC · {next_key} goes to a free one"
        )
