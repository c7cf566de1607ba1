"""The annotation queue: who annotates which unit next, drafts, submits, skips, flags, edits.

Assignment is least-annotated-first: an annotator gets the unit of the campaign with the fewest
live assignments (leased or submitted) that they have never been given. A lease occupies one of
the unit's ``overlap`` slots; the database guarantees the rules under concurrency (see
:mod:`schemas.tables`): ``uq_assignment_unit_annotator`` (never twice to one annotator),
``uq_assignment_live_slot`` + ``ck_assignment_slot_in_overlap`` (never more than K live). A
conflicting insert is caught and retried on another unit. On PostgreSQL candidate units are
locked with ``FOR UPDATE SKIP LOCKED`` so concurrent annotators spread over different units; on
SQLite every transaction is ``BEGIN IMMEDIATE`` and so already serial.

Leases expire after ``Campaign.lease_seconds``; expired slots go back to the pool. What an
annotator may see is exactly a :class:`UnitView`: the item, the response(s) in their shown order,
the rubric settings and their own draft — never another human's answer or a judge's output.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, exists, func, insert, text, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import make_transient_to_detached
from sqlmodel import Session, col, select

from data.audit import record_event
from schemas.protocols import Protocol, get_protocol, to_canonical, to_shown
from schemas.tables import (
    LIVE_ASSIGNMENT_STATUSES,
    Annotation,
    Assignment,
    Campaign,
    Draft,
    Flag,
    Item,
    Pair,
    Response,
    Unit,
    utcnow,
)

_MAX_TRIES = 50

# The tables, for Core statements on the hot path (no ORM compile or object loading).
_ANNOTATIONS = Annotation.__table__  # type: ignore[attr-defined]
_ASSIGNMENTS = Assignment.__table__  # type: ignore[attr-defined]
_CAMPAIGNS = Campaign.__table__  # type: ignore[attr-defined]
_DRAFTS = Draft.__table__  # type: ignore[attr-defined]
_ITEMS = Item.__table__  # type: ignore[attr-defined]
_PAIRS = Pair.__table__  # type: ignore[attr-defined]
_RESPONSES = Response.__table__  # type: ignore[attr-defined]
_UNITS = Unit.__table__  # type: ignore[attr-defined]


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
    my_skipped: int
    units_total: int
    units_complete: int
    units_flagged: int


def campaign_protocol(campaign: Campaign) -> Protocol:
    """The protocol of ``campaign`` with its own scale for ``score`` campaigns."""
    return get_protocol(
        campaign.protocol,
        scale_min=campaign.scale_min,
        scale_max=campaign.scale_max,
        step=campaign.scale_step,
    )


def open_campaigns(session: Session) -> list[Campaign]:
    """Campaigns an annotator can pick (active or paused), by name."""
    query = select(Campaign).where(col(Campaign.status).in_(("active", "paused")))
    return list(session.exec(query.order_by(Campaign.name)))


def my_campaigns(session: Session, annotator_id: int) -> list[Campaign]:
    """Campaigns the annotator has worked in or can work in now, by name."""
    worked = select(Assignment.campaign_id).where(Assignment.annotator_id == annotator_id)
    query = select(Campaign).where(
        col(Campaign.id).in_(worked) | col(Campaign.status).in_(("active", "paused"))
    )
    return list(session.exec(query.order_by(Campaign.name)))


_OWN_OPEN_ASSIGNMENTS = (
    select(Assignment, Draft)
    .outerjoin(
        Draft,
        (col(Draft.unit_id) == Assignment.unit_id)
        & (col(Draft.annotator_id) == bindparam("annotator_id")),
    )
    .where(
        Assignment.campaign_id == bindparam("campaign_id"),
        Assignment.annotator_id == bindparam("annotator_id"),
    )
    .where(
        (col(Assignment.status) == "leased")
        | ((col(Assignment.status) == "expired") & col(Draft.id).is_not(None))
    )
    .order_by(col(Assignment.status).desc(), col(Assignment.leased_at))
)
"""The annotator's live lease, then expired ones that hold a draft (statement built once)."""


def next_unit(
    session: Session, campaign_id: int, annotator_id: int, now: datetime | None = None
) -> UnitView | None:
    """The annotator's current lease, or a new one on the least-annotated unit; None when done.

    A paused or closed campaign gives no unit. An own lease that expired is renewed if its slot is
    still free, so a draft is not lost over a long break.
    """
    now = now or utcnow()
    session.flush()  # what the ORM statements below used to autoflush (a no-op when clean)
    return _next_unit(session, _campaign_row(session, campaign_id), annotator_id, now)


