"""Prediction-powered estimates of a mean: a judge's values on every unit, corrected by human
labels on some of them (METRICS.md, "Prediction-powered leaderboards").

PPI++ (Angelopoulos, Duchi and Zrnic, "PPI++: Efficient Prediction-Powered Inference", 2024;
prediction-powered inference: Angelopoulos et al., Science 2023), applied to model evaluation as
in "AutoEval Done Right" (Boyeau et al., 2024). With ``n`` labelled units (human value ``Y``,
judge value ``f``) and ``N`` unlabelled units (judge value ``f~``), for a tuning parameter ``λ``:

    estimate  θ = λ · mean(f~) + mean(Y − λ f)

``λ = 0`` is the humans-only mean; ``λ = 1`` is plain PPI. Power tuning estimates the ``λ`` that
minimises the variance:

    λ = cov(Y, f) / ((1 + n / N) · var(f ∪ f~))                clipped to [0, 1]

with ``cov`` over the labelled units (divisor n) and ``var`` over the judge's values on all units
(divisor n + N − 1), as ``ppi_py.ppi_mean_ci`` computes it.

**The target is the campaign's units.** The estimate is about the humans' mean over the
``M = n + N`` units the judge scored, the labelled ones a simple random sample of them drawn
without replacement. The judge's mean ``F`` over all M is then a fixed number, and, with
``κ = λ · M / N``, ``θ = κ · F + mean(Y − κ f)``: only the labelled mean varies. Its variance is
that of a mean of a simple random sample from a finite population (Cochran, *Sampling
Techniques*, 3rd ed. 1977, Theorem 2.2, §7.2 for the difference estimate with a fixed ``κ``),
estimated without bias by (Theorem 2.4)

    V = (1 − n / M) · s²(Y − κ f) / n                            (s²: divisor n − 1)

and the interval is Student's, ``θ ± t · √V`` with ``t`` the ``1 − α/2`` quantile of the t
distribution with ``n − 1`` degrees of freedom (Student 1908; Cochran 1977 §2.8 for small
samples). ``λ = 0`` gives the humans-only mean with ``(1 − n/M) · s²(Y) / n``.

**An estimated λ costs a degree of freedom.** When power tuning estimates ``λ`` from the same
labels (and it is not 0), ``θ`` is Cochran's regression estimate (§7.1, slope ``κ`` estimated from
the sample), whose variance estimate divides the residuals' sum of squares by ``n − 2`` and whose
interval takes ``n − 2`` degrees of freedom (Cochran 1977, §7.3): ``s²`` then has divisor
``n − 2`` and ``t`` ``n − 2`` degrees of freedom. Two labels leave nothing to estimate the
slope's error with, so there ``λ = 0``: the humans-only mean. A ``λ`` given by the caller (the
leaderboards give the judge's, :func:`calibration.model_estimates.judge_tuning`) is fixed, and
keeps ``n − 1``. At about five labels per system (HANNA,
n = 50 over 11 systems) the intervals with ``n − 1`` covered 0.914 instead of 0.95
(docs/MODEL_SCORES.md). The tuning needs no
change: ``V`` is ``(1 − n/M)/n`` times ``var(Y − κ f)``, smallest at ``κ = cov(Y, f)/var(f)``,
which is the ``λ`` above (``λ = κ · N / M``); ppi_py's superpopulation variance has its minimum at
the same ``λ``.

``finite_population=False, student_t=False`` gives ppi_py's superpopulation interval exactly
(the tests compare with it):

    V = λ² · var(f~) / N + var(Y − λ f) / n                     (divisors N and n)
    interval  θ ± z · √V                                        (z = Φ⁻¹(1 − α/2))

``student_t`` alone uses the labelled units' variance with divisor n − 1 and the t quantile;
``finite_population`` alone the variance above with divisor n and the normal quantile.

The *effective number of labels* is how many human labels the humans-only mean would need for
the variance PPI++ reaches with ``n`` (:func:`effective_labels`; ``n · V₀ / V`` without the
finite-population correction, ``V₀`` the humans-only variance).

The interval is valid when the labelled units are a uniform random sample of the units the
estimate is about, independent of the labels; which units that is under each routing mode is in
PROTOCOLS.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from scipy.stats import t as student

MIN_LABELLED = 2
"""Below two labelled units the humans' variance is undefined: no estimate."""


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its variance and two-sided interval."""

    value: float
    variance: float
    low: float
    high: float
    df: float | None = None
    """Degrees of freedom of the Student t interval; None: a normal interval."""


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
    finite_population: bool = True
    """Whether the variances are about the ``n_labelled + n_unlabelled`` units (module
    docstring) rather than a superpopulation."""

    @property
    def effective_labels(self) -> float:
        """The human labels the humans-only mean would need to be as precise
        (:func:`effective_labels`)."""
        units = self.n_labelled + self.n_unlabelled if self.finite_population else None
        return effective_labels(
            [(self.n_labelled, units, self.humans_only.variance)],
            self.prediction_powered.variance,
        )


def prediction_powered_mean(
    labels: np.ndarray,
    judge_labelled: np.ndarray,
    judge_unlabelled: np.ndarray,
    *,
    confidence: float = 0.95,
    tuning: float | None = None,
    finite_population: bool = True,
    student_t: bool = True,
) -> PredictionPoweredMean:
    """PPI++ estimate of the mean of the human values over all units, labelled and unlabelled
    (module docstring).

    ``labels`` and ``judge_labelled`` are aligned over the labelled units; ``judge_unlabelled``
    holds the judge's values on the other units. ``tuning`` fixes λ (0: humans only, 1: plain
    PPI); None estimates it. ``finite_population``: the variance of the mean over these units,
    the labelled ones drawn without replacement (False: ppi_py's superpopulation variance);
    ``student_t``: Student's t interval with ``n − 1`` degrees of freedom, ``n − 2`` for an
    estimated λ (module docstring; False: normal, as ppi_py). Raises
    ValueError on fewer than :data:`MIN_LABELLED` labelled units, no unlabelled unit, misaligned
    inputs or a missing value."""
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
    _check_confidence(confidence)
    estimated = tuning is None
    if tuning is None:
        # Under Student's t two labels leave no degree of freedom for an estimated slope.
        tuning = power_tuning(y, f, f_tilde) if n > 2 or not student_t else 0.0
    humans_df = n - 1 if student_t else None
    slope_df = 1 if estimated and tuning > 0 else 0  # Cochran 1977 §7.3
    powered_df = n - 1 - slope_df if student_t else None
    humans = _estimate(
        y, f, f_tilde, 0.0, finite_population, humans_df, critical_value(confidence, humans_df)
    )
    powered = _estimate(
        y, f, f_tilde, tuning, finite_population, powered_df, critical_value(confidence, powered_df)
    )
    judge_only = float(np.concatenate([f, f_tilde]).mean())
    return PredictionPoweredMean(judge_only, humans, powered, tuning, n, big_n, finite_population)


def humans_only_mean(
    labels: np.ndarray,
    confidence: float = 0.95,
    *,
    units: int | None = None,
    student_t: bool = True,
) -> MeanEstimate:
    """The labels' mean over ``units`` units (None: a superpopulation) of which they are a
    simple random sample: PPI++ with ``λ = 0``, the humans-only value beside it. Variance
    ``(1 − n/units) · s²(Y) / n`` (``units`` None: ``s²(Y) / n``), ``s²`` with divisor n − 1
    and Student's interval, or divisor n and a normal interval when ``student_t`` is False
    (ppi_py's ``classical_mean_ci``). All units labelled: the mean is exact, variance 0."""
    y = np.asarray(labels, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError("labels must be a 1-D array")
    if y.size < MIN_LABELLED:
        raise ValueError(f"{y.size} labelled unit(s): at least {MIN_LABELLED} are needed")
    if units is not None and units < y.size:
        raise ValueError(f"{y.size} labelled units cannot be a sample of {units} units")
    _check_confidence(confidence)
    df = y.size - 1 if student_t else None
    rest = np.zeros(1 if units is None else units - y.size)
    return _estimate(
        y, np.zeros_like(y), rest, 0.0, units is not None, df, critical_value(confidence, df)
    )


def mean_of_estimates(estimates: list[MeanEstimate], confidence: float = 0.95) -> MeanEstimate:
    """The unweighted mean of independent estimates (AlignMMBench's mean of task means): the
    mean of the values, variance Σ Vₜ / T². The interval is normal when every estimate's is;
    otherwise Student's with the Welch–Satterthwaite degrees of freedom
    ``(Σ Vₜ)² / Σ (Vₜ² / dfₜ)`` (Satterthwaite 1946; a normal estimate counts as infinite df)."""
    if not estimates:
        raise ValueError("no estimate to average")
    _check_confidence(confidence)
    value = float(np.mean([e.value for e in estimates]))
    variances = [e.variance for e in estimates]
    variance = float(np.sum(variances)) / len(estimates) ** 2
    df: float | None = None
    if any(e.df is not None for e in estimates):
        spread = sum(e.variance**2 / e.df for e in estimates if e.df is not None)
        df = (
            float(np.sum(variances)) ** 2 / spread
            if spread > 0
            else float(min(e.df for e in estimates if e.df is not None))
        )
    half = critical_value(confidence, df) * np.sqrt(variance)
    return MeanEstimate(value, variance, value - half, value + half, df)


def effective_labels(parts: Sequence[tuple[int, int | None, float]], variance: float) -> float:
    """How many human labels the humans-only estimate would need to reach ``variance``.

    Each part (one mean, or one task of an average) is ``(n, units, V0)``: ``n`` labels of
    ``units`` units (None: no finite-population correction) contributing ``V0`` to the
    humans-only variance. With every part's labels scaled by one factor ``c`` a part contributes
    ``V0 · (1/(c·n) − 1/units) / (1/n − 1/units)``; the answer is ``c · Σ n`` for the ``c`` at
    which the sum is ``variance``: ``c = Σ a / (variance + Σ b)``, ``a = V0 / (1 − n/units)``,
    ``b = V0 · n / (units − n)``. One part without the correction: ``n · V0 / variance``; with
    it, at most ``units`` (zero variance: every unit labelled). Infinite when ``variance`` is 0
    and nothing bounds it."""
    numerator = denominator = 0.0
    labels = 0
    for n, units, humans in parts:
        labels += n
        if units is None:
            numerator += humans
        elif units > n:
            numerator += humans / (1 - n / units)
            denominator += humans * n / (units - n)
        else:
            raise ValueError(f"{n} labels of {units} units leave no unit to estimate")
    denominator += variance
    if denominator <= 0:
        return float("inf") if numerator > 0 else float(labels)
    return numerator / denominator * labels


@lru_cache(maxsize=1024)
def critical_value(confidence: float, df: float | None = None) -> float:
    """The ``0.5 + confidence/2`` quantile of Student's t with ``df`` degrees of freedom, or of
    the standard normal when ``df`` is None."""
    if df is None:
        return NormalDist().inv_cdf(0.5 + confidence / 2)
    return float(student.ppf(0.5 + confidence / 2, df))


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence}")


def power_tuning(
    labels: np.ndarray, judge_labelled: np.ndarray, judge_unlabelled: np.ndarray
) -> float:
    """PPI++'s power-tuning λ (module docstring): ``cov(Y, f) / ((1 + n/N) · var(f ∪ f~))``,
    clipped to [0, 1]; 0 for a constant judge. The arrays are as
    :func:`prediction_powered_mean`'s."""
    y = np.asarray(labels, dtype=np.float64)
    f = np.asarray(judge_labelled, dtype=np.float64)
    f_tilde = np.asarray(judge_unlabelled, dtype=np.float64)
    n, big_n = y.size, f_tilde.size
    covariance = float(np.mean((y - y.mean()) * (f - f.mean())))
    spread = float(np.var(np.concatenate([f, f_tilde]), ddof=1))
    if spread == 0:
        return 0.0  # a constant judge carries no information about the labels
    return float(np.clip(covariance / ((1 + n / big_n) * spread), 0.0, 1.0))


def _estimate(
    y: np.ndarray,
    f: np.ndarray,
    f_tilde: np.ndarray,
    tuning: float,
    finite_population: bool,
    df: int | None,
    critical: float,
) -> MeanEstimate:
    """θ, its variance (module docstring) and interval; ``df`` None: divisor n (a normal
    interval), else divisor ``df`` (n − 1, or n − 2 for an estimated λ)."""
    n, big_n = y.size, f_tilde.size
    ddof = 0 if df is None else n - df
    value = float(tuning * f_tilde.mean() + (y - tuning * f).mean()) if big_n else float(y.mean())
    if finite_population:
        units = n + big_n
        slope = tuning * units / big_n if tuning else 0.0  # κ = λ · M / N
        variance = float((1 - n / units) * np.var(y - slope * f, ddof=ddof) / n)
    else:
        variance = float(
            tuning**2 * np.var(f_tilde) / big_n + np.var(y - tuning * f, ddof=ddof) / n
        )
    half = critical * np.sqrt(variance)
    degrees = None if df is None else float(df)
    return MeanEstimate(value, variance, value - half, value + half, degrees)
