"""Shared pieces of the queue's modules: the annotator's own rows, answer checks, slot counters
(not part of :mod:`data.queue`'s public surface, which its ``__init__`` lists); campaigns are
found with :mod:`data.storage.campaign_lookup`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, update
from sqlmodel import Session, col, select

from data.queue.records import AccountDisabled, AnswerInvalid, AssignmentNotFound
from data.storage.campaign_lookup import campaign_protocol
from schemas.core_tables import UNITS
from schemas.protocols import to_canonical, to_shown
from schemas.tables import Annotation, Assignment, Campaign, Draft, User


def require_active_annotator(session: Session, annotator_id: int) -> None:
    """:class:`AccountDisabled` unless the account exists and is active.

    Read on every change the queue makes for an annotator, as the services' role guard reads the
    actor's role: a page open since before an admin disabled the account runs its widget
    callbacks before the page checks the login again, and must store nothing."""
    active = session.exec(select(User.active).where(User.id == annotator_id)).first()
    if not active:
        raise AccountDisabled(
            f"account #{annotator_id} is unknown or disabled: nothing was stored; log in again"
        )


def own_assignment(
    session: Session, assignment_id: int, annotator_id: int, *, lock: bool = False
) -> Assignment:
    """The annotator's assignment (locked for update with ``lock``); AssignmentNotFound if it is
    not theirs or does not exist, AccountDisabled if their account is (checked first)."""
    require_active_annotator(session, annotator_id)
    query = select(Assignment).where(
        Assignment.id == assignment_id, Assignment.annotator_id == annotator_id
    )
    assignment = session.exec(query.with_for_update() if lock else query).first()
    if assignment is None:
        raise AssignmentNotFound(f"you hold no assignment with id {assignment_id}")
    return assignment


def own_draft(session: Session, unit_id: int, annotator_id: int) -> Draft | None:
    """The annotator's saved draft of the unit, if any."""
    return session.exec(
        select(Draft).where(Draft.unit_id == unit_id, Draft.annotator_id == annotator_id)
    ).first()


def live_annotation(session: Session, unit_id: int, annotator_id: int) -> Annotation:
    """The annotator's live (latest) answer to the unit; it must exist."""
    return session.exec(
        select(Annotation).where(
            Annotation.unit_id == unit_id,
            Annotation.annotator_id == annotator_id,
            col(Annotation.is_live),
        )
    ).one()


def validated(check: Any, value: Any) -> Any:
    """``check(value)``, its ValueError raised as :class:`AnswerInvalid`."""
    try:
        return check(value)
    except ValueError as error:
        raise AnswerInvalid(str(error)) from None


def check_answer(
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
        score = validated(protocol.validate_score, score)
    else:
        if preference is None:
            raise AnswerInvalid("choose A, B or tie")
        shown = validated(protocol.validate_preference, preference)
        canonical = to_canonical(shown, swapped=shown_order == "BA")
        score = None
    length = len(rationale.strip())
    if length < campaign.rationale_min:
        raise AnswerInvalid(
            f"the rationale has {length} characters; this campaign needs at least "
            f"{campaign.rationale_min}: say why you chose this answer"
        )
    return score, canonical


def shown_preference(preference: str | None, shown_order: str | None) -> str | None:
    """A canonical preference as the annotator saw it (A and B swapped when shown ``BA``)."""
    return None if preference is None else to_shown(preference, swapped=shown_order == "BA")


_CHANGE_SLOTS = (
    update(UNITS)
    .where(UNITS.c.id == bindparam("b_unit"))
    .values(slots_taken=UNITS.c.slots_taken + bindparam("b_delta"))
)


def change_slots(session: Session, unit_id: int, delta: int) -> None:
    """Add ``delta`` to the unit's ``slots_taken`` (its live assignments, leased or submitted)."""
    session.flush()  # as the ORM-enabled update did (a no-op when clean)
    params = {"b_unit": unit_id, "b_delta": delta}
    session.connection().execute(_CHANGE_SLOTS, params)
