"""Metrics per group (``--by FIELD``) and one number over the groups (``--aggregate MODE``).

Each group is a row of unit weights (1 for the group's units, 0 elsewhere), so a kernel evaluates
every group in one call. Aggregation modes (METRICS.md, "Grouped correlations"):

* ``mean``: plain mean over the groups where the metric is defined;
* ``fisher``: tanh of the mean of arctanh(r) (Fisher 1915), for correlations;
* ``tanh-mean``: tanh of the plain mean of r, what VIEScore's notebook computes.

Non-correlation metrics are averaged plainly in every mode.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from calibration.errors import CalibrationInputError
from calibration.pointwise import CORRELATION_METRICS
from schemas.option_text import OptionText

AggregateMode = Literal["mean", "fisher", "tanh-mean"]
AGGREGATE_MODES: tuple[str, ...] = get_args(AggregateMode)
_FISHER_CLIP = 1 - 1e-12


def check_aggregate(mode: str) -> None:
    if mode not in AGGREGATE_MODES:
        raise CalibrationInputError(
            OptionText(
                "{aggregate} {mode!r} is not one of {modes}",
                mode=mode,
                modes=", ".join(AGGREGATE_MODES),
            )
        )


def group_weights(labels: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Group names (sorted) and a groups × units indicator matrix; units without a label: none."""
    labels = np.asarray(labels, dtype=object)
    present = np.array([label is not None and label == label for label in labels])
    names = sorted({str(label) for label in labels[present]})
    text = np.array(
        [str(label) if keep else "" for label, keep in zip(labels, present, strict=True)]
    )
    weights = (
        np.vstack([(text == name) & present for name in names])
        if names
        else np.zeros((0, labels.size))
    )
    return names, weights.astype(np.float64)


def aggregate(values: np.ndarray, metric: str, mode: AggregateMode) -> float:
    """One number over the groups' values of ``metric`` (NaN groups left out; NaN if none)."""
    check_aggregate(mode)
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return float("nan")
    if metric not in CORRELATION_METRICS or mode == "mean":
        return float(finite.mean())
    if mode == "fisher":
        return float(np.tanh(np.arctanh(np.clip(finite, -_FISHER_CLIP, _FISHER_CLIP)).mean()))
    return float(np.tanh(finite.mean()))


def aggregate_groups(
    per_group: dict[str, np.ndarray], mode: AggregateMode
) -> dict[str, float | int | str]:
    """Aggregate every metric; count the groups that gave no correlation."""
    result: dict[str, float | int | str] = {"mode": mode}
    skipped = 0
    for metric, values in per_group.items():
        if metric == "n":
            result["n_groups"] = int(len(values))
            continue
        result[metric] = aggregate(values, metric, mode)
        if metric in CORRELATION_METRICS:
            skipped = max(skipped, int((~np.isfinite(values)).sum()))
    result["groups_without_correlation"] = skipped
    return result
