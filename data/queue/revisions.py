"""Editing one's own submitted answer: a new revision becomes live, the old one is kept and the
change is audited."""

from __future__ import annotations

from sqlmodel import Session, col, select

from data.queue.common import check_answer, require_active_annotator
from data.queue.records import AssignmentNotFound, CampaignNotOpen
from data.storage.audit import record_event
from data.storage.campaign_lookup import get_campaign
from schemas.core import stored_id
from schemas.tables import Annotation


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
    require_active_annotator(session, annotator_id)
    old = session.exec(
        select(Annotation)
        .where(Annotation.id == annotation_id, Annotation.annotator_id == annotator_id)
        .where(col(Annotation.is_live))
        .with_for_update()
    ).first()
    if old is None:
        raise AssignmentNotFound(f"you have no current answer with id {annotation_id}")
    campaign = get_campaign(session, old.campaign_id)
    if campaign.status == "closed":
        raise CampaignNotOpen(f"campaign {campaign.name!r} is closed: answers cannot be edited")
    shown_order = old.shown_order or "AB"
    score, canonical = check_answer(campaign, shown_order, score, preference, rationale)
    old.is_live = False
    session.add(old)
    session.flush()
    new = Annotation(
        campaign_id=old.campaign_id,
        unit_id=old.unit_id,
        annotator_id=annotator_id,
        assignment_id=old.assignment_id,
        revision=old.revision + 1,
        score=score,
        preference=canonical,
        shown_order=old.shown_order,
        rationale=rationale,
        seconds=old.seconds + max(float(extra_seconds), 0.0),
        meta={"revises": old.id},
    )
    session.add(new)
    session.flush()
    record_event(
        session,
        actor_id=annotator_id,
        action="annotation.revise",
        entity="annotation",
        entity_id=stored_id(new),
        detail={
            "unit_id": old.unit_id,
            "revision": new.revision,
            "previous_id": old.id,
            "before": {
                "score": old.score,
                "preference": old.preference,
                "rationale": old.rationale,
            },
            "after": {"score": score, "preference": canonical, "rationale": rationale},
        },
    )
    return new
