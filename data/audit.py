"""The audit trail: every change is recorded with who and when, in the same transaction."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, select

from schemas.tables import AuditEvent


def record_event(
    session: Session,
    *,
    actor_id: int | None,
    action: str,
    entity: str,
    entity_id: str | int,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    """Add an audit event to ``session`` (committed with the change it describes).

    ``action`` is ``<entity>.<verb>`` (``annotation.revise``, ``user.role``,
    ``campaign.update``...); ``detail`` holds before/after values, never secrets.
    """
    event = AuditEvent(
        actor_id=actor_id,
        action=action,
        entity=entity,
        entity_id=str(entity_id),
        detail=detail or {},
    )
    session.add(event)
    return event


def list_events(
    session: Session,
    *,
    entity: str | None = None,
    entity_id: str | int | None = None,
    action_prefix: str | None = None,
    limit: int | None = 500,
) -> list[AuditEvent]:
    """Audit events, newest first, optionally for one entity or one family of actions."""
    query = select(AuditEvent).order_by(AuditEvent.at.desc(), AuditEvent.id.desc())
    if entity is not None:
        query = query.where(AuditEvent.entity == entity)
    if entity_id is not None:
        query = query.where(AuditEvent.entity_id == str(entity_id))
    if action_prefix is not None:
        query = query.where(AuditEvent.action.startswith(action_prefix))
    if limit is not None:
        query = query.limit(limit)
    return list(session.exec(query))
