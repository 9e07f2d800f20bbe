"""The ledger pieces the review app may hold, in one place: what a screen shows of a
signed record, the receipt it keeps of one, the witness it pushes to after a sign-off,
and the signers a session signs with.

Everything else the app asks of the engine goes through the workspace (queues, items,
evidence, history, decide: ``engine.workspace``) and its paged reads
(``engine.item_query``). The app never reaches into the ledger's own modules: an
import contract (``app-through-the-desk``) holds it to this module, so the ledger's
internals can change without the app knowing. The bench harness, which founds
workspaces and enrols keys the way a lead does, is the one exception the contract
names.
"""

from __future__ import annotations

from engine.ledger.receipts import keep, kept_of, receipt_line
from engine.ledger.records import Record
from engine.ledger.signers import FileSigner, Signer
from engine.ledger.witness import push_latest

__all__ = ["FileSigner", "Record", "Signer", "keep", "kept_of", "push_latest", "receipt_line"]
