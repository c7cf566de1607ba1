"""Reviewers' accept / reject of single answers, and undoing either (``reopen``).

The rules (PROTOCOLS.md, *Review of answers*):

* **reject** (a comment is required, for the annotator): the answer's assignment becomes
  ``rejected``, which is not a live status, so its overlap slot is free and the unit goes back to
  the queue for an annotator who never had it; K stays guaranteed by ``uq_assignment_live_slot``
  and ``ck_assignment_slot_in_overlap``. The answer leaves the human reference, the SFT export
  and the judge metrics, the Monitor's figures and the campaign's progress (they read only
  answers whose assignment is not rejected: :func:`data.services.counted_answers.not_rejected`).
  It stays the annotator's live answer: they see the comment in *My work* and may revise it.
* a **revision after a rejection** is a new answer waiting for review (``resubmitted``). It takes
  no slot and stays out of the reference until a reviewer accepts it.
* **accept** records that the answer was checked. Accepting a rejected or resubmitted answer
  puts it back on a free slot of its unit (its assignment ``submitted`` again, in the
  reference). If the freed slot was filled meanwhile (K answers or leases again), it is refused
  with :class:`ReviewConflict` and nothing changes: the database's slot rules refuse a (K+1)-th
  live assignment even under concurrency.
* **reopen** undoes the live decision of the answer (back to ``pending``): undoing a rejection
  puts the answer back on a free slot exactly as accepting does, refused the same way.

Decisions are rows of :class:`~schemas.tables.ReviewDecision`, never edited: a new decision or a
reopen revokes the live one. Each action is audited (``answer.reject``, ``answer.accept``,
``answer.reopen``) in the caller's transaction. Answers to gold units are not reviewed here (they
are graded against their known answer). Roles are checked by the ``_as`` functions of
:mod:`data.services.answer_review`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from data.queue.common import change_slots
from data.queue.records import QueueError
from data.storage.audit import record_event
from data.storage.campaign_lookup import get_campaign
from schemas.core import stored_id
from schemas.core_tables import UNITS
from schemas.tables import (
    LIVE_ASSIGNMENT_STATUSES,
    Annotation,
    Assignment,
    ReviewDecision,
    Unit,
    User,
    utcnow,
)

MAX_COMMENT = 4000
"""Characters of a reviewer's comment."""

REVIEW_STATES: tuple[str, ...] = ("pending", "accepted", "rejected", "resubmitted")
"""Where an annotator's current answer stands: not reviewed yet; accepted; rejected (out of the
reference, its slot given back); revised after a rejection and waiting for review (still out)."""


class ReviewError(QueueError):
    """A review action that cannot be taken, with what to do instead."""


class ReviewConflict(ReviewError):
    """Putting a rejected answer back would exceed the unit's K: its slot was taken again."""


@dataclass(frozen=True)
class ReviewOutcome:
    """What a review action did to one answer."""

    annotation_id: int
    unit_id: int
    campaign: str
    annotator: str
    revision: int
    action: str
    """reject | accept | reopen"""
    state: str
    """the answer's review state after the action (:data:`REVIEW_STATES`)"""
    in_reference: bool
    """whether the answer counts in the human reference now"""


@dataclass(frozen=True)
class ReviewInfo:
    """The review state of one current answer, for the annotator and the reviewers."""

    state: str
    """pending | accepted | rejected | resubmitted"""
    comment: str = ""
    """the reviewer's comment of the rejection (rejected and resubmitted answers)"""
    decided_by: str | None = None
    decided_at: datetime | None = None


def reject_answer(
    session: Session,
    annotation_id: int,
    *,
    comment: str,
    actor_id: int | None = None,
    now: datetime | None = None,
) -> ReviewOutcome:
    """Reject the answer with a comment for its annotator (see the module docstring)."""
    now = now or utcnow()
    text = (comment or "").strip()
    if not text:
        raise ReviewError(
            "a rejection needs a comment: tell the annotator what is wrong with the answer"
        )
    if len(text) > MAX_COMMENT:
        raise ReviewError(f"the comment has {len(text)} characters; at most {MAX_COMMENT}")
    annotation, assignment, live = _answer(session, annotation_id)
    if live is not None and live.decision == "reject":
        raise ReviewError(f"answer {annotation_id} is rejected already")
    before = _state(annotation, assignment, live)
    if assignment.status == "submitted":
        assignment.status, assignment.closed_at = "rejected", now
        session.add(assignment)
        session.flush()
        change_slots(session, assignment.unit_id, -1)
        _count_answers(session, assignment.unit_id, -1)
    elif assignment.status != "rejected":  # pragma: no cover - an answer's lease is closed
        raise ReviewError(f"answer {annotation_id} is not a submitted answer")
    _decide(session, annotation, live, "reject", text, actor_id, now)
    return _outcome(session, annotation, "reject", before, "rejected", False, text, actor_id)


