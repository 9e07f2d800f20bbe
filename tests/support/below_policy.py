"""Records written straight to a workspace's ledger, below the policy layer.

What a holder of a key and the database file could append: really signed and
really chained, with no rule of who may sign what checked, for the tests of
what ``verify`` catches.
"""

from __future__ import annotations

from typing import Any

from engine.ledger import store


def append_unchecked(ws: Any, signer: Any, principal: str, role: str, kind: str, **fields: Any):
    """Gives the record signed by signer as principal in role, appended with no rule
    checked. A record on an item (``queue`` and ``item_id`` in fields) is bound to it as
    the workspace binds one (the item's hash and its run's), unless fields name the item's
    hash themselves."""
    queue, item_id = fields.get("queue"), fields.get("item_id")
    check = None
    if queue is not None and "item_sha256" not in fields:

        def check(conn: Any) -> dict[str, Any]:
            return ws._item_binding(conn, queue, item_id)

    who = {"workspace_id": ws.workspace_id, "principal": principal, "role": role}
    return store.append(ws.db, signer, kind=kind, check=check, **who, **fields)
