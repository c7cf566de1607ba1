"""Reviewers' accept / reject of answers, for the CLI and the pages (issue 24, point 5).

One function per user action: :func:`reject_answer_as`, :func:`accept_answer_as`,
:func:`reopen_answer_as` (the queue rules are :mod:`data.queue.review`), and
:func:`annotator_answers_as`, the list of one annotator's current answers in a campaign with
where each stands, for the Monitor's per-annotator list and ``critiquelab answers list``. The
``_as`` functions check the acting user's role on the server first (reviewer or admin), as
:mod:`data.services.admin` does; every change is audited in the same transaction
(``answer.reject``, ``answer.accept``, ``answer.reopen``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from data.queue.review import (
    REVIEW_STATES,
    ReviewError,
    ReviewOutcome,
    accept_answer,
    reject_answer,
    reopen_answer,
    review_info,
)
from data.services.monitor import unit_infos
from data.services.roles import PermissionDenied, require_actor_role
from data.storage.campaign_lookup import get_campaign
from schemas.core import stored_id
from schemas.tables import Annotation, Unit, User

REVIEWER_ROLES: tuple[str, ...] = ("reviewer", "admin")


@dataclass(frozen=True)
class AnswerRow:
    """One annotator's current answer to a unit, with its review state."""

    annotation_id: int
    unit_id: int
    """the unit answered (:func:`data.services.adjudication.unit_review` shows it)"""
    unit_key: str
    item_id: str
    task: str | None
    score: float | None
    preference: str | None
    """canonical order (A = the pair's first response)"""
    rationale: str
    revision: int
    seconds: float
    created_at: datetime
    state: str
    """pending | accepted | rejected | resubmitted (:data:`~data.queue.review.REVIEW_STATES`)"""
    comment: str
    """the rejection's comment (rejected and resubmitted answers), else empty"""
    decided_by: str | None

    @property
    def value(self) -> str:
        """The answer as shown in lists: A / B / tie, or the score."""
        return self.preference if self.preference is not None else f"{self.score:g}"


def reject_answer_as(
    session: Session, actor_id: int | None, annotation_id: int, comment: str
) -> ReviewOutcome:
    """:func:`~data.queue.review.reject_answer` for a reviewer or admin."""
    require_actor_role(session, actor_id, *REVIEWER_ROLES)
    return reject_answer(session, annotation_id, comment=comment, actor_id=actor_id)


def accept_answer_as(session: Session, actor_id: int | None, annotation_id: int) -> ReviewOutcome:
    """:func:`~data.queue.review.accept_answer` for a reviewer or admin."""
    require_actor_role(session, actor_id, *REVIEWER_ROLES)
    return accept_answer(session, annotation_id, actor_id=actor_id)


def reopen_answer_as(session: Session, actor_id: int | None, annotation_id: int) -> ReviewOutcome:
    """:func:`~data.queue.review.reopen_answer` for a reviewer or admin."""
    require_actor_role(session, actor_id, *REVIEWER_ROLES)
    return reopen_answer(session, annotation_id, actor_id=actor_id)


def reviewer_id(session: Session, name: str | None) -> int | None:
    """The id of the reviewer or admin called ``name`` (the CLI's ``--by``); None for none."""
    if name is None:
        return None
    user = session.exec(select(User).where(User.name == name)).first()
    if user is None:
        raise ReviewError(f"no account called {name!r}: see critiquelab users list")
    try:
        require_actor_role(session, user.id, *REVIEWER_ROLES)
    except PermissionDenied as refusal:  # bad input on the command line: exit 2
        raise ReviewError(str(refusal)) from None
    return user.id


def annotator_answers(
    session: Session,
    campaign: str | int,
    annotator: str,
    *,
    states: tuple[str, ...] | None = None,
    limit: int = 200,
    offset: int = 0,
) -> list[AnswerRow]:
    """The annotator's current answers to the campaign's real units, newest first, with their
    review state (only ``states`` if given)."""
    unknown = [state for state in states or () if state not in REVIEW_STATES]
    if unknown:
        raise ReviewError(
            f"{unknown[0]!r} is not a review state; the states are: " + ", ".join(REVIEW_STATES)
        )
    found = get_campaign(session, campaign)
    user = session.exec(select(User).where(User.name == annotator)).first()
    if user is None:
        raise ReviewError(f"no account called {annotator!r}: see critiquelab users list")
    rows = list(
        session.exec(
            select(Annotation)
            .join(Unit, col(Unit.id) == col(Annotation.unit_id))
            .where(Annotation.campaign_id == found.id, Annotation.annotator_id == user.id)
            .where(col(Annotation.is_live), col(Unit.gold).is_(False))
            .order_by(col(Annotation.created_at).desc(), col(Annotation.id).desc())
        )
    )
    infos = review_info(session, [stored_id(a) for a in rows])
    if states:
        rows = [a for a in rows if infos[stored_id(a)].state in states]
    rows = rows[offset : offset + limit]
    units = unit_infos(session, stored_id(found), {a.unit_id for a in rows})
    result = []
    for a in rows:
        info, unit = infos[stored_id(a)], units[a.unit_id]
        result.append(
            AnswerRow(
                stored_id(a),
                a.unit_id,
                unit.unit_key,
                unit.item_id,
                unit.task,
                a.score,
                a.preference,
                a.rationale,
                a.revision,
                a.seconds,
                a.created_at,
                info.state,
                info.comment,
                info.decided_by,
            )
        )
    return result


def annotator_answers_as(
    session: Session,
    actor_id: int | None,
    campaign: str | int,
    annotator: str,
    *,
    states: tuple[str, ...] | None = None,
    limit: int = 200,
    offset: int = 0,
) -> list[AnswerRow]:
    """:func:`annotator_answers` for a reviewer or admin."""
    require_actor_role(session, actor_id, *REVIEWER_ROLES)
    return annotator_answers(
        session, campaign, annotator, states=states, limit=limit, offset=offset
    )
