"""The result's numbers as small display tables (dashboard), and unit filters.

Pure functions over the :class:`~calibration.result.CalibrationResult` and the judgement frame:
pages call them and render.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from calibration.ppi import MeanEstimate
from calibration.result import CalibrationResult, Interval

METRIC_NAMES: dict[str, str] = {
    "n": "Units",
    "coverage": "Parsed share",
    "mae": "Mean abs. error",
    "mse": "Mean squared error",
    "rmse": "Root mean sq. error",
    "pearson": "Pearson r",
    "spearman": "Spearman ρ",
    "kendall": "Kendall τ",
    "cosine": "Cosine",
    "strict_acc": "Exact agreement",
    "fuzzy_acc": "Within one step",
    "qwk": "Quadratic κ",
    "alpha_interval": "α (interval)",
    "alpha_ordinal": "α (ordinal)",
    "alpha_nominal": "α (nominal)",
    "bias": "Bias (judge − ref.)",
    "smd": "Std. mean difference",
    "percent_mae": "Mean abs. error (% of max)",
    "acc_with_tie": "Accuracy with ties",
    "acc_without_tie": "Accuracy without ties",
    "precision_macro": "Macro precision",
    "recall_macro": "Macro recall",
    "f1_macro": "Macro F1",
    "kappa": "Cohen's κ",
    "consistency": "Same verdict both orders",
    "agreement_both_orders": "Right in both orders",
    "prefer_first": "Prefers the first shown",
    "tie_rate": "Tie rate",
}
"""A header in words for each metric key of the result (METRICS.md defines each key; the JSON
and ``calibrate`` keep the keys). A key without a name here shows as itself."""


def metric_name(key: str) -> str:
    """The metric's header in words (:data:`METRIC_NAMES`), else the key."""
    return METRIC_NAMES.get(key, key)


def with_metric_names(table: pd.DataFrame, *, axis: str = "columns") -> pd.DataFrame:
    """``table`` with its metric keys, on ``axis`` ("columns" or "index"), as words."""
    return table.rename(**{axis: metric_name})


def select_units(frame: pd.DataFrame, field: str, values: Iterable[object]) -> pd.DataFrame:
    """Rows of the units whose ``field`` (task, model...) is one of ``values`` (all raters kept).

    The field is read per unit (its first non-empty value), so a judge row without metadata
    stays with its unit.
    """
    wanted = {str(v) for v in values}
    per_unit = frame.dropna(subset=[field]).groupby("unit")[field].first().astype(str)
    keep = set(per_unit[per_unit.isin(wanted)].index)
    return frame[frame["unit"].isin(keep)]


def judge_table(result: CalibrationResult) -> pd.DataFrame:
    """Judges × (n, coverage, metrics); each metric ``value [low, high]`` (interval when
    computed)."""
    rows = {}
    for name, judge in result.judges.items():
        rows[name] = {"n": str(judge.n), "coverage": _cell(judge.coverage, None)} | {
            metric: _cell(entry.value, (entry.low, entry.high))
            for metric, entry in judge.metrics.items()
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def ceiling_table(result: CalibrationResult, judge: str) -> pd.DataFrame:
    """Per metric: human leave-one-out, judge leave-one-out, degradation (judge − human)."""
    loo = result.judges[judge].loo
    if loo.judge is None:
        return pd.DataFrame(columns=["human LOO", "judge LOO", "degradation"])
    return pd.DataFrame(
        {"human LOO": loo.human, "judge LOO": loo.judge, "degradation": loo.degradation}
    )


def group_table(result: CalibrationResult, judge: str, field: str) -> pd.DataFrame:
    """Groups × metrics for one judge, with the aggregate as the last row."""
    block = result.judges[judge]
    groups = pd.DataFrame.from_dict(
        {
            group: {"n": values.n} | values.values
            for group, values in (block.by or {}).get(field, {}).items()
        },
        orient="index",
    )
    aggregate = (block.by_aggregate or {}).get(field)
    if aggregate is not None:
        label = f"aggregate ({aggregate.mode})"
        groups.loc[label] = {m: aggregate.values.get(m) for m in groups.columns}
    return groups


def model_table(result: CalibrationResult) -> pd.DataFrame:
    """Models × sources (human, judge:NAME): average score and alignment score."""
    rows = {}
    for model, sources in (result.models or {}).items():
        row = {}
        for source, entry in sources.items():
            row[f"{source} avg"] = entry.avg
            row[f"{source} alignment"] = entry.alignment_score
        rows[model] = row
    return pd.DataFrame.from_dict(rows, orient="index")


MODEL_SCORE_COLUMNS: tuple[str, ...] = (
    "judge",
    "model",
    "leaderboard",
    "judge-only (biased)",
    "humans-only ±",
    "PPI++ ±",
    "worth N labels",
)
"""The *Model scores* table's columns (page and HTML report alike)."""

MODEL_SCORES_NOTE = (
    "Judge-only: the judge's value on every unit it scored, biased by its errors. Humans-only: "
    "the human reference on the labelled units it scored, ± the half-width of the 95% interval "
    "(Student's t) for the humans' mean over all the units the judge scored, of which the "
    "labelled ones are a random sample (finite-population corrected: zero when all are "
    "labelled). PPI++: the judge's value on every unit corrected by its errors on the labelled "
    "ones (prediction-powered inference with power tuning), unbiased, ± its 95% half-width; "
    "worth N labels: the humans-only labels it would take to be as precise, the finite-"
    "population correction included (METRICS.md, 'Effective labels'). Win rate: 1 when the "
    "preference is for the model, 0.5 for a tie, 0 otherwise, over the pairs it is in. "
    "Labelled sample: {sample}."
)
"""What the *Model scores* numbers mean; ``{sample}``: the result's labelled sample."""


def model_score_table(result: CalibrationResult) -> pd.DataFrame:
    """One row per judge, model and leaderboard (:mod:`calibration.model_estimates`): the
    judge-only value, humans-only ± half-width (n), PPI++ ± half-width and the labels it is
    worth, or why there is none."""
    rows = []
    for e in result.model_estimates.estimates if result.model_estimates else ():
        humans = e.humans_only
        powered = e.prediction_powered
        rows.append(
            (
                e.judge,
                e.model,
                e.leaderboard,
                "n/a" if e.judge_only is None else f"{e.judge_only:.3f}",
                "n/a" if humans is None else f"{_plus_minus(humans)} (n = {e.n_labelled})",
                "n/a" if powered is None else _plus_minus(powered),
                e.reason
                if e.reason is not None
                else f"{e.n_labelled} labels worth {_worth(e.effective_labels)}",
            )
        )
    return pd.DataFrame(rows, columns=list(MODEL_SCORE_COLUMNS))


def _plus_minus(estimate: MeanEstimate) -> str:
    return f"{estimate.value:.3f} ± {(estimate.high - estimate.low) / 2:.3f}"


def _worth(labels: float | None) -> str:
    return "unbounded (no variance left)" if labels is None else f"{labels:.0f}"


def _cell(value: float | None, interval: Interval | None) -> str:
    if value is None:
        return "n/a"
    text = f"{value:.3f}"
    if interval and None not in interval:
        text += f" [{interval[0]:.3f}, {interval[1]:.3f}]"
    return text
