"""Tables behind the figures of the audit report and the dashboard, per judge.

* ``confusion``: reference (rows) × judge (columns) counts, on scale points (rounded half up) or
  A / B / tie (+ unparsed);
* ``distribution``: per scale point, how often the judge, the individual humans and the
  reference gave it (continuous scales: ten equal-width bins);
* ``bias``: mean judge − reference per reference scale point;
* ``disagreements``: the units where the judge is furthest from the humans, with every human
  rationale and the judge's rationale.

The metrics need no rationale, and a large campaign's rationales do not fit in a page's memory,
so the disagreements are listed first (with empty ``human_rationales`` / ``judge_rationales``)
and :func:`with_rationales` then fills in the texts of the listed units only, from the judgement
rows of those units: the campaign reader fetches them by unit key
(:func:`data.io.frames.campaign_rationales`); a frame read from files already has them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

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
    rows = [
        _listed(data, unit, f"{judge_values[unit]:.4g}", f"{reference[unit]:.4g}")
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
    disagreements = [
        _listed(data, unit, verdict, LABELS[int(reference[unit])])
        | {"human_agreement": float(agreement[unit])}
        for unit, verdict in wrong[:limit]
    ]
    return JudgeDetails(confusion, distribution, pd.DataFrame(), pd.DataFrame(disagreements))


def _human_agreement(data: UnitData) -> np.ndarray:
    present = ~np.isnan(data.humans)
    agree = (data.humans == data.reference[None, :]) & present
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num(agree.sum(axis=0) / present.sum(axis=0))


def _listed(data: UnitData, unit: int, judged: str, reference: str) -> dict:
    """One listed disagreement; its rationales are filled in by :func:`with_rationales`."""
    meta = data.meta.iloc[int(unit)]
    return {
        "unit": data.units[unit],
        "item_id": meta.get("item_id"),
        "task": meta.get("task"),
        "model": meta.get("model"),
        "judge": judged,
        "reference": reference,
        "adjudicated": bool(data.adjudicated[unit]),
        "human_rationales": [],
        "judge_rationales": [],
    }


def listed_units(details: Mapping[str, JudgeDetails]) -> list[str]:
    """The keys of the units that the judges' disagreement lists show, sorted, once each."""
    keys = {
        str(key)
        for judge in details.values()
        if not judge.disagreements.empty
        for key in judge.disagreements["unit"]
    }
    return sorted(keys)


def with_rationales(
    details: Mapping[str, JudgeDetails], rows: pd.DataFrame
) -> dict[str, JudgeDetails]:
    """``details`` with the rationales of their listed units filled in from ``rows``.

    ``rows``: judgement-frame rows (``unit``, ``rater``, ``kind``, ``value``, ``shown_order``,
    ``rationale``) of at least the listed units, in the order to show them. Per listed unit,
    ``human_rationales`` is every human's ``(rater, value, text)`` and ``judge_rationales`` the
    judge's ``(shown order, value, text)``, one per judgement.
    """
    humans: dict[str, list[tuple[str, str, str]]] = {}
    judges: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    wanted = listed_units(details)
    rows = rows[rows["unit"].astype(str).isin(wanted)]
    for unit, rater, kind, value, order, text in zip(
        rows["unit"].astype(str),
        rows["rater"].astype(str),
        rows["kind"],
        rows["value"],
        rows["shown_order"].fillna("AB").astype(str),
        rows["rationale"].fillna("").astype(str),
        strict=True,
    ):
        if kind == "human":
            humans.setdefault(unit, []).append((rater, _text(value), text))
        else:
            judges.setdefault((unit, rater), []).append((order, _text(value), text))
    filled = {}
    for name, judge in details.items():
        table = judge.disagreements
        if not table.empty:
            table = table.assign(
                human_rationales=[humans.get(str(u), []) for u in table["unit"]],
                judge_rationales=[judges.get((str(u), name), []) for u in table["unit"]],
            )
        filled[name] = replace(judge, disagreements=table)
    return filled


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "unparsed"
    return f"{value:g}" if isinstance(value, float) else str(value)
