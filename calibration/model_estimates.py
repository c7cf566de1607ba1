"""Model scores as humans would give them, from a judge's scores on every unit and human labels
on some (METRICS.md, "Prediction-powered leaderboards").

For every judge and every evaluated model, each leaderboard value is given three ways
(:class:`ModelEstimate`): the judge-only value (all units the judge scored, labelled or not:
biased by the judge's errors), the humans-only value (the units with a human reference that the
judge also scored, with its interval) and the PPI++ value (:mod:`calibration.ppi`) with its
interval and the effective number of human labels it is worth. Both intervals are about the
humans' mean over the units the judge scored (finite-population corrected, Student's t:
:mod:`calibration.ppi`).

The leaderboards (:mod:`calibration.leaderboard`'s values):

* AlignMMBench: per task, and the average as the unweighted mean of the per-task estimates
  (:func:`~calibration.ppi.mean_of_estimates`);
* MMIE: mean points / scale maximum × 100 (percent), overall and per category (the units of
  the category);
* another scale: the mean of the unit scores;
* pairwise: each model's win rate over the pairs it is in, a pair's value being 1 when the
  preference is for the model, 0.5 for a tie and 0 otherwise (the human reference's for ``Y``,
  the judge's mean verdict over its shown orders for ``f``).

**One λ per judge.** The power-tuning λ is estimated once per judge, from all its labelled
units with each leaderboard value's units centred on their own means (:func:`judge_tuning`), and
each value's interval then takes it as fixed (Student's t with n − 1 degrees of freedom over that
value's own labels). With a model's own labels only, a handful per model, λ fitted those few
labels: taken as fixed, the interval was too narrow (HANNA, 5 labels per system: coverage 0.914);
counted as a regression estimate (n − 2), 30% wider than humans-only (docs/MODEL_SCORES.md). The
judge's relation to the humans is one property of the judge, which the whole sample estimates.

The interval is valid only when the labelled units are a random sample of the units scored
(PROTOCOLS.md, "Which labelled units count"): a campaign routed by its judges gives a reason
instead (:data:`JUDGE_ROUTED`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from calibration.pairwise import LABELS
from calibration.ppi import (
    MIN_LABELLED,
    MeanEstimate,
    PredictionPoweredMean,
    effective_labels,
    humans_only_mean,
    mean_of_estimates,
    power_tuning,
    prediction_powered_mean,
)
from calibration.scale import Scale

JUDGE_ROUTED: tuple[str, ...] = ("judge-uncertainty", "judge-disagreement")
"""Routing modes that choose the labelled units by the judges' readings: no random sample."""

AVERAGE = "average"
"""The leaderboard of a model's overall value (AlignMMBench's mean of task means, MMIE's
percent, a scale's mean)."""
WIN_RATE = "win rate"
"""Pairwise: the model's win rate over the pairs it is in (tie = 0.5)."""

_SAMPLES = {
    "": "the units with a human reference, taken as a random sample of the units the judge scored",
    "least-annotated": "the units with a human reference; least-annotated routing serves ties in "
    "a seeded random order, so a campaign stopped part-way has labelled a random sample (one "
    "created before that rule serves them in import order until its routing is set to "
    "least-annotated again)",
    "stratified": "the estimation sample (the random share); the routed units count as unlabelled",
}
"""What :attr:`ModelEstimates.sample` says per routing (``""``: not recorded, as for files)."""

_PREFERENCE_VALUE = {"A": 1.0, "tie": 0.5, "B": 0.0}
"""A canonical preference as model A's win (1), tie (0.5) or loss (0)."""