def _next_unit(
    session: Session, campaign: Any, annotator_id: int, now: datetime
) -> UnitView | None:
    """:func:`next_unit` for a campaign already read (an ORM object or a Core row)."""
    if campaign.status != "active":
        return None
    campaign_id = campaign.id
    expire_leases(session, campaign_id, now)
    params = {"campaign_id": campaign_id, "annotator_id": annotator_id}
    if session.connection().execute(_HAS_OWN_OPEN, params).first() is not None:
        # Rare: a lease to renew, or an expired one with a draft to retake (ORM objects).
        own = session.exec(_OWN_OPEN_ASSIGNMENTS, params=params).all()
        chosen, draft = next(
            ((a, d) for a, d in own if a.status == "leased" or _retake(session, a)),
            (None, None),
        )
        if chosen is not None:
            chosen.expires_at = now + timedelta(seconds=campaign.lease_seconds)
            session.add(chosen)
            return _unit_view(session, campaign, _Leased.of(chosen), draft)
    fresh = _lease_new(session, campaign, annotator_id, now)
    return None if fresh is None else _unit_view(session, campaign, fresh, None)


_HAS_OWN_OPEN = (
    core_select(_ASSIGNMENTS.c.id)
    .outerjoin(
        _DRAFTS,
        (_DRAFTS.c.unit_id == _ASSIGNMENTS.c.unit_id)
        & (_DRAFTS.c.annotator_id == bindparam("annotator_id")),
    )
    .where(
        _ASSIGNMENTS.c.campaign_id == bindparam("campaign_id"),
        _ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
    )
    .where(
        (_ASSIGNMENTS.c.status == "leased")
        | ((_ASSIGNMENTS.c.status == "expired") & _DRAFTS.c.id.is_not(None))
    )
    .limit(1)
)
"""Whether :data:`_OWN_OPEN_ASSIGNMENTS` has a row (Core: no ORM loading in the common case)."""


@dataclass(frozen=True)
class _Leased:
    """What the unit view needs of a lease."""

    id: int
    unit_id: int
    shown_order: str
    expires_at: datetime

    @classmethod
    def of(cls, assignment: Assignment) -> _Leased:
        return cls(
            assignment.id,  # type: ignore[arg-type]
            assignment.unit_id,
            assignment.shown_order,
            assignment.expires_at,
        )


_EXPIRE = (
    update(_ASSIGNMENTS)
    .where(_ASSIGNMENTS.c.campaign_id == bindparam("b_campaign"), _ASSIGNMENTS.c.status == "leased")
    .where(_ASSIGNMENTS.c.expires_at <= bindparam("b_now"))
    .values(status="expired", closed_at=bindparam("b_now"))
    .returning(_ASSIGNMENTS.c.unit_id)
)


def expire_leases(session: Session, campaign_id: int, now: datetime | None = None) -> int:
    """Return expired leases of the campaign to the pool; the number returned."""
    now = now or utcnow()
    session.flush()  # as the ORM-enabled update did (a no-op when clean)
    expired = session.connection().execute(_EXPIRE, {"b_campaign": campaign_id, "b_now": now}).all()
    for (unit_id,) in expired:
        _change_slots(session, unit_id, -1)
    return len(expired)


def save_draft(
    session: Session,
    assignment_id: int,
    annotator_id: int,
    *,
    score: float | None = None,
    preference: str | None = None,
    rationale: str = "",
    active_seconds: float = 0.0,
) -> DraftView | None:
    """Store the unsubmitted answer (preference as shown); restored by :func:`next_unit`.

    A late draft of an assignment that is already submitted, skipped or released is ignored
    (None): it must not resurrect a closed unit.
    """
    assignment = _own_assignment(session, assignment_id, annotator_id)
    if assignment.status not in ("leased", "expired"):
        return None
    protocol = campaign_protocol(_campaign(session, assignment.campaign_id))
    if score is not None:
        score = _validated(protocol.validate_score, score)
    if preference is not None:
        preference = _validated(protocol.validate_preference, preference)
    values = dict(
        score=score,
        preference=preference,
        rationale=rationale,
        active_seconds=max(float(active_seconds), 0.0),
        updated_at=utcnow(),
    )
    draft = _draft(session, assignment.unit_id, annotator_id)
    if draft is None:
        try:
            with session.begin_nested():
                session.add(Draft(unit_id=assignment.unit_id, annotator_id=annotator_id, **values))
        except IntegrityError:  # another tab created it at the same instant
            draft = _draft(session, assignment.unit_id, annotator_id)
    if draft is not None:
        for name, value in values.items():
            setattr(draft, name, value)
        session.add(draft)
    return DraftView(score, preference, rationale, float(values["active_seconds"]))


