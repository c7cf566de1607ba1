"""The reference label of each unit: adjudicated where it exists, else the humans' consensus.

Values travel as a raters × units float matrix (NaN = no judgement). Pairwise labels are coded
0 = A, 1 = B, 2 = tie (see :data:`calibration.pairwise.LABELS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from calibration.dawid_skene import dawid_skene
from calibration.errors import CalibrationInputError
from calibration.mace import mace
from calibration.scale import Scale
from schemas.option_text import OptionText
from schemas.protocols import Protocol

ConsensusRule = Literal["mean", "median", "majority"]
"""Per-unit rules: each unit's reference from its own judgements, every annotator alike."""
ModelRule = Literal["dawid-skene", "mace"]
"""Latent-class rules: one model of the whole campaign weighs each annotator by competence."""
ReferenceRule = Literal["mean", "median", "majority", "dawid-skene", "mace"]
NoMajorityRule = Literal["tie", "drop"]
CONSENSUS_RULES: tuple[str, ...] = get_args(ConsensusRule)
MODEL_RULES: tuple[str, ...] = get_args(ModelRule)
REFERENCE_RULES: tuple[str, ...] = get_args(ReferenceRule)
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


def check_consensus(rule: str, no_majority: str, *, pairwise: bool, discrete: bool = True) -> None:
    """Validate the reference options: preferences allow ``majority``, ``dawid-skene`` and
    ``mace``; scores ``mean``, ``median``, ``majority`` and (on a scale with points) ``mace``."""
    if rule not in REFERENCE_RULES:
        raise CalibrationInputError(
            OptionText(
                "{consensus} {rule!r} is not one of {rules}",
                rule=rule,
                rules=", ".join(REFERENCE_RULES),
            )
        )
    no_majority_rule(no_majority)
    if pairwise and rule in ("mean", "median"):
        raise CalibrationInputError(
            OptionText(
                "{consensus} {rule} needs scores; pairwise preferences use {consensus} majority, "
                "dawid-skene or mace",
                rule=rule,
            )
        )
    if not pairwise and rule == "dawid-skene":
        raise CalibrationInputError(
            OptionText(
                "{consensus} dawid-skene is for preferences (a confusion matrix over a score "
                "scale's points has too many cells to fit); scores use {consensus} mace",
            )
        )
    if not pairwise and rule == "mace" and not discrete:
        raise CalibrationInputError(
            OptionText(
                "{consensus} mace needs a scale with points (MIN:MAX:STEP); this scale is "
                "continuous: use {consensus} mean or median",
            )
        )


def reference_choices(protocol: Protocol) -> tuple[str, ...]:
    """The reference rules that apply to ``protocol``, its default first (the page's choices)."""
    if not protocol.is_pointwise:
        return ("majority", "dawid-skene", "mace")
    if protocol.step is None:
        return ("mean", "median", "majority")
    return ("mean", "median", "majority", "mace")


def default_rule(*, pairwise: bool) -> ConsensusRule:
    """Today's default reference: ``majority`` for preferences, ``mean`` for scores."""
    return "majority" if pairwise else "mean"


def per_unit_rule(rule: str, *, pairwise: bool) -> ConsensusRule:
    """``rule`` itself when it is a per-unit rule, else the protocol's default one: what the
    leave-one-out consensus of the others uses (a model is not refitted without each one)."""
    for known in get_args(ConsensusRule):
        if rule == known:
            return known
    return default_rule(pairwise=pairwise)


@dataclass(frozen=True)
class HumanReference:
    """The humans' reference per unit (NaN: none) and the weight each rater had in it."""

    values: np.ndarray
    weights: np.ndarray
    """Per rater (rows of the matrix): 1.0 under a per-unit rule; under ``dawid-skene`` the
    rater's expected accuracy Σ_c π_c e[c, c], under ``mace`` their θ (NaN: no answers)."""


def human_reference(
    matrix: np.ndarray,
    rule: ReferenceRule,
    *,
    no_majority: NoMajorityRule = "tie",
    pairwise: bool = False,
    scale: Scale | None = None,
) -> HumanReference:
    """The reference of a raters × units matrix under ``rule`` (METRICS.md, "Reference label").

    Per-unit rules as :func:`consensus`. ``dawid-skene`` (preferences): the most probable label
    of a Dawid–Skene fit (:mod:`calibration.dawid_skene`). ``mace``: for preferences the most
    probable label of a MACE fit (:mod:`calibration.mace`); for scores, MACE on the scale's
    points and the posterior mean Σ_t P(t | answers)·t, which minimises the expected squared
    error as the plain mean does.
    """
    data = np.atleast_2d(np.asarray(matrix, dtype=np.float64))
    n_raters = data.shape[0]
    if rule not in MODEL_RULES:
        check_consensus(rule, no_majority, pairwise=pairwise)
        values = consensus(
            data, per_unit_rule(rule, pairwise=pairwise), no_majority=no_majority, pairwise=pairwise
        )
        return HumanReference(values, np.ones(n_raters))
    check_consensus(
        rule, no_majority, pairwise=pairwise, discrete=scale is None or scale.is_discrete
    )
    if pairwise:
        codes, n_classes = data, 3
    elif scale is not None and scale.is_discrete:
        codes = np.where(np.isnan(data), np.nan, scale.point_index(np.nan_to_num(data)))
        n_classes = scale.n_points
    else:
        raise CalibrationInputError(f"the {rule} reference of scores needs their scale")
    if rule == "dawid-skene":
        fit = dawid_skene(codes, n_classes)
        return HumanReference(fit.labels, fit.competence)
    fitted = mace(codes, n_classes)
    if pairwise:
        return HumanReference(fitted.labels, fitted.competence)
    assert scale is not None
    return HumanReference(fitted.posteriors @ scale.points(), fitted.competence)


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
        raise CalibrationInputError(
            f"{rule} is a model of the whole campaign, not a per-unit consensus: "
            "use human_reference"
        )
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