@dataclass(frozen=True)
class ModelEstimate:
    """One model's value on one leaderboard by one judge, three ways."""

    judge: str
    model: str
    leaderboard: str
    """:data:`AVERAGE`, :data:`WIN_RATE`, ``task:NAME`` (AlignMMBench per task) or
    ``category:NAME`` (MMIE per category, beside its overall percent)."""
    judge_only: float | None
    """The judge's value on every unit it scored, labelled or not: biased by its errors."""
    humans_only: MeanEstimate | None
    """The human reference's value on the labelled units, with its interval."""
    prediction_powered: MeanEstimate | None
    """PPI++ with power tuning: unbiased, with its interval; None with a :attr:`reason`."""
    effective_labels: float | None
    """How many human labels the humans-only value would need to be as precise as PPI++."""
    n_labelled: int
    n_unlabelled: int
    tuning: float | None = None
    """The power-tuning λ: the judge's one λ, from all its labelled units, within each value
    (:func:`judge_tuning`; None for an average of task estimates or no estimate)."""
    reason: str | None = None
    """Why there is no prediction-powered estimate (None when there is one)."""


@dataclass(frozen=True)
class ModelEstimates:
    """Every judge's model estimates of one calibration, and the sample they rest on."""

    sample: str
    """Which units are the labelled random sample (PROTOCOLS.md)."""
    estimates: tuple[ModelEstimate, ...]
    """By judge, model, then leaderboard (average first)."""
    confidence: float = 0.95


def model_estimates(
    meta: pd.DataFrame,
    reference: np.ndarray,
    judges: dict[str, np.ndarray],
    *,
    protocol: str,
    scale: Scale | None,
    routing: str | None = None,
    confidence: float = 0.95,
) -> ModelEstimates:
    """The estimates of every judge in ``judges`` (name → its value per unit, NaN where it gave
    none; pairwise: the code of its mean preference, see :func:`pairwise_judge_values`).

    ``meta``: one row per unit with ``model``, ``task`` (pointwise) or ``model_a``/``model_b``
    (pairwise); ``reference``: the humans' reference per unit (pointwise score or the index of
    the preference in :data:`~calibration.pairwise.LABELS`), NaN where none; ``routing``: how a
    campaign chose the units humans labelled (None: not recorded, taken as random).
    """
    blocked = (
        f"routing {routing} chose the labelled units by the judges' readings, not at random: "
        "no valid interval (stratified routing keeps a random share; PROTOCOLS.md)"
        if routing in JUDGE_ROUTED
        else None
    )
    sample = "none: " + blocked if blocked else _SAMPLES.get(routing or "", _SAMPLES[""])
    estimates: list[ModelEstimate] = []
    for judge, values in judges.items():
        if scale is None:
            estimates.extend(_pairwise(judge, meta, reference, values, blocked, confidence))
        else:
            estimates.extend(
                _pointwise(judge, meta, reference, values, protocol, scale, blocked, confidence)
            )
    return ModelEstimates(sample, tuple(estimates), confidence)


