"""Disagreement review as data: the default cause taxonomy and the tag record calibration reads.

A reviewer tags *why* a judge's verdict differs from the human reference on one unit
(PROTOCOLS.md "Disagreement review"); :mod:`data.services.disagreements` stores the tags and
:mod:`calibration.disagreement_tags` summarises them per judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
