"""Tables behind the figures of the audit report and the dashboard, per judge.

* ``confusion``: reference (rows) × judge (columns) counts, on scale points (rounded half up) or
  A / B / tie (+ unparsed);
* ``distribution``: per scale point, how often the judge, the individual humans and the
  reference gave it (continuous scales: ten equal-width bins);
* ``bias``: mean judge − reference per reference scale point;
* ``disagreements``: the judge's largest disagreements with the reference under the one rule of
  :mod:`calibration.disagreement` (the *Disagreements* page queues all of them, in the same
  order), with every human rationale and the judge's rationale.

The metrics need no rationale, and a large campaign's rationales do not fit in a page's memory,
so the disagreements are listed first (with empty ``human_rationales`` / ``judge_rationales``)
and :func:`with_rationales` then fills in the texts of the listed units only, from the judgement
rows of those units: the campaign reader fetches them by unit key
(:func:`data.readmodels.frames.campaign_rationales`); a frame read from files already has them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from calibration.disagreement import disagreement_threshold, judge_disagreements
from calibration.pairwise import LABELS, UnparsedRule
from calibration.scale import Scale
from calibration.units import UnitData
from schemas.disagreements import JudgeDisagreement


@dataclass(frozen=True)
class JudgeDetails:
    """Figure data for one judge; every frame is small (scale points, labels, top units)."""

    confusion: pd.DataFrame
    distribution: pd.DataFrame
    bias: pd.DataFrame
    disagreements: pd.DataFrame
    """The first ``max_disagreements`` of the judge's disagreements, largest gap first."""
    disagreement_count: int = 0
    """How many disagreements the judge has in all (``disagreements`` lists the first ones)."""
    disagreement_threshold: float | None = None
    """The pointwise threshold they were found with; None for pairwise judges."""


def _bins(scale: Scale, values: np.ndarray) -> tuple[list[str], np.ndarray]:
    if scale.is_discrete:
        labels = [f"{p:g}" for p in scale.points()]
        return labels, scale.point_index(values)
    edges = np.linspace(scale.low, scale.high, 11)
    labels = [f"{edges[i]:g}–{edges[i + 1]:g}" for i in range(10)]
    return labels, np.clip(np.searchsorted(edges, values, side="right") - 1, 0, 9)


def pointwise_details(
    data: UnitData,
    judge: str,
    judge_values: np.ndarray,
    scale: Scale,
    limit: int,
    threshold: float | None = None,
) -> JudgeDetails:
    """Confusion, distributions, bias by point and the largest disagreements (|J − H| at least
    ``threshold``, :mod:`calibration.disagreement`) for a scoring judge."""
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
    found = judge_disagreements(data, judge, threshold=threshold)
    return JudgeDetails(
        confusion,
        distribution,
        bias,
        _listed_disagreements(data, found[:limit]),
        len(found),
        disagreement_threshold(data.protocol, threshold),
    )


def pairwise_details(
    data: UnitData, judge: str, unparsed: UnparsedRule, limit: int
) -> JudgeDetails:
    """Confusion (reference × verdict), verdict distribution and the largest disagreements
    (:mod:`calibration.disagreement`: at least half of the judge's verdicts differ)."""
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
    found = judge_disagreements(data, judge)
    return JudgeDetails(
        confusion,
        distribution,
        pd.DataFrame(),
        _listed_disagreements(data, found[:limit]),
        len(found),
    )


def _listed_disagreements(data: UnitData, found: list[JudgeDisagreement]) -> pd.DataFrame:
    """The listed disagreements as rows; their rationales are filled in by
    :func:`with_rationales`."""
    positions = np.searchsorted(data.units, [entry.unit_key for entry in found])
    return pd.DataFrame(
        [
            _listed(data, int(unit), entry.judge_value, entry.reference_value) | {"gap": entry.gap}
            for unit, entry in zip(positions, found, strict=True)
        ]
    )


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
