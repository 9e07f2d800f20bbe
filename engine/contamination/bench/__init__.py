"""``sealdesk bench contamination``: measured against the reference, side by side.

Module map:

``against_reference``  the command: sealdesk's n-gram channels against the
                       reference pass (datasketch MinHash + MinHashLSH) on
                       the same generated files
``scaling``            ``--backend local|ray``: how the sharded scan scales
``reference``          the reference n-gram pass: datasketch MinHash per
                       shingle, MinHashLSH over the pool, the estimate deciding
``synthetic``          generated eval sets and pools with planted leaks
"""