def submit(
    session: Session,
    assignment_id: int,
    annotator_id: int,
    *,
    score: float | None = None,
    preference: str | None = None,
    rationale: str,
    seconds: float = 0.0,
    now: datetime | None = None,
) -> Annotation:
    """Store the answer, close the lease and drop the draft, in the caller's transaction.

    ``preference`` is in the order shown and stored in canonical order. Submitting an assignment
    that is already submitted returns the stored annotation (a double click stores one).
    """
    now = now or utcnow()
    session.flush()  # what the ORM statements used to autoflush (a no-op when clean)
    stored = _submit_leased(
        session, assignment_id, annotator_id, score, preference, rationale, seconds, now
    )
    if stored is not None:
        # Inserted in Core; attached as the persistent, clean object a flush would leave.
        annotation = Annotation(id=stored.annotation_id, **stored.values)
        make_transient_to_detached(annotation)
        session.add(annotation)
        return annotation
    return _submit_otherwise(
        session, assignment_id, annotator_id, score, preference, rationale, seconds, now
    )


@dataclass(frozen=True)
class SubmitStep:
    """What :func:`submit_and_next` did: the answer stored, and the unit to show next."""

    annotation_id: int
    unit_id: int
    campaign_id: int
    next_unit: UnitView | None


def submit_and_next(
    session: Session,
    assignment_id: int,
    annotator_id: int,
    *,
    score: float | None = None,
    preference: str | None = None,
    rationale: str,
    seconds: float = 0.0,
    now: datetime | None = None,
) -> SubmitStep:
    """:func:`submit`, then :func:`next_unit` of the same campaign, in the caller's transaction.

    This is the annotation page's step on Ctrl+Enter: one commit makes the answer durable and
    leases the next unit, so the page never waits for a second transaction (on SQLite, a second
    turn at the write lock). If the next unit cannot be leased the whole step rolls back and the
    answer is not stored: the caller reports it, and the saved draft still holds what was typed.
    """
    now = now or utcnow()
    session.flush()  # what the ORM statements used to autoflush (a no-op when clean)
    stored = _submit_leased(
        session, assignment_id, annotator_id, score, preference, rationale, seconds, now
    )
    if stored is None:
        annotation = _submit_otherwise(
            session, assignment_id, annotator_id, score, preference, rationale, seconds, now
        )
        following = next_unit(session, annotation.campaign_id, annotator_id, now)
        return SubmitStep(
            annotation.id,
            annotation.unit_id,
            annotation.campaign_id,
            following,  # type: ignore[arg-type]
        )
    following = _next_unit(session, stored.campaign, annotator_id, now)
    values = stored.values
    return SubmitStep(stored.annotation_id, values["unit_id"], values["campaign_id"], following)


def _submit_otherwise(
    session: Session,
    assignment_id: int,
    annotator_id: int,
    score: float | None,
    preference: str | None,
    rationale: str,
    seconds: float,
    now: datetime,
) -> Annotation:
    """:func:`submit` in the rare cases, with ORM objects: submitted already, given back,
    expired (retaken if its slot is free), or loaded in the session."""
    assignment = _own_assignment(session, assignment_id, annotator_id, lock=True)
    if assignment.status == "submitted":
        return _live_annotation(session, assignment.unit_id, annotator_id)
    if assignment.status in ("skipped", "released"):
        raise AssignmentNotFound("you gave this unit back (skipped or reported): open the next one")
    campaign = _campaign(session, assignment.campaign_id)
    if campaign.status == "closed":
        raise CampaignNotOpen(f"campaign {campaign.name!r} is closed: answers are not accepted")
    score, canonical = _check_answer(campaign, assignment.shown_order, score, preference, rationale)
    if assignment.status != "leased" and not _retake(session, assignment):
        raise LeaseLost(
            "your lease on this unit expired and another annotator took the slot; "
            "your draft is kept"
        )
    annotation = Annotation(
        **_annotation_values(
            campaign.id, assignment.unit_id, annotator_id, assignment.id,  # type: ignore[arg-type]
            assignment.shown_order, score, canonical, rationale, seconds, now,
        )
    )  # fmt: skip
    session.add(annotation)
    assignment.status, assignment.closed_at = "submitted", now
    session.add(assignment)
    _count_submission(session, assignment.unit_id, annotator_id)
    session.flush()
    return annotation


