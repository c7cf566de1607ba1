"""Model-level results: leaderboards per evaluated model, ranking agreement, alignment score.

* AlignMMBench's average is the **unweighted mean of the task means** (13 tasks when all exist).
* MMIE reports mean points / scale maximum × 100, per category and overall.
* Other scales: plain mean of the unit scores.
* ``ranking_kendall``: Kendall's tau-b between the models' averages by the judge and by the
  humans, on the units both scored.
* ``alignment_score`` (AlignMMBench, arXiv 2406.09295): for one model, 1 / (mean over prompt-variant
  groups with at least 2 variants of the population variance of the model's scores across the
  group's variants). This is our reading of the paper; reports say so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibration.pointwise import kendall
from calibration.scale import Scale


def model_scores(units: pd.DataFrame, scores: np.ndarray, protocol: str, scale: Scale) -> dict:
    """Per model: ``avg``, ``n`` and means ``by_task`` / ``by_category`` (percent for MMIE).

    ``units`` has one row per unit with columns ``model``, ``task``, ``category``; ``scores`` is
    aligned with it (NaN = no score).
    """
    factor = 100.0 / scale.high if scale.percent else 1.0
    keep = ~np.isnan(np.asarray(scores, dtype=np.float64)) & units["model"].notna().to_numpy()
    frame = pd.DataFrame(
        {
            "model": units["model"].to_numpy(dtype=object)[keep].astype(str),
            "task": units["task"].to_numpy(dtype=object)[keep],
            "category": units["category"].to_numpy(dtype=object)[keep],
            "score": np.asarray(scores, dtype=np.float64)[keep] * factor,
        }
    )
    by_task = _means(frame, "task")
    by_category = _means(frame, "category")
    overall = frame.groupby("model", sort=True)["score"].agg(["mean", "size"])
    result: dict[str, dict] = {}
    for model, row in overall.iterrows():
        tasks = by_task.get(model, {})
        use_tasks = protocol == "alignmmbench" and tasks
        result[str(model)] = {
            "avg": float(np.mean(list(tasks.values()))) if use_tasks else float(row["mean"]),
            "n": int(row["size"]),
            "by_task": tasks,
            "by_category": by_category.get(model, {}),
        }
    return result


def ranking_kendall(judge_models: dict, human_models: dict) -> float:
    """Kendall's tau-b between the judge's and the humans' model averages (NaN below 2 models)."""
    models = sorted(set(judge_models) & set(human_models))
    if len(models) < 2:
        return float("nan")
    judge = np.array([judge_models[m]["avg"] for m in models])
    human = np.array([human_models[m]["avg"] for m in models])
    return kendall(judge, human)


def alignment_scores(units: pd.DataFrame, scores: np.ndarray) -> dict[str, float]:
    """Per model: 1 / mean over groups (≥ 2 variants) of the population variance of its scores.

    ``units`` has columns ``model``, ``group``, ``item_id``; infinite (``inf``) when every group's
    variants got the same score, absent for a model without a group of two variants.
    """
    frame = units.assign(score=np.asarray(scores, dtype=np.float64)).dropna(
        subset=["score", "model", "group"]
    )
    variants = frame.groupby(["model", "group", "item_id"], sort=True)["score"].mean()
    if variants.empty:
        return {}
    # The index is sorted, so each (model, group) is one run of rows: slicing the runs out of one
    # array instead of iterating a pandas groupby (a MultiIndex per group, 17 of 19 s at 100k
    # units with one group per item) gives the same np.var of the same values in the same order.
    model_code, group_code = variants.index.codes[0], variants.index.codes[1]
    values = variants.to_numpy()
    starts = np.flatnonzero(
        np.r_[True, (model_code[1:] != model_code[:-1]) | (group_code[1:] != group_code[:-1])]
    )
    ends = np.r_[starts[1:], values.size]
    per_model: dict[str, list[float]] = {}
    models = [str(model) for model in variants.index.levels[0]]
    run_models = model_code[starts].tolist()
    for model, start, end in zip(run_models, starts.tolist(), ends.tolist(), strict=True):
        variances = per_model.setdefault(models[model], [])
        if end - start >= 2:
            variances.append(float(np.var(values[start:end])))
    result: dict[str, float] = {}
    for model, variances in per_model.items():
        if variances:
            mean_variance = float(np.mean(variances))
            result[model] = 1.0 / mean_variance if mean_variance > 0 else float("inf")
    return result


def _means(frame: pd.DataFrame, field: str) -> dict[str, dict[str, float]]:
    present = frame[frame[field].notna()].astype({field: str})
    means = present.groupby(["model", field], sort=True)["score"].mean()
    result: dict[str, dict[str, float]] = {}
    for (model, key), value in means.items():
        result.setdefault(str(model), {})[str(key)] = float(value)
    return result
