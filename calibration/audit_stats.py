"""Interval helpers shared by the judge audits (consistency, bias): every interval is a
percentile bootstrap over units with the draws of :mod:`calibration.bootstrap`.

A rate is a ratio of per-unit sums, ``Σ w_u·num_u / Σ w_u·den_u`` with ``w`` the draw counts of a
resample, so a chunk of resamples costs one matrix product; so does a least-squares fit and its
correlation, from weighted moments (:func:`counts_statistic_interval`); other statistics (rank
correlations) are recomputed per resample on the drawn indices.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from calibration.bootstrap import percentile_interval, unit_resample_counts, unit_resample_indices

Interval = tuple[float, float] | None
"""A 95% percentile interval, None when intervals are off or undefined."""


def finite_or_none(value: float) -> float | None:
    """``value`` as a float, None where it is NaN or infinite (JSON has no NaN)."""
    value = float(value)
    return value if np.isfinite(value) else None


def interval_or_none(interval: tuple[float, float]) -> Interval:
    low, high = interval
    return None if not (np.isfinite(low) and np.isfinite(high)) else (float(low), float(high))


def ratio(num: np.ndarray, den: np.ndarray) -> float:
    """``Σ num / Σ den``, NaN when the denominator is 0."""
    total = float(np.sum(den))
    return float(np.sum(num)) / total if total > 0 else float("nan")


def counts_statistic_interval(
    statistic: Callable[[np.ndarray], np.ndarray], n_units: int, n_boot: int, seed: int
) -> Interval:
    """Bootstrap interval of a statistic computed for a chunk of resamples at once from their draw
    counts (``statistic(counts)``, counts of shape (b, n_units), one value per row): the draws of
    :func:`statistic_interval`, without a Python call per resample."""
    if n_boot <= 0 or n_units == 0:
        return None
    samples = [statistic(counts) for counts in unit_resample_counts(n_units, n_boot, seed)]
    return interval_or_none(percentile_interval(np.concatenate(samples)))


def ratio_interval(num: np.ndarray, den: np.ndarray, n_boot: int, seed: int) -> Interval:
    """Bootstrap interval of ``Σ num / Σ den`` over units (entry u of both belongs to unit u)."""
    num, den = np.asarray(num, float), np.asarray(den, float)

    def ratios(counts: np.ndarray) -> np.ndarray:
        totals = counts @ den
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(totals > 0, (counts @ num) / totals, np.nan)

    return counts_statistic_interval(ratios, num.size, n_boot, seed)


def ratio_difference_interval(
    num_a: np.ndarray,
    den_a: np.ndarray,
    num_b: np.ndarray,
    den_b: np.ndarray,
    n_boot: int,
    seed: int,
) -> Interval:
    """Paired bootstrap interval of ``Σnum_a/Σden_a − Σnum_b/Σden_b`` (same units, same draws)."""
    arrays = [np.asarray(x, float) for x in (num_a, den_a, num_b, den_b)]

    def differences(counts: np.ndarray) -> np.ndarray:
        na, da, nb, db = (counts @ x for x in arrays)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where((da > 0) & (db > 0), na / da - nb / db, np.nan)

    return counts_statistic_interval(differences, arrays[0].size, n_boot, seed)


def statistic_samples(
    statistics: Sequence[Callable[[np.ndarray], float]], n_units: int, n_boot: int, seed: int
) -> np.ndarray:
    """Each statistic on each resample's drawn units, shape (len(statistics), n_boot); every
    statistic sees the same draws, so differences of rows are paired."""
    draws = (drawn for chunk in unit_resample_indices(n_units, n_boot, seed) for drawn in chunk)
    return np.array([[stat(drawn) for stat in statistics] for drawn in draws], dtype=float).T


def statistic_interval(
    statistic: Callable[[np.ndarray], float], n_units: int, n_boot: int, seed: int
) -> Interval:
    """Bootstrap interval of ``statistic(indices)`` recomputed on each resample's drawn units."""
    if n_boot <= 0 or n_units == 0:
        return None
    samples = [
        statistic(drawn)
        for chunk in unit_resample_indices(n_units, n_boot, seed)
        for drawn in chunk
    ]
    return interval_or_none(percentile_interval(np.asarray(samples, dtype=float)))