def accept_answer(
    session: Session,
    annotation_id: int,
    *,
    actor_id: int | None = None,
    now: datetime | None = None,
) -> ReviewOutcome:
    """Accept the answer; a rejected or resubmitted one goes back on a free slot of its unit, or
    :class:`ReviewConflict` if there is none (see the module docstring)."""
    now = now or utcnow()
    annotation, assignment, live = _answer(session, annotation_id)
    if live is not None and live.decision == "accept":
        raise ReviewError(f"answer {annotation_id} is accepted already")
    before = _state(annotation, assignment, live)
    if assignment.status == "rejected":
        _reinstate(session, annotation, assignment, now)
    _decide(session, annotation, live, "accept", "", actor_id, now)
    return _outcome(session, annotation, "accept", before, "accepted", True, "", actor_id)


def reopen_answer(
    session: Session,
    annotation_id: int,
    *,
    actor_id: int | None = None,
    now: datetime | None = None,
) -> ReviewOutcome:
    """Undo the answer's live decision (back to pending). Undoing a rejection puts the answer
    back on a free slot of its unit, or raises :class:`ReviewConflict` if there is none."""
    now = now or utcnow()
    annotation, assignment, live = _answer(session, annotation_id)
    if live is None:
        raise ReviewError(
            f"answer {annotation_id} has no decision to undo: it is "
            f"{_state(annotation, assignment, live)}; accept or reject it"
        )
    before = _state(annotation, assignment, live)
    if assignment.status == "rejected":
        _reinstate(session, annotation, assignment, now)
    live.revoked_at, live.revoked_by = now, actor_id
    session.add(live)
    session.flush()
    return _outcome(session, annotation, "reopen", before, "pending", True, "", actor_id)


def review_info(session: Session, annotation_ids: list[int]) -> dict[int, ReviewInfo]:
    """The review state of each of these answers (current revisions), in two queries.

    A revision after a rejection is ``resubmitted`` and carries the rejection's comment, so that
    the annotator still sees why; a revision after an acceptance is ``pending`` again.
    """
    if not annotation_ids:
        return {}
    rows = session.exec(
        select(Annotation.id, Annotation.assignment_id, Assignment.status)
        .join(Assignment, col(Assignment.id) == col(Annotation.assignment_id))
        .where(col(Annotation.id).in_(annotation_ids))
    ).all()
    assignments = {assignment_id for _, assignment_id, _ in rows}
    decisions = session.exec(
        select(ReviewDecision, Annotation.assignment_id, User.name)
        .join(Annotation, col(Annotation.id) == col(ReviewDecision.annotation_id))
        .outerjoin(User, col(User.id) == col(ReviewDecision.decided_by))
        .where(col(Annotation.assignment_id).in_(assignments))
        .where(col(ReviewDecision.revoked_at).is_(None))
        .order_by(col(ReviewDecision.id).desc())
    ).all()
    latest: dict[int, tuple[ReviewDecision, str | None]] = {}
    for row, of_assignment, decider in decisions:
        if of_assignment is not None:
            latest.setdefault(of_assignment, (row, decider))
    result: dict[int, ReviewInfo] = {}
    for annotation_id, assignment_id, status in rows:
        assert annotation_id is not None and assignment_id is not None  # stored rows
        found = latest.get(assignment_id)
        decision: ReviewDecision | None = None if found is None else found[0]
        name: str | None = None if found is None else found[1]
        own = decision is not None and decision.annotation_id == annotation_id
        if status == "rejected":
            state = "rejected" if own else "resubmitted"
        else:
            state = "accepted" if own and decision is not None else "pending"
        shown = decision is not None and decision.decision == "reject" and status == "rejected"
        result[annotation_id] = ReviewInfo(
            state,
            decision.comment if shown and decision is not None else "",
            name if decision is not None and (own or shown) else None,
            decision.decided_at if decision is not None and (own or shown) else None,
        )
    return result


# --- internals ------------------------------------------------------------------------------


