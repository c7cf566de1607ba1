"""Prediction-powered estimates of a mean: a judge's values on every unit, corrected by human
labels on some of them (METRICS.md, "Prediction-powered leaderboards").

PPI++ (Angelopoulos, Duchi and Zrnic, "PPI++: Efficient Prediction-Powered Inference", 2024;
prediction-powered inference: Angelopoulos et al., Science 2023), applied to model evaluation as
in "AutoEval Done Right" (Boyeau et al., 2024). With ``n`` labelled units (human value ``Y``,
judge value ``f``) and ``N`` unlabelled units (judge value ``f~``), for a tuning parameter ``λ``:

    estimate  θ = λ · mean(f~) + mean(Y − λ f)
    variance  V = λ² · var(f~) / N + var(Y − λ f) / n          (variances with divisor N, n)
    interval  θ ± z · √V                                       (normal, z = Φ⁻¹(1 − α/2))

``λ = 0`` is the humans-only mean and its usual interval; ``λ = 1`` is plain PPI. Power tuning
estimates the ``λ`` that minimises ``V``:

    λ = cov(Y, f) / ((1 + n / N) · var(f ∪ f~))                clipped to [0, 1]

with ``cov`` over the labelled units (divisor n) and ``var`` over the judge's values on all units
(divisor n + N − 1), as ``ppi_py.ppi_mean_ci`` computes it (the tests compare with it). The
*effective number of labels* is ``n · V₀ / V``: how many human labels the humans-only mean would
need for the variance PPI++ reaches with ``n`` (``V₀`` = the humans-only variance).

The interval is valid when the labelled units are a uniform random sample of the units the
estimate is about, independent of the labels; which units that is under each routing mode is in
PROTOCOLS.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

MIN_LABELLED = 2
"""Below two labelled units the humans' variance is undefined: no estimate."""


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its variance and two-sided interval."""

    value: float
    variance: float
    low: float
    high: float


@dataclass(frozen=True)
class PredictionPoweredMean:
    """A judge-only, a humans-only and a prediction-powered (PPI++) mean of the same units."""

    judge_only: float
    """The judge's mean over all its units, labelled or not: biased by the judge's errors."""
    humans_only: MeanEstimate
    """The human labels' mean over the labelled units."""
    prediction_powered: MeanEstimate
    tuning: float
    """The power-tuning parameter λ used (estimated from the data unless given)."""
    n_labelled: int
    n_unlabelled: int

    @property
    def effective_labels(self) -> float:
        """``n · V₀ / V``: the human labels the humans-only mean would need to be as precise."""
        if self.prediction_powered.variance <= 0:
            return float("inf") if self.humans_only.variance > 0 else float(self.n_labelled)
        return self.n_labelled * self.humans_only.variance / self.prediction_powered.variance


def prediction_powered_mean(
    labels: np.ndarray,
    judge_labelled: np.ndarray,
    judge_unlabelled: np.ndarray,
    *,
    confidence: float = 0.95,
    tuning: float | None = None,
) -> PredictionPoweredMean:
    """PPI++ estimate of the mean of ``labels`` over all units (module docstring).

    ``labels`` and ``judge_labelled`` are aligned over the labelled units; ``judge_unlabelled``
    holds the judge's values on the other units. ``tuning`` fixes λ (0: humans only, 1: plain
    PPI); None estimates it. Raises ValueError on fewer than :data:`MIN_LABELLED` labelled units,
    no unlabelled unit, misaligned inputs or a missing value."""
    y = np.asarray(labels, dtype=np.float64)
    f = np.asarray(judge_labelled, dtype=np.float64)
    f_tilde = np.asarray(judge_unlabelled, dtype=np.float64)
    if y.ndim != 1 or f.shape != y.shape or f_tilde.ndim != 1:
        raise ValueError("labels and the judge's labelled values must be aligned 1-D arrays")
    if np.isnan(y).any() or np.isnan(f).any() or np.isnan(f_tilde).any():
        raise ValueError("prediction-powered inputs must not hold missing values")
    n, big_n = y.size, f_tilde.size
    if n < MIN_LABELLED:
        raise ValueError(f"{n} labelled unit(s): at least {MIN_LABELLED} are needed")
    if big_n == 0:
        raise ValueError("no unlabelled unit: the humans-only mean is the estimate")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    if tuning is None:
        tuning = _power_tuning(y, f, f_tilde)
    humans = _estimate(y, f, f_tilde, 0.0, z)
    powered = _estimate(y, f, f_tilde, tuning, z)
    judge_only = float(np.concatenate([f, f_tilde]).mean())
    return PredictionPoweredMean(judge_only, humans, powered, tuning, n, big_n)


def humans_only_mean(labels: np.ndarray, confidence: float = 0.95) -> MeanEstimate:
    """The labels' mean with variance ``var(Y) / n`` (divisor n) and a normal interval: PPI++
    with ``λ = 0``, the humans-only value beside it."""
    y = np.asarray(labels, dtype=np.float64)
    if y.size < MIN_LABELLED:
        raise ValueError(f"{y.size} labelled unit(s): at least {MIN_LABELLED} are needed")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return _estimate(y, np.zeros_like(y), np.zeros(1), 0.0, z)


def mean_of_estimates(estimates: list[MeanEstimate], confidence: float = 0.95) -> MeanEstimate:
    """The unweighted mean of independent estimates (AlignMMBench's mean of task means): the
    mean of the values, variance Σ Vₜ / T², a normal interval."""
    if not estimates:
        raise ValueError("no estimate to average")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    value = float(np.mean([e.value for e in estimates]))
    variance = float(np.sum([e.variance for e in estimates])) / len(estimates) ** 2
    half = z * np.sqrt(variance)
    return MeanEstimate(value, variance, value - half, value + half)


def _power_tuning(y: np.ndarray, f: np.ndarray, f_tilde: np.ndarray) -> float:
    n, big_n = y.size, f_tilde.size
    covariance = float(np.mean((y - y.mean()) * (f - f.mean())))
    spread = float(np.var(np.concatenate([f, f_tilde]), ddof=1))
    if spread == 0:
        return 0.0  # a constant judge carries no information about the labels
    return float(np.clip(covariance / ((1 + n / big_n) * spread), 0.0, 1.0))


def _estimate(
    y: np.ndarray, f: np.ndarray, f_tilde: np.ndarray, tuning: float, z: float
) -> MeanEstimate:
    value = float(tuning * f_tilde.mean() + (y - tuning * f).mean())
    variance = float(tuning**2 * np.var(f_tilde) / f_tilde.size + np.var(y - tuning * f) / y.size)
    half = z * np.sqrt(variance)
    return MeanEstimate(value, variance, value - half, value + half)
