"""calibration.ppi: its superpopulation normal core against ppi_py (the reference implementation
of prediction-powered inference, Angelopoulos et al.) on the same arrays; the campaign
(finite-population) variance against an enumeration of every labelled sample; Student's interval
against scipy's; cases worked by hand (METRICS.md)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from calibration.ppi import (
    MeanEstimate,
    critical_value,
    effective_labels,
    humans_only_mean,
    mean_of_estimates,
    prediction_powered_mean,
)

ppi_py = pytest.importorskip("ppi_py")


def _arrays(seed: int, n: int, big_n: int, noise: float) -> tuple[np.ndarray, ...]:
    """Human scores 1-10 and a judge that sees them through noise and a bias of +1."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 11, size=n + big_n).astype(float)
    judge = np.clip(np.round(truth + 1 + rng.normal(0, noise, truth.size)), 1, 10)
    return truth[:n], judge[:n], judge[n:]


@pytest.mark.parametrize(
    ("seed", "n", "big_n", "noise"),
    [(0, 50, 500, 1.0), (1, 20, 2000, 3.0), (2, 200, 200, 0.5), (3, 5, 40, 8.0)],
)
@pytest.mark.parametrize("tuning", [None, 0.0, 1.0, 0.4])
def test_equals_ppi_py(seed: int, n: int, big_n: int, noise: float, tuning: float | None) -> None:
    """Without the two corrections the estimate is ppi_py's, interval ends included."""
    y, f, f_tilde = _arrays(seed, n, big_n, noise)
    ours = prediction_powered_mean(
        y, f, f_tilde, confidence=0.9, tuning=tuning, finite_population=False, student_t=False
    )
    point = ppi_py.ppi_mean_pointestimate(y, f, f_tilde, lam=tuning)
    low, high = ppi_py.ppi_mean_ci(y, f, f_tilde, alpha=0.1, lam=tuning)
    assert ours.prediction_powered.value == pytest.approx(float(np.squeeze(point)), abs=1e-9)
    assert ours.prediction_powered.low == pytest.approx(float(np.squeeze(low)), abs=1e-9)
    assert ours.prediction_powered.high == pytest.approx(float(np.squeeze(high)), abs=1e-9)
    classical_low, classical_high = ppi_py.classical_mean_ci(y, alpha=0.1)
    assert ours.humans_only.value == pytest.approx(y.mean(), abs=1e-12)
    assert ours.humans_only.low == pytest.approx(float(np.squeeze(classical_low)), abs=1e-9)
    assert ours.humans_only.high == pytest.approx(float(np.squeeze(classical_high)), abs=1e-9)
    alone = humans_only_mean(y, 0.9, student_t=False)
    assert (alone.low, alone.high) == pytest.approx((ours.humans_only.low, ours.humans_only.high))
    # the corrections change the interval, never the estimate or the tuning
    corrected = prediction_powered_mean(y, f, f_tilde, confidence=0.9, tuning=tuning)
    assert corrected.prediction_powered.value == ours.prediction_powered.value
    assert corrected.tuning == ours.tuning


def test_a_good_judge_is_worth_more_labels_and_a_useless_one_costs_nothing() -> None:
    y, f, f_tilde = _arrays(4, 100, 5000, 0.5)
    good = prediction_powered_mean(y, f, f_tilde)
    assert good.effective_labels < good.n_labelled + good.n_unlabelled
    assert good.effective_labels > 2 * good.n_labelled
    assert good.prediction_powered.high - good.prediction_powered.low < (
        good.humans_only.high - good.humans_only.low
    )
    noise = np.random.default_rng(5).permutation(np.concatenate([f, f_tilde]))
    useless = prediction_powered_mean(y, noise[:100], noise[100:])
    # power tuning shrinks λ toward 0: the interval is about the humans-only one, never much wider
    assert useless.tuning < 0.2
    assert useless.effective_labels == pytest.approx(useless.n_labelled, rel=0.05)