def _annotation_values(
    campaign_id: int,
    unit_id: int,
    annotator_id: int,
    assignment_id: int,
    shown_order: str,
    score: float | None,
    canonical: str | None,
    rationale: str,
    seconds: float,
    now: datetime,
) -> dict[str, Any]:
    """Every column of the first revision of an answer (preference already canonical)."""
    return dict(
        campaign_id=campaign_id, unit_id=unit_id, annotator_id=annotator_id,
        assignment_id=assignment_id, revision=1, is_live=True, score=score,
        preference=canonical, shown_order=shown_order if canonical is not None else None,
        rationale=rationale, seconds=max(float(seconds), 0.0), synthetic=False,
        created_at=now, meta={},
    )  # fmt: skip


def _count_submission(session: Session, unit_id: int, annotator_id: int) -> None:
    """A submitted answer: count it on the unit and drop the draft it replaces."""
    params = {"b_unit": unit_id, "b_annotator": annotator_id}
    session.connection().execute(_COUNT_SUBMIT, params)
    session.connection().execute(_DELETE_DRAFT, params)


_OWN_LEASE = (
    core_select(
        _ASSIGNMENTS.c.campaign_id,
        _ASSIGNMENTS.c.unit_id,
        _ASSIGNMENTS.c.status,
        _ASSIGNMENTS.c.shown_order,
    )
    .where(
        _ASSIGNMENTS.c.id == bindparam("assignment_id"),
        _ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
    )
    .with_for_update()
)
_CLOSE_SUBMITTED = (
    update(_ASSIGNMENTS)
    .where(_ASSIGNMENTS.c.id == bindparam("b_id"), _ASSIGNMENTS.c.status == "leased")
    .values(status="submitted", closed_at=bindparam("b_now"))
)
_COUNT_SUBMIT = (
    update(_UNITS)
    .where(_UNITS.c.id == bindparam("b_unit"))
    .values(n_submitted=_UNITS.c.n_submitted + 1)
)
_INSERT_ANNOTATION = insert(_ANNOTATIONS).returning(_ANNOTATIONS.c.id)
_DELETE_DRAFT = delete(_DRAFTS).where(
    _DRAFTS.c.unit_id == bindparam("b_unit"), _DRAFTS.c.annotator_id == bindparam("b_annotator")
)


@dataclass(frozen=True)
class _Stored:
    """An answer stored by :func:`_submit_leased`: its id and columns, and its campaign."""

    annotation_id: int
    values: dict[str, Any]
    campaign: Any


def _submit_leased(
    session: Session,
    assignment_id: int,
    annotator_id: int,
    score: float | None,
    preference: str | None,
    rationale: str,
    seconds: float,
    now: datetime,
) -> _Stored | None:
    """:func:`submit` of a live lease with Core statements; None leaves it to the ORM path.

    Every other case (already submitted, given back, expired, absent, or the assignment already
    loaded as an object in this session, which a Core update would leave stale) returns None.
    """
    if (Assignment, (assignment_id,), None) in session.identity_map:
        return None
    params = {"assignment_id": assignment_id, "annotator_id": annotator_id}
    row = session.connection().execute(_OWN_LEASE, params).first()
    if row is None or row.status != "leased":
        return None
    campaign = _campaign_row(session, row.campaign_id)
    if campaign.status == "closed":
        raise CampaignNotOpen(f"campaign {campaign.name!r} is closed: answers are not accepted")
    score, canonical = _check_answer(campaign, row.shown_order, score, preference, rationale)
    closed = session.connection().execute(_CLOSE_SUBMITTED, {"b_id": assignment_id, "b_now": now})
    if closed.rowcount != 1:  # pragma: no cover - the row is locked / the writer is serial
        return None
    values = _annotation_values(
        row.campaign_id, row.unit_id, annotator_id, assignment_id, row.shown_order,
        score, canonical, rationale, seconds, now,
    )  # fmt: skip
    annotation_id = session.connection().execute(_INSERT_ANNOTATION, values).scalar_one()
    _count_submission(session, row.unit_id, annotator_id)
    return _Stored(annotation_id, values, campaign)


def skip(session: Session, assignment_id: int, annotator_id: int, reason: str) -> None:
    """Give the unit back for others, with a reason; this annotator will not get it again."""
    if not reason.strip():
        raise AnswerInvalid("say why you skip this unit (e.g. 'outside my expertise')")
    assignment = _own_assignment(session, assignment_id, annotator_id, lock=True)
    _release(session, assignment, "skipped", reason.strip())


def flag(session: Session, assignment_id: int, annotator_id: int, reason: str) -> Flag:
    """Report the unit as broken: it leaves the queue and goes to the reviewers."""
    if not reason.strip():
        raise AnswerInvalid("say what is broken (e.g. 'image does not load')")
    assignment = _own_assignment(session, assignment_id, annotator_id, lock=True)
    _release(session, assignment, "released", f"flagged: {reason.strip()}")
    flag_row = Flag(
        campaign_id=assignment.campaign_id, unit_id=assignment.unit_id,
        user_id=annotator_id, reason=reason.strip(),
    )  # fmt: skip
    session.add(flag_row)
    session.execute(update(Unit).where(Unit.id == assignment.unit_id).values(flagged=True))
    session.flush()
    record_event(
        session, actor_id=annotator_id, action="unit.flag", entity="unit",
        entity_id=assignment.unit_id, detail={"reason": reason.strip(), "flag_id": flag_row.id},
    )  # fmt: skip
    return flag_row


