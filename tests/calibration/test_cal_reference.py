"""Reference consensus, grouped aggregation, leave-one-out ceiling, leaderboards, maps."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibration import (
    CalibrationInputError,
    CalibrationOptions,
    Scale,
    aggregate,
    alignment_scores,
    calibrate,
    calibration_maps,
    ceiling_table,
    consensus,
    group_table,
    judge_table,
    model_scores,
    model_table,
    select_units,
    with_overrides,
)
from calibration.pairwise import PAIRWISE_METRICS
from calibration.pointwise import POINTWISE_METRICS
from calibration.tables import METRIC_NAMES, with_metric_names
from schemas.protocols import ALIGNMMBENCH, MMIE, PAIRWISE

nan = np.nan


def test_consensus_rules():
    scores = np.array([[1, 2, 5, nan], [3, 2, 5, nan], [8, nan, 6, nan]])
    np.testing.assert_allclose(consensus(scores, "mean"), [4, 2, 16 / 3, nan])
    np.testing.assert_allclose(consensus(scores, "median"), [3, 2, 5, nan])
    np.testing.assert_allclose(consensus(scores, "majority"), [nan, 2, 5, nan])  # 1/3/8: none
    labels = np.array([[0, 0, 1], [1, 0, 2], [2, 1, nan]])  # A B tie coded 0 1 2
    # units: A/B/tie (no majority → tie), A/A/B → A, B/tie (no majority of two → tie or drop)
    np.testing.assert_allclose(consensus(labels, "majority", pairwise=True), [2, 0, 2])
    np.testing.assert_allclose(
        consensus(labels, "majority", pairwise=True, no_majority="drop"), [nan, 0, nan]
    )
    both = consensus(np.array([[1.0], [2.0]]), "majority", pairwise=True)
    assert both[0] == 2.0
    dropped = consensus(np.array([[1.0], [2.0]]), "majority", pairwise=True, no_majority="drop")
    assert math.isnan(dropped[0])
    np.testing.assert_allclose(with_overrides(np.array([1.0, 2.0]), np.array([nan, 9.0])), [1, 9])


def test_pairwise_consensus_must_be_majority():
    frame = pd.DataFrame(
        {"unit": ["p:a|b"], "rater": ["annotator:x"], "kind": ["human"], "value": ["A"]}
    )
    with pytest.raises(CalibrationInputError, match="pairwise preferences use consensus majority"):
        calibrate(frame, CalibrationOptions(PAIRWISE, consensus="mean", bootstrap=0))


def test_aggregate_modes():
    r = np.array([0.2, 0.9, nan])
    assert aggregate(r, "pearson", "mean") == pytest.approx(0.55)
    assert aggregate(r, "pearson", "fisher") == pytest.approx(np.tanh(np.arctanh(r[:2]).mean()))
    assert aggregate(r, "pearson", "tanh-mean") == pytest.approx(np.tanh(0.55))
    assert aggregate(r, "mae", "fisher") == pytest.approx(0.55)  # not a correlation: plain mean
    assert math.isnan(aggregate(np.array([nan]), "pearson", "mean"))


def _frame(n_units: int = 90, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    tasks = ["OCR", "Chart", "Meme"]
    rows = []
    for u in range(n_units):
        quality = rng.integers(1, 11)
        meta = {
            "item_id": f"i{u // 3}",
            "task": tasks[u % 3],
            "model": f"m{u % 2}",
            "group": f"g{u // 6}",
            "category": "c",
        }
        for r in range(3):
            rows.append(
                {
                    "unit": f"r:{u}",
                    "rater": f"annotator:{r}",
                    "kind": "human",
                    "value": float(np.clip(quality + rng.integers(-1, 2), 1, 10)),
                    **meta,
                }
            )
        rows.append(
            {
                "unit": f"r:{u}",
                "rater": "judge",
                "kind": "model",
                "value": float(np.clip(quality + rng.integers(-2, 3), 1, 10)),
                **meta,
            }
        )
    return pd.DataFrame(rows)


def test_groups_and_single_unit_group():
    frame = _frame()
    frame.loc[frame["unit"] == "r:0", "task"] = "Lonely"  # a group of one unit
    result = calibrate(
        frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=0, by=("task",), aggregate="fisher")
    ).result
    by = result.judges["judge"].by["task"]
    assert by["Lonely"].n == 1 and by["Lonely"].values["pearson"] is None
    units = frame[frame["task"] == "Chart"].groupby("unit")
    human = units.apply(lambda g: g.loc[g.kind == "human", "value"].mean())
    judge = units.apply(lambda g: g.loc[g.kind == "model", "value"].mean())
    assert by["Chart"].values["kendall"] == pytest.approx(stats.kendalltau(judge, human).statistic)
    aggregate_block = result.judges["judge"].by_aggregate["task"]
    assert aggregate_block.groups_without_correlation == 1
    assert aggregate_block.n_groups == 4
    correlations = [by[t].values["pearson"] for t in ("Chart", "Meme", "OCR")]
    assert aggregate_block.values["pearson"] == pytest.approx(
        np.tanh(np.arctanh(correlations).mean())
    )


def test_leave_one_out_against_a_hand_computation():
    frame = _frame()
    result = calibrate(frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=0)).result
    loo = result.judges["judge"].loo
    wide = frame.pivot_table(index="unit", columns="rater", values="value")
    maes_h, maes_j = [], []
    for r in range(3):
        others = wide[[f"annotator:{k}" for k in range(3) if k != r]].mean(axis=1)
        maes_h.append((wide[f"annotator:{r}"] - others).abs().mean())
        maes_j.append((wide["judge"] - others).abs().mean())
    assert loo.human["mae"] == pytest.approx(np.mean(maes_h))
    assert loo.judge["mae"] == pytest.approx(np.mean(maes_j))
    assert loo.degradation["mae"] == pytest.approx(np.mean(maes_j) - np.mean(maes_h))
    assert loo.by_annotator["annotator:1"].n == 90


def test_judges_with_the_same_scores_get_the_same_results_and_others_their_own():
    """A copy of the judge under another name, and a judge one point harsher on some units:
    the copy's leave-one-out and leaderboards equal the judge's, the harsher judge's leave-one-
    out is its own hand computation (each distinct score vector is computed once)."""
    frame = _frame()
    judge = frame[frame["rater"] == "judge"]
    harsher = judge.assign(
        rater="harsher", value=(judge["value"] - np.arange(len(judge)) % 2).clip(lower=1)
    )
    frame = pd.concat([frame, judge.assign(rater="copy"), harsher], ignore_index=True)
    result = calibrate(frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=0)).result
    original, copy = result.judges["judge"], result.judges["copy"]
    assert copy.loo == original.loo and copy.ranking_kendall == original.ranking_kendall
    for entry in result.models.values():
        assert entry["judge:copy"] == entry["judge:judge"]
    wide = frame.pivot_table(index="unit", columns="rater", values="value")
    maes = []
    for r in range(3):
        others = wide[[f"annotator:{k}" for k in range(3) if k != r]].mean(axis=1)
        maes.append((wide["harsher"] - others).abs().mean())
    assert result.judges["harsher"].loo.judge["mae"] == pytest.approx(np.mean(maes))
    assert result.judges["harsher"].loo.judge["mae"] != original.loo.judge["mae"]


def test_leaderboards_alignmmbench_and_mmie():
    units = pd.DataFrame(
        {
            "model": ["a", "a", "a", "b"],
            "task": ["OCR", "OCR", "Chart", "OCR"],
            "category": ["c", "c", "d", "c"],
        }
    )
    scores = np.array([2.0, 4.0, 9.0, 5.0])
    board = model_scores(units, scores, "alignmmbench", Scale(1, 10, 1))
    assert board["a"]["avg"] == pytest.approx((3 + 9) / 2)  # mean of task means, not of units
    assert board["a"]["by_task"] == {"Chart": 9.0, "OCR": 3.0}
    mmie = model_scores(units, np.array([3.0, 6.0, 0.0, 6.0]), "mmie", Scale.of(MMIE))
    assert mmie["a"]["avg"] == pytest.approx(3 / 6 * 100)
    assert mmie["a"]["by_category"] == {"c": pytest.approx(75.0), "d": 0.0}


def test_alignment_score_hand_worked():
    # model a: group g1 variants score 2 and 4 (population variance 1), g2: 5, 5, 8 (var 2);
    # a group with a single variant is left out → 1 / mean(1, 2)
    units = pd.DataFrame(
        {
            "model": ["a"] * 6,
            "group": ["g1", "g1", "g2", "g2", "g2", "g3"],
            "item_id": ["x1", "x2", "y1", "y2", "y3", "z"],
        }
    )
    scores = np.array([2.0, 4.0, 5.0, 5.0, 8.0, 1.0])
    assert alignment_scores(units, scores) == {"a": pytest.approx(1 / 1.5)}


def test_calibration_maps_fit_on_one_split_report_on_the_other():
    rng = np.random.default_rng(1)
    human = rng.uniform(1, 10, 600)
    judge = np.clip(human / 2 + 1 + rng.normal(0, 0.3, 600), 1, 10)  # compressed, shifted
    items = np.array([f"i{k // 2}" for k in range(600)])
    result = calibration_maps(judge, human, items, Scale(1, 10, 1), seed=3)
    assert result["split"]["calibration_units"] + result["split"]["held_out_units"] == 600
    assert result["linear"]["mae"] < result["raw"]["mae"] / 3
    assert result["isotonic"]["mae"] < result["raw"]["mae"] / 3
    assert result["linear_fit"]["slope"] == pytest.approx(2.0, rel=0.1)


def test_select_units_keeps_every_rater_of_a_unit():
    frame = _frame(12)
    frame.loc[frame["kind"] == "model", "task"] = None  # judge rows without metadata
    chosen = select_units(frame, "task", ["OCR"])
    assert set(chosen["unit"]) == {f"r:{u}" for u in range(0, 12, 3)}
    assert (chosen["kind"] == "model").sum() == 4


def test_display_tables():
    summary = calibrate(
        _frame(), CalibrationOptions(ALIGNMMBENCH, bootstrap=20, by=("task",))
    ).result
    table = judge_table(summary)
    assert table.loc["judge", "n"] == "90" and "[" in table.loc["judge", "mae"]
    assert list(ceiling_table(summary, "judge").columns) == [
        "human LOO",
        "judge LOO",
        "degradation",
    ]
    assert "aggregate (mean)" in group_table(summary, "judge", "task").index
    assert set(model_table(summary).index) == {"m0", "m1"}


def test_every_metric_has_a_header_in_words():
    """The Calibration page shows words, not keys such as strict_acc (issue 25 B)."""
    keys = ("n", "coverage", *POINTWISE_METRICS, *PAIRWISE_METRICS)
    assert [key for key in keys if key not in METRIC_NAMES] == []
    assert len(set(METRIC_NAMES.values())) == len(METRIC_NAMES)  # no two metrics share a name
    assert all("_" not in name for name in METRIC_NAMES.values())
    summary = calibrate(_frame(), CalibrationOptions(ALIGNMMBENCH, bootstrap=0)).result
    shown = with_metric_names(judge_table(summary))
    assert shown.loc["judge", "Exact agreement"] == judge_table(summary).loc["judge", "strict_acc"]
    assert [c for c in shown.columns if "_" in c] == []
    ceiling = with_metric_names(ceiling_table(summary, "judge"), axis="index")
    assert "Quadratic κ" in ceiling.index and "qwk" not in ceiling.index
