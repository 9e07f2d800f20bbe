"""The lead's sign-off, and the checks of what it binds.

A sign-off is a ledger record (``engine.ledger`` signs and chains it like
any other); this package knows what it binds: the artifacts the runs wrote,
the run manifests, the per-queue counts and what each producer concluded.
The ledger knows none of that, so everything that reads artifacts or
backlog items on the way to a sign-off lives here.

Module map, in the order a sign-off is made:

``run_status``       what the producers' latest artifacts say (read by name,
                     tolerantly; no producer is imported), and every file
                     under ``artifacts/`` with its hash and sidecar state
``artifact_checks``  the checks an artifact passes before a sign-off binds
                     it (sidecar, run record, detached signature, the latest
                     sign-off's hash), and the artifact faults ``verify``
                     reports afterwards
``summary``          ``signoff_summary`` (what the lead looks at) and
                     ``sign_off`` (the record binding the tree head, the
                     artifacts and the run conclusions)
``verify``           ``sealdesk verify`` over a whole workspace: the
                     ledger's own audit, then the artifact checks
``cli``              ``sealdesk signoff``, ``checkpoint`` and ``prove``

Depends on ``engine.ledger`` (records, tree heads, checkpoints),
``engine.artifacts`` and ``engine.run_records``; never on a producer, the
command line's tree or the review app.
"""