def revise(
    session: Session,
    annotation_id: int,
    annotator_id: int,
    *,
    score: float | None = None,
    preference: str | None = None,
    rationale: str,
    extra_seconds: float = 0.0,
) -> Annotation:
    """Edit one's own answer: a new revision becomes live, the old one is kept (audited)."""
    old = session.exec(
        select(Annotation)
        .where(Annotation.id == annotation_id, Annotation.annotator_id == annotator_id)
        .where(col(Annotation.is_live))
        .with_for_update()
    ).first()
    if old is None:
        raise AssignmentNotFound(f"you have no current answer with id {annotation_id}")
    campaign = _campaign(session, old.campaign_id)
    if campaign.status == "closed":
        raise CampaignNotOpen(f"campaign {campaign.name!r} is closed: answers cannot be edited")
    shown_order = old.shown_order or "AB"
    score, canonical = _check_answer(campaign, shown_order, score, preference, rationale)
    old.is_live = False
    session.add(old)
    session.flush()
    new = Annotation(
        campaign_id=old.campaign_id, unit_id=old.unit_id, annotator_id=annotator_id,
        assignment_id=old.assignment_id, revision=old.revision + 1, score=score,
        preference=canonical, shown_order=old.shown_order, rationale=rationale,
        seconds=old.seconds + max(float(extra_seconds), 0.0), meta={"revises": old.id},
    )  # fmt: skip
    session.add(new)
    session.flush()
    record_event(
        session, actor_id=annotator_id, action="annotation.revise", entity="annotation",
        entity_id=new.id, detail={
            "unit_id": old.unit_id, "revision": new.revision, "previous_id": old.id,
            "before": {"score": old.score, "preference": old.preference,
                       "rationale": old.rationale},
            "after": {"score": score, "preference": canonical, "rationale": rationale},
        },
    )  # fmt: skip
    return new


def my_annotations(
    session: Session, campaign_id: int, annotator_id: int, *, limit: int = 50, offset: int = 0
) -> list[MyAnnotation]:
    """The annotator's own live answers in the campaign, newest first."""
    rows = session.exec(
        select(Annotation, Item.item_id, Item.task)
        .join(Unit, col(Unit.id) == Annotation.unit_id)
        .join(Item, col(Item.id) == Unit.item_pk)
        .where(Annotation.campaign_id == campaign_id, Annotation.annotator_id == annotator_id)
        .where(col(Annotation.is_live))
        .order_by(col(Annotation.created_at).desc(), col(Annotation.id).desc())
        .limit(limit)
        .offset(offset)
    ).all()
    return [
        MyAnnotation(
            annotation_id=a.id,
            unit_id=a.unit_id,
            item_id=item_id,
            task=task,
            score=a.score,
            preference_shown=_shown(a.preference, a.shown_order),
            rationale=a.rationale,
            seconds=a.seconds,
            revision=a.revision,
            created_at=a.created_at,
        )  # fmt: skip
        for a, item_id, task in rows
    ]


def my_annotation_view(
    session: Session, annotation_id: int, annotator_id: int
) -> tuple[UnitView, MyAnnotation]:
    """One of the annotator's own live answers with its unit, for editing."""
    annotation = session.exec(
        select(Annotation)
        .where(Annotation.id == annotation_id, Annotation.annotator_id == annotator_id)
        .where(col(Annotation.is_live))
    ).first()
    if annotation is None:
        raise AssignmentNotFound(f"you have no current answer with id {annotation_id}")
    assignment = session.get(Assignment, annotation.assignment_id)
    if assignment is None:
        raise AssignmentNotFound(f"answer {annotation_id} has no assignment")
    campaign = _campaign(session, annotation.campaign_id)
    item = session.get(Item, session.get(Unit, annotation.unit_id).item_pk)  # type: ignore[union-attr]
    mine = MyAnnotation(
        annotation_id=annotation.id, unit_id=annotation.unit_id, item_id=item.item_id,  # type: ignore[union-attr]
        task=item.task, score=annotation.score,  # type: ignore[union-attr]
        preference_shown=_shown(annotation.preference, annotation.shown_order),
        rationale=annotation.rationale, seconds=annotation.seconds,
        revision=annotation.revision, created_at=annotation.created_at,
    )  # fmt: skip
    return _unit_view(session, campaign, _Leased.of(assignment), None), mine


