"""``sealdesk bench contamination``: measured against the reference, side by side.

Module map:

``against_seed``  the command: sealdesk's n-gram channels against the seed's
                  datasketch code on the same generated files
``scaling``       ``--backend local|ray``: how the sharded scan scales
``reference``     the seed's n-gram pass, as the seed wrote it
``synthetic``     generated eval sets and pools with planted leaks
"""
