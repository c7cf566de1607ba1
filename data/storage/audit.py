"""The audit trail: every change is recorded with who and when, in the same transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import insert
from sqlmodel import Session, col, func, select
from sqlmodel.sql.expression import SelectOfScalar

from schemas.core_tables import AUDIT_EVENTS
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


_INSERT_EVENT = insert(AUDIT_EVENTS)


def record_submission(
    session: Session,
    *,
    annotator_id: int,
    annotation_id: int,
    unit_id: int,
    campaign_id: int,
    at: datetime,
) -> None:
    """The ``annotation.submit`` event of an answer's first revision (a revision has its own,
    ``annotation.revise``), as one Core insert in the caller's transaction: the submit path
    writes in Core."""
    session.connection().execute(
        _INSERT_EVENT,
        {
            "at": at,
            "actor_id": annotator_id,
            "action": "annotation.submit",
            "entity": "annotation",
            "entity_id": str(annotation_id),
            "detail": {"unit_id": unit_id, "campaign_id": campaign_id},
        },
    )


def list_events(
    session: Session,
    *,
    entity: str | None = None,
    entity_id: str | int | None = None,
    action_prefix: str | None = None,
    limit: int | None = 500,
) -> list[AuditEvent]:
    """Audit events, newest first, optionally for one entity or one family of actions."""
    query = _filtered(select(AuditEvent), entity, entity_id, action_prefix)
    query = query.order_by(col(AuditEvent.at).desc(), col(AuditEvent.id).desc())
    if limit is not None:
        query = query.limit(limit)
    return list(session.exec(query))


def count_events(
    session: Session,
    *,
    entity: str | None = None,
    entity_id: str | int | None = None,
    action_prefix: str | None = None,
) -> int:
    """How many events :func:`list_events` would give without a limit."""
    query = _filtered(
        select(func.count()).select_from(AuditEvent), entity, entity_id, action_prefix
    )
    return int(session.exec(query).one())


_Query = TypeVar("_Query", bound=SelectOfScalar[Any])


def _filtered(
    query: _Query, entity: str | None, entity_id: str | int | None, prefix: str | None
) -> _Query:
    if entity is not None:
        query = query.where(AuditEvent.entity == entity)
    if entity_id is not None:
        query = query.where(AuditEvent.entity_id == str(entity_id))
    if prefix is not None:
        query = query.where(col(AuditEvent.action).startswith(prefix))
    return query
