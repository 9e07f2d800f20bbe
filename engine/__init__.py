"""sealdesk's engine: backlogs, workspace and the signed disposition ledger.

Nothing in this package imports Textual; the review app (package ``reviewer``)
depends on it, never the other way round.

Module map, from the top down (each imports only what is below it; the
``engine-layers`` contract in ``pyproject.toml`` holds it so):

``cli``            the ``sealdesk`` entry point: the ssh gate, then the tree,
                   errors mapped to exit codes
``ssh_gate``, ``jobs``  commands that start other sealdesk commands: the
                   forced command behind an SSH key, background runs
``gate_policy``    what a gated key may run, judged against the command tree
``commands``       the command tree: the core commands, the rest by name
``keys_cli``       ``sealdesk init`` and ``sealdesk keys``
``bench/``         ``sealdesk bench ledger``
``contamination/``, ``exam/``, ``coverage/``  the three backlog producers
``signoff/``       the lead's sign-off and the checks of what it binds;
                   ``sealdesk verify`` over a whole workspace
``run_records``    what each run recorded about the artifacts it wrote
``outputs``        the click path types (``--out``, input files)
``cli_context``    the workspace every subcommand is given
``workspace``      where a review lives on disk; ingest; decisions
``identity``       who signs: a key file, else ssh-agent
``item_query``     filtered, sorted, paged reads of backlog items
``ledger/``        signed, append-only, opaque records and their proofs
``sqlitedb``, ``artifacts``, ``roles``, ``progress``, ``canonical``,
``errors``         the base: SQLite, atomic file I/O with sidecars, roles and
                   namespaces, progress lines, canonical JSON, the errors
"""

__version__ = "0.1.0"
