"""An item with its responses, as every reader of stored items sees it (no database objects).

The judge's prompt (:mod:`critic.prompts`), the Calibration page's unit viewer
(:func:`data.readmodels.frames.unit_content`) and the reviewers' pages (*Adjudicate*,
*Disagreements*: ``UnitReview.content`` of :mod:`data.services.adjudication`) read a
:class:`UnitContent`. The annotation page reads the blind :class:`data.queue.UnitView` instead,
on purpose: its responses are labelled A / B in the order shown to that annotator and carry no
model name, and the item's reference answer is left out unless the campaign shows it
(docs/ARCHITECTURE.md, *One record per unit's content*).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ItemContent:
    """An item: question, earlier turns, reference answer, task labels (FORMATS.md §1)."""

    item_id: str
    benchmark: str
    task: str | None
    category: str | None
    group: str | None
    history: list[dict[str, Any]]
    """Earlier turns ``[{role, content}]``; content is CONTENT."""
    question: Any
    """CONTENT: a string or a list of text / image segments."""
    reference: Any | None
    """CONTENT or None."""


@dataclass(frozen=True)
class ResponseContent:
    """One model answer (CONTENT: show it as text or safe markdown, never as raw HTML)."""

    response_id: str
    model: str
    content: Any
    """CONTENT."""
    response_pk: int | None = field(default=None, compare=False)
    """Its database key, where it was read from the database."""


@dataclass(frozen=True)
class UnitContent:
    """What a unit shows: its item and its response(s) — one (pointwise) or the pair in
    canonical order (pairwise) — named by its unit key (:mod:`schemas.ids`)."""

    unit_key: str
    item: ItemContent
    responses: tuple[ResponseContent, ...]
