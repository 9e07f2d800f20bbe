"""What dropping items costs: the minimum detectable accuracy difference.

Two models are scored on the same ``n`` items; a two-sided two-proportion
z-test at significance ``alpha`` detects, with the given power, a
difference of at least

    mde = (z_{1 - alpha/2} + z_{power}) * sqrt(2 * p * (1 - p) / n)

where ``p`` is the accuracy both are near (0.5 by default: the worst case,
so the figure is never optimistic). A smaller clean set means a larger
``mde``: the price of dropping leaked items.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def minimum_detectable_difference(
    n: int, *, alpha: float = 0.05, power: float = 0.8, accuracy: float = 0.5
) -> float:
    """Gives the smallest accuracy difference detectable on n items (inf for n = 0)."""
    if not 0 < alpha < 1 or not 0 < power < 1 or not 0 < accuracy < 1:
        raise ValueError("alpha, power and accuracy must lie strictly between 0 and 1")
    if n <= 0:
        return math.inf
    z = NormalDist()
    # -inv_cdf(alpha/2), not inv_cdf(1 - alpha/2): the same value, but 1 - 1e-300/2 is 1.0.
    spread = -z.inv_cdf(alpha / 2) + z.inv_cdf(power)
    return spread * math.sqrt(2 * accuracy * (1 - accuracy) / n)
