"""Why judges disagree with the humans: the reviewers' tags summarised.

:func:`summarise_tags` gives, per judge, how many tagged disagreements each cause explains, its
share with a Wilson score interval, and a few examples (METRICS.md "Disagreement causes"). Which
units are disagreements is :mod:`calibration.disagreement`'s rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from schemas.disagreements import TagRecord
from schemas.intervals import wilson_interval


@dataclass(frozen=True)
class CauseCount:
    """One cause of one judge's tagged disagreements."""

    cause: str
    count: int
    share: float
    """``count / tagged``; nan without tags."""
    low: float
    """Lower end of the Wilson interval of ``share``."""
    high: float
    examples: tuple[TagRecord, ...]
    """Up to ``examples`` tags of this cause, largest gap first."""


@dataclass(frozen=True)
class JudgeTags:
    """The tagged disagreements of one judge, by cause (the taxonomy's order, then others)."""

    judge: str
    tagged: int
    causes: tuple[CauseCount, ...]
    confidence: float


def summarise_tags(
    tags: Sequence[TagRecord],
    taxonomy: Sequence[str],
    *,
    examples: int = 2,
    confidence: float = 0.95,
) -> list[JudgeTags]:
    """Per judge (by name): each cause's count and share of the judge's live tags, with a Wilson
    interval over units (one live tag per unit and judge, so units are the trials).

    Causes outside ``taxonomy`` (the taxonomy changed after tagging) follow it, by name.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} must lie strictly between 0 and 1")
    result = []
    for judge in sorted({tag.judge for tag in tags}):
        mine = [tag for tag in tags if tag.judge == judge]
        extra = sorted({tag.cause for tag in mine} - set(taxonomy))
        causes = []
        for cause in [*taxonomy, *extra]:
            chosen = sorted(
                (tag for tag in mine if tag.cause == cause), key=lambda t: (-t.gap, t.unit_key)
            )
            low, high = wilson_interval(len(chosen), len(mine), confidence)
            causes.append(
                CauseCount(
                    cause,
                    len(chosen),
                    len(chosen) / len(mine),
                    low,
                    high,
                    tuple(chosen[:examples]),
                )
            )
        result.append(JudgeTags(judge, len(mine), tuple(causes), confidence))
    return result


def tags_table(summary: JudgeTags) -> pd.DataFrame:
    """One judge's causes as a display table: count, share and its interval (percent)."""
    return pd.DataFrame(
        {
            "cause": [c.cause for c in summary.causes],
            "tagged": [c.count for c in summary.causes],
            "share %": [round(100 * c.share, 1) for c in summary.causes],
            f"{summary.confidence:.0%} interval %": [
                f"{100 * c.low:.1f}–{100 * c.high:.1f}" for c in summary.causes
            ],
        }
    ).set_index("cause")
