"""What the calibration page and the report show first: one number per judge beside the humans.

* :func:`headline_rows`: each judge's headline metric (Pearson r for scores, accuracy with ties
  for preferences) with its 95% bootstrap interval, beside the human ceiling — the same metric
  for one annotator against the consensus of the others, on the units the judge scored
  (METRICS.md "Agreement among humans — the ceiling");
* :func:`group_rows`: the headline metric per group (task...), per judge;
* :func:`agreement_cells`: the judge-vs-reference confusion counts as numeric points, for a
  scatter whose dot size is the number of units (a scale point, or a bin's middle on a
  continuous scale).

Pure functions of the :class:`~calibration.result.CalibrationResult` and
:class:`~calibration.details.JudgeDetails`; every
result is small (judges, groups, scale points²), whatever the size of the campaign.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from calibration.result import CalibrationResult

HEADLINE_METRICS: dict[str, str] = {"pointwise": "pearson", "pairwise": "acc_with_tie"}
"""The metric put first, by protocol kind: scale-free for scores, tie-aware for preferences."""
METRIC_TITLES: dict[str, str] = {
    "pearson": "Pearson r with the reference",
    "acc_with_tie": "Accuracy with ties (agreement with the reference)",
}


@dataclass(frozen=True)
class HeadlineRow:
    """One judge's headline metric against the reference, and the human ceiling beside it."""

    judge: str
    metric: str
    value: float
    """NaN when undefined (e.g. a constant judge)"""
    low: float | None
    """95% bootstrap interval; None when intervals were not computed"""
    high: float | None
    human_ceiling: float | None
    """mean over annotators of the metric for one annotator against the others' consensus, on
    the judge's units; None when there are fewer than two annotators"""
    n: int
    """units scored"""


@dataclass(frozen=True)
class GroupRow:
    """The headline metric of one judge in one group."""

    judge: str
    group: str
    value: float
    n: int


@dataclass(frozen=True)
class AgreementCell:
    """``count`` units where the reference is ``reference`` and the judge said ``judge``."""

    reference: float
    judge: float
    count: int


def headline_metric(result: CalibrationResult) -> str:
    """The headline metric's key for the result's protocol."""
    return HEADLINE_METRICS["pairwise" if result.pairwise else "pointwise"]


def headline_rows(result: CalibrationResult) -> list[HeadlineRow]:
    """One row per judge, in the result's order."""
    metric = headline_metric(result)
    overall = result.human.ceiling
    rows = []
    for name, judge in result.judges.items():
        value = judge.metric(metric) if metric in judge.values else None
        ceiling = (judge.loo.human or overall).get(metric)
        rows.append(
            HeadlineRow(
                judge=name,
                metric=metric,
                value=_number(value.value if value else None),
                low=value.low if value else None,
                high=value.high if value else None,
                human_ceiling=None if ceiling is None or math.isnan(ceiling) else float(ceiling),
                n=judge.n,
            )
        )
    return rows


def group_rows(result: CalibrationResult, field: str) -> list[GroupRow]:
    """Per judge and group of ``field`` (as computed with ``by``), groups in name order."""
    metric = headline_metric(result)
    rows = []
    for name, judge in result.judges.items():
        groups = (judge.by or {}).get(field, {})
        for group in sorted(groups, key=str):
            values = groups[group]
            rows.append(GroupRow(name, str(group), _number(values.values.get(metric)), values.n))
    return rows


def agreement_cells(confusion: pd.DataFrame) -> list[AgreementCell] | None:
    """Non-zero cells of a pointwise confusion table as numbers; None for preferences.

    Labels are scale points (``7``) or bins (``0.2–0.3``, read as their middle).
    """
    try:
        rows = [_label_value(label) for label in confusion.index]
        columns = [_label_value(label) for label in confusion.columns]
    except ValueError:
        return None  # A / B / tie
    counts = confusion.to_numpy()
    return [
        AgreementCell(rows[i], columns[j], int(counts[i, j]))
        for i in range(len(rows))
        for j in range(len(columns))
        if counts[i, j]
    ]


def _label_value(label: object) -> float:
    text = str(label)
    if "–" in text:
        low, high = text.split("–")
        return (float(low) + float(high)) / 2
    return float(text)


def _number(value: float | None) -> float:
    return float("nan") if value is None else float(value)
