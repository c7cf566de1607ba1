"""Pairwise agreement of a judge's verdicts with the reference (METRICS.md, "Pairwise").

Labels are ``A`` / ``B`` / ``tie`` in canonical order. Every kept verdict is a sample; a unit with
k kept verdicts (both orders: k = 2) gives each weight 1/k, so a pair never counts twice.
Unparsed verdicts follow ``unparsed``: ``tie`` (read as tie), ``drop`` (left out) or ``wrong``
(kept as a fourth predicted class that matches nothing; macro averages still run over A, B, tie).

As in :mod:`calibration.pointwise`, :class:`PairwiseKernel` holds per-unit contributions (a
weighted confusion table, order-consistency indicators, verdict counts) so that any matrix of unit
weights (bootstrap resamples) is evaluated with two matrix products.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from scipy import sparse

from calibration.errors import CalibrationInputError
from schemas.option_text import OptionText
from schemas.protocols import PREFERENCES

UnparsedRule = Literal["wrong", "tie", "drop"]
UNPARSED_RULES: tuple[str, ...] = get_args(UnparsedRule)
LABELS: tuple[str, ...] = PREFERENCES
"""The preference labels, coded by position: 0 = A, 1 = B, 2 = tie (the one set, schemas)."""
_PREDICTED: tuple[str, ...] = (*LABELS, "unparsed")

PAIRWISE_METRICS: tuple[str, ...] = (
    "acc_with_tie",
    "acc_without_tie",
    "precision_macro",
    "recall_macro",
    "f1_macro",
    "kappa",
    "consistency",
    "agreement_both_orders",
    "prefer_first",
    "tie_rate",
)
"""Metrics with a bootstrap interval; ``n`` and ``coverage`` are counts, reported beside them."""


def check_unparsed_rule(rule: str) -> None:
    if rule not in UNPARSED_RULES:
        raise CalibrationInputError(
            OptionText(
                "{unparsed} {rule!r} is not one of {rules}",
                rule=rule,
                rules=", ".join(UNPARSED_RULES),
            )
        )


class PairwiseKernel:
    """Per-unit contributions of one judge's verdicts.

    ``unit``: unit index (0..n_units-1) of each verdict; ``verdict``: 'A'/'B'/'tie' in canonical
    order or None when unparsed; ``shown``: 'AB' or 'BA'; ``reference``: per unit 'A'/'B'/'tie' or
    None (no reference: counts only towards consistency and verdict rates).
    """

    def __init__(
        self,
        unit: np.ndarray,
        verdict: np.ndarray,
        shown: np.ndarray,
        reference: np.ndarray,
        unparsed: UnparsedRule = "wrong",
    ) -> None:
        check_unparsed_rule(unparsed)
        unit = np.asarray(unit, dtype=np.int64)
        predicted = np.array([_predicted_code(v) for v in verdict], dtype=np.int64)
        swapped = np.asarray(shown, dtype=object) == "BA"
        self.n_units = len(reference)
        self.n_verdicts = unit.size
        self.n_parsed = int((predicted < 3).sum())
        if unparsed == "tie":
            predicted = np.where(predicted == 3, 2, predicted)
        elif unparsed == "drop":
            keep = predicted < 3
            unit, predicted, swapped = unit[keep], predicted[keep], swapped[keep]
        truth = np.array([_true_code(r) for r in reference], dtype=np.int64)
        per_unit = np.bincount(unit, minlength=self.n_units).astype(np.float64)
        weight = 1.0 / per_unit[unit] if unit.size else np.zeros(0)
        scored = truth[unit] >= 0
        self._confusion = sparse.csr_matrix(
            (weight[scored], (unit[scored], truth[unit][scored] * 4 + predicted[scored])),
            shape=(self.n_units, 12),
        )
        chose_first = ((predicted == 0) & ~swapped) | ((predicted == 1) & swapped)
        first_ab = _first_per_unit(unit, predicted, ~swapped, self.n_units)
        first_ba = _first_per_unit(unit, predicted, swapped, self.n_units)
        both = (first_ab >= 0) & (first_ba >= 0)
        consistent = both & (first_ab == first_ba) & (first_ab < 3)
        agree_both = both & (truth >= 0) & (first_ab == truth) & (first_ba == truth)
        self._linear = np.column_stack(
            [
                ((per_unit > 0) & (truth >= 0)).astype(np.float64),
                both,
                consistent,
                both & (truth >= 0),
                agree_both,
                per_unit,
                np.bincount(unit, weights=chose_first, minlength=self.n_units),
                np.bincount(unit, weights=predicted == 2, minlength=self.n_units),
            ]
        ).astype(np.float64)

    @property
    def coverage(self) -> float:
        """Parsed verdicts / all verdicts the judge gave (before the unparsed rule)."""
        return self.n_parsed / self.n_verdicts if self.n_verdicts else float("nan")

    def n(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Units with a reference and at least one kept verdict, per weight row."""
        if weights is None:
            return np.array([self._linear[:, 0].sum()])
        return np.atleast_2d(weights) @ self._linear[:, 0]

    def evaluate(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Metric name → array of one value per weight row (NaN where undefined)."""
        weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        tables = np.asarray((self._confusion.T @ weights.T).T).reshape(-1, 3, 4)
        values = confusion_metrics(tables)
        _, both, consistent, both_ref, agree_both, verdicts, first, ties = (
            weights @ self._linear
        ).T
        with np.errstate(invalid="ignore", divide="ignore"):
            values["consistency"] = np.where(both > 0, consistent / both, np.nan)
            values["agreement_both_orders"] = np.where(both_ref > 0, agree_both / both_ref, np.nan)
            values["prefer_first"] = np.where(verdicts > 0, first / verdicts, np.nan)
            values["tie_rate"] = np.where(verdicts > 0, ties / verdicts, np.nan)
        return {name: values[name] for name in PAIRWISE_METRICS}


def confusion_metrics(tables: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracies, macro P/R/F1 and Cohen's kappa from weighted confusion tables.

    ``tables``: (resamples, 3 true labels A/B/tie, 4 predicted A/B/tie/unparsed). Macro averages
    run over A, B, tie with ``zero_division=0`` (as sklearn's ``precision_recall_fscore_support``
    with ``labels=["A", "B", "tie"]``); kappa is Cohen's (1960) over the four predicted classes.
    """
    total = tables.sum(axis=(1, 2))
    hits = np.einsum("bii->bi", tables[:, :, :3])
    true_count = tables.sum(axis=2)
    predicted_count = tables.sum(axis=1)[:, :3]
    decisive = tables[:, :2, :].sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(predicted_count > 0, hits / predicted_count, 0.0)
        recall = np.where(true_count > 0, hits / true_count, 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
        observed = hits.sum(axis=1) / total
        expected = (true_count * predicted_count).sum(axis=1) / total**2
        defined = total > 0
        return {
            "acc_with_tie": np.where(defined, observed, np.nan),
            "acc_without_tie": np.where(decisive > 0, hits[:, :2].sum(axis=1) / decisive, np.nan),
            "precision_macro": np.where(defined, precision.mean(axis=1), np.nan),
            "recall_macro": np.where(defined, recall.mean(axis=1), np.nan),
            "f1_macro": np.where(defined, f1.mean(axis=1), np.nan),
            "kappa": np.where(
                defined & (expected < 1), (observed - expected) / (1 - expected), np.nan
            ),
        }


def pairwise_metrics(
    verdicts: list[str | None],
    reference: list[str | None],
    *,
    shown: list[str] | None = None,
    units: list[object] | None = None,
    unparsed: UnparsedRule = "wrong",
) -> dict[str, float]:
    """All pairwise metrics of a list of verdicts (one per row) against the reference.

    ``units`` names the unit of each verdict (default: every verdict its own unit) and
    ``reference`` is given per verdict (the same for the verdicts of one unit).
    """
    keys = list(range(len(verdicts))) if units is None else list(units)
    order = {key: index for index, key in enumerate(dict.fromkeys(keys))}
    unit_index = np.array([order[key] for key in keys], dtype=np.int64)
    unit_reference = np.empty(len(order), dtype=object)
    unit_reference[unit_index] = reference
    kernel = PairwiseKernel(
        unit_index,
        np.array(verdicts, dtype=object),
        np.array(shown or ["AB"] * len(keys)),
        unit_reference,
        unparsed,
    )
    values = kernel.evaluate(np.ones((1, kernel.n_units)))
    result = {"n": float(kernel.n()[0]), "coverage": kernel.coverage}
    result.update({name: float(value[0]) for name, value in values.items()})
    return result


def _predicted_code(verdict: object) -> int:
    return LABELS.index(verdict) if verdict in LABELS else 3


def _true_code(reference: object) -> int:
    return LABELS.index(reference) if reference in LABELS else -1


def _first_per_unit(
    unit: np.ndarray, predicted: np.ndarray, selected: np.ndarray, n_units: int
) -> np.ndarray:
    """Predicted code of the first selected verdict of each unit, -1 where there is none."""
    first = np.full(n_units, -1, dtype=np.int64)
    rows = np.flatnonzero(selected)
    units, first_row = np.unique(unit[rows], return_index=True)
    first[units] = predicted[rows[first_row]]
    return first
