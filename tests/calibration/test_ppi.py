"""calibration.ppi against ppi_py (the reference implementation of prediction-powered
inference, Angelopoulos et al.) on the same arrays, and a case worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.ppi import MeanEstimate, mean_of_estimates, prediction_powered_mean

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
    y, f, f_tilde = _arrays(seed, n, big_n, noise)
    ours = prediction_powered_mean(y, f, f_tilde, confidence=0.9, tuning=tuning)
    point = ppi_py.ppi_mean_pointestimate(y, f, f_tilde, lam=tuning)
    low, high = ppi_py.ppi_mean_ci(y, f, f_tilde, alpha=0.1, lam=tuning)
    assert ours.prediction_powered.value == pytest.approx(float(np.squeeze(point)), abs=1e-9)
    assert ours.prediction_powered.low == pytest.approx(float(np.squeeze(low)), abs=1e-9)
    assert ours.prediction_powered.high == pytest.approx(float(np.squeeze(high)), abs=1e-9)
    classical_low, classical_high = ppi_py.classical_mean_ci(y, alpha=0.1)
    assert ours.humans_only.value == pytest.approx(y.mean(), abs=1e-12)
    assert ours.humans_only.low == pytest.approx(float(np.squeeze(classical_low)), abs=1e-9)
    assert ours.humans_only.high == pytest.approx(float(np.squeeze(classical_high)), abs=1e-9)


def test_a_good_judge_is_worth_more_labels_and_a_useless_one_costs_nothing() -> None:
    y, f, f_tilde = _arrays(4, 100, 5000, 0.5)
    good = prediction_powered_mean(y, f, f_tilde)
    assert good.effective_labels > 2 * good.n_labelled
    assert good.prediction_powered.high - good.prediction_powered.low < (
        good.humans_only.high - good.humans_only.low
    )
    noise = np.random.default_rng(5).permutation(np.concatenate([f, f_tilde]))
    useless = prediction_powered_mean(y, noise[:100], noise[100:])
    # power tuning shrinks λ toward 0: the interval is about the humans-only one, never much wider
    assert useless.tuning < 0.2
    assert useless.effective_labels == pytest.approx(useless.n_labelled, rel=0.05)


def test_worked_example_of_metrics_md() -> None:
    """METRICS.md's hand-worked example: Y = (6, 8, 4, 6), f = (7, 9, 6, 6), f~ = (8, 6, 7, 5)."""
    result = prediction_powered_mean(
        np.array([6.0, 8, 4, 6]), np.array([7.0, 9, 6, 6]), np.array([8.0, 6, 7, 5]), tuning=1.0
    )
    # mean(f~) = 6.5; mean(Y - f) = -1; θ = 5.5
    assert result.prediction_powered.value == pytest.approx(5.5)
    # var(f~) = 1.25 (divisor 4), var(Y - f) = 0.5: V = 1.25/4 + 0.5/4 = 0.4375
    assert result.prediction_powered.variance == pytest.approx(0.4375)
    # humans only: mean 6, var(Y) = 2, V0 = 0.5; effective labels = 4 · 0.5 / 0.4375
    assert result.humans_only.value == pytest.approx(6.0)
    assert result.humans_only.variance == pytest.approx(0.5)
    assert result.effective_labels == pytest.approx(4 * 0.5 / 0.4375)
    assert result.judge_only == pytest.approx(6.75)


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
