"""Disagreement review as data: the default threshold and cause taxonomy, the disagreement
found on a unit, and the tag record calibration reads.

Which units are disagreements is one rule, :func:`calibration.disagreement.judge_disagreements`
(METRICS.md "Disagreement"): the report lists its largest ones and the *Disagreements* page
queues all of them. A reviewer tags *why* a judge's verdict differs from the human reference on
one unit (PROTOCOLS.md "Disagreement review"); :mod:`data.services.disagreements` stores the
tags and :mod:`calibration.disagreement_tags` summarises them per judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from schemas.protocols import Protocol

DEFAULT_TAXONOMY: tuple[str, ...] = (
    "hallucinated content",
    "missed visual detail",
    "too harsh",
    "too lenient",
    "ignored the rubric",
    "position bias",
    "output format",
    "human error",
    "other",
)
"""Causes offered when a campaign sets no taxonomy of its own."""
DEFAULT_THRESHOLD_SHARE = 0.2
"""Pointwise default threshold: this share of the scale's width (1–10 → 1.8 points)."""


def default_threshold(protocol: Protocol) -> float | None:
    """The disagreement threshold of a campaign or report that sets none: pointwise
    :data:`DEFAULT_THRESHOLD_SHARE` of the scale's width, pairwise None (no threshold)."""
    if not protocol.is_pointwise:
        return None
    return round(DEFAULT_THRESHOLD_SHARE * protocol.scale_range, 9)


@dataclass(frozen=True)
class JudgeDisagreement:
    """One unit where a judge's verdicts and the human reference differ
    (:func:`calibration.disagreement.judge_disagreements`)."""

    unit_key: str
    judge: str
    judge_value: str
    """What the judge said: the mean of its parsed scores (``%.4g``), its label, or a split
    such as ``A×1 B×1`` (pairwise, verdicts that differ between shown orders or samples)."""
    reference_value: str
    """The reference label: a score (``%.4g``) or A / B / tie."""
    gap: float
    """Pointwise |mean judge score − reference| in points; pairwise the share of the judge's
    parsed verdicts that differ from the reference label."""


@dataclass(frozen=True)
class TagRecord:
    """One live disagreement tag, as exported and summarised."""

    tag_id: int
    campaign: str
    unit_key: str
    item_id: str
    judge: str
    cause: str
    note: str
    judge_value: str
    """The judge's verdict the reviewer saw (a score as ``%g``, A / B / tie, or a split)."""
    reference_value: str
    """The human reference the reviewer saw."""
    gap: float
    """Pointwise |judge − reference|; pairwise the share of the judge's verdicts that differ."""
    reviewer: str
    created_at: datetime
