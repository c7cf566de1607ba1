"""The summary's numbers as small display tables (dashboard), and unit filters.

Pure functions over the METRICS.md summary and the judgement frame: pages call them and render.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

_NOT_METRICS = {"ci", "by", "by_aggregate", "loo", "maps", "parse_status", "ranking_kendall"}


def select_units(frame: pd.DataFrame, field: str, values: Iterable[object]) -> pd.DataFrame:
    """Rows of the units whose ``field`` (task, model...) is one of ``values`` (all raters kept).

    The field is read per unit (its first non-empty value), so a judge row without metadata
    stays with its unit.
    """
    wanted = {str(v) for v in values}
    per_unit = frame.dropna(subset=[field]).groupby("unit")[field].first().astype(str)
    keep = set(per_unit[per_unit.isin(wanted)].index)
    return frame[frame["unit"].isin(keep)]


def judge_table(summary: dict) -> pd.DataFrame:
    """Judges × metrics; each cell ``value [low, high]`` (interval when computed)."""
    rows = {}
    for name, block in summary["judges"].items():
        intervals = block.get("ci", {})
        rows[name] = {
            metric: _cell(value, intervals.get(metric))
            for metric, value in block.items()
            if metric not in _NOT_METRICS
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def ceiling_table(summary: dict, judge: str) -> pd.DataFrame:
    """Per metric: human leave-one-out, judge leave-one-out, degradation (judge − human)."""
    loo = summary["judges"][judge].get("loo", {})
    if "judge" not in loo:
        return pd.DataFrame(columns=["human LOO", "judge LOO", "degradation"])
    return pd.DataFrame(
        {
            "human LOO": loo["human"],
            "judge LOO": loo["judge"],
            "degradation": loo["degradation"],
        }
    )


def group_table(summary: dict, judge: str, field: str) -> pd.DataFrame:
    """Groups × metrics for one judge, with the aggregate as the last row."""
    block = summary["judges"][judge]
    groups = pd.DataFrame.from_dict(block.get("by", {}).get(field, {}), orient="index")
    aggregate = block.get("by_aggregate", {}).get(field)
    if aggregate:
        label = f"aggregate ({aggregate['mode']})"
        groups.loc[label] = {m: aggregate.get(m) for m in groups.columns}
    return groups


def model_table(summary: dict) -> pd.DataFrame:
    """Models × sources (human, judge:NAME): average score and alignment score."""
    rows = {}
    for model, sources in summary.get("models", {}).items():
        row = {}
        for source, entry in sources.items():
            row[f"{source} avg"] = entry.get("avg")
            row[f"{source} alignment"] = entry.get("alignment_score")
        rows[model] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def _cell(value: object, interval: list | None) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return str(value)
    text = f"{value:.3f}"
    if interval and None not in interval:
        text += f" [{interval[0]:.3f}, {interval[1]:.3f}]"
    return text
