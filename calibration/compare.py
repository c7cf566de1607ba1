"""Is judge A better than judge B? Paired differences with a bootstrap over units (METRICS.md).

For every headline metric, Δ = metric(A) − metric(B) on the units both judged. Its interval comes
from a **paired** bootstrap: each resample draws the common units once, and both judges are
evaluated on that same draw, so what the two judges share (hard units, easy units) cancels in Δ
instead of widening its interval. ``p_a_better`` is the share of resamples in which A is better,
in the metric's own direction (lower MAE is better; a bias closer to 0 is better).

The human ceiling can be one side (:data:`HUMAN`): it is the leave-one-out human of
:mod:`calibration.ceiling` (each annotator against the consensus of the others, averaged over
annotators), and the judge on the other side is then scored against those same leave-one-out
consensuses, so Δ is the judge's ``degradation`` of the calibration report, with an interval.

Resamples are vectorised like :mod:`calibration.bootstrap`: a chunk of resamples is a matrix of
draw counts over the common units, and each side's kernel evaluates the whole chunk at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from calibration.bootstrap import CI_LEVEL, percentile_interval, unit_resample_counts
from calibration.ceiling import LOO_PAIRWISE_METRICS, others_consensus
from calibration.errors import CalibrationInputError
from calibration.options import CalibrationOptions
from calibration.pairwise import LABELS, PAIRWISE_METRICS, PairwiseKernel
from calibration.pointwise import PointwiseKernel, metrics_for
from calibration.scale import Scale
from calibration.units import UnitData, prepare_units

HUMAN = "human"
"""The side name that stands for the leave-one-out human (\"one more human rater\")."""

Direction = Literal["higher", "lower", "closer_to_zero", "none"]

METRIC_DIRECTION: dict[str, Direction] = {
    "mae": "lower",
    "mse": "lower",
    "rmse": "lower",
    "percent_mae": "lower",
    "bias": "closer_to_zero",
    "smd": "closer_to_zero",
    "prefer_first": "none",  # which share is right depends on how many ties the truth has
    "tie_rate": "none",
}
"""Which way is better for a metric; every metric not named here is better when higher."""

_EQUAL = 1e-12  # |Δ| below this counts as a tie of the two judges in a resample


class MetricComparison(BaseModel):
    """One metric of A against B on the units both judged."""

    model_config = ConfigDict(frozen=True)

    metric: str
    better: Direction
    """Direction in which the metric is better; ``none``: no direction, no ``p_a_better``."""
    a: float | None
    """The metric of A on the common units (null where undefined)."""
    b: float | None
    """The metric of B on the same units."""
    delta: float | None
    """a − b."""
    ci: tuple[float | None, float | None] | None
    """Percentile interval of Δ over the paired resamples; null without bootstrap."""
    p_a_better: float | None
    """Share of resamples (Δ defined) in which A is strictly better; null without a direction."""
    p_equal: float | None
    """Share of resamples (Δ defined) in which both judges have the same value."""
    n_resamples: int
    """Resamples in which Δ was defined (both metrics defined)."""


class JudgeComparison(BaseModel):
    """Judge A against judge B: a paired bootstrap over the units both judged."""

    model_config = ConfigDict(frozen=True)

    a: str
    b: str
    protocol: str
    reference: Literal["reference", "leave_one_out"]
    """``reference``: both against the calibration reference; ``leave_one_out``: one side is
    the human ceiling, and both are scored against the consensus of the other annotators."""
    n_units: int
    """Units in the comparison (both judged, and a reference exists)."""
    bootstrap: int
    seed: int
    ci_level: float = CI_LEVEL
    metrics: list[MetricComparison] = Field(default_factory=list)

    def metric(self, name: str) -> MetricComparison:
        """The comparison of one metric, by name."""
        for entry in self.metrics:
            if entry.metric == name:
                return entry
        raise KeyError(name)


_Evaluate = Callable[[np.ndarray], dict[str, np.ndarray]]


def compare_judges(
    frame: pd.DataFrame,
    options: CalibrationOptions,
    a: str,
    b: str,
    *,
    overrides: dict[str, object] | None = None,
    progress: Callable[[int], None] | None = None,
) -> JudgeComparison:
    """Compare judge ``a`` with judge ``b`` (either may be :data:`HUMAN`) on a judgement frame.

    ``options`` gives the protocol, reference rule, unparsed rule, bootstrap size and seed, as for
    :func:`calibration.calibrate`; ``overrides`` are adjudicated references per unit key.
    """
    options.validate()
    if a == b:
        raise CalibrationInputError(f"cannot compare {a!r} with itself; name two judges")
    data = prepare_units(
        frame,
        options.protocol,
        rule=options.reference_rule,
        no_majority=options.no_majority,
        overrides=overrides,
        exclude=options.exclude_annotators,
    )
    for name in (a, b):
        _check_side(data, name)
    scale = Scale.of(options.protocol) if options.protocol.is_pointwise else None
    if HUMAN in (a, b):
        judge = b if a == HUMAN else a
        n_units, human_side, judge_side, names = _ceiling_sides(data, judge, scale, options)
        side_a, side_b = (human_side, judge_side) if a == HUMAN else (judge_side, human_side)
        reference: Literal["reference", "leave_one_out"] = "leave_one_out"
    else:
        common = _judged(data, a, scale) & _judged(data, b, scale) & ~np.isnan(data.reference)
        n_units = int(common.sum())
        side_a = _judge_side(data, a, common, scale, options)
        side_b = _judge_side(data, b, common, scale, options)
        names = metrics_for(scale) if scale is not None else PAIRWISE_METRICS
        reference = "reference"
    if n_units == 0:
        raise CalibrationInputError(
            f"no unit was judged by both {a} and {b} and has a reference to compare them on"
        )
    point_a, point_b = side_a(np.ones((1, n_units))), side_b(np.ones((1, n_units)))
    deltas: dict[str, list[np.ndarray]] = {name: [] for name in names}
    wins: dict[str, list[np.ndarray]] = {name: [] for name in names}
    if options.bootstrap > 0:
        for weights in unit_resample_counts(n_units, options.bootstrap, options.seed):
            if progress is not None:
                progress(weights.shape[0])
            values_a, values_b = side_a(weights), side_b(weights)
            for name in names:
                deltas[name].append(values_a[name] - values_b[name])
                wins[name].append(_a_better(name, values_a[name], values_b[name]))
    metrics = [
        _metric(name, point_a[name][0], point_b[name][0], deltas[name], wins[name])
        for name in names
    ]
    return JudgeComparison(
        a=a,
        b=b,
        protocol=options.protocol.name,
        reference=reference,
        n_units=n_units,
        bootstrap=options.bootstrap,
        seed=options.seed,
        metrics=metrics,
    )


def _check_side(data: UnitData, name: str) -> None:
    models = sorted(data.frame.loc[data.frame["kind"] == "model", "rater"].unique())
    if name == HUMAN:
        if name in models:
            raise CalibrationInputError(
                f"a model judge is named {HUMAN!r}, which here stands for the human ceiling; "
                "rename that judge to compare it"
            )
        if len(data.raters) < 2:
            raise CalibrationInputError(
                f"the human ceiling needs at least 2 annotators; there are {len(data.raters)}"
            )
        return
    if name not in models:
        raise CalibrationInputError(
            f"judge {name!r} has no judgements here; present: "
            + ", ".join([*models, HUMAN] if len(data.raters) >= 2 else models)
        )


def _judged(data: UnitData, name: str, scale: Scale | None) -> np.ndarray:
    """Per unit: the judge gave a parsed score (pointwise) or any verdict (pairwise)."""
    if scale is not None:
        return ~np.isnan(data.judge_scores(name))
    judged = np.zeros(data.n_units, dtype=bool)
    judged[data.judge_rows(name)["unit_index"].to_numpy()] = True
    return judged


def _verdict_rows(data: UnitData, name: str, keep: np.ndarray):
    """The judge's verdicts on the units in ``keep``, indexed over those units."""
    rows = data.judge_rows(name)
    unit = rows["unit_index"].to_numpy()
    inside = keep[unit]
    position = np.cumsum(keep) - 1
    verdicts = np.array([v if v in LABELS else None for v in rows["value"]], dtype=object)
    return position[unit[inside]], verdicts[inside], rows["shown_order"].to_numpy()[inside]


def _labels(codes: np.ndarray) -> np.ndarray:
    return np.array([None if np.isnan(c) else LABELS[int(c)] for c in codes], dtype=object)


def _judge_side(
    data: UnitData,
    name: str,
    common: np.ndarray,
    scale: Scale | None,
    options: CalibrationOptions,
) -> _Evaluate:
    if scale is not None:
        kernel = PointwiseKernel(data.judge_scores(name)[common], data.reference[common], scale)
        return kernel.evaluate
    unit, verdict, shown = _verdict_rows(data, name, common)
    reference = _labels(data.reference[common])
    return PairwiseKernel(unit, verdict, shown, reference, options.unparsed).evaluate


def _ceiling_sides(
    data: UnitData, judge: str, scale: Scale | None, options: CalibrationOptions
) -> tuple[int, _Evaluate, _Evaluate, tuple[str, ...]]:
    """Leave-one-out human and the judge against the same leave-one-out consensuses.

    For annotator r the units are those where r labelled, the others reached a consensus and the
    judge answered (as :class:`calibration.ceiling.LeaveOneOut`); each side's value is the mean
    over annotators of the metric, annotators where it is undefined left out.
    """
    rule, no_majority, pairwise = options.loo_rule, options.no_majority, scale is None
    others = [
        others_consensus(data.humans, r, rule, no_majority, pairwise=pairwise)
        for r in range(len(data.raters))
    ]
    judged = _judged(data, judge, scale)
    masks = [~np.isnan(data.humans[r]) & ~np.isnan(others[r]) & judged for r in range(len(others))]
    common = np.logical_or.reduce(masks)
    n_units = int(common.sum())
    if scale is not None:
        scores = data.judge_scores(judge)[common]
    else:
        unit, verdict, shown = _verdict_rows(data, judge, common)
    human_kernels: list[PointwiseKernel | PairwiseKernel] = []
    judge_kernels: list[PointwiseKernel | PairwiseKernel] = []
    for r, mask in enumerate(masks):
        if not mask.any():
            continue
        inside = mask[common]
        reference = np.where(inside, others[r][common], np.nan)
        if scale is not None:
            own = np.where(inside, data.humans[r][common], np.nan)
            values = np.where(inside, scores, np.nan)
            human_kernels.append(PointwiseKernel(own, reference, scale))
            judge_kernels.append(PointwiseKernel(values, reference, scale))
            continue
        labels = _labels(reference)
        rows = np.flatnonzero(inside)
        own = _labels(data.humans[r][common][rows])
        human_kernels.append(PairwiseKernel(rows, own, np.full(rows.size, "AB"), labels))
        keep = inside[unit]
        judge_kernels.append(
            PairwiseKernel(unit[keep], verdict[keep], shown[keep], labels, options.unparsed)
        )
    names = metrics_for(scale) if scale is not None else LOO_PAIRWISE_METRICS
    return n_units, _mean_over(human_kernels, names), _mean_over(judge_kernels, names), names


def _mean_over(
    kernels: list[PointwiseKernel | PairwiseKernel], names: tuple[str, ...]
) -> _Evaluate:
    """Evaluate every annotator's kernel and average per resample, NaN values left out."""

    def evaluate(weights: np.ndarray) -> dict[str, np.ndarray]:
        values = [kernel.evaluate(weights) for kernel in kernels]
        result = {}
        for name in names:
            stacked = np.vstack([v[name] for v in values])
            finite = np.isfinite(stacked)
            with np.errstate(invalid="ignore", divide="ignore"):
                total = np.where(finite, stacked, 0.0).sum(axis=0)
                result[name] = np.where(finite.any(axis=0), total / finite.sum(axis=0), np.nan)
        return result

    return evaluate


def _a_better(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per resample: 1 where A is better, 0 where not, 0.5 where equal, NaN where undefined."""
    direction = METRIC_DIRECTION.get(name, "higher")
    if direction == "closer_to_zero":
        a, b = -np.abs(a), -np.abs(b)
    elif direction == "lower":
        a, b = -a, -b
    defined = np.isfinite(a) & np.isfinite(b)
    equal = np.abs(a - b) <= _EQUAL
    result = np.where(equal, 0.5, (a > b).astype(np.float64))
    return np.where(defined, result, np.nan)


def _metric(
    name: str, a: float, b: float, deltas: list[np.ndarray], wins: list[np.ndarray]
) -> MetricComparison:
    direction = METRIC_DIRECTION.get(name, "higher")
    ci: tuple[float | None, float | None] | None = None
    p_better = p_equal = None
    n_defined = 0
    if deltas:
        delta_samples = np.concatenate(deltas)
        low, high = percentile_interval(delta_samples)
        ci = (_finite(low), _finite(high))
        outcome = np.concatenate(wins)
        outcome = outcome[np.isfinite(outcome)]
        n_defined = int(outcome.size)
        if n_defined:
            p_equal = float((outcome == 0.5).mean())
            if direction != "none":
                p_better = float((outcome == 1.0).mean())
    return MetricComparison(
        metric=name,
        better=direction,
        a=_finite(a),
        b=_finite(b),
        delta=_finite(a - b),
        ci=ci,
        p_a_better=p_better,
        p_equal=p_equal,
        n_resamples=n_defined,
    )


def _finite(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None
