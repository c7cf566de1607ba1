"""Tables behind the figures of the audit report and the dashboard, per judge.

* ``confusion``: reference (rows) × judge (columns) counts, on scale points (rounded half up) or
  A / B / tie (+ unparsed);
* ``distribution``: per scale point, how often the judge, the individual humans and the
  reference gave it (continuous scales: ten equal-width bins);
* ``bias``: mean judge − reference per reference scale point;
* ``disagreements``: the units where the judge is furthest from the humans, with every human
  rationale and the judge's rationale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from calibration.pairwise import LABELS, UnparsedRule
from calibration.scale import Scale
from calibration.units import UnitData


@dataclass(frozen=True)
class JudgeDetails:
    """Figure data for one judge; every frame is small (scale points, labels, top units)."""

    confusion: pd.DataFrame
    distribution: pd.DataFrame
    bias: pd.DataFrame
    disagreements: pd.DataFrame


def _bins(scale: Scale, values: np.ndarray) -> tuple[list[str], np.ndarray]:
    if scale.is_discrete:
        labels = [f"{p:g}" for p in scale.points()]
        return labels, scale.point_index(values)
    edges = np.linspace(scale.low, scale.high, 11)
    labels = [f"{edges[i]:g}–{edges[i + 1]:g}" for i in range(10)]
    return labels, np.clip(np.searchsorted(edges, values, side="right") - 1, 0, 9)


def pointwise_details(
    data: UnitData, judge: str, judge_values: np.ndarray, scale: Scale, limit: int
) -> JudgeDetails:
    """Confusion, distributions, bias by point and the largest |J − H| for a scoring judge."""
    reference = data.reference
    both = ~np.isnan(judge_values) & ~np.isnan(reference)
    labels, judge_bin = _bins(scale, np.nan_to_num(judge_values, nan=scale.low))
    _, reference_bin = _bins(scale, np.nan_to_num(reference, nan=scale.low))
    size = len(labels)
    table = np.zeros((size, size), dtype=np.int64)
    np.add.at(table, (reference_bin[both], judge_bin[both]), 1)
    confusion = pd.DataFrame(table, index=labels, columns=labels)
    confusion.index.name, confusion.columns.name = "reference", judge
    human_values = data.humans[~np.isnan(data.humans)]
    _, human_bin = _bins(scale, human_values)
    distribution = pd.DataFrame(
        {
            "judge": np.bincount(judge_bin[~np.isnan(judge_values)], minlength=size),
            "humans": np.bincount(human_bin, minlength=size),
            "reference": np.bincount(reference_bin[~np.isnan(reference)], minlength=size),
        },
        index=labels,
    )
    gap = judge_values - reference
    grouped = pd.Series(gap[both]).groupby(reference_bin[both])
    bias = pd.DataFrame({"n": grouped.size(), "mean_bias": grouped.mean()}).reindex(range(size))
    bias.index = labels
    bias["n"] = bias["n"].fillna(0).astype(int)
    order = np.flatnonzero(both)[np.argsort(-np.abs(gap[both]), kind="stable")][:limit]
    texts = _Rationales(data, judge, order)
    rows = [
        texts.row(unit, f"{judge_values[unit]:.4g}", f"{reference[unit]:.4g}")
        | {"gap": float(gap[unit])}
        for unit in order
    ]
    return JudgeDetails(confusion, distribution, bias, pd.DataFrame(rows))


def pairwise_details(
    data: UnitData, judge: str, unparsed: UnparsedRule, limit: int
) -> JudgeDetails:
    """Confusion (reference × verdict), verdict distribution and the disagreeing pairs."""
    rows = data.judge_rows(judge)
    reference = data.reference
    verdicts = rows["value"].map(lambda v: v if v in LABELS else "unparsed")
    if unparsed == "tie":
        verdicts = verdicts.replace("unparsed", "tie")
    elif unparsed == "drop":
        rows, verdicts = rows[verdicts != "unparsed"], verdicts[verdicts != "unparsed"]
    truth = reference[rows["unit_index"].to_numpy()]
    scored = ~np.isnan(truth)
    columns = [*LABELS, "unparsed"]
    confusion = pd.crosstab(
        pd.Categorical([LABELS[int(t)] for t in truth[scored]], categories=list(LABELS)),
        pd.Categorical(verdicts[scored].to_numpy(), categories=columns),
        dropna=False,
    )
    confusion.index.name, confusion.columns.name = "reference", judge
    human_labels = data.humans[~np.isnan(data.humans)].astype(int)
    distribution = (
        pd.DataFrame(
            {
                "judge": verdicts.value_counts().reindex(columns, fill_value=0),
                "humans": pd.Series(np.bincount(human_labels, minlength=3), index=list(LABELS)),
                "reference": pd.Series(
                    np.bincount(reference[~np.isnan(reference)].astype(int), minlength=3),
                    index=list(LABELS),
                ),
            }
        )
        .reindex(columns)
        .fillna(0)
        .astype(int)
    )
    first = rows.assign(verdict=verdicts.to_numpy()).drop_duplicates("unit_index")
    agreement = _human_agreement(data)
    wrong = [
        (unit, verdict)
        for unit, verdict in zip(first["unit_index"], first["verdict"], strict=True)
        if not np.isnan(reference[unit]) and verdict != LABELS[int(reference[unit])]
    ]
    wrong.sort(key=lambda pair: (-agreement[pair[0]], data.units[pair[0]]))
    texts = _Rationales(data, judge, np.array([unit for unit, _ in wrong[:limit]], dtype=int))
    disagreements = [
        texts.row(unit, verdict, LABELS[int(reference[unit])])
        | {"human_agreement": float(agreement[unit])}
        for unit, verdict in wrong[:limit]
    ]
    return JudgeDetails(confusion, distribution, pd.DataFrame(), pd.DataFrame(disagreements))


def _human_agreement(data: UnitData) -> np.ndarray:
    present = ~np.isnan(data.humans)
    agree = (data.humans == data.reference[None, :]) & present
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num(agree.sum(axis=0) / present.sum(axis=0))


class _Rationales:
    """Human and judge rationales of a few units, looked up once."""

    def __init__(self, data: UnitData, judge: str, units: np.ndarray) -> None:
        self.data = data
        wanted = set(data.units[units].tolist()) if len(units) else set()
        rows = data.frame[data.frame["unit"].isin(wanted)]
        self.humans: dict[str, list] = {}
        self.judge: dict[str, list] = {}
        for row in rows.itertuples():
            if row.kind == "human":
                self.humans.setdefault(row.unit, []).append(
                    (str(row.rater), _text(row.value), str(row.rationale))
                )
            elif row.rater == judge:
                self.judge.setdefault(row.unit, []).append(
                    (str(row.shown_order), _text(row.value), str(row.rationale))
                )
        self.meta = data.meta.iloc[units].to_dict("records") if len(units) else []
        self.meta_of = dict(zip(units.tolist(), self.meta, strict=True)) if len(units) else {}

    def row(self, unit: int, judged: str, reference: str) -> dict:
        key = self.data.units[unit]
        meta = self.meta_of[int(unit)]
        return {
            "unit": key,
            "item_id": meta.get("item_id"),
            "task": meta.get("task"),
            "model": meta.get("model"),
            "judge": judged,
            "reference": reference,
            "adjudicated": bool(self.data.adjudicated[unit]),
            "human_rationales": self.humans.get(key, []),
            "judge_rationales": self.judge.get(key, []),
        }


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "unparsed"
    return f"{value:g}" if isinstance(value, float) else str(value)
