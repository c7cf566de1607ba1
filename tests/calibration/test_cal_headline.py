"""The headline numbers (calibration/headline.py) against an independent computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr

from calibration import CalibrationOptions, calibrate
from calibration.headline import agreement_cells, group_rows, headline_rows
from schemas.protocols import ALIGNMMBENCH


def _frame(seed: int = 3) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """40 units × 3 annotators (every unit rated by all) and one judge; tasks T0 / T1."""
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 11, size=40)
    humans = np.clip(quality[None, :] + rng.integers(-1, 2, size=(3, 40)), 1, 10)
    judge = np.clip(quality + rng.integers(-3, 4, size=40), 1, 10)
    rows = []
    for u in range(40):
        meta = {"unit": f"r:{u}", "item_id": f"i{u}", "task": f"T{u % 2}", "model": "m"}
        for r in range(3):
            rows.append({**meta, "rater": f"annotator:a{r}", "kind": "human",
                         "value": float(humans[r, u]), "rationale": ""})  # fmt: skip
        rows.append({**meta, "rater": "gpt", "kind": "model", "value": float(judge[u]),
                     "rationale": ""})  # fmt: skip
    return pd.DataFrame(rows), humans.astype(float), judge.astype(float)


def test_headline_is_pearson_with_its_interval_beside_the_leave_one_out_ceiling():
    frame, humans, judge = _frame()
    report = calibrate(frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=200, by=("task",)))
    [row] = headline_rows(report.result)
    reference = humans.mean(axis=0)  # the default consensus of scores: the mean
    assert (row.judge, row.metric, row.n) == ("gpt", "pearson", 40)
    assert row.value == pytest.approx(pearsonr(judge, reference).statistic)
    assert row.low is not None and row.high is not None and row.low < row.value < row.high
    # ceiling: each annotator against the mean of the other two, averaged over annotators
    ceiling = np.mean(
        [pearsonr(humans[r], np.delete(humans, r, axis=0).mean(axis=0)).statistic for r in range(3)]
    )
    assert row.human_ceiling == pytest.approx(ceiling)
    by_task = {r.group: r.value for r in group_rows(report.result, "task")}
    even = np.arange(40) % 2 == 0
    assert by_task["T0"] == pytest.approx(pearsonr(judge[even], reference[even]).statistic)
    assert by_task["T1"] == pytest.approx(pearsonr(judge[~even], reference[~even]).statistic)


def test_agreement_cells_are_the_confusion_counts_as_numbers():
    frame, humans, judge = _frame()
    report = calibrate(frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=0))
    cells = agreement_cells(report.details["gpt"].confusion)
    reference = np.floor(humans.mean(axis=0) + 0.5)  # scale points, rounded half up
    expected = pd.crosstab(reference, judge)
    assert {(c.reference, c.judge): c.count for c in cells} == {
        (float(r), float(j)): int(expected.loc[r, j])
        for r in expected.index
        for j in expected.columns
        if expected.loc[r, j]
    }
    labels = pd.DataFrame([[1, 0], [2, 3]], index=["A", "B"], columns=["A", "B"])
    assert agreement_cells(labels) is None  # preferences have no numeric axes
