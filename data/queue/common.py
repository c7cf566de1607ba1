"""Shared pieces of the queue: table handles, campaign look-ups, answer checks, slot counters."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy import select as core_select
from sqlmodel import Session, col, select

from data.queue.records import AnswerInvalid, AssignmentNotFound
from data.services.campaigns import campaign_protocol, get_campaign
from schemas.core import core_table
from schemas.protocols import to_canonical, to_shown
from schemas.tables import Annotation, Assignment, Campaign, Draft, Item, Pair, Response, Unit

# The tables, for Core statements on the hot path (no ORM compile or object loading).
_ANNOTATIONS = core_table(Annotation)
_ASSIGNMENTS = core_table(Assignment)
_CAMPAIGNS = core_table(Campaign)
_DRAFTS = core_table(Draft)
_ITEMS = core_table(Item)
_PAIRS = core_table(Pair)
_RESPONSES = core_table(Response)
_UNITS = core_table(Unit)


_CAMPAIGN_ROW = core_select(_CAMPAIGNS).where(_CAMPAIGNS.c.id == bindparam("campaign_id"))


def _campaign_row(session: Session, campaign_id: int) -> Any:
    """The campaign for reading: the session's object if it has one, else a Core row.

    Same answer as :func:`data.services.campaigns.get_campaign` (which returns the identity map's
    object
    without a query when there is one), without the cost of loading an ORM object on the hot path.
    """
    loaded = session.identity_map.get((Campaign, (campaign_id,), None))
    if loaded is not None:
        return loaded
    row = session.connection().execute(_CAMPAIGN_ROW, {"campaign_id": campaign_id}).first()
    return get_campaign(session, campaign_id) if row is None else row  # None: its error


def _own_assignment(
    session: Session, assignment_id: int, annotator_id: int, *, lock: bool = False
) -> Assignment:
    query = select(Assignment).where(
        Assignment.id == assignment_id, Assignment.annotator_id == annotator_id
    )
    assignment = session.exec(query.with_for_update() if lock else query).first()
    if assignment is None:
        raise AssignmentNotFound(f"you hold no assignment with id {assignment_id}")
    return assignment


def _draft(session: Session, unit_id: int, annotator_id: int) -> Draft | None:
    return session.exec(
        select(Draft).where(Draft.unit_id == unit_id, Draft.annotator_id == annotator_id)
    ).first()


def _live_annotation(session: Session, unit_id: int, annotator_id: int) -> Annotation:
    return session.exec(
        select(Annotation).where(
            Annotation.unit_id == unit_id,
            Annotation.annotator_id == annotator_id,
            col(Annotation.is_live),
        )
    ).one()


def _validated(check: Any, value: Any) -> Any:
    try:
        return check(value)
    except ValueError as error:
        raise AnswerInvalid(str(error)) from None


def _check_answer(
    campaign: Campaign,
    shown_order: str,
    score: float | None,
    preference: str | None,
    rationale: str,
) -> tuple[float | None, str | None]:
    """Validate an answer; return (score, canonical preference)."""
    protocol = campaign_protocol(campaign)
    canonical = None
    if protocol.is_pointwise:
        if score is None:
            raise AnswerInvalid(f"choose a score ({protocol.describe_scale()})")
        score = _validated(protocol.validate_score, score)
    else:
        if preference is None:
            raise AnswerInvalid("choose A, B or tie")
        shown = _validated(protocol.validate_preference, preference)
        canonical = to_canonical(shown, swapped=shown_order == "BA")
        score = None
    length = len(rationale.strip())
    if length < campaign.rationale_min:
        raise AnswerInvalid(
            f"the rationale has {length} characters; this campaign needs at least "
            f"{campaign.rationale_min}: say why you chose this answer"
        )
    return score, canonical


def _shown(preference: str | None, shown_order: str | None) -> str | None:
    return None if preference is None else to_shown(preference, swapped=shown_order == "BA")


_CHANGE_SLOTS = (
    update(_UNITS)
    .where(_UNITS.c.id == bindparam("b_unit"))
    .values(slots_taken=_UNITS.c.slots_taken + bindparam("b_delta"))
)


def _change_slots(session: Session, unit_id: int, delta: int) -> None:
    session.flush()  # as the ORM-enabled update did (a no-op when clean)
    params = {"b_unit": unit_id, "b_delta": delta}
    session.connection().execute(_CHANGE_SLOTS, params)
