"""Read-only views for the pages: campaigns to pick, own answers, others' after submit, progress,
and the unit a page already shows."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from sqlalchemy import func
from sqlmodel import Session, col, select

from data.queue.common import live_annotation, own_assignment, own_draft, shown_preference
from data.queue.records import (
    AnnotatorProgress,
    AssignmentNotFound,
    MyAnnotation,
    OtherAnswer,
    UnitView,
)
from data.queue.unit_view import LeaseFacts, view_of_unit
from data.storage.campaign_imports import NOT_IMPORTING
from data.storage.campaign_lookup import get_campaign
from schemas.core import stored_id
from schemas.protocols import to_shown
from schemas.tables import Annotation, Assignment, Campaign, Item, Unit


def open_campaigns(session: Session) -> list[Campaign]:
    """Campaigns an annotator can pick (active or paused), by name."""
    query = select(Campaign).where(col(Campaign.status).in_(("active", "paused")), NOT_IMPORTING)
    return list(session.exec(query.order_by(Campaign.name)))


def my_campaigns(session: Session, annotator_id: int) -> list[Campaign]:
    """Campaigns the annotator has worked in or can work in now, by name."""
    worked = select(Assignment.campaign_id).where(Assignment.annotator_id == annotator_id)
    query = select(Campaign).where(
        col(Campaign.id).in_(worked) | col(Campaign.status).in_(("active", "paused")),
        NOT_IMPORTING,
    )
    return list(session.exec(query.order_by(Campaign.name)))


def last_worked_campaign_id(session: Session, annotator_id: int) -> int | None:
    """The campaign of the annotator's newest answer (any revision); None before the first."""
    return session.exec(
        select(Annotation.campaign_id)
        .where(Annotation.annotator_id == annotator_id)
        .order_by(col(Annotation.id).desc())
        .limit(1)
    ).first()


def my_annotations(
    session: Session, campaign_id: int, annotator_id: int, *, limit: int = 50, offset: int = 0
) -> list[MyAnnotation]:
    """The annotator's own live answers in the campaign, newest first."""
    rows = session.exec(
        select(Annotation)
        .where(Annotation.campaign_id == campaign_id, Annotation.annotator_id == annotator_id)
        .where(col(Annotation.is_live))
        .order_by(col(Annotation.created_at).desc(), col(Annotation.id).desc())
        .limit(limit)
        .offset(offset)
    ).all()
    return _my_records(session, campaign_id, list(rows))


def _my_records(
    session: Session, campaign_id: int, annotations: list[Annotation]
) -> list[MyAnnotation]:
    """Records for the given answers of one annotator in one campaign, with which of its item's
    units each is.

    The ordinal is the one the annotation page shows (:func:`data.queue.progress.unit_progress`):
    the place of the answer's assignment among the annotator's own assignments on the item's
    units, in the order they were given — counted by the annotator, never by model, so it stays
    blind. Two queries over the listed items (a page holds at most a page of them), never the
    whole campaign.
    """
    campaign = get_campaign(session, campaign_id)
    unit_ids = {a.unit_id for a in annotations}
    item_of = dict(
        session.exec(select(Unit.id, Unit.item_pk).where(col(Unit.id).in_(unit_ids))).all()
    )
    item_pks = set(item_of.values())
    item_units = dict(
        session.exec(
            select(Unit.item_pk, func.count())
            .where(Unit.campaign_id == campaign_id, col(Unit.item_pk).in_(item_pks))
            .group_by(col(Unit.item_pk))
        ).all()
    )
    # Optional ids, as the columns declare them: Assignment.id is unset only before a flush, and an
    # answer's assignment_id is nullable in the schema (though every answer is given through one).
    given: dict[int, list[int | None]] = {}
    annotators = {a.annotator_id for a in annotations}
    for assignment_id, item_pk in session.exec(
        select(Assignment.id, Unit.item_pk)
        .join(Unit, col(Unit.id) == Assignment.unit_id)
        .where(Assignment.campaign_id == campaign_id, col(Assignment.annotator_id).in_(annotators))
        .where(col(Unit.item_pk).in_(item_pks))
        .order_by(col(Assignment.id))
    ):
        given.setdefault(item_pk, []).append(assignment_id)
    items = {
        pk: (item_id, task)
        for pk, item_id, task in session.exec(
            select(Item.id, Item.item_id, Item.task).where(col(Item.id).in_(set(item_of.values())))
        )
    }
    kind: Literal["response", "pair"] = "pair" if campaign.protocol == "pairwise" else "response"
    records = []
    for a in annotations:
        item_pk = item_of[a.unit_id]
        records.append(
            MyAnnotation(
                annotation_id=stored_id(a),
                unit_id=a.unit_id,
                item_id=items[item_pk][0],
                task=items[item_pk][1],
                score=a.score,
                preference_shown=shown_preference(a.preference, a.shown_order),
                rationale=a.rationale,
                seconds=a.seconds,
                revision=a.revision,
                created_at=a.created_at,
                campaign=campaign.name,
                unit_kind=kind,
                unit_ordinal=given[item_pk].index(a.assignment_id) + 1,
                item_units=item_units[item_pk],
            )
        )
    return records


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
    campaign = get_campaign(session, annotation.campaign_id)
    [mine] = _my_records(session, stored_id(campaign), [annotation])
    return view_of_unit(session, campaign, LeaseFacts.of(assignment), None), mine


