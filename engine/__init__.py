"""sealdesk's engine: backlogs, workspace and the signed disposition ledger.

Nothing in this package imports Textual or names the review app (package
``reviewer``), at run time included: the app depends on the engine and adds
its commands to the engine's command tree from the outside, never the other
way round.

Module map, from the top down (each imports only what is below it; the
``engine-layers`` contract in ``pyproject.toml`` holds it so):

``cli/``           the command line: ``cli.main`` runs a command tree (the ssh
                   gate, then the tree, errors mapped to exit codes);
                   ``cli.ssh_gate`` the forced command behind an SSH key;
                   ``cli.gate_policy`` what a gated key may run, judged against
                   the tree it is handed; ``cli.commands`` the engine's command
                   tree: the core commands, the rest by name, and the commands
                   installed packages add; ``cli.keys`` and ``cli.receipts``
``jobs``           background runs (``python -m engine.cli``), checked by the gate
``bench/``         ``sealdesk bench ledger``
``contamination/``, ``exam/``, ``coverage/``  the three backlog producers
``signoff/``       the lead's sign-off and the checks of what it binds;
                   ``sealdesk verify`` over a whole workspace
``run_records``    what each run recorded about the artifacts it wrote
``outputs``        the click path types (``--out``, input files)
``cli_context``    the workspace every subcommand is given (these two sit here,
                   below the producers whose subcommands import them, not in
                   ``cli/``, which loads those subcommands)
``workspace``      where a review lives on disk; ingest; decisions
``identity``       who signs: a key file, else ssh-agent
``item_query``     filtered, sorted, paged reads of backlog items
``ledger/``        signed, append-only, opaque records and their proofs
``sqlitedb``, ``artifacts``, ``roles``, ``progress``, ``canonical``,
``errors``         the base: SQLite, atomic file I/O with sidecars, roles and
                   namespaces, progress lines, canonical JSON, the errors
"""

__version__ = "0.1.0"
