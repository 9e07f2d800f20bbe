"""Agreement between reviewers: the statistics (``stats``, pure) and the standing
decisions of the signed ledger they are computed from (``ledger``)."""