WORKED = (np.array([6.0, 8, 4, 6]), np.array([7.0, 9, 6, 6]), np.array([8.0, 6, 7, 5]))
"""METRICS.md's hand-worked example: Y, f on the labelled units, f~ on the unlabelled ones."""


def test_worked_example_of_metrics_md() -> None:
    """METRICS.md's first worked example: ppi_py's superpopulation normal interval, λ = 1."""
    result = prediction_powered_mean(*WORKED, tuning=1.0, finite_population=False, student_t=False)
    # mean(f~) = 6.5; mean(Y - f) = -1; θ = 5.5
    assert result.prediction_powered.value == pytest.approx(5.5)
    # var(f~) = 1.25 (divisor 4), var(Y - f) = 0.5: V = 1.25/4 + 0.5/4 = 0.4375
    assert result.prediction_powered.variance == pytest.approx(0.4375)
    # humans only: mean 6, var(Y) = 2, V0 = 0.5; effective labels = 4 · 0.5 / 0.4375
    assert result.humans_only.value == pytest.approx(6.0)
    assert result.humans_only.variance == pytest.approx(0.5)
    assert result.effective_labels == pytest.approx(4 * 0.5 / 0.4375)
    assert result.judge_only == pytest.approx(6.75)


def test_campaign_worked_example_of_metrics_md() -> None:
    """METRICS.md's second worked example: the same units as the campaign (M = 8), λ = 0.5."""
    result = prediction_powered_mean(*WORKED, tuning=0.5)
    # κ = λ·M/N = 0.5·8/4 = 1; θ = κ·mean(f over all 8) + mean(Y − κ f) = 6.75 − 1 = 5.75
    assert result.prediction_powered.value == pytest.approx(5.75)
    # Y − f = (−1, −1, −2, 0): s² = (0 + 0 + 1 + 1)/3 = 2/3; V = (1 − 4/8)·(2/3)/4 = 1/12
    assert result.prediction_powered.variance == pytest.approx(1 / 12)
    # Student's t with 3 df: 3.182446 (the published table's 3.182)
    assert result.prediction_powered.df == 3
    half = (result.prediction_powered.high - result.prediction_powered.low) / 2
    assert half == pytest.approx(3.182446305 * np.sqrt(1 / 12), rel=1e-8)
    # humans only: s²(Y) = 8/3, V₀ = (1 − 4/8)·(8/3)/4 = 1/3
    assert result.humans_only.variance == pytest.approx(1 / 3)
    # worth m labels where (1/m − 1/8)·8/3 = 1/12: m = 6.4 (n·V₀/V = 16 would exceed the 8 units)
    assert result.effective_labels == pytest.approx(6.4)
    # the superpopulation variance at λ = 0.5: 0.25·1.25/4 + 0.875/4 = 0.296875
    superpopulation = prediction_powered_mean(
        *WORKED, tuning=0.5, finite_population=False, student_t=False
    )
    assert superpopulation.prediction_powered.variance == pytest.approx(0.296875)


def test_an_estimated_tuning_is_a_regression_estimate_with_n_minus_2_degrees_of_freedom() -> None:
    """METRICS.md's third worked example: λ estimated from the four labels. Cochran 1977 §7.3:
    the residuals' sum of squares over n − 2 and Student's t with n − 2 degrees of freedom."""
    y, f, f_tilde = WORKED
    result = prediction_powered_mean(y, f, f_tilde)
    # λ = cov(Y, f) / ((1 + n/N) · var(f ∪ f~)) = 1.5 / (2 · 11.5/7) = 21/46
    assert result.tuning == pytest.approx(21 / 46)
    kappa = (21 / 46) * 8 / 4
    residuals = y - kappa * f
    variance = (1 - 4 / 8) * float(np.sum((residuals - residuals.mean()) ** 2)) / 2 / 4
    assert result.prediction_powered.variance == pytest.approx(variance, rel=1e-12)
    assert result.prediction_powered.variance == pytest.approx(0.127836, abs=1e-6)
    assert result.prediction_powered.value == pytest.approx(kappa * 6.75 + residuals.mean())
    assert result.prediction_powered.df == 2
    half = (result.prediction_powered.high - result.prediction_powered.low) / 2
    assert half == pytest.approx(4.302652730 * np.sqrt(variance), rel=1e-8)  # t(0.975, 2)
    assert result.humans_only.df == 3  # the humans-only mean estimates no slope
    # a λ given by the caller is fixed: n − 1, as in the second example
    assert prediction_powered_mean(y, f, f_tilde, tuning=21 / 46).prediction_powered.df == 3
    # ppi_py's interval is unchanged by the rule
    normal = prediction_powered_mean(y, f, f_tilde, finite_population=False, student_t=False)
    assert normal.prediction_powered.df is None and normal.tuning == pytest.approx(21 / 46)