def others_answers(session: Session, unit_id: int, annotator_id: int) -> list[OtherAnswer]:
    """Other humans' live answers on a unit, in this annotator's shown order.

    Empty unless the campaign allows it and the annotator has submitted their own answer.
    """
    unit = session.get(Unit, unit_id)
    if unit is None or not _campaign(session, unit.campaign_id).show_others_after_submit:
        return []
    own = session.exec(
        select(Annotation).where(
            Annotation.unit_id == unit_id,
            Annotation.annotator_id == annotator_id,
            col(Annotation.is_live),
        )  # fmt: skip
    ).first()
    if own is None:
        return []
    others = session.exec(
        select(Annotation)
        .where(Annotation.unit_id == unit_id, Annotation.annotator_id != annotator_id)
        .where(col(Annotation.is_live))
        .order_by(col(Annotation.id))
    ).all()
    swapped = own.shown_order == "BA"
    return [
        OtherAnswer(
            score=other.score,
            preference_shown=None
            if other.preference is None
            else to_shown(other.preference, swapped=swapped),
            rationale=other.rationale,
        )
        for other in others
    ]


def submitted_count(session: Session, campaign_id: int, annotator_id: int) -> int:
    """How many units the annotator has answered in the campaign (cheap: one indexed count)."""
    return int(
        session.exec(
            select(func.count()).where(
                Assignment.campaign_id == campaign_id,
                Assignment.annotator_id == annotator_id,
                Assignment.status == "submitted",
            )
        ).one()
    )


def annotator_progress(session: Session, campaign_id: int, annotator_id: int) -> AnnotatorProgress:
    """Counts for the progress bar: own answers and skips, the campaign's units."""
    campaign = _campaign(session, campaign_id)

    def count(query: Any) -> int:
        return int(session.exec(query).one())

    mine = select(func.count()).where(
        Assignment.campaign_id == campaign_id, Assignment.annotator_id == annotator_id
    )
    units = select(func.count()).where(Unit.campaign_id == campaign_id)
    return AnnotatorProgress(
        my_submitted=count(mine.where(Assignment.status == "submitted")),
        my_skipped=count(mine.where(Assignment.status == "skipped")),
        units_total=count(units),
        units_complete=count(units.where(Unit.n_submitted >= campaign.overlap)),
        units_flagged=count(units.where(col(Unit.flagged))),
    )


# --- internals -------------------------------------------------------------------------------


def _campaign(session: Session, campaign_id: int) -> Campaign:
    campaign = session.get(Campaign, campaign_id)
    if campaign is None:
        raise QueueError(f"no campaign with id {campaign_id}")
    return campaign


_CAMPAIGN_ROW = core_select(_CAMPAIGNS).where(_CAMPAIGNS.c.id == bindparam("campaign_id"))


def _campaign_row(session: Session, campaign_id: int) -> Any:
    """The campaign for reading: the session's object if it has one, else a Core row.

    Same answer as :func:`_campaign` (which returns the identity map's object without a query
    when there is one), without the cost of loading an ORM object on the hot path.
    """
    loaded = session.identity_map.get((Campaign, (campaign_id,), None))
    if loaded is not None:
        return loaded
    row = session.connection().execute(_CAMPAIGN_ROW, {"campaign_id": campaign_id}).first()
    if row is None:
        raise QueueError(f"no campaign with id {campaign_id}")
    return row


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
        )  # fmt: skip
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


_CORE_LIVE_SLOTS = core_select(_ASSIGNMENTS.c.slot).where(
    _ASSIGNMENTS.c.unit_id == bindparam("unit_id"),
    _ASSIGNMENTS.c.status.in_(LIVE_ASSIGNMENT_STATUSES),
)


def _free_slot(session: Session, unit_id: int, overlap: int) -> int | None:
    taken = set(session.connection().execute(_CORE_LIVE_SLOTS, {"unit_id": unit_id}).scalars())
    return next((slot for slot in range(overlap) if slot not in taken), None)


def _lock_unit(session: Session, unit_id: int) -> Unit | None:
    return session.exec(select(Unit).where(Unit.id == unit_id).with_for_update()).first()


def _retake(session: Session, assignment: Assignment) -> bool:
    """Put an expired or released own assignment back on a free slot of its unit, if any."""
    campaign = _campaign(session, assignment.campaign_id)
    unit = _lock_unit(session, assignment.unit_id)
    if unit is None or unit.flagged or campaign.status == "closed":
        return False
    slot = _free_slot(session, assignment.unit_id, campaign.overlap)
    if slot is None:
        return False
    try:
        with session.begin_nested():
            assignment.status, assignment.slot, assignment.closed_at = "leased", slot, None
            assignment.overlap = campaign.overlap
            session.add(assignment)
            session.flush()
    except IntegrityError:
        session.refresh(assignment)
        return False
    _change_slots(session, assignment.unit_id, +1)
    return True


