"""The vectorised bootstrap over units against a plain loop, and its behaviour."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibration import CalibrationOptions, PointwiseKernel, Scale, calibrate
from calibration.bootstrap import percentile_interval, unit_resample_counts, unit_resample_indices
from calibration.result import CalibrationResult
from schemas.protocols import ALIGNMMBENCH


def _data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 11, size=n)
    humans = np.clip(quality + rng.integers(-1, 2, size=(3, n)), 1, 10).astype(float)
    judge = np.clip(quality + rng.integers(-2, 3, size=n), 1, 10).astype(float)
    return humans, judge


@pytest.mark.parametrize("n_units", [60, 400])  # 400: units grouped by their (J, H) pair
def test_vectorised_resamples_equal_a_plain_loop_with_scipy_and_krippendorff(n_units):
    humans, judge = _data(n_units)
    reference = humans.mean(axis=0)
    kernel = PointwiseKernel(judge, reference, Scale(1, 10, 1))
    vectorised = [kernel.evaluate(w) for w in unit_resample_counts(n_units, 20, seed=5)]
    loop = []
    for chunk in unit_resample_indices(n_units, 20, seed=5):
        for index in chunk:
            j, h = judge[index], reference[index]
            loop.append(
                {
                    "mae": np.abs(j - h).mean(),
                    "kendall": stats.kendalltau(j, h).statistic,
                    "spearman": stats.spearmanr(j, h).statistic,
                    "pearson": stats.pearsonr(j, h).statistic,
                    "alpha_interval": krippendorff.alpha(
                        np.vstack([j, h]), level_of_measurement="interval"
                    ),
                }
            )
    for metric in ("mae", "kendall", "spearman", "pearson", "alpha_interval"):
        ours = np.concatenate([v[metric] for v in vectorised])
        theirs = np.array([row[metric] for row in loop])
        np.testing.assert_allclose(ours, theirs, atol=1e-10, err_msg=metric)


def _frame(humans: np.ndarray, judge: np.ndarray) -> pd.DataFrame:
    rows = []
    for u in range(judge.size):
        for r in range(humans.shape[0]):
            rows.append(
                {
                    "unit": f"r:{u}",
                    "rater": f"annotator:{r}",
                    "kind": "human",
                    "value": humans[r, u],
                }
            )
        rows.append({"unit": f"r:{u}", "rater": "judge", "kind": "model", "value": judge[u]})
    return pd.DataFrame(rows)


def _report(n: int, bootstrap: int = 200) -> CalibrationResult:
    humans, judge = _data(n)
    options = CalibrationOptions(ALIGNMMBENCH, bootstrap=bootstrap, seed=1)
    return calibrate(_frame(humans, judge), options).result


def test_interval_contains_the_estimate_and_narrows_with_more_units():
    small, large = _report(100), _report(1600)
    for metric in ("mae", "pearson", "kendall", "qwk", "alpha_ordinal"):
        entry = small.judges["judge"].metric(metric)
        assert entry.low <= entry.value <= entry.high, metric
        big = large.judges["judge"].metric(metric)
        assert big.high - big.low < (entry.high - entry.low) / 2, metric
    alpha = small.human.alphas["alpha_interval"]
    assert alpha.low <= alpha.value <= alpha.high
    assert small.options.seed == 1 and small.options.bootstrap == 200


def test_resamples_units_not_raters():
    # All three raters agree on every unit but units differ: resampling raters would give a
    # zero-width interval for the judge's mae; resampling units gives the unit-level spread,
    # whose width is close to 2 × 1.96 × sd(|J − H|) / sqrt(n).
    rng = np.random.default_rng(4)
    n = 400
    quality = rng.integers(1, 11, size=n).astype(float)
    humans = np.vstack([quality] * 3)
    judge = np.clip(quality + rng.integers(-3, 4, size=n), 1, 10)
    result = calibrate(
        _frame(humans, judge), CalibrationOptions(ALIGNMMBENCH, bootstrap=400)
    ).result
    mae = result.judges["judge"].metric("mae")
    low, high = mae.low, mae.high
    expected_width = 2 * 1.96 * np.abs(judge - quality).std(ddof=1) / np.sqrt(n)
    assert high - low == pytest.approx(expected_width, rel=0.2)


def test_same_seed_same_interval_and_bootstrap_zero_turns_intervals_off():
    assert _report(100, 50).judges["judge"].ci == _report(100, 50).judges["judge"].ci
    without = _report(100, 0).judges["judge"]
    assert without.ci is None and "ci" not in without.model_dump(mode="json")


def test_percentile_interval_skips_undefined_resamples():
    assert percentile_interval(np.array([np.nan, 1.0, 2.0, 3.0])) == pytest.approx((1.05, 2.95))
    assert all(np.isnan(percentile_interval(np.array([np.nan]))))
