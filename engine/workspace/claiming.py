"""Claims on a workspace: who is working on which undecided item right now (the
rules are ``engine.claims``'s).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from engine import claims, item_query
from engine.canonical import canonical_json
from engine.claims import Claim
from engine.errors import (
    InputError,
    PermissionRefused,
    SealdeskError,
)
from engine.ledger import sshsig
from engine.ledger.signers import Signer
from engine.roles import QUEUES, SIGNOFF_ROLE, namespace_for
from engine.workspace.reading import Reading


class Claiming(Reading):
    """A workspace's claims, taken, read and ended."""

    # -- claims: who is on which undecided item right now (engine.claims) -----------
    def claims(
        self, queue: str | None = None, now: float | None = None
    ) -> dict[tuple[str, str], Claim]:
        """Gives the live claims (of one queue, or all) by (queue, item id)."""
        return claims.held(self.conn, queue, time.time() if now is None else now)

    def held_by_others(self, queue: str, now: float | None = None) -> tuple[str, ...]:
        """Gives the ids of a queue's items someone other than the viewer holds now."""
        return claims.held_by_others(
            self.conn, queue, self.viewer, time.time() if now is None else now
        )

    def claim(
        self,
        queue: str,
        item_ids: Iterable[str],
        *,
        seconds: float,
        replacing: tuple[str, str] | None = None,
        now: float | None = None,
    ) -> list[Claim]:
        """Gives the claims the viewer now holds over item_ids: all of them, or, when
        someone else holds one, none (ConflictError naming who, until when). The
        viewer's claim ``replacing`` (queue, item id) ends in the same step.

        Refuses an unknown item, and an item the review plan samples: the plan says
        who decides it, and each of them must."""
        if queue not in QUEUES:
            raise InputError(f"unknown queue {queue!r}", field="queue")
        item_ids = list(item_ids)
        known = {
            i
            for (i,) in self.conn.execute(
                "SELECT item_id FROM items WHERE queue = ? AND item_id IN "
                "(SELECT value FROM json_each(?))",
                (queue, canonical_json(item_ids)),
            )
        }
        current = self.plan()
        for item_id in item_ids:
            if item_id not in known:
                raise InputError(f"no item {item_id!r} in queue {queue}", field="item")
            if current is not None and current.planned(queue, item_id):
                raise InputError(
                    f"{queue}/{item_id} is in the review plan (plan #{current.seq}): the plan "
                    "says who decides it, so it is not claimed",
                    field="item",
                )
        mine, _ = claims.take(
            self.conn,
            queue,
            item_ids,
            self._claimer(),
            now=time.time() if now is None else now,
            seconds=seconds,
            replacing=replacing,
            whole=True,
        )
        return mine

    def claim_next(
        self, queue: str, count: int, *, seconds: float, sort: str = "score_desc"
    ) -> tuple[list[Claim], bool]:
        """Gives up to count claims on the queue's next undecided items in listing order
        that nobody else holds and no review plan samples (one the viewer already holds
        is renewed and counts), and whether an item was passed over because the viewer
        holds the most claims one person may."""
        if count < 1:
            raise InputError("claim at least 1 item", field="next")
        principal = self._claimer()
        current = self.plan()
        if current is not None:
            current.read_keys(queue)
        taken: list[Claim] = []
        seen: set[str] = set()
        full = False
        while len(taken) < count:
            now = time.time()
            f = item_query.ItemFilter(
                status="undecided", newest_only=True, skip=self.held_by_others(queue, now)
            )
            window = count - len(taken) + len(seen)
            rows = self.page(queue, f, sort, 0, window + 50)
            fresh = [
                r.item_id
                for r in rows
                if r.item_id not in seen
                and not (current is not None and current.planned(queue, r.item_id))
            ]
            if not fresh:
                break
            seen.update(fresh)
            # Another process may take some first: take() skips what it holds, and the
            # loop reads the next candidates.
            mine, over = claims.take(
                self.conn, queue, fresh, principal, now=now, seconds=seconds,
                only=count - len(taken),
            )  # fmt: skip
            taken += mine
            if over:
                full = True
                break  # the most one person may hold: what comes next is new to them too
        return taken, full

    def release_claims(
        self, queue: str | None = None, item_ids: Iterable[str] | None = None
    ) -> int:
        """Ends the viewer's claims (of one queue, some items, or all); gives how many."""
        return claims.release(self.conn, self._claimer(), queue, item_ids)

    def end_claims_of(
        self,
        signer: Signer,
        holder: str,
        queue: str | None = None,
        item_ids: Iterable[str] | None = None,
    ) -> tuple[str, int]:
        """Ends someone's claims (of one queue, some items, or all) as a lead: gives the
        lead's name and how many ended. The signer must be enrolled as lead and prove
        it holds the key by signing a fresh challenge; anyone else is refused."""
        lead, role = self.identify(signer, role=SIGNOFF_ROLE)
        challenge = b"sealdesk: end the claims of " + holder.encode() + os.urandom(32)
        namespace = namespace_for(role)
        try:
            proof = sshsig.verify(signer.sign(challenge, namespace), challenge, namespace)
        except (sshsig.SignatureError, SealdeskError, OSError) as exc:
            raise PermissionRefused(f"{lead}'s key did not sign the challenge: {exc}") from None
        if proof.public_key != signer.public_key.blob:
            raise PermissionRefused(f"the challenge was signed with a key other than {lead}'s")
        return lead, claims.release(self.conn, holder, queue, item_ids)

    def _claimer(self) -> str:
        if self.viewer is None:
            raise InputError(
                "a claim needs to know who is claiming: give --key, or forward an agent "
                "holding your enrolled key",
                field="key",
            )
        return self.viewer
