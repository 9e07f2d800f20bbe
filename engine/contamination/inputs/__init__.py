"""What a contamination scan compares: the eval set and the pool, read and identified.

Module map:

``canonical_text``  text canonicalization (lower-cased, whitespace collapsed,
                    stripped), the flat content hash and word positions
                    (every channel compares canonical text)
``texts``           a text column as it travels to a worker (``TextBlock``)
                    and the check every text passes first
``sources``         where the eval set and the pool come from: local
                    JSONL/CSV/Parquet or a hub dataset pinned to a revision
``evalset``         the eval set, read whole, checked row by row, hashed
``shards``          a sharded pool: which files a pattern names, in order
``pool_hash``       the pool's content hash, defined on its canonical items
                    and computed in pieces that shards fold together

Imports nothing else of the contamination package.
"""