def answer_history(session: Session, annotation_id: int, annotator_id: int) -> list[MyAnnotation]:
    """Every revision of one of the annotator's own answers (named by any of its revisions),
    newest first: what *My work* shows under the answer being edited. Revisions are kept, never
    overwritten (:func:`data.queue.revise`); someone else's answer raises
    :class:`AssignmentNotFound`, as one that does not exist."""
    named = session.exec(
        select(Annotation).where(
            Annotation.id == annotation_id, Annotation.annotator_id == annotator_id
        )
    ).first()
    if named is None:
        raise AssignmentNotFound(f"you have no answer with id {annotation_id}")
    revisions = session.exec(
        select(Annotation)
        .where(Annotation.unit_id == named.unit_id, Annotation.annotator_id == annotator_id)
        .order_by(col(Annotation.revision).desc(), col(Annotation.id).desc())
    ).all()
    return _my_records(session, named.campaign_id, list(revisions))


def previous_answer(
    session: Session, campaign_id: int, annotator_id: int, before: int | None = None
) -> int | None:
    """The annotator's live answer (its id) on the unit they were given last before the
    assignment ``before`` (before any: the newest), in the campaign; None when there is none.

    Units are ordered by when the annotator was given them (assignment ids), not by when the
    answer was last revised, so "previous" walks back the way the annotator came.
    """
    query = (
        select(Annotation.id)
        .join(Assignment, col(Assignment.id) == Annotation.assignment_id)
        .where(Annotation.campaign_id == campaign_id, Annotation.annotator_id == annotator_id)
        .where(col(Annotation.is_live))
    )
    if before is not None:
        query = query.where(col(Assignment.id) < before)
    return session.exec(query.order_by(col(Assignment.id).desc()).limit(1)).first()


def assignment_view(session: Session, assignment_id: int, annotator_id: int) -> UnitView | None:
    """The unit of one of the annotator's own assignments, for the page that is showing it.

    The annotation page holds the assignment it shows and asks for it again on every rerun,
    so that a tab keeps its unit until that tab submits, skips or leaves, even when another tab
    of the same annotator answered the unit meanwhile and :func:`~data.queue.next_unit` has
    moved on. A leased assignment comes with its draft. A submitted one comes with
    ``answered_revision`` (the live answer's revision) and no draft, since the submit dropped it;
    a different answer sent for it is stored as the next revision, the same one again is not.

    None when the unit is no longer this annotator's to answer here: given back (skipped,
    reported), expired (:func:`~data.queue.next_unit` retakes it if it can), or its campaign is
    not active. Another annotator's assignment raises :class:`AssignmentNotFound`, so an id
    taken from a URL or a stale session shows nothing of anybody else's work.
    """
    assignment = own_assignment(session, assignment_id, annotator_id)
    if assignment.status not in ("leased", "submitted"):
        return None
    campaign = get_campaign(session, assignment.campaign_id)
    if campaign.status != "active":
        return None
    leased = LeaseFacts.of(assignment)
    if assignment.status == "leased":
        draft = own_draft(session, assignment.unit_id, annotator_id)
        return view_of_unit(session, campaign, leased, draft)
    live = live_annotation(session, assignment.unit_id, annotator_id)
    view = view_of_unit(session, campaign, leased, None)
    return replace(view, answered_revision=live.revision)


def others_answers(session: Session, unit_id: int, annotator_id: int) -> list[OtherAnswer]:
    """Other humans' live answers on a unit, in this annotator's shown order.

    Empty unless the campaign allows it and the annotator has submitted their own answer.
    """
    unit = session.get(Unit, unit_id)
    if unit is None or not get_campaign(session, unit.campaign_id).show_others_after_submit:
        return []
    own = session.exec(
        select(Annotation).where(
            Annotation.unit_id == unit_id,
            Annotation.annotator_id == annotator_id,
            col(Annotation.is_live),
        )
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
    """Counts for the progress bar: own answers and skips (gold ones among them, blind), the
    campaign's real units (gold units left out)."""
    campaign = get_campaign(session, campaign_id)

    def count(query: Any) -> int:
        return int(session.exec(query).one())

    mine = select(func.count()).where(
        Assignment.campaign_id == campaign_id, Assignment.annotator_id == annotator_id
    )
    units = select(func.count()).where(Unit.campaign_id == campaign_id, col(Unit.gold).is_(False))
    return AnnotatorProgress(
        my_submitted=count(mine.where(Assignment.status == "submitted")),
        my_skipped=count(mine.where(Assignment.status == "skipped")),
        my_rejected=count(mine.where(Assignment.status == "rejected")),
        units_total=count(units),
        units_complete=count(units.where(Unit.n_submitted >= campaign.overlap)),
        units_flagged=count(units.where(col(Unit.flagged))),
    )
