"""Running the channels over a training pool of any size, on one core or a cluster.

A sharded pool is scanned shard by shard by a backend; each backend sits
beside the others behind one protocol, as executors do in a pipeline
library. Module map:

``shard_scan``  one shard scanned wherever a worker runs (the worker side):
                its matches, counts and hash piece come back
``base``        the ``Backend`` protocol, and the driver (``run_shards``) that
                keeps workers busy, retries, records and folds in order
``local``       the local backend: worker processes on this machine
``ray``         the Ray backend: Ray actors, here or on a cluster
``records``     resume records: each finished shard's outcome, kept in the
                workspace by content hash, so a rerun scans only the rest
``stream``      a one-stream pool (a plain file, a hub dataset) streamed
                through the eval index on every core
``merge``       shard outcomes into one pool: indexes, hash, ids, top-k

Imports ``channels`` and ``inputs`` of the contamination package.
"""
