"""An annotator's reading of a campaign's guidelines (its instructions), kept per annotator and
campaign so that the gate before the first unit shows once, not again after a reload or on
another device.

The mark is an audit event (``guidelines.read`` on the campaign, by the annotator): it is written
once, says when, and an admin sees it in the Audit trail; no table of its own is needed.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from data.storage.audit import record_event
from schemas.tables import AuditEvent

GUIDELINES_READ = "guidelines.read"


def guidelines_read(session: Session, campaign_id: int, user_id: int) -> bool:
    """Whether this annotator has confirmed reading this campaign's guidelines."""
    query = select(AuditEvent.id).where(
        AuditEvent.entity == "campaign",
        AuditEvent.entity_id == str(campaign_id),
        AuditEvent.action == GUIDELINES_READ,
        col(AuditEvent.actor_id) == user_id,
    )
    return session.exec(query.limit(1)).first() is not None


def mark_guidelines_read(session: Session, campaign_id: int, user_id: int) -> None:
    """Record that this annotator has read this campaign's guidelines (once: a second call
    records nothing)."""
    if not guidelines_read(session, campaign_id, user_id):
        record_event(
            session,
            actor_id=user_id,
            action=GUIDELINES_READ,
            entity="campaign",
            entity_id=campaign_id,
        )
