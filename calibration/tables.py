"""The result's numbers as small display tables (dashboard), and unit filters.

Pure functions over the :class:`~calibration.result.CalibrationResult` and the judgement frame:
pages call them and render.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from calibration.result import CalibrationResult, Interval


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


def _cell(value: float | None, interval: Interval | None) -> str:
    if value is None:
        return "n/a"
    text = f"{value:.3f}"
    if interval and None not in interval:
        text += f" [{interval[0]:.3f}, {interval[1]:.3f}]"
    return text
