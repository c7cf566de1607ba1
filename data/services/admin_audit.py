"""The audit trail as auditors read it: events with the actor's name, exported as CSV or JSONL.

Events are only ever added (``data.storage.audit.record_event``); nothing here changes or deletes
one.
JSONL is the lossless export. CSV is for spreadsheets: ``detail`` is a JSON string, and a cell
that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, tab or carriage
return) is prefixed with ``'`` (OWASP's advice on CSV injection; :mod:`schemas.csv_cells`).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from data.storage.audit import count_events, list_events, record_event
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.csv_cells import neutralised
from schemas.tables import AuditEvent, User

AUDIT_COLUMNS: tuple[str, ...] = ("id", "at", "actor", "action", "entity", "entity_id", "detail")


@dataclass(frozen=True)
class AuditRow:
    """One audit event, with the actor's name (None for the command line or the system)."""

    id: int
    at: datetime
    actor: str | None
    action: str
    entity: str
    entity_id: str
    detail: dict[str, Any]


def audit_rows(
    session: Session,
    *,
    entity: str | None = None,
    entity_id: str | None = None,
    action_prefix: str | None = None,
    limit: int | None = 500,
) -> list[AuditRow]:
    """Audit events, newest first, optionally for one entity or one family of actions."""
    events = list_events(
        session, entity=entity, entity_id=entity_id, action_prefix=action_prefix, limit=limit
    )
    actor_ids = {event.actor_id for event in events if event.actor_id is not None}
    names = dict(session.exec(select(User.id, User.name).where(col(User.id).in_(actor_ids))).all())
    return [
        AuditRow(
            stored_id(event),
            event.at,
            names.get(event.actor_id) if event.actor_id is not None else None,
            event.action,
            event.entity,
            event.entity_id,
            event.detail,
        )
        for event in events
    ]


def audit_count(
    session: Session,
    *,
    entity: str | None = None,
    entity_id: str | None = None,
    action_prefix: str | None = None,
) -> int:
    """How many events :func:`audit_rows` would give without a limit."""
    return count_events(session, entity=entity, entity_id=entity_id, action_prefix=action_prefix)


def record_export(
    engine: Engine,
    actor_id: int | None,
    kind: str,
    *,
    source: str,
    export_format: str,
    rows: int | None = None,
) -> None:
    """Add an ``export.<kind>`` event (``annotations``, ``sft``, ``calibration``, ``audit``...)
    for a file that was just made from ``source`` (a campaign, dataset or filter), in its own
    short transaction: the export itself read a snapshot and wrote nothing. ``actor_id`` None is
    the command line."""
    with session_scope(engine) as session:
        record_event(
            session,
            actor_id=actor_id,
            action=f"export.{kind}",
            entity="export",
            entity_id=source,
            detail={"format": export_format} | ({"rows": rows} if rows is not None else {}),
        )


def audit_jsonl(rows: list[AuditRow]) -> bytes:
    """One JSON object per event (UTF-8), times in ISO 8601."""
    lines = [
        json.dumps(asdict(row) | {"at": row.at.isoformat()}, ensure_ascii=False) for row in rows
    ]
    return ("\n".join(lines) + "\n" if lines else "").encode("utf-8")


def audit_csv(rows: list[AuditRow]) -> bytes:
    """A CSV with :data:`AUDIT_COLUMNS`; ``detail`` as JSON, formula-like cells neutralised."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(AUDIT_COLUMNS)
    for row in rows:
        detail = json.dumps(row.detail, ensure_ascii=False)
        cells = (row.id, row.at.isoformat(), row.actor or "", row.action, row.entity, row.entity_id)
        writer.writerow([neutralised(cell) for cell in (*cells, detail)])
    return buffer.getvalue().encode("utf-8")


def audit_actions(session: Session) -> list[str]:
    """Distinct action families (``user``, ``campaign``, ``adjudication``...) for filters."""
    actions = session.exec(select(AuditEvent.action).distinct()).all()
    return sorted({action.split(".", 1)[0] for action in actions})
