"""When a judge disagrees with the human reference: the one rule behind the report's "Largest
disagreements" (:mod:`calibration.details`) and the *Disagreements* page's queue
(:mod:`data.services.disagreements`, fed by :mod:`annotate_app.disagreement_review`).

A unit is a disagreement of judge J when it has a reference label (adjudication, else the
humans' consensus: :mod:`calibration.reference`), at least one parsed verdict of J, and

* pointwise: ``gap = |mean of J's parsed scores (samples and shown orders) − reference|`` is at
  least the threshold (default 20% of the scale's width; compared with a tolerance of 1e-9, so
  that a mean stored as 7.6000000000000005 still meets 1.8 from 9.4);
* pairwise: ``gap`` = the share of J's parsed verdicts (canonical order, over shown orders and
  samples) that differ from the reference label is at least one half. Every verdict counts, not
  the first one read: a judge that answers A in one shown order and B in the other (position
  bias) disagrees with gap 0.5 whatever the reference.

Unparsed outputs give no verdict (they are counted in the report's parse status instead).
Disagreements are ordered by gap, largest first, then by unit key. METRICS.md "Disagreement".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibration.errors import CalibrationInputError
from calibration.pairwise import LABELS
from calibration.units import UnitData
from schemas.disagreements import JudgeDisagreement, default_threshold
from schemas.option_text import OptionText
from schemas.protocols import Protocol

TOLERANCE = 1e-9
"""Slack on the pointwise threshold, for means that floating point puts a hair below it."""
PAIRWISE_SHARE = 0.5
"""Pairwise: the share of a judge's verdicts that must differ from the reference."""


def disagreement_threshold(protocol: Protocol, threshold: float | None) -> float | None:
    """``threshold`` checked for ``protocol`` (None: the default); pairwise always None.

    Raises :class:`CalibrationInputError` for a pointwise threshold outside (0, scale width] or
    any threshold on a pairwise protocol.
    """
    if threshold is None:
        return default_threshold(protocol)
    if not protocol.is_pointwise:
        raise CalibrationInputError(
            OptionText(
                "{disagreement_threshold} does not apply to pairwise judgements (a judge either "
                "agrees with the reference label or not): leave it out"
            )
        )
    width = protocol.scale_range
    if not 0 < threshold <= width:
        raise CalibrationInputError(
            OptionText(
                "{disagreement_threshold} {value} must be more than 0 and at most the scale's "
                "width ({width} for {scale})",
                value=f"{threshold:g}",
                width=f"{width:g}",
                scale=protocol.describe_scale(),
            )
        )
    return threshold


def disagreement_rule_text(judge: str, threshold: float | None) -> str:
    """The rule in words, as the report and the *Disagreements* page state it (``threshold``:
    the checked pointwise threshold, None for pairwise)."""
    if threshold is not None:
        return f"|{judge} − reference| ≥ {threshold:g}"
    return f"at least half of {judge}'s verdicts differ from the reference label"


def judge_disagreements(
    data: UnitData, judge: str, *, threshold: float | None = None
) -> list[JudgeDisagreement]:
    """Every disagreement of ``judge`` with ``data``'s reference, largest gap first, then by unit
    key (the module's rule). ``threshold``: pointwise, the smallest gap that counts (None: 20%
    of the scale's width); pairwise it must be None."""
    threshold = disagreement_threshold(data.protocol, threshold)
    rows = data.judge_rows(judge)
    parsed = rows[rows["code"].notna()]
    unit_index = parsed["unit_index"].to_numpy()
    codes = parsed["code"].to_numpy(dtype=np.float64)
    reference = data.reference[unit_index]
    has_reference = ~np.isnan(reference)
    unit_index, codes, reference = (
        unit_index[has_reference],
        codes[has_reference],
        reference[has_reference],
    )
    if data.protocol.is_pointwise:
        assert threshold is not None
        means = pd.Series(codes).groupby(unit_index).mean()
        units = means.index.to_numpy()
        gaps = np.abs(means.to_numpy() - data.reference[units])
        chosen = gaps >= threshold - TOLERANCE
        found = [
            JudgeDisagreement(
                str(data.units[unit]),
                judge,
                f"{mean:.4g}",
                f"{data.reference[unit]:.4g}",
                float(gap),
            )
            for unit, mean, gap in zip(
                units[chosen], means.to_numpy()[chosen], gaps[chosen], strict=True
            )
        ]
    else:
        differ = pd.Series(codes != reference).groupby(unit_index).mean()
        units = differ.index.to_numpy()
        chosen = differ.to_numpy() >= PAIRWISE_SHARE
        counts = pd.crosstab(unit_index, codes.astype(int)).reindex(
            columns=range(len(LABELS)), fill_value=0
        )
        found = [
            JudgeDisagreement(
                str(data.units[unit]),
                judge,
                _shown_verdicts(counts.loc[unit].to_numpy()),
                LABELS[int(data.reference[unit])],
                float(gap),
            )
            for unit, gap in zip(units[chosen], differ.to_numpy()[chosen], strict=True)
        ]
    return sorted(found, key=lambda entry: (-entry.gap, entry.unit_key))


def _shown_verdicts(counts: np.ndarray) -> str:
    """A unit's verdicts: the label when they all agree, else e.g. ``A×1 B×1``."""
    given = [(label, int(count)) for label, count in zip(LABELS, counts, strict=True) if count]
    if len(given) == 1:
        return given[0][0]
    return " ".join(f"{label}×{count}" for label, count in given)