def _release(session: Session, assignment: Assignment, status: str, reason: str) -> None:
    if assignment.status == "submitted":
        raise AnswerInvalid("this unit is already answered; edit it from 'My work' instead")
    was_live = assignment.status == "leased"
    assignment.status, assignment.skip_reason, assignment.closed_at = status, reason, utcnow()
    session.add(assignment)
    if was_live:
        _change_slots(session, assignment.unit_id, -1)
    draft = _draft(session, assignment.unit_id, assignment.annotator_id)
    if draft is not None:
        session.delete(draft)
    session.flush()


_CORE_CANDIDATE = (
    core_select(_UNITS.c.id, _UNITS.c.slots_taken)
    .where(
        _UNITS.c.campaign_id == bindparam("campaign_id"),
        _UNITS.c.slots_taken < bindparam("overlap"),
    )
    .where(~_UNITS.c.flagged)
    .where(
        ~exists().where(
            _ASSIGNMENTS.c.unit_id == _UNITS.c.id,
            _ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
        )
    )
    .order_by(_UNITS.c.slots_taken, _UNITS.c.id)
    .limit(1)
    .with_for_update(skip_locked=True, of=_UNITS)
)
"""The least-annotated unit the annotator never had, locked (PostgreSQL) and skipped if locked."""


def _candidate(session: Session, campaign: Any, annotator_id: int, tried: set[int]) -> Any:
    """The next unit to try (``id``, ``slots_taken``), or None when none is left."""
    query = _CORE_CANDIDATE.where(_UNITS.c.id.not_in(tried)) if tried else _CORE_CANDIDATE
    params = {"campaign_id": campaign.id, "overlap": campaign.overlap, "annotator_id": annotator_id}
    return session.connection().execute(query, params).first()


_LEASE_COLUMNS = (
    "campaign_id", "unit_id", "annotator_id", "slot", "overlap", "status", "shown_order",
    "leased_at", "expires_at",
)  # fmt: skip
_LEASE_SQLITE = text(
    f"INSERT INTO {_ASSIGNMENTS.name} ({', '.join(_LEASE_COLUMNS)}) "
    f"VALUES ({', '.join(':' + name for name in _LEASE_COLUMNS)}) "
    "ON CONFLICT DO NOTHING RETURNING id"
).bindparams(*(bindparam(name, type_=_ASSIGNMENTS.c[name].type) for name in _LEASE_COLUMNS))
"""SQLite: a lease that a unique constraint refuses inserts nothing (no savepoint needed).

Written as text because SQLAlchemy does not cache the compiled form of its SQLite
``insert().on_conflict_do_nothing()`` (it would be compiled again on every lease).
"""


def _lease_new(session: Session, campaign: Any, annotator_id: int, now: datetime) -> _Leased | None:
    """Lease the least-annotated unit this annotator never had; retry on a conflict."""
    if session.get_bind().dialect.name == "sqlite":
        return _lease_new_sqlite(session, campaign, annotator_id, now)
    tried: set[int] = set()
    for _ in range(_MAX_TRIES):
        candidate = _candidate(session, campaign, annotator_id, tried)
        if candidate is None:
            return None
        unit_id = candidate.id
        tried.add(unit_id)
        slot = _free_slot(session, unit_id, campaign.overlap)
        if slot is None:
            continue
        assignment = Assignment(
            campaign_id=campaign.id, unit_id=unit_id, annotator_id=annotator_id, slot=slot,
            overlap=campaign.overlap, shown_order=_random_order(campaign), leased_at=now,
            expires_at=now + timedelta(seconds=campaign.lease_seconds),
        )  # fmt: skip
        try:
            with session.begin_nested():
                session.add(assignment)
                session.flush()
        except IntegrityError:  # a concurrent lease took the slot, or this annotator has it
            continue
        _change_slots(session, unit_id, +1)
        return _Leased.of(assignment)
    return None


