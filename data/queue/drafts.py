"""Drafts: the answer an annotator has typed but not submitted, saved as they type.

Kept apart from :mod:`~data.queue.answers` because a draft never changes what is answered: it is
one row per unit and annotator, written often (every pause in typing), and only while the
assignment is open. A submit drops it in the same transaction (:mod:`~data.queue.answers`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypedDict

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from data.queue.common import own_assignment, own_draft, validated
from data.queue.records import DraftView
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from schemas.tables import Draft, utcnow


class _DraftValues(TypedDict):
    """The columns of a :class:`~schemas.tables.Draft` that a save writes."""

    score: float | None
    preference: str | None
    rationale: str
    active_seconds: float
    updated_at: datetime


def save_draft(
    session: Session,
    assignment_id: int,
    annotator_id: int,
    *,
    score: float | None = None,
    preference: str | None = None,
    rationale: str = "",
    active_seconds: float = 0.0,
    edited_at: datetime | None = None,
) -> DraftView | None:
    """Store the unsubmitted answer (preference as shown); restored by
    :func:`~data.queue.leases.next_unit`.

    ``edited_at``: when it was typed (UTC), if the caller knows (the page's browser copy does);
    else now. A draft that arrives late stays dated by its typing, so the newest text wins: one
    typed before the stored draft was (another tab's or device's) is ignored, and the stored one
    is returned. A late draft of an assignment that is already submitted, skipped or released
    is ignored (None): it must not resurrect a closed unit. For a submitted one (answered in
    another tab) the caller keeps the text itself; submitting it stores a revision.
    """
    assignment = own_assignment(session, assignment_id, annotator_id)
    if assignment.status not in ("leased", "expired"):
        return None
    protocol = campaign_protocol(get_campaign(session, assignment.campaign_id))
    if score is not None:
        score = validated(protocol.validate_score, score)
    if preference is not None:
        preference = validated(protocol.validate_preference, preference)
    values = _DraftValues(
        score=score,
        preference=preference,
        rationale=rationale,
        active_seconds=max(float(active_seconds), 0.0),
        updated_at=edited_at or utcnow(),
    )
    draft = own_draft(session, assignment.unit_id, annotator_id)
    if draft is None:
        try:
            with session.begin_nested():
                session.add(Draft(unit_id=assignment.unit_id, annotator_id=annotator_id, **values))
        except IntegrityError:  # another tab created it at the same instant
            draft = own_draft(session, assignment.unit_id, annotator_id)
    if draft is not None:
        if edited_at is not None and _as_utc(draft.updated_at) > _as_utc(edited_at):
            return DraftView(
                draft.score,
                draft.preference,
                draft.rationale,
                draft.active_seconds,
                draft.updated_at,
            )
        for name, value in values.items():
            setattr(draft, name, value)
        session.add(draft)
    return DraftView(
        score, preference, rationale, float(values["active_seconds"]), values["updated_at"]
    )


def _as_utc(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes; every stored time is UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