def test_two_labels_leave_no_degree_of_freedom_for_the_slope() -> None:
    """With n = 2 an estimated λ would leave n − 2 = 0 degrees of freedom: λ = 0, the
    humans-only mean and its interval."""
    y, f, f_tilde = np.array([3.0, 5]), np.array([3.0, 4]), np.array([4.0, 2, 5])
    result = prediction_powered_mean(y, f, f_tilde)
    assert result.tuning == 0.0
    assert result.prediction_powered == result.humans_only
    assert result.humans_only.df == 1


def _population(seed: int, units: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(1, 6, size=units).astype(float)
    f = np.clip(y + rng.integers(-1, 3, size=units), 1, 5).astype(float)
    return y, f


def _every_sample(y: np.ndarray, f: np.ndarray, n: int, tuning: float | None):
    """The estimate from every labelled sample of n of the units (all equally likely)."""
    for chosen in combinations(range(y.size), n):
        mask = np.zeros(y.size, dtype=bool)
        mask[list(chosen)] = True
        yield prediction_powered_mean(y[mask], f[mask], f[~mask], tuning=tuning)


@pytest.mark.parametrize(("seed", "units", "n"), [(0, 10, 4), (1, 12, 5), (2, 9, 2)])
@pytest.mark.parametrize("tuning", [0.0, 0.3, 1.0])
def test_campaign_variance_is_unbiased_over_every_labelled_sample(
    seed: int, units: int, n: int, tuning: float
) -> None:
    """Enumerating every sample of n of the units: the estimate's mean is the units' human mean,
    and the mean of its variance estimate is the estimate's variance over the samples (Cochran
    1977, Theorems 2.2 and 2.4, with a fixed λ)."""
    y, f = _population(seed, units)
    found = list(_every_sample(y, f, n, tuning))
    for part in ("humans_only", "prediction_powered"):
        values = np.array([getattr(r, part).value for r in found])
        variances = np.array([getattr(r, part).variance for r in found])
        assert values.mean() == pytest.approx(y.mean(), abs=1e-12)
        exact = float(np.mean((values - y.mean()) ** 2))
        assert variances.mean() == pytest.approx(exact, rel=1e-9, abs=1e-12)


def test_power_tuning_minimises_the_campaign_variance() -> None:
    """The λ of ppi_py's rule, with the units' own covariance and variance, has the smallest
    variance over every labelled sample of any λ on a grid: the correction leaves it unchanged."""
    y, f = _population(3, 11)
    n, units = 4, 11
    covariance = float(np.cov(y, f, ddof=1)[0, 1])
    best = covariance / ((1 + n / (units - n)) * float(np.var(f, ddof=1)))

    def spread(tuning: float) -> float:
        values = np.array([r.prediction_powered.value for r in _every_sample(y, f, n, tuning)])
        return float(np.mean((values - y.mean()) ** 2))

    assert 0 < best < 1
    at_best = spread(best)
    assert all(at_best <= spread(t) + 1e-12 for t in np.linspace(0, 1, 21))
    assert at_best < spread(0.0)  # the judge helps here


@pytest.mark.parametrize("units", [None, 30])
def test_humans_only_interval_is_scipys_t_interval(units: int | None) -> None:
    y = np.array([3.0, 5, 4, 4, 2, 5])
    found = humans_only_mean(y, 0.9, units=units)
    correction = 1.0 if units is None else 1 - y.size / units
    scale = stats.sem(y) * np.sqrt(correction)
    low, high = stats.t.interval(0.9, y.size - 1, loc=y.mean(), scale=scale)
    assert (found.low, found.high) == pytest.approx((low, high), rel=1e-12)
    assert found.df == y.size - 1
    every = humans_only_mean(y, 0.9, units=y.size)  # every unit labelled: the mean is exact
    assert every.variance == 0 and every.low == every.high == y.mean()


def test_critical_values_are_the_published_ones() -> None:
    """Student's t table (two-sided 95%): 12.706 (1 df), 3.182 (3), 2.776 (4), 2.228 (10)."""
    for df, published in ((1, 12.706), (3, 3.182), (4, 2.776), (10, 2.228)):
        assert critical_value(0.95, df) == pytest.approx(published, abs=5e-4)
    assert critical_value(0.95) == pytest.approx(1.959964, abs=1e-6)


def test_effective_labels_give_the_humans_only_variance_back() -> None:
    """c · n labels in each part give the humans-only variance the PPI++ one (the definition)."""
    parts = [(5, 20, 0.04), (8, 12, 0.01), (3, None, 0.02)]
    variance = 0.03
    labels = effective_labels(parts, variance)
    scale = labels / 16
    back = sum(
        v0 * (1 / (scale * n) - (0 if m is None else 1 / m)) / (1 / n - (0 if m is None else 1 / m))
        for n, m, v0 in parts
    )
    assert back == pytest.approx(variance)
    assert effective_labels([(10, None, 0.5)], 0.25) == pytest.approx(20)  # n · V0 / V
    assert effective_labels([(10, 40, 0.5)], 0.0) == pytest.approx(40)  # no variance: every unit


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        prediction_powered_mean(np.array([1.0]), np.array([1.0]), np.array([2.0]))
    with pytest.raises(ValueError, match="no unlabelled unit"):
        prediction_powered_mean(np.array([1.0, 2]), np.array([1.0, 2]), np.array([]))
    with pytest.raises(ValueError, match="missing"):
        prediction_powered_mean(np.array([1.0, np.nan]), np.array([1.0, 2]), np.array([3.0]))


def test_mean_of_estimates_adds_variances_over_t_squared() -> None:
    first, second = MeanEstimate(4.0, 0.25, 3.0, 5.0), MeanEstimate(6.0, 0.75, 4.0, 8.0)
    both = mean_of_estimates([first, second])
    assert both.value == 5.0 and both.variance == pytest.approx(0.25)
    assert both.high - both.low == pytest.approx(2 * 1.959963984540054 * 0.5)
    assert both.df is None
    # Welch–Satterthwaite by hand: (0.25 + 0.75)² / (0.25²/4 + 0.75²/9) = 12.8
    student = mean_of_estimates([MeanEstimate(4.0, 0.25, 3.0, 5.0, 4.0), second])
    assert student.df == pytest.approx(1 / (0.25**2 / 4))  # the normal one adds no term
    welch = mean_of_estimates(
        [MeanEstimate(4.0, 0.25, 3.0, 5.0, 4.0), MeanEstimate(6.0, 0.75, 4.0, 8.0, 9.0)]
    )
    assert welch.df == pytest.approx(12.8)
    assert welch.high - welch.low == pytest.approx(2 * stats.t.ppf(0.975, 12.8) * 0.5)


def test_mean_of_two_means_has_welchs_degrees_of_freedom() -> None:
    """Two samples' humans-only means averaged: the df is that of Welch's t-test (scipy)."""
    rng = np.random.default_rng(7)
    a, b = rng.normal(3, 1, 5), rng.normal(4, 2, 10)
    both = mean_of_estimates([humans_only_mean(a), humans_only_mean(b)])
    assert both.df == pytest.approx(stats.ttest_ind(a, b, equal_var=False).df, rel=1e-12)
