"""Boundary records of the judge audits (cross-protocol consistency, bias and cost).

The data layer fills them from the database (:mod:`data.readmodels.judge_facts`); :mod:`calibration`
reads them without knowing where they came from.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ResponseFacts:
    """What the bias audit needs to know about one response."""

    response_id: str
    model: str
    """The evaluated model that wrote it (mapped to a family with ``--families``)."""
    length: int
    """Characters of its text segments (images do not count)."""
    has_list: bool
    """Some line is a list item: ``-``, ``*``, ``+``, ``•`` or ``1.`` / ``1)`` then a space."""


def response_lengths(facts: Iterable[ResponseFacts]) -> dict[str, int]:
    """Response id → characters: what the Annotators table's ``length`` figure compares within
    a pair."""
    return {fact.response_id: fact.length for fact in facts}


@dataclass(frozen=True)
class JudgementUsage:
    """What one stored model judgement cost: tokens and time, where they were recorded."""

    judge: str
    unit: str
    """The unit key (``r:<response_id>`` or ``p:<a>|<b>``)."""
    input_tokens: int | None
    """``usage.prompt_tokens`` (or ``usage.input_tokens``); None when not recorded."""
    output_tokens: int | None
    """``usage.completion_tokens`` (or ``usage.output_tokens``); None when not recorded."""
    latency_s: float | None
    """``meta.latency`` in seconds (as ``judgments import`` stores it); None when not recorded."""
    cached: bool
    """Answered from the judge cache (``meta.cached``): no tokens were paid for it."""
