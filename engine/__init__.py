"""sealdesk's engine: backlogs, workspace and the signed disposition ledger.

Nothing in this package imports Textual; the review app (package ``reviewer``)
depends on it, never the other way round.
"""

__version__ = "0.1.0"