def judge_tuning(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> float | None:
    """The judge's power-tuning λ (:func:`calibration.ppi.power_tuning`) from how its values
    vary with the humans' *within* the leaderboard values it estimates.

    Each part is one value's units (a model's, or a model's on one task): the human value per unit
    (NaN: unlabelled) and the judge's (NaN: not scored), on one scale. Each part is centred on its
    own means (its labelled units' human and judge means, its unlabelled units' judge mean), and the
    centred parts are pooled. A value's PPI++ variance depends only on how the judge's errors vary
    among that value's units; pooled uncentred, the differences between the models' means, which a
    judge can rank well while it reads single units poorly, made λ too large for the spread within
    the models (HANNA, 5 labels per system: intervals up to 5.5% wider than humans-only;
    docs/MODEL_SCORES.md). A part with fewer than two labelled units adds nothing. None below
    three labelled units in all, or with no unlabelled one: each value then estimates its own
    (:func:`calibration.ppi.prediction_powered_mean`)."""
    labels, judge_labelled, judge_unlabelled = [], [], []
    for reference, values in parts:
        y = np.asarray(reference, dtype=np.float64)
        f = np.asarray(values, dtype=np.float64)
        scored = ~np.isnan(f)
        labelled, unlabelled = scored & ~np.isnan(y), scored & np.isnan(y)
        if labelled.sum() < 2:
            continue
        labels.append(y[labelled] - y[labelled].mean())
        judge_labelled.append(f[labelled] - f[labelled].mean())
        if unlabelled.any():
            judge_unlabelled.append(f[unlabelled] - f[unlabelled].mean())
    if sum(part.size for part in labels) < 3 or not judge_unlabelled:
        return None
    return power_tuning(
        np.concatenate(labels), np.concatenate(judge_labelled), np.concatenate(judge_unlabelled)
    )


def pairwise_judge_values(unit_index: np.ndarray, verdicts: np.ndarray, n_units: int) -> np.ndarray:
    """Model A's mean result per unit from a judge's parsed verdicts (A = 1, tie = 0.5, B = 0,
    canonical order; both shown orders averaged), NaN where it gave none."""
    frame = pd.DataFrame({"unit": unit_index, "verdict": verdicts})
    frame["value"] = frame["verdict"].map(_PREFERENCE_VALUE)
    means = frame.dropna(subset=["value"]).groupby("unit")["value"].mean()
    result = np.full(n_units, np.nan)
    result[means.index.to_numpy(dtype=np.int64)] = means.to_numpy(dtype=np.float64)
    return result


def _pointwise(
    judge: str,
    meta: pd.DataFrame,
    reference: np.ndarray,
    values: np.ndarray,
    protocol: str,
    scale: Scale,
    blocked: str | None,
    confidence: float,
) -> list[ModelEstimate]:
    factor = 100.0 / scale.high if scale.percent else 1.0
    models = meta["model"].to_numpy(dtype=object)
    tasks = meta["task"].to_numpy(dtype=object)
    categories = (
        meta["category"].map(lambda c: None if c is None or c != c else str(c)).to_numpy(object)
        if "category" in meta.columns
        else np.full(len(meta), None, dtype=object)
    )
    y = np.asarray(reference, dtype=np.float64) * factor
    f = np.asarray(values, dtype=np.float64) * factor
    by_model = {
        model: np.array([m is not None and str(m) == model for m in models])
        for model in sorted({str(m) for m in models if m is not None})
    }
    by_task = {
        model: {
            task: mine & np.array([t is not None and str(t) == task for t in tasks])
            for task in sorted({str(t) for t in tasks[mine] if t is not None})
        }
        for model, mine in by_model.items()
        if protocol == "alignmmbench"
    }
    values_estimated = [  # λ's parts: AlignMMBench's values are per task, the others per model
        mask
        for model, mine in by_model.items()
        for mask in (by_task[model].values() if by_task.get(model) else [mine])
    ]
    tuning = judge_tuning([(y[mask], f[mask]) for mask in values_estimated])
    result: list[ModelEstimate] = []
    for model, mine in by_model.items():
        if by_task.get(model):
            per_task = [
                _estimate(judge, model, f"task:{task}", mask, y, f, blocked, confidence, tuning)
                for task, mask in by_task[model].items()
            ]
            result.append(_average(judge, model, per_task, confidence))
            result.extend(per_task)
        else:
            result.append(_estimate(judge, model, AVERAGE, mine, y, f, blocked, confidence, tuning))
            if protocol == "mmie":  # MMIE's leaderboard is per category and overall
                result.extend(
                    _estimate(judge, model, f"category:{name}", mine & (categories == name), y,
                              f, blocked, confidence, tuning)
                    for name in sorted({str(c) for c in categories[mine] if c is not None})
                )  # fmt: skip
    return result


def _pairwise(
    judge: str,
    meta: pd.DataFrame,
    reference: np.ndarray,
    values: np.ndarray,
    blocked: str | None,
    confidence: float,
) -> list[ModelEstimate]:
    if "model_a" not in meta.columns or "model_b" not in meta.columns:
        return []
    first = meta["model_a"].to_numpy(dtype=object)
    second = meta["model_b"].to_numpy(dtype=object)
    codes = np.asarray(reference, dtype=np.float64)
    y_a = np.array(
        [np.nan if np.isnan(c) else _PREFERENCE_VALUE[LABELS[int(c)]] for c in codes],
        dtype=np.float64,
    )
    f_a = np.asarray(values, dtype=np.float64)
    names = sorted({str(m) for m in (*first, *second) if m is not None})
    wins = {}  # per model: its pairs, and its win in each (a win as B is 1 − A's)
    for model in names:
        as_a = np.array([m is not None and str(m) == model for m in first])
        as_b = np.array([m is not None and str(m) == model for m in second])
        wins[model] = (as_a | as_b, np.where(as_a, y_a, 1.0 - y_a), np.where(as_a, f_a, 1.0 - f_a))
    tuning = judge_tuning([(y[mine], f[mine]) for mine, y, f in wins.values()])
    return [
        _estimate(judge, model, WIN_RATE, mine, y, f, blocked, confidence, tuning)
        for model, (mine, y, f) in wins.items()
    ]


def _estimate(
    judge: str,
    model: str,
    leaderboard: str,
    units: np.ndarray,
    y: np.ndarray,
    f: np.ndarray,
    blocked: str | None,
    confidence: float,
    tuning: float | None,
) -> ModelEstimate:
    scored = units & ~np.isnan(f)
    labelled = scored & ~np.isnan(y)
    unlabelled = scored & np.isnan(y)
    n, big_n = int(labelled.sum()), int(unlabelled.sum())
    judge_only = float(f[scored].mean()) if scored.any() else None
    humans = (
        humans_only_mean(y[labelled], confidence, units=n + big_n) if n >= MIN_LABELLED else None
    )
    reason = blocked
    if reason is None and n < MIN_LABELLED:
        reason = f"{n} labelled unit(s) the judge scored: at least {MIN_LABELLED} are needed"
    if reason is None and big_n == 0:
        reason = "no unlabelled unit the judge scored: the humans-only value is the estimate"
    if reason is not None:
        return ModelEstimate(
            judge, model, leaderboard, judge_only, humans, None, None, n, big_n, reason=reason
        )
    found = prediction_powered_mean(
        y[labelled], f[labelled], f[unlabelled], confidence=confidence, tuning=tuning
    )
    return _from_ppi(judge, model, leaderboard, found)


def _from_ppi(
    judge: str, model: str, leaderboard: str, found: PredictionPoweredMean
) -> ModelEstimate:
    return ModelEstimate(
        judge,
        model,
        leaderboard,
        found.judge_only,
        found.humans_only,
        found.prediction_powered,
        found.effective_labels if np.isfinite(found.effective_labels) else None,
        found.n_labelled,
        found.n_unlabelled,
        tuning=found.tuning,
    )


def _average(
    judge: str, model: str, tasks: list[ModelEstimate], confidence: float
) -> ModelEstimate:
    """AlignMMBench's average: the mean of the task values, each estimate its task's."""
    n = sum(t.n_labelled for t in tasks)
    big_n = sum(t.n_unlabelled for t in tasks)
    judged = [t.judge_only for t in tasks if t.judge_only is not None]
    judge_only = float(np.mean(judged)) if len(judged) == len(tasks) else None
    humans = [t.humans_only for t in tasks if t.humans_only is not None]
    humans_only = mean_of_estimates(humans, confidence) if len(humans) == len(tasks) else None
    missing = [t for t in tasks if t.prediction_powered is None]
    if missing:
        first = missing[0]
        reason = f"{first.leaderboard.removeprefix('task:')}: {first.reason}"
        if len(missing) > 1:
            reason += f" (and {len(missing) - 1} more task(s))"
        return ModelEstimate(
            judge, model, AVERAGE, judge_only, humans_only, None, None, n, big_n, reason=reason
        )
    powered = mean_of_estimates(
        [t.prediction_powered for t in tasks if t.prediction_powered], confidence
    )
    assert humans_only is not None  # every task with an estimate has its humans-only value
    parts = [
        (t.n_labelled, t.n_labelled + t.n_unlabelled, t.humans_only.variance / len(tasks) ** 2)
        for t in tasks
        if t.humans_only is not None
    ]
    effective = effective_labels(parts, powered.variance)
    return ModelEstimate(
        judge,
        model,
        AVERAGE,
        judge_only,
        humans_only,
        powered,
        effective if np.isfinite(effective) else None,
        n,
        big_n,
    )
