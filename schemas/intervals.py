"""Confidence intervals that every layer may use (no numpy or scipy needed)."""

from __future__ import annotations

import math
from statistics import NormalDist


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``successes / trials``.

    ``(p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)`` with ``z`` the ``(1+confidence)/2``
    normal quantile (Wilson 1927; Newcombe 1998, method 3; recommended for small n by Brown, Cai
    & DasGupta 2001). ``(nan, nan)`` without trials. Here, below every layer, so that gold
    accuracy (``data``) and calibration share one definition.

    >>> [round(x, 4) for x in wilson_interval(81, 263)]  # Newcombe 1998, Table I
    [0.2553, 0.3662]
    >>> [round(x, 4) for x in wilson_interval(0, 10)]
    [0.0, 0.2775]
    """
    if trials <= 0:
        return float("nan"), float("nan")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes {successes} must lie between 0 and trials {trials}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / trials
    scale = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / scale
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / scale
    return max(0.0, centre - half), min(1.0, centre + half)
