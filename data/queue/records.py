"""What the queue hands out and the errors it raises: records the pages show, nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from schemas.protocols import Protocol


class QueueError(ValueError):
    """A queue operation that cannot be done, with what to do instead."""


class AssignmentNotFound(QueueError):
    """No such assignment or annotation for this annotator (other people's are never shown)."""


class AnswerInvalid(QueueError):
    """A score, preference or rationale the campaign does not accept."""


class LeaseLost(QueueError):
    """The lease expired and its slot went to someone else; the draft is kept."""


class CampaignNotOpen(QueueError):
    """The campaign is paused or closed."""


class AccountDisabled(QueueError):
    """The annotator's account is unknown or disabled: nothing is stored, leased or given back."""


class AnnotatorHeld(QueueError):
    """The annotator may get no unit of this campaign: held (qualification not passed, or by an
    admin) or retired. ``str(error)`` is the plain-words message the annotation page shows."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class GoldFeedback:
    """After an answer to a gold unit, in a campaign with feedback on: the expected answer
    (a preference in the order the annotator saw) and its explanation. Never built with
    feedback off, so nothing of it reaches the page then."""

    expected_score: float | None
    expected_preference_shown: str | None
    explanation: str
    agrees: bool
    """the answer counts as right (pointwise: within one scale step; pairwise: the same)"""
    exact: bool
    """the answer is the expected one itself"""


@dataclass(frozen=True)
class ResponseView:
    """One response as the annotator sees it; ``label`` is A/B in pairwise, else None."""

    response_id: str
    content: Any
    label: str | None


@dataclass(frozen=True)
class DraftView:
    """The annotator's own unsubmitted answer (preference in the order shown)."""

    score: float | None
    preference: str | None
    rationale: str
    active_seconds: float
    updated_at: datetime | None = field(default=None, compare=False)
    """When it was typed (UTC), so that the page can tell it from an older or newer copy that
    the browser kept; None where unknown."""


@dataclass(frozen=True)
class UnitView:
    """Everything the annotation page may show for one leased unit, and nothing else."""

    assignment_id: int
    unit_id: int
    campaign_id: int
    campaign_name: str
    protocol: Protocol
    rationale_min: int
    instructions: str
    item_id: str
    benchmark: str
    task: str | None
    category: str | None
    history: list[Any]
    question: Any
    reference: Any | None
    responses: tuple[ResponseView, ...]
    shown_order: str
    expires_at: datetime
    draft: DraftView | None
    answered_revision: int | None = None
    """Set when this assignment is already submitted (from another tab, say) and the page asked
    for it again (:func:`data.queue.assignment_view`): the revision of the live answer, so that
    the page can say that a different answer sent now is stored as the next revision."""


@dataclass(frozen=True)
class MyAnnotation:
    """One of the annotator's own live answers (preference in the order they saw)."""

    annotation_id: int
    unit_id: int
    item_id: str
    task: str | None
    score: float | None
    preference_shown: str | None
    rationale: str
    seconds: float
    revision: int
    created_at: datetime
    campaign: str
    """the campaign's name"""
    unit_kind: Literal["response", "pair"]
    unit_ordinal: int
    """which of the item's units this was for the annotator (1-based, in the order they got
    them), so that two answers on the same item (two models' responses, or two pairs) can be
    told apart without naming the models"""
    item_units: int
    """how many units the item has in the campaign"""

    @property
    def unit_label(self) -> str:
        """e.g. ``response 2 of 4`` (``pair 1 of 6`` in pairwise campaigns)."""
        return f"{self.unit_kind} {self.unit_ordinal} of {self.item_units}"


@dataclass(frozen=True)
class OtherAnswer:
    """Another human's answer, shown only after one's own submit when the campaign allows it."""

    score: float | None
    preference_shown: str | None
    rationale: str


@dataclass(frozen=True)
class AnnotatorProgress:
    """Where one annotator and the campaign stand."""

    my_submitted: int
    """Answers that count (a rejected one does not, until its revision is accepted)."""
    my_skipped: int
    units_total: int
    units_complete: int
    units_flagged: int
    my_rejected: int = 0
    """Answers a reviewer rejected (their revisions waiting for review among them)."""


@dataclass(frozen=True)
class UnitProgress:
    """Where an annotator stands in a campaign, and which response of its item a unit is.

    ``item_units``: the campaign's units of the unit's item (one per response, or per pair);
    ``item_position``: this unit's place among those the annotator has had, in the order they
    got them (1 for the first) — counted by the annotator, never by model, so it stays blind.
    """

    units_total: int
    my_submitted: int
    item_units: int
    item_position: int


@dataclass(frozen=True)
class SubmitStep:
    """What :func:`submit_and_next` did: the answer stored, and the unit to show next."""

    annotation_id: int
    unit_id: int
    campaign_id: int
    next_unit: UnitView | None
    revision: int = 1
    """Above 1 when the unit was already answered (e.g. in another tab): this answer was stored
    as a new revision and the earlier one is kept."""
    feedback: GoldFeedback | None = None
    """The expected answer, when the unit answered was gold and the campaign gives feedback;
    None otherwise (with feedback off, for every unit alike)."""