def _lease_new_sqlite(
    session: Session, campaign: Any, annotator_id: int, now: datetime
) -> _Leased | None:
    """:func:`_lease_new` on SQLite: ``INSERT ... ON CONFLICT DO NOTHING RETURNING id``.

    The unique constraints still decide: a refused insert returns no id. Slots fill from 0 up,
    so the unit's count of live slots is tried first; only when that slot is taken (one lower
    was given back) is the free one looked up, and then the next candidate. Any other
    constraint failure aborts only that statement on SQLite, so the transaction stays usable
    without a savepoint.
    """
    tried: set[int] = set()
    expires_at = now + timedelta(seconds=campaign.lease_seconds)
    for _ in range(_MAX_TRIES):
        candidate = _candidate(session, campaign, annotator_id, tried)
        if candidate is None:
            return None
        unit_id = candidate.id
        tried.add(unit_id)
        shown_order = _random_order(campaign)
        values = dict(
            campaign_id=campaign.id, unit_id=unit_id, annotator_id=annotator_id,
            slot=candidate.slots_taken, overlap=campaign.overlap, status="leased",
            shown_order=shown_order, leased_at=now, expires_at=expires_at,
        )  # fmt: skip
        assignment_id = _insert_lease_sqlite(session, values)
        if assignment_id is None:
            values["slot"] = _free_slot(session, unit_id, campaign.overlap)
            if values["slot"] is None:
                continue
            assignment_id = _insert_lease_sqlite(session, values)
        if assignment_id is None:  # a concurrent lease took the slot, or this annotator has it
            continue
        _change_slots(session, unit_id, +1)
        return _Leased(assignment_id, unit_id, shown_order, expires_at)
    return None


def _insert_lease_sqlite(session: Session, values: dict[str, Any]) -> int | None:
    """The new lease's id, or None when a unique constraint refused it."""
    try:
        return session.connection().execute(_LEASE_SQLITE, values).scalar()
    except IntegrityError:  # pragma: no cover - a check; the statement alone is undone
        return None


def _random_order(campaign: Campaign) -> str:
    return random.choice(("AB", "BA")) if campaign.protocol == "pairwise" else "AB"


_R_FIRST, _R_SECOND, _R_SINGLE = _RESPONSES.alias(), _RESPONSES.alias(), _RESPONSES.alias()
_CORE_UNIT_CONTENT = (
    core_select(
        _UNITS.c.id,
        _ITEMS.c.item_id,
        _ITEMS.c.benchmark,
        _ITEMS.c.task,
        _ITEMS.c.category,
        _ITEMS.c.history,
        _ITEMS.c.question,
        _ITEMS.c.reference,
        _R_FIRST.c.response_id.label("a_id"),
        _R_FIRST.c.content.label("a_content"),
        _R_SECOND.c.response_id.label("b_id"),
        _R_SECOND.c.content.label("b_content"),
        _R_SINGLE.c.response_id.label("single_id"),
        _R_SINGLE.c.content.label("single_content"),
    )
    .select_from(_UNITS)
    .join(_ITEMS, _ITEMS.c.id == _UNITS.c.item_pk)
    .outerjoin(_PAIRS, _PAIRS.c.id == _UNITS.c.pair_pk)
    .outerjoin(_R_FIRST, _R_FIRST.c.id == _PAIRS.c.response_a_pk)
    .outerjoin(_R_SECOND, _R_SECOND.c.id == _PAIRS.c.response_b_pk)
    .outerjoin(_R_SINGLE, _R_SINGLE.c.id == _UNITS.c.response_pk)
    .where(_UNITS.c.id == bindparam("unit_id"))
)
"""Item and response(s) of one unit in one Core query (no ORM objects to build)."""


def _unit_view(
    session: Session, campaign: Any, assignment: _Leased, draft: Draft | None
) -> UnitView:
    item = session.connection().execute(_CORE_UNIT_CONTENT, {"unit_id": assignment.unit_id}).one()
    unit_id = item.id
    if item.single_id is None:
        assert item.a_id is not None and item.b_id is not None
        first, second = (item.a_id, item.a_content), (item.b_id, item.b_content)
        shown = (first, second) if assignment.shown_order == "AB" else (second, first)
        responses = (ResponseView(*shown[0], "A"), ResponseView(*shown[1], "B"))
    else:
        responses = (ResponseView(item.single_id, item.single_content, None),)
    return UnitView(
        assignment_id=assignment.id, unit_id=unit_id, campaign_id=campaign.id,  # type: ignore[arg-type]
        campaign_name=campaign.name, protocol=campaign_protocol(campaign),
        rationale_min=campaign.rationale_min, instructions=campaign.instructions,
        item_id=item.item_id, benchmark=item.benchmark, task=item.task, category=item.category,
        history=list(item.history or []), question=item.question,
        reference=item.reference if campaign.show_reference else None,
        responses=responses, shown_order=assignment.shown_order,
        expires_at=assignment.expires_at,
        draft=None if draft is None else DraftView(
            draft.score, draft.preference, draft.rationale, draft.active_seconds
        ),
    )  # fmt: skip
