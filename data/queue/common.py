"""Shared pieces of the queue's modules: the annotator's own rows, answer checks, slot counters
(not part of :mod:`data.queue`'s public surface, which its ``__init__`` lists); campaigns are
found with :mod:`data.storage.campaign_lookup`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, update
from sqlmodel import Session, col, select

from data.queue.records import AccountDisabled, AnswerInvalid, AssignmentNotFound
from data.services.roles import PermissionDenied, require_actor_role
from data.storage.campaign_lookup import campaign_protocol
from schemas.core_tables import UNITS
from schemas.protocols import to_canonical, to_shown
from schemas.tables import ROLES, Annotation, Assignment, Campaign, Draft, User


def require_active_annotator(session: Session, annotator_id: int) -> None:
    """:class:`AccountDisabled` unless the account exists and is active: the services' role
    guard (:func:`~data.services.roles.require_actor_role`, any role may annotate), as a queue
    error the annotation pages show.

    Read on every change the queue makes for an annotator: a page open since before an admin
    disabled the account runs its widget callbacks before the page checks the login again, and
    must store nothing."""
    try:
        require_actor_role(session, annotator_id, *ROLES)
    except PermissionDenied as denied:
        raise AccountDisabled(f"{denied}; nothing was stored") from None


def own_assignment(
    session: Session, assignment_id: int, annotator_id: int, *, lock: bool = False
) -> Assignment:
    """The annotator's assignment (locked for update with ``lock``); AssignmentNotFound if it is
    not theirs or does not exist, AccountDisabled if their account is. One query: the account's
    state is read beside the assignment (drafts come here while the annotator types)."""
    query = (
        select(Assignment, User.active)
        .join(User, col(User.id) == col(Assignment.annotator_id))
        .where(Assignment.id == assignment_id, Assignment.annotator_id == annotator_id)
    )
    found = session.exec(query.with_for_update(of=Assignment) if lock else query).first()
    if found is None:
        require_active_annotator(session, annotator_id)  # an unknown account says so first
        raise AssignmentNotFound(f"you hold no assignment with id {assignment_id}")
    assignment, active = found
    if not active:
        require_active_annotator(session, annotator_id)  # raises, in the guard's words
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
