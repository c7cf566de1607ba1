"""Calibration maps from judge scores to the human scale, fitted on one split, reported on another.

Units are split by item (never by unit), with a seeded shuffle: ``fraction`` of the items form the
calibration split, the rest the held-out split on which every metric is reported before and after.

* ``isotonic``: ``sklearn.isotonic.IsotonicRegression`` (monotone, clipped to the scale and to
  the fitted range);
* ``linear``: least-squares line H ≈ a·J + b, clipped to the scale;
* ``expected``: for critics that expose score-token probabilities, Σ p(s)·s instead of the
  sampled score (no fitting).
"""

from __future__ import annotations

import numpy as np
from sklearn.isotonic import IsotonicRegression

from calibration.pointwise import PointwiseKernel, metrics_for
from calibration.scale import Scale

MAP_KINDS: tuple[str, ...] = ("isotonic", "linear", "expected")


def item_split(item_ids: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Boolean mask over units: True for units whose item is in the calibration split."""
    items = np.asarray(item_ids, dtype=object)
    names = np.array(sorted({str(item) for item in items}), dtype=object)
    shuffled = np.random.default_rng(seed).permutation(names)
    chosen = set(shuffled[: int(round(fraction * names.size))])
    return np.array([str(item) in chosen for item in items])


def fit_isotonic(judge: np.ndarray, human: np.ndarray, scale: Scale) -> IsotonicRegression:
    """Monotone map J → H fitted on the pairs where both are present."""
    keep = ~np.isnan(judge) & ~np.isnan(human)
    model = IsotonicRegression(y_min=scale.low, y_max=scale.high, out_of_bounds="clip")
    return model.fit(judge[keep], human[keep])


def fit_linear(judge: np.ndarray, human: np.ndarray) -> tuple[float, float]:
    """Least-squares slope and intercept of H on J (NaN if J is constant)."""
    keep = ~np.isnan(judge) & ~np.isnan(human)
    if keep.sum() < 2 or np.ptp(judge[keep]) == 0:
        return float("nan"), float("nan")
    slope, intercept = np.polyfit(judge[keep], human[keep], 1)
    return float(slope), float(intercept)


def calibration_maps(
    judge: np.ndarray,
    human: np.ndarray,
    item_ids: np.ndarray,
    scale: Scale,
    *,
    expected: np.ndarray | None = None,
    fraction: float = 0.5,
    seed: int = 0,
) -> dict:
    """Held-out metrics of the raw judge and of each map; the split sizes and fitted lines."""
    fit_split = item_split(item_ids, fraction, seed)
    held_out = ~fit_split
    with_judge = ~np.isnan(judge)
    mapped = {"raw": judge}
    if (fit_split & with_judge & ~np.isnan(human)).sum() >= 2:
        isotonic = fit_isotonic(judge[fit_split], human[fit_split], scale)
        mapped["isotonic"] = np.where(with_judge, isotonic.predict(np.nan_to_num(judge)), np.nan)
        slope, intercept = fit_linear(judge[fit_split], human[fit_split])
        line = np.clip(slope * judge + intercept, scale.low, scale.high)
        mapped["linear"] = line
    else:
        slope = intercept = float("nan")
    if expected is not None and np.isfinite(expected).any():
        mapped["expected"] = expected
    names = metrics_for(scale)
    result: dict = {
        "split": {
            "by": "item",
            "fraction": fraction,
            "seed": seed,
            "calibration_units": int((fit_split & with_judge).sum()),
            "held_out_units": int((held_out & with_judge).sum()),
        },
        "linear_fit": {"slope": slope, "intercept": intercept},
    }
    for kind, values in mapped.items():
        kernel = PointwiseKernel(np.where(held_out, values, np.nan), human, scale)
        evaluated = kernel.evaluate(np.ones((1, kernel.n_units)), names)
        result[kind] = {"n": int(kernel.n()[0])} | {k: float(v[0]) for k, v in evaluated.items()}
    return result
