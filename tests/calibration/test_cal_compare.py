"""Paired comparison of two judges (calibration.compare) against plain per-resample loops."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from calibration import CalibrationInputError, CalibrationOptions, calibrate
from calibration.bootstrap import percentile_interval, unit_resample_indices
from calibration.compare import HUMAN, compare_judges
from schemas.protocols import ALIGNMMBENCH, get_protocol

PAIRWISE = get_protocol("pairwise")


def _frame(humans: np.ndarray, judges: dict[str, np.ndarray], labels=None) -> pd.DataFrame:
    """Long frame: humans (raters × units) and judges (per unit), NaN = no judgement."""

    def value(v):
        return labels[int(v)] if labels else float(v)

    rows = []
    for u in range(humans.shape[1]):
        for r in range(humans.shape[0]):
            if not np.isnan(humans[r, u]):
                rows.append(
                    {
                        "unit": f"u{u:03d}",
                        "rater": f"h{r}",
                        "kind": "human",
                        "value": value(humans[r, u]),
                    }
                )
        for name, values in judges.items():
            if not np.isnan(values[u]):
                rows.append(
                    {"unit": f"u{u:03d}", "rater": name, "kind": "model", "value": value(values[u])}
                )
    return pd.DataFrame(rows)


def _scores(n: int, seed: int):
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 11, size=n)
    humans = np.clip(quality + rng.integers(-1, 2, size=(3, n)), 1, 10).astype(float)
    good = np.clip(quality + rng.integers(-1, 2, size=n), 1, 10).astype(float)
    poor = np.clip(quality + rng.integers(-3, 4, size=n), 1, 10).astype(float)
    good[[1, 7]] = np.nan  # units one judge skipped are not in the comparison
    poor[[3]] = np.nan
    return humans, good, poor


def _naive_interval(deltas: list[float]) -> tuple[float, float]:
    return percentile_interval(np.array(deltas))


def test_pointwise_equals_a_naive_loop_over_the_same_resamples():
    humans, good, poor = _scores(40, seed=3)
    options = CalibrationOptions(ALIGNMMBENCH, bootstrap=60, seed=9)
    result = compare_judges(_frame(humans, {"good": good, "poor": poor}), options, "good", "poor")
    reference = humans.mean(axis=0)
    common = ~np.isnan(good) & ~np.isnan(poor)
    j_a, j_b, h = good[common], poor[common], reference[common]
    assert result.n_units == common.sum() == 37
    naive = {"mae": [], "pearson": [], "qwk": []}
    better = {"mae": [], "pearson": [], "qwk": []}
    points = np.arange(1, 11)

    def metrics(j, ref):
        return {
            "mae": np.abs(j - ref).mean(),
            "pearson": stats.pearsonr(j, ref).statistic,
            "qwk": cohen_kappa_score(
                np.floor(j + 0.5).astype(int),
                np.floor(ref + 0.5).astype(int),
                labels=points,
                weights="quadratic",
            ),
        }

    for chunk in unit_resample_indices(int(common.sum()), 60, seed=9):
        for index in chunk:
            a, b = metrics(j_a[index], h[index]), metrics(j_b[index], h[index])
            for name in naive:
                naive[name].append(a[name] - b[name])
                wins = a[name] < b[name] if name == "mae" else a[name] > b[name]
                better[name].append(wins)
    for name in naive:
        entry = result.metric(name)
        assert entry.delta == pytest.approx(metrics(j_a, h)[name] - metrics(j_b, h)[name])
        assert entry.ci == pytest.approx(_naive_interval(naive[name]), abs=1e-10), name
        assert entry.p_a_better == pytest.approx(np.mean(better[name])), name
        assert entry.n_resamples == 60
    assert result.metric("mae").better == "lower" and result.metric("qwk").better == "higher"
    assert result.reference == "reference"


def test_pairwise_equals_a_naive_loop():
    rng = np.random.default_rng(5)
    n = 50
    truth = rng.integers(0, 3, size=n)
    humans = np.vstack(
        [np.where(rng.random(n) < 0.85, truth, rng.integers(0, 3, n)) for _ in range(3)]
    )
    a = np.where(rng.random(n) < 0.8, truth, rng.integers(0, 3, n)).astype(float)
    b = np.where(rng.random(n) < 0.6, truth, rng.integers(0, 3, n)).astype(float)
    b[4] = np.nan
    labels = ("A", "B", "tie")
    frame = _frame(humans.astype(float), {"a": a, "b": b}, labels)
    options = CalibrationOptions(PAIRWISE, bootstrap=50, seed=2)
    result = compare_judges(frame, options, "a", "b")
    reference = np.array([np.bincount(col, minlength=3).argmax() for col in humans.T])
    reference = np.where(
        [np.bincount(col, minlength=3).max() >= 2 for col in humans.T], reference, 2
    )
    common = ~np.isnan(b)
    ra, rb, ref = a[common].astype(int), b[common].astype(int), reference[common]
    deltas = {"acc_with_tie": [], "kappa": []}
    for chunk in unit_resample_indices(int(common.sum()), 50, seed=2):
        for index in chunk:
            for name, fn in (("acc_with_tie", _accuracy), ("kappa", cohen_kappa_score)):
                deltas[name].append(fn(ref[index], ra[index]) - fn(ref[index], rb[index]))
    for name, values in deltas.items():
        assert result.metric(name).ci == pytest.approx(_naive_interval(values), abs=1e-10), name
    assert result.metric("acc_with_tie").delta == pytest.approx(
        _accuracy(ref, ra) - _accuracy(ref, rb)
    )
    assert result.metric("prefer_first").better == "none"
    assert result.metric("prefer_first").p_a_better is None


def _accuracy(truth: np.ndarray, predicted: np.ndarray) -> float:
    return float((truth == predicted).mean())


def test_human_ceiling_side_equals_a_naive_leave_one_out_loop():
    humans, good, _ = _scores(30, seed=11)
    humans[0, 5] = np.nan  # an annotator who skipped a unit
    options = CalibrationOptions(ALIGNMMBENCH, bootstrap=40, seed=4)
    frame = _frame(humans, {"good": good})
    result = compare_judges(frame, options, "good", HUMAN)
    common = ~np.isnan(good)
    h, j = humans[:, common], good[common]

    def loo_mae(index):
        human_side, judge_side = [], []
        for r in range(3):
            own = h[r, index]
            others = np.nanmean(np.delete(h, r, axis=0)[:, index], axis=0)
            mask = ~np.isnan(own) & ~np.isnan(others)
            human_side.append(np.abs(own[mask] - others[mask]).mean())
            judge_side.append(np.abs(j[index][mask] - others[mask]).mean())
        return np.mean(judge_side) - np.mean(human_side)

    naive = [loo_mae(i) for chunk in unit_resample_indices(j.size, 40, seed=4) for i in chunk]
    entry = result.metric("mae")
    assert entry.delta == pytest.approx(loo_mae(np.arange(j.size)))
    assert entry.ci == pytest.approx(_naive_interval(naive), abs=1e-10)
    assert result.reference == "leave_one_out"
    # the point estimate is the calibration report's degradation (judge − leave-one-out human)
    calibrated = calibrate(frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=0)).result
    for name in ("mae", "pearson", "qwk", "alpha_ordinal"):
        assert result.metric(name).delta == pytest.approx(
            calibrated.judges["good"].loo.degradation[name]
        ), name
    swapped = compare_judges(frame, options, HUMAN, "good").metric("mae")
    assert swapped.delta == pytest.approx(-entry.delta)
    assert swapped.p_a_better == pytest.approx(1 - entry.p_a_better - entry.p_equal)


def test_hand_worked_one_unit_apart():
    # Five pairs; judges a and b agree on four of them (two right, two wrong), and on the fifth
    # a is right and b is wrong. In a resample that draws that unit c times, Δ accuracy = c / 5:
    # never negative, so the paired interval's lower end is exactly 0 (an unpaired bootstrap
    # would put it below 0), and a is better in the resamples that draw it at least once:
    # P(c ≥ 1) = 1 − (4/5)^5 = 0.67232; the point estimate is Δ = 1/5.
    humans = np.array([[0, 1, 0, 1, 0]] * 3, dtype=float)
    a = np.array([0, 1, 1, 0, 0], dtype=float)
    b = np.array([0, 1, 1, 0, 1], dtype=float)
    frame = _frame(humans, {"a": a, "b": b}, ("A", "B", "tie"))
    result = compare_judges(frame, CalibrationOptions(PAIRWISE, bootstrap=20_000, seed=0), "a", "b")
    entry = result.metric("acc_with_tie")
    assert (entry.a, entry.b, entry.delta) == pytest.approx((3 / 5, 2 / 5, 1 / 5))
    assert entry.ci[0] == 0.0
    assert entry.p_a_better == pytest.approx(1 - 0.8**5, abs=0.01)
    assert entry.p_equal == pytest.approx(0.8**5, abs=0.01)


def test_bootstrap_zero_gives_the_point_estimate_only():
    humans, good, poor = _scores(20, seed=1)
    options = CalibrationOptions(ALIGNMMBENCH, bootstrap=0)
    entry = compare_judges(_frame(humans, {"g": good, "p": poor}), options, "g", "p").metric("mae")
    assert entry.ci is None and entry.p_a_better is None and entry.n_resamples == 0
    assert entry.delta is not None


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ("g", "g", "cannot compare 'g' with itself"),
        ("g", "nobody", "judge 'nobody' has no judgements here; present: g, p, human"),
    ],
)
def test_bad_sides_are_named(a, b, message):
    humans, good, poor = _scores(10, seed=1)
    frame = _frame(humans, {"g": good, "p": poor})
    with pytest.raises(CalibrationInputError, match=message):
        compare_judges(frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=0), a, b)


def test_no_common_units_and_a_single_annotator_are_refused():
    humans = np.array([[5.0, 6.0, 7.0]])
    frame = _frame(humans, {"g": np.array([5.0, np.nan, np.nan]), "p": np.array([np.nan, 6, 7])})
    options = CalibrationOptions(ALIGNMMBENCH, bootstrap=0)
    with pytest.raises(CalibrationInputError, match="no unit was judged by both g and p"):
        compare_judges(frame, options, "g", "p")
    with pytest.raises(CalibrationInputError, match="needs at least 2 annotators; there are 1"):
        compare_judges(frame, options, "g", HUMAN)
