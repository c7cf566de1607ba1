"""What an annotator is shown for a lease: the unit's item and response(s) in the shown order,
with the draft, read in one Core query (:class:`data.queue.records.UnitView`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam
from sqlalchemy import select as core_select
from sqlmodel import Session

from data.queue.records import DraftView, ResponseView, UnitView
from data.storage.campaign_lookup import campaign_protocol
from schemas.core import stored_id
from schemas.core_tables import ITEMS, PAIRS, RESPONSES, UNITS
from schemas.tables import Assignment, Draft


@dataclass(frozen=True)
class LeaseFacts:
    """What the unit view needs of a lease."""

    id: int
    unit_id: int
    shown_order: str
    expires_at: datetime

    @classmethod
    def of(cls, assignment: Assignment) -> LeaseFacts:
        return cls(
            stored_id(assignment),
            assignment.unit_id,
            assignment.shown_order,
            assignment.expires_at,
        )


_R_FIRST, _R_SECOND, _R_SINGLE = RESPONSES.alias(), RESPONSES.alias(), RESPONSES.alias()

_CORE_UNIT_CONTENT = (
    core_select(
        UNITS.c.id,
        ITEMS.c.item_id,
        ITEMS.c.benchmark,
        ITEMS.c.task,
        ITEMS.c.category,
        ITEMS.c.history,
        ITEMS.c.question,
        ITEMS.c.reference,
        _R_FIRST.c.response_id.label("a_id"),
        _R_FIRST.c.content.label("a_content"),
        _R_SECOND.c.response_id.label("b_id"),
        _R_SECOND.c.content.label("b_content"),
        _R_SINGLE.c.response_id.label("single_id"),
        _R_SINGLE.c.content.label("single_content"),
    )
    .select_from(UNITS)
    .join(ITEMS, ITEMS.c.id == UNITS.c.item_pk)
    .outerjoin(PAIRS, PAIRS.c.id == UNITS.c.pair_pk)
    .outerjoin(_R_FIRST, _R_FIRST.c.id == PAIRS.c.response_a_pk)
    .outerjoin(_R_SECOND, _R_SECOND.c.id == PAIRS.c.response_b_pk)
    .outerjoin(_R_SINGLE, _R_SINGLE.c.id == UNITS.c.response_pk)
    .where(UNITS.c.id == bindparam("unit_id"))
)
"""Item and response(s) of one unit in one Core query (no ORM objects to build)."""


def view_of_unit(
    session: Session, campaign: Any, assignment: LeaseFacts, draft: Draft | None
) -> UnitView:
    """The unit of ``assignment`` as its annotator sees it: the item, the response(s) in the order
    shown, and ``draft``'s saved values."""
    item = session.connection().execute(_CORE_UNIT_CONTENT, {"unit_id": assignment.unit_id}).one()
    unit_id = item.id
    responses: tuple[ResponseView, ...]
    if item.single_id is None:
        assert item.a_id is not None and item.b_id is not None
        first, second = (item.a_id, item.a_content), (item.b_id, item.b_content)
        shown = (first, second) if assignment.shown_order == "AB" else (second, first)
        responses = (ResponseView(*shown[0], "A"), ResponseView(*shown[1], "B"))
    else:
        responses = (ResponseView(item.single_id, item.single_content, None),)
    return UnitView(
        assignment_id=assignment.id,
        unit_id=unit_id,
        campaign_id=campaign.id,
        campaign_name=campaign.name,
        protocol=campaign_protocol(campaign),
        rationale_min=campaign.rationale_min,
        instructions=campaign.instructions,
        item_id=item.item_id,
        benchmark=item.benchmark,
        task=item.task,
        category=item.category,
        history=list(item.history or []),
        question=item.question,
        reference=item.reference if campaign.show_reference else None,
        responses=responses,
        shown_order=assignment.shown_order,
        expires_at=assignment.expires_at,
        draft=None
        if draft is None
        else DraftView(
            draft.score,
            draft.preference,
            draft.rationale,
            draft.active_seconds,
            draft.updated_at,
        ),
    )
