"""The arguments of ``sealdesk scan contamination`` for the tests.

``SAMPLE_FIELDS`` names the fields of the sample data (and of the sets the tests
write like it): the eval set's text in ``question``, the pool's in ``text``, both
sets' ids in ``id``.
"""

from __future__ import annotations

SAMPLE_FIELDS = ("--text-field", "question", "--pool-text-field", "text", "--id-field", "id")


def scan_args(eval_set: object, pool: object, *options: object) -> tuple:
    """Gives ``scan contamination`` of an eval set against a pool, then the options."""
    return ("scan", "contamination", "--eval", eval_set, "--pool", pool, *options)