def _answer(
    session: Session, annotation_id: int
) -> tuple[Annotation, Assignment, ReviewDecision | None]:
    """The current answer, its assignment (both locked) and its live decision; ReviewError with
    what to do if it cannot be reviewed."""
    session.flush()
    annotation = session.exec(
        select(Annotation).where(Annotation.id == annotation_id).with_for_update()
    ).first()
    if annotation is None:
        raise ReviewError(f"there is no answer with id {annotation_id}")
    if not annotation.is_live:
        current = session.exec(
            select(Annotation.id).where(
                Annotation.unit_id == annotation.unit_id,
                Annotation.annotator_id == annotation.annotator_id,
                col(Annotation.is_live),
            )
        ).first()
        raise ReviewError(
            f"answer {annotation_id} was revised since (revision {annotation.revision}): "
            f"review the current one, answer {current}"
        )
    unit = session.get(Unit, annotation.unit_id)
    if unit is not None and unit.gold:
        raise ReviewError(
            f"answer {annotation_id} is to a gold unit: it is graded against the known answer, "
            "not reviewed"
        )
    assignment = (
        None
        if annotation.assignment_id is None
        else session.exec(
            select(Assignment).where(Assignment.id == annotation.assignment_id).with_for_update()
        ).first()
    )
    if assignment is None:
        raise ReviewError(f"answer {annotation_id} has no assignment: it cannot be reviewed")
    live = session.exec(
        select(ReviewDecision).where(
            ReviewDecision.annotation_id == annotation_id,
            col(ReviewDecision.revoked_at).is_(None),
        )
    ).first()
    return annotation, assignment, live


def _state(annotation: Annotation, assignment: Assignment, live: ReviewDecision | None) -> str:
    if assignment.status == "rejected":
        return "rejected" if live is not None and live.decision == "reject" else "resubmitted"
    return "accepted" if live is not None and live.decision == "accept" else "pending"


def _decide(
    session: Session,
    annotation: Annotation,
    live: ReviewDecision | None,
    decision: str,
    comment: str,
    actor_id: int | None,
    now: datetime,
) -> ReviewDecision:
    if live is not None:
        live.revoked_at, live.revoked_by = now, actor_id
        session.add(live)
        session.flush()  # the live one is revoked before the new one is: one live per answer
    row = ReviewDecision(
        campaign_id=annotation.campaign_id,
        annotation_id=stored_id(annotation),
        decision=decision,
        comment=comment,
        decided_by=actor_id,
        decided_at=now,
    )
    session.add(row)
    session.flush()
    return row


def _reinstate(
    session: Session, annotation: Annotation, assignment: Assignment, now: datetime
) -> None:
    """Put a rejected answer's assignment back on a free slot (``submitted``); ReviewConflict
    when the unit has K live assignments again. The unit's row is locked first, as a lease
    locks it, and the slot rules of the database have the last word (a savepoint)."""
    campaign = get_campaign(session, assignment.campaign_id)
    session.exec(select(Unit).where(Unit.id == assignment.unit_id).with_for_update()).first()
    taken = set(
        session.exec(
            select(Assignment.slot).where(
                Assignment.unit_id == assignment.unit_id,
                col(Assignment.status).in_(LIVE_ASSIGNMENT_STATUSES),
            )
        )
    )
    slot = next((s for s in range(campaign.overlap) if s not in taken), None)
    refusal = ReviewConflict(
        f"answer {annotation.id} cannot count again: another annotator took the slot it gave "
        f"back, and its unit has its K = {campaign.overlap} answers or leases; it stays "
        "rejected (reject another answer of the unit first to make room)"
    )
    if slot is None:
        raise refusal
    try:
        with session.begin_nested():
            assignment.status, assignment.slot, assignment.overlap = (
                "submitted",
                slot,
                (campaign.overlap),
            )
            assignment.closed_at = now
            session.add(assignment)
            session.flush()
    except IntegrityError:
        session.refresh(assignment)
        raise refusal from None
    change_slots(session, assignment.unit_id, +1)
    _count_answers(session, assignment.unit_id, +1)


_COUNT_ANSWERS = (
    update(UNITS)
    .where(UNITS.c.id == bindparam("b_unit"))
    .values(n_submitted=UNITS.c.n_submitted + bindparam("b_delta"))
)


def _count_answers(session: Session, unit_id: int, delta: int) -> None:
    session.connection().execute(_COUNT_ANSWERS, {"b_unit": unit_id, "b_delta": delta})


def _outcome(
    session: Session,
    annotation: Annotation,
    action: str,
    before: str,
    after: str,
    in_reference: bool,
    comment: str,
    actor_id: int | None,
) -> ReviewOutcome:
    campaign = get_campaign(session, annotation.campaign_id)
    annotator = session.get(User, annotation.annotator_id)
    name = annotator.name if annotator is not None else f"#{annotation.annotator_id}"
    detail: dict[str, object] = {
        "campaign": campaign.name,
        "unit_id": annotation.unit_id,
        "annotator": name,
        "revision": annotation.revision,
        "before": before,
        "after": after,
    }
    if comment:
        detail["comment"] = comment
    record_event(
        session,
        actor_id=actor_id,
        action=f"answer.{action}",
        entity="annotation",
        entity_id=stored_id(annotation),
        detail=detail,
    )
    return ReviewOutcome(
        stored_id(annotation),
        annotation.unit_id,
        campaign.name,
        name,
        annotation.revision,
        action,
        after,
        in_reference,
    )
