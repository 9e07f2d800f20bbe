"""The signed, append-only disposition ledger.

It signs and chains opaque items by hash; it knows nothing of what a backlog
item, an artifact or a run means. It imports no producer, no sign-off, no
workspace, no click and no Textual (``tests/engine/test_layering.py`` and the
import contracts in ``pyproject.toml`` keep it so).

Module map, from the bytes up:

``sshwire``          the SSH wire encoding (uint32, length-prefixed strings)
``sshsig``           OpenSSH SSHSIG signatures over Ed25519 keys
``agent``            a minimal ssh-agent client (list identities, sign)
``signers``          who signs: a private key file or an ssh-agent key
``records``          the signed record body and the stored row
``fastbody``         a fast reader for the common shape of a record body
``store``            appending records to SQLite, one transaction each
``allowed_signers``  the ``allowed_signers`` format ``ssh-keygen -Y`` reads
``authority``        who may sign what, replayed from genesis/enrol/revoke
``enrol``            genesis, enrolment, revocation, migration as records
``verify``           re-derive every hash and link; check signatures and roles
``merkle``           RFC 9162 Merkle trees and proofs
``checkpoint``       a signed tree head as a small text file
``treehead``         the ledger's leaves, signed heads, inclusion proofs
``checkpoint_verify``  sign-offs' tree heads against the records before them,
                     and the ledger against a checkpoint kept elsewhere
``receipts``         what a signer keeps of each acknowledged record
``witness``          directories off the workspace that keep every checkpoint
``audit``            the ledger's whole audit (records, heads, checkpoint,
                     receipts, witnesses) and the auditor's export

What a sign-off binds on disk (artifacts, runs, producers' conclusions) is
checked in ``engine.signoff``, which builds on this package.
"""
