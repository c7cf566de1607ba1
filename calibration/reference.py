"""The reference label of each unit: adjudicated where it exists, else the humans' consensus.

Values travel as a raters × units float matrix (NaN = no judgement). Pairwise labels are coded
0 = A, 1 = B, 2 = tie (see :data:`calibration.pairwise.LABELS`).
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from calibration.errors import CalibrationInputError
from schemas.option_text import OptionText

ConsensusRule = Literal["mean", "median", "majority"]
NoMajorityRule = Literal["tie", "drop"]
CONSENSUS_RULES: tuple[str, ...] = get_args(ConsensusRule)
NO_MAJORITY_RULES: tuple[str, ...] = get_args(NoMajorityRule)
TIE_CODE = 2.0


def no_majority_rule(text: str) -> NoMajorityRule:
    """``text`` as a :data:`NoMajorityRule`; :class:`CalibrationInputError` naming the rules if
    it is none of them."""
    for rule in get_args(NoMajorityRule):
        if text == rule:
            return rule
    raise CalibrationInputError(
        OptionText(
            "{no_majority} {rule!r} is not one of {rules}",
            rule=text,
            rules=", ".join(NO_MAJORITY_RULES),
        )
    )


def check_consensus(rule: str, no_majority: str, *, pairwise: bool) -> None:
    """Validate the consensus options (pairwise protocols allow only ``majority``)."""
    if rule not in CONSENSUS_RULES:
        raise CalibrationInputError(
            OptionText(
                "{consensus} {rule!r} is not one of {rules}",
                rule=rule,
                rules=", ".join(CONSENSUS_RULES),
            )
        )
    no_majority_rule(no_majority)
    if pairwise and rule != "majority":
        raise CalibrationInputError(
            OptionText(
                "{consensus} {rule} needs scores; pairwise preferences use {consensus} majority",
                rule=rule,
            )
        )


def consensus(
    matrix: np.ndarray,
    rule: ConsensusRule,
    *,
    no_majority: NoMajorityRule = "tie",
    pairwise: bool = False,
) -> np.ndarray:
    """Consensus per unit of a raters × units matrix; NaN where a unit has none.

    ``mean`` / ``median`` of the unit's values; ``majority``: the value held by more than half of
    the unit's raters. Without a majority a pairwise unit becomes ``tie`` (``no_majority="tie"``)
    or gets no reference (``"drop"``); a pointwise unit without a majority gets no reference.
    """
    data = np.atleast_2d(np.asarray(matrix, dtype=np.float64))
    present = ~np.isnan(data)
    count = present.sum(axis=0)
    result = np.full(data.shape[1], np.nan)
    rated = count > 0
    if rule == "mean":
        result[rated] = np.nanmean(data[:, rated], axis=0)
    elif rule == "median":
        result[rated] = np.nanmedian(data[:, rated], axis=0)
    elif rule == "majority":
        result = _majority(data, present, count)
        if pairwise and no_majority == "tie":
            result = np.where(rated & np.isnan(result), TIE_CODE, result)
    else:
        check_consensus(rule, no_majority, pairwise=pairwise)
    return result


def _majority(data: np.ndarray, present: np.ndarray, count: np.ndarray) -> np.ndarray:
    result = np.full(data.shape[1], np.nan)
    values = np.unique(data[present])
    for value in values:
        holders = (present & (data == value)).sum(axis=0)
        result = np.where(holders * 2 > count, value, result)
    return result


def with_overrides(reference: np.ndarray, overrides: np.ndarray) -> np.ndarray:
    """The reference with adjudicated values (non-NaN entries of ``overrides``) in place."""
    return np.where(np.isnan(overrides), reference, overrides)
