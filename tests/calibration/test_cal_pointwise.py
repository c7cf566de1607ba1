"""Pointwise metrics against scipy / sklearn / krippendorff and hand-worked cases."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

import calibration as cal
from calibration import Scale

TEN = Scale(1, 10, 1)


@pytest.fixture
def scored() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    human = rng.integers(1, 11, size=(3, 300)).mean(axis=0)  # means of 3 raters: ties, thirds
    judge = np.clip(np.round(human + rng.normal(0, 1.5, 300)), 1, 10)
    judge[[3, 50, 99]] = np.nan
    human[[4, 51]] = np.nan
    return judge, human


def _both(judge, human):
    keep = ~np.isnan(judge) & ~np.isnan(human)
    return judge[keep], human[keep]


def test_errors_and_bias_against_numpy(scored):
    j, h = _both(*scored)
    assert cal.mae(*scored) == pytest.approx(np.abs(j - h).mean())
    assert cal.mse(*scored) == pytest.approx(((j - h) ** 2).mean())
    assert cal.rmse(*scored) == pytest.approx(math.sqrt(((j - h) ** 2).mean()))
    assert cal.bias(*scored) == pytest.approx((j - h).mean())
    assert cal.smd(*scored) == pytest.approx((j - h).mean() / h.std(ddof=1))
    assert cal.cosine(*scored) == pytest.approx(j @ h / np.linalg.norm(j) / np.linalg.norm(h))
    assert cal.percent_mae(*scored, Scale(0, 10, 1, percent=True)) == pytest.approx(
        np.abs(j - h).mean() / 10 * 100
    )


def test_correlations_against_scipy_with_ties(scored):
    j, h = _both(*scored)
    assert cal.pearson(*scored) == pytest.approx(stats.pearsonr(j, h).statistic, abs=1e-12)
    assert cal.spearman(*scored) == pytest.approx(stats.spearmanr(j, h).statistic, abs=1e-12)
    assert cal.kendall(*scored) == pytest.approx(stats.kendalltau(j, h).statistic, abs=1e-12)


def test_rank_metrics_of_continuous_values_use_scipy_per_resample_path():
    rng = np.random.default_rng(3)
    j, h = rng.normal(size=400), rng.normal(size=400)  # 160,000 distinct pairs: no table
    assert cal.spearman(j, h) == pytest.approx(stats.spearmanr(j, h).statistic, abs=1e-12)
    assert cal.kendall(j, h) == pytest.approx(stats.kendalltau(j, h).statistic, abs=1e-12)


def test_scale_point_metrics_against_sklearn(scored):
    j, h = _both(*scored)
    rj, rh = np.floor(j + 0.5).astype(int), np.floor(h + 0.5).astype(int)  # half up
    labels = list(range(1, 11))
    expected = cohen_kappa_score(rj, rh, weights="quadratic", labels=labels)
    assert cal.qwk(*scored, TEN) == pytest.approx(expected, abs=1e-12)
    assert cal.strict_acc(*scored, TEN) == pytest.approx((rj == rh).mean())
    assert cal.fuzzy_acc(*scored, TEN) == pytest.approx((np.abs(rj - rh) <= 1).mean())


def test_rounding_is_half_up_on_the_step():
    # 6.5 rounds to 7 (numpy's round would give 6); on a 0.5 step 2.25 rounds to 2.5.
    assert cal.strict_acc(np.array([7.0]), np.array([6.5]), TEN) == 1.0
    assert cal.strict_acc(np.array([2.5]), np.array([2.25]), Scale(0, 5, 0.5)) == 1.0


def test_fuzzy_accuracy_allows_one_scale_step_not_one_unit():
    """METRICS.md: |round(J) - round(H)| <= 1 scale step, rounded half up on the step."""
    tenths = Scale(0, 1, 0.1)
    judge, human = np.array([0.4, 0.4, 0.44]), np.array([0.5, 0.6, 0.56])
    assert cal.fuzzy_acc(judge, human, tenths) == pytest.approx(1 / 3)  # 0.44→0.4, 0.56→0.6
    # on a step of 2, scores 2 and 3 are one step apart (3 rounds up to 4); 2 and 5 are not
    assert cal.fuzzy_acc(np.array([2.0, 2.0]), np.array([3.0, 5.0]), Scale(0, 10, 2)) == 0.5


def test_alpha_two_coders_against_krippendorff(scored):
    j, h = _both(*scored)
    data = np.vstack([j, h])
    assert cal.alpha_interval(*scored) == pytest.approx(
        krippendorff.alpha(data, level_of_measurement="interval"), abs=1e-12
    )
    # krippendorff on binned data: thirds become integers, ranks unchanged
    assert cal.alpha_ordinal(*scored) == pytest.approx(
        krippendorff.alpha(np.round(data * 3), level_of_measurement="ordinal"), abs=1e-12
    )


def test_undefined_cases_are_nan_not_zero():
    constant, varying = np.array([5.0, 5, 5, 5]), np.array([1.0, 2, 3, 4])
    for metric in (cal.pearson, cal.spearman, cal.kendall, cal.smd):
        assert math.isnan(metric(varying, constant)), metric.__name__
    # alpha pools both coders: defined unless nothing varies at all
    assert cal.alpha_interval(varying, constant) == pytest.approx(
        krippendorff.alpha(np.vstack([varying, constant]), level_of_measurement="interval")
    )
    assert math.isnan(cal.alpha_interval(constant, constant))
    one = np.array([3.0])
    assert math.isnan(cal.pearson(one, one))
    assert cal.mae(one, one) == 0.0
    assert math.isnan(cal.mae(np.array([np.nan]), np.array([1.0])))
    assert math.isnan(cal.qwk(constant, constant, TEN))
    assert cal.strict_acc(constant, constant, TEN) == 1.0


def test_metrics_return_python_floats(scored):
    assert type(cal.mae(*scored)) is float
    assert type(cal.kendall(*scored)) is float


def test_metrics_for_leaves_out_scale_point_metrics_on_continuous_scales():
    names = cal.metrics_for(Scale(0, 1))
    assert "qwk" not in names and "strict_acc" not in names and "percent_mae" not in names
    assert "percent_mae" in cal.metrics_for(Scale(0, 6, 1, percent=True))


def test_a_plain_estimate_equals_its_row_among_resamples_to_the_bit(scored):
    """The metrics of value-pair tables: one row of weights (the plain estimates, each
    annotator's leave-one-out) counts the pairs by bincount, many rows (the bootstrap) by a
    sparse product, the same sums in the same order, so the same values to the bit."""
    judge, human = scored
    counts = np.random.default_rng(8).integers(0, 3, size=(4, judge.size)).astype(float)
    table_metrics = ("spearman", "kendall", "strict_acc", "fuzzy_acc", "qwk")
    for values in (judge, human):  # ungrouped pairs, and many pairs grouped into few
        kernel = cal.PointwiseKernel(values, human, TEN, group_pairs=values is judge)
        for weights in (np.ones(judge.size), counts[2]):
            alone = kernel.evaluate(weights[None, :], table_metrics)
            among = kernel.evaluate(np.vstack([counts[:2], weights, counts[3:]]), table_metrics)
            for name, value in alone.items():
                assert np.array_equal(value, among[name][2:3], equal_nan=True), name
