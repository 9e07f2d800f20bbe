"""Where a review lives on disk: the workspace, its database and what people decide in it.

A workspace is a directory::

    sealdesk.db            one SQLite database (WAL, synchronous=FULL, STRICT)
    artifacts/<run_id>/    each engine run's artifacts with .sha256 sidecars
    trust/allowed_signers  who may sign in which role, generated from the ledger's
                           enrolment records for ssh-keygen (never read as truth)

Items are immutable once ingested: ingesting the same bytes again is a no-op,
and an id that exists with different bytes is refused. An item whose payload
names a subject is linked at ingest to the items held about the same subject,
so that a decision on one bears on the others (``engine.subjects``).

``Workspace`` is one object, put together from one module per concept, each
layer standing on the one before it:

``base``       opening, paths and the connection; the schema; the trust list; the
               watermark and the ledger's head
``decisions``  decisions, notes, retractions, sign-offs, reason lists, and the one
               ``_append`` every signed record goes through
``planning``   review plans and gold items: who decides what, what settled
``reading``    what a queue holds, an item's evidence and history, as the reader
               may see them
``claiming``   who is working on which undecided item right now
``ingest``     backlog items and their runs, ingested

Each layer calls only itself and the layers before it (mypy holds the chain, and an
import contract refuses a module importing one above it).
"""

from __future__ import annotations

from engine.backlog import RUN_ID as RUN_ID
from engine.backlog import RUN_ID_RULE as RUN_ID_RULE
from engine.backlog import BacklogItem as BacklogItem
from engine.backlog import ItemsFile as ItemsFile
from engine.backlog import read_items_files as read_items_files
from engine.backlog import validate_item as validate_item
from engine.workspace.base import DB_NAME as DB_NAME
from engine.workspace.base import SCHEMA as SCHEMA
from engine.workspace.base import SCHEMA_VERSION as SCHEMA_VERSION
from engine.workspace.base import resolve_path as resolve_path
from engine.workspace.decisions import DecisionOutcome as DecisionOutcome
from engine.workspace.ingest import Ingesting
from engine.workspace.ingest import IngestResult as IngestResult


class Workspace(Ingesting):
    """An open workspace: its database, artifacts and trust list, and everything read,
    decided, planned, claimed and ingested in it."""
