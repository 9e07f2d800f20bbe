"""sealdesk's command line: the engine's command tree, its entry point and the ssh gate.

Importing this package loads nothing; each module is imported by name:

``main``         runs a command tree: the arguments checked, the ssh gate's policy
                 applied, errors mapped to one line and an exit code
                 (``python -m engine.cli`` runs the engine's tree)
``ssh_gate``     ``sealdesk ssh-gate``: the forced command behind an SSH key
``commands``     the engine's command tree: the core commands, the rest by name,
                 and the commands installed packages add (``sealdesk.commands``
                 entry points, or an app composing the tree around it)
``gate_policy``  what a gated key may run, judged against the tree it is given
``keys``         ``sealdesk init`` and ``sealdesk keys``
``receipts``     ``sealdesk receipts``

The click types and the context every subcommand is given (``engine.outputs``,
``engine.cli_context``) stay below the producers, which import them: they are
not part of this package, which loads the producers' commands.
"""
