"""Answers: submit, alone or with the next unit in one transaction.

Drafts, saved while typing, are in :mod:`~data.queue.drafts`; giving a unit back (skip, flag) in
:mod:`~data.queue.give_back`; editing a submitted answer in :mod:`~data.queue.revisions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, insert, update
from sqlalchemy import select as core_select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import make_transient_to_detached
from sqlmodel import Session

from data.queue import gold
from data.queue.common import check_answer, live_annotation, own_assignment, shown_preference
from data.queue.leases import Counting, next_unit_of_campaign, retake_assignment
from data.queue.records import (
    AssignmentNotFound,
    CampaignNotOpen,
    LeaseLost,
    OtherAnswer,
    SubmitStep,
)
from data.queue.revisions import revise
from data.queue.routing_lock import share_queue_of_assignment
from data.queue.views import others_answers
from data.storage.audit import record_submission
from data.storage.campaign_lookup import campaign_row, get_campaign
from data.storage.engine import in_transaction
from schemas.core import stored_id
from schemas.core_tables import ANNOTATIONS, ASSIGNMENTS, DRAFTS, UNITS, USERS
from schemas.tables import Annotation, Assignment, utcnow


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
    that is already submitted with the same answer returns the stored annotation (a double click
    stores one); with a different answer (a second tab) it stores a new revision, as
    :func:`revise` does, and keeps the earlier one.
    """
    now = now or utcnow()
    share_queue_of_assignment(session, assignment_id)  # first: see data.queue.routing_lock
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

    A ``next_unit`` of None does not say the annotator is done: on PostgreSQL the step passes over
    a unit it could wait for only at the risk of a cycle of waits (:func:`~data.queue.leases.
    _lease_then_count`), which a new transaction, holding nothing, may wait for. Ask
    :func:`~data.queue.leases.next_unit` before telling them there is nothing left, as the
    annotation page does.
    """
    now = now or utcnow()
    share_queue_of_assignment(session, assignment_id)  # first: see data.queue.routing_lock
    session.flush()  # what the ORM statements used to autoflush (a no-op when clean)
    stored = _submit_leased(
        session,
        assignment_id,
        annotator_id,
        score,
        preference,
        rationale,
        seconds,
        now,
        count=False,
    )
    if stored is None:
        annotation = _submit_otherwise(
            session, assignment_id, annotator_id, score, preference, rationale, seconds, now
        )
        session.flush()
        campaign = campaign_row(session, annotation.campaign_id)
        told = gold.feedback(
            session,
            campaign,
            annotation.unit_id,
            annotation.score,
            annotation.preference,
            annotation.shown_order,
        )
        following = next_unit_of_campaign(session, campaign, annotator_id, now)
        assert annotation.id is not None  # flushed
        return SubmitStep(
            annotation.id,
            annotation.unit_id,
            annotation.campaign_id,
            following,
            annotation.revision,
            told,
        )
    values = stored.values
    told = gold.feedback(
        session,
        stored.campaign,
        values["unit_id"],
        values["score"],
        values["preference"],
        values["shown_order"],
    )
    # The answer is counted on its unit's row after the next lease: see _lease_then_count.
    counting = Counting(values["unit_id"], lambda: _count_answer(session, values["unit_id"]))
    following = next_unit_of_campaign(session, stored.campaign, annotator_id, now, counting)
    return SubmitStep(
        stored.annotation_id, values["unit_id"], values["campaign_id"], following, feedback=told
    )


def submit_step(
    engine: Engine,
    assignment_id: int,
    annotator_id: int,
    *,
    score: float | None = None,
    preference: str | None = None,
    rationale: str,
    seconds: float = 0.0,
) -> tuple[SubmitStep, list[OtherAnswer]]:
    """The annotation page's Ctrl+Enter: :func:`submit_and_next` and the other humans' answers
    the campaign shows after a submit, in one transaction.

    The transaction runs in :func:`~data.storage.engine.in_transaction`: when PostgreSQL cancels
    it to break a deadlock (a submit retaking an expired lease can meet one), it runs once more
    before the refusal reaches the annotator.
    """

    def submit_then_lease(session: Session) -> tuple[SubmitStep, list[OtherAnswer]]:
        step = submit_and_next(
            session,
            assignment_id,
            annotator_id,
            score=score,
            preference=preference,
            rationale=rationale,
            seconds=seconds,
        )
        return step, others_answers(session, step.unit_id, annotator_id)

    return in_transaction(engine, submit_then_lease)


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
    assignment = own_assignment(session, assignment_id, annotator_id, lock=True)
    if assignment.status == "submitted":
        return _submit_again(
            session, assignment, annotator_id, score, preference, rationale, seconds
        )
    if assignment.status in ("skipped", "released"):
        raise AssignmentNotFound("you gave this unit back (skipped or reported): open the next one")
    if assignment.status == "rejected":
        raise AssignmentNotFound(
            "a reviewer rejected your answer to this unit: read their comment in My work and "
            "revise the answer there"
        )
    campaign = get_campaign(session, assignment.campaign_id)
    if campaign.status == "closed":
        raise CampaignNotOpen(f"campaign {campaign.name!r} is closed: answers are not accepted")
    score, canonical = check_answer(campaign, assignment.shown_order, score, preference, rationale)
    if assignment.status != "leased" and not retake_assignment(session, assignment):
        raise LeaseLost(
            "your lease on this unit expired and another annotator took the slot; "
            "your draft is kept"
        )
    annotation = Annotation(
        **_annotation_values(
            stored_id(campaign),
            assignment.unit_id,
            annotator_id,
            stored_id(assignment),
            assignment.shown_order,
            score,
            canonical,
            rationale,
            seconds,
            now,
        )
    )
    session.add(annotation)
    assignment.status, assignment.closed_at = "submitted", now
    session.add(assignment)
    _count_submission(session, assignment.unit_id, annotator_id)
    session.flush()
    record_submission(
        session,
        annotator_id=annotator_id,
        annotation_id=stored_id(annotation),
        unit_id=assignment.unit_id,
        campaign_id=stored_id(campaign),
        at=now,
    )
    return annotation


def _submit_again(
    session: Session,
    assignment: Assignment,
    annotator_id: int,
    score: float | None,
    preference: str | None,
    rationale: str,
    seconds: float,
) -> Annotation:
    """A submit of an assignment that is already submitted (a double click, or a second tab).

    The same answer as the live one returns it and stores nothing. A different answer is stored
    as a new revision, exactly as an edit from *My work* (:func:`revise`): the earlier answer is
    kept and audited, and the caller can tell from ``revision`` that it was not the first.
    """
    live = live_annotation(session, assignment.unit_id, annotator_id)
    campaign = get_campaign(session, assignment.campaign_id)
    score, canonical = check_answer(campaign, assignment.shown_order, score, preference, rationale)
    if (live.score, live.preference, live.rationale) == (score, canonical, rationale):
        return live
    shown = shown_preference(canonical, assignment.shown_order)
    assert live.id is not None  # loaded from the database
    return revise(
        session,
        live.id,
        annotator_id,
        score=score,
        preference=shown,
        rationale=rationale,
        extra_seconds=seconds,
    )


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
        campaign_id=campaign_id,
        unit_id=unit_id,
        annotator_id=annotator_id,
        assignment_id=assignment_id,
        revision=1,
        is_live=True,
        score=score,
        preference=canonical,
        shown_order=shown_order if canonical is not None else None,
        rationale=rationale,
        seconds=max(float(seconds), 0.0),
        synthetic=False,
        created_at=now,
        meta={},
    )


def _count_submission(session: Session, unit_id: int, annotator_id: int) -> None:
    """A submitted answer: count it on the unit and drop the draft it replaces."""
    _count_answer(session, unit_id)
    _drop_draft(session, unit_id, annotator_id)


def _count_answer(session: Session, unit_id: int) -> None:
    session.connection().execute(_COUNT_SUBMIT, {"b_unit": unit_id})


def _drop_draft(session: Session, unit_id: int, annotator_id: int) -> None:
    session.connection().execute(_DELETE_DRAFT, {"b_unit": unit_id, "b_annotator": annotator_id})


_OWN_LEASE = (
    core_select(
        ASSIGNMENTS.c.campaign_id,
        ASSIGNMENTS.c.unit_id,
        ASSIGNMENTS.c.status,
        ASSIGNMENTS.c.shown_order,
    )
    .join(USERS, USERS.c.id == ASSIGNMENTS.c.annotator_id)
    .where(
        ASSIGNMENTS.c.id == bindparam("assignment_id"),
        ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
        USERS.c.active,  # a disabled account's submit takes the ORM path, which refuses it
    )
    .with_for_update(of=ASSIGNMENTS)
)

_CLOSE_SUBMITTED = (
    update(ASSIGNMENTS)
    .where(ASSIGNMENTS.c.id == bindparam("b_id"), ASSIGNMENTS.c.status == "leased")
    .values(status="submitted", closed_at=bindparam("b_now"))
)

_COUNT_SUBMIT = (
    update(UNITS)
    .where(UNITS.c.id == bindparam("b_unit"))
    .values(n_submitted=UNITS.c.n_submitted + 1)
)

_INSERT_ANNOTATION = insert(ANNOTATIONS).returning(ANNOTATIONS.c.id)

_DELETE_DRAFT = delete(DRAFTS).where(
    DRAFTS.c.unit_id == bindparam("b_unit"), DRAFTS.c.annotator_id == bindparam("b_annotator")
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
    count: bool = True,
) -> _Stored | None:
    """:func:`submit` of a live lease with Core statements; None leaves it to the ORM path.

    ``count=False`` leaves the answer to be counted on the unit's row by the caller
    (:func:`data.queue.leases._lease_then_count`). Every other case (already submitted, given
    back, expired, absent, or the assignment already loaded as an object in this session, which
    a Core update would leave stale) returns None.
    """
    if (Assignment, (assignment_id,), None) in session.identity_map:
        return None
    params = {"assignment_id": assignment_id, "annotator_id": annotator_id}
    row = session.connection().execute(_OWN_LEASE, params).first()
    if row is None or row.status != "leased":
        return None
    campaign = campaign_row(session, row.campaign_id)
    if campaign.status == "closed":
        raise CampaignNotOpen(f"campaign {campaign.name!r} is closed: answers are not accepted")
    score, canonical = check_answer(campaign, row.shown_order, score, preference, rationale)
    closed = session.connection().execute(_CLOSE_SUBMITTED, {"b_id": assignment_id, "b_now": now})
    if closed.rowcount != 1:  # pragma: no cover - the row is locked / the writer is serial
        return None
    values = _annotation_values(
        row.campaign_id,
        row.unit_id,
        annotator_id,
        assignment_id,
        row.shown_order,
        score,
        canonical,
        rationale,
        seconds,
        now,
    )
    annotation_id = session.connection().execute(_INSERT_ANNOTATION, values).scalar_one()
    record_submission(
        session,
        annotator_id=annotator_id,
        annotation_id=annotation_id,
        unit_id=row.unit_id,
        campaign_id=row.campaign_id,
        at=now,
    )
    if count:
        _count_answer(session, row.unit_id)
    _drop_draft(session, row.unit_id, annotator_id)
    return _Stored(annotation_id, values, campaign)
