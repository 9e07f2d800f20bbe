"""The signed, append-only disposition ledger.

It signs and chains opaque items by hash; it knows nothing of what a backlog
item means. ``store`` appends, ``verify`` proves, ``sshsig`` and ``signers``
make OpenSSH signatures that ``ssh-keygen -Y verify`` accepts.
"""
