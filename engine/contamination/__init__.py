"""Contamination scan: the reviewer's ``flagged_pairs`` backlog.

An eval set is compared with a training pool (and with itself) through
exact 13-gram Jaccard and containment, sentence-embedding cosine and an
optional behavioral probe; every flagged eval item becomes one backlog item,
and after review ``sealdesk contamination clean`` writes the clean set.

The folders read in the order the data flows; each lower one imports only
those below it (a ``layers`` contract in ``pyproject.toml``):

``inputs/``    what is compared: the eval set, the pool (one stream or
               shards), their canonical text and content hashes
``channels/``  how two texts are found alike: shingles and exact n-grams,
               MinHash for the record, embeddings and their threshold,
               duplicates inside the eval set, the behavioral probe
``pool/``      running the channels over a pool of any size: one shard's
               scan, the backends that run shards (``base`` is the protocol
               and the driver; ``local`` and ``ray`` are the backends), the
               one-stream path, resume records, the merge into one pool
``report/``    what was found, as the report, the flagged rows, the
               backlog items, the shared spans and the power a drop costs
``options.py`` the scan's options, each declared once (flag, type, default,
               help, check): the command's click options and ``check``
``scan.py``    one scan end to end: check, find, write, ingest
``clean.py``   after review: the clean eval set, its hash and power check
``cli.py``     ``sealdesk scan contamination`` and ``sealdesk contamination``
``bench/``     ``sealdesk bench contamination``: against the reference pass,
               and how the sharded scan scales

Depends on ``engine.workspace``, ``engine.ledger`` (the decisions a clean
set folds back) and ``engine.artifacts``; never on another producer.
"""
