"""Giving a leased unit back: skip it (it goes to others) or report it broken (it leaves the
queue for the reviewers). Either frees the unit's slot and drops the draft."""

from __future__ import annotations

from sqlalchemy import update
from sqlmodel import Session, col

from data.queue.common import change_slots, own_assignment, own_draft
from data.queue.records import AnswerInvalid
from data.storage.audit import record_event
from schemas.tables import Assignment, Flag, Unit, utcnow


def skip(session: Session, assignment_id: int, annotator_id: int, reason: str) -> None:
    """Give the unit back for others, with a reason; this annotator will not get it again."""
    if not reason.strip():
        raise AnswerInvalid("say why you skip this unit (e.g. 'outside my expertise')")
    assignment = own_assignment(session, assignment_id, annotator_id, lock=True)
    _release(session, assignment, "skipped", reason.strip())
    record_event(
        session,
        actor_id=annotator_id,
        action="unit.skip",
        entity="unit",
        entity_id=assignment.unit_id,
        detail={"reason": reason.strip(), "campaign_id": assignment.campaign_id},
    )


def flag(session: Session, assignment_id: int, annotator_id: int, reason: str) -> Flag:
    """Report the unit as broken: it leaves the queue and goes to the reviewers."""
    if not reason.strip():
        raise AnswerInvalid("say what is broken (e.g. 'image does not load')")
    assignment = own_assignment(session, assignment_id, annotator_id, lock=True)
    _release(session, assignment, "released", f"flagged: {reason.strip()}")
    flag_row = Flag(
        campaign_id=assignment.campaign_id,
        unit_id=assignment.unit_id,
        user_id=annotator_id,
        reason=reason.strip(),
    )
    session.add(flag_row)
    session.execute(update(Unit).where(col(Unit.id) == assignment.unit_id).values(flagged=True))
    session.flush()
    record_event(
        session,
        actor_id=annotator_id,
        action="unit.flag",
        entity="unit",
        entity_id=assignment.unit_id,
        detail={"reason": reason.strip(), "flag_id": flag_row.id},
    )
    return flag_row


def _release(session: Session, assignment: Assignment, status: str, reason: str) -> None:
    if assignment.status == "submitted":
        raise AnswerInvalid("this unit is already answered; edit it from 'My work' instead")
    was_live = assignment.status == "leased"
    assignment.status, assignment.skip_reason, assignment.closed_at = status, reason, utcnow()
    session.add(assignment)
    if was_live:
        change_slots(session, assignment.unit_id, -1)
    draft = own_draft(session, assignment.unit_id, assignment.annotator_id)
    if draft is not None:
        session.delete(draft)
    session.flush()
