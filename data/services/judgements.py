"""Model judgements into the database: bulk, idempotent on the judgement key.

A judgement is identified by ``(judge, prompt_id, unit_key, shown_order, sample)``
(``uq_judgement_key`` in :mod:`schemas.tables`). Importing the same file twice, or re-running a
judge, adds nothing the second time: rows whose key already exists are skipped, not updated.
"""

from __future__ import annotations

from sqlalchemy import Insert, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from data.services.routing import refresh_routing_for_judgements
from schemas.core_tables import JUDGEMENTS
from schemas.tables import Judgement

_KEY_COLUMNS = ("judge", "prompt_id", "unit_key", "shown_order", "sample")


def insert_judgements(session: Session, rows: list[Judgement]) -> int:
    """Insert ``rows`` in bulk, skipping any whose judgement key already exists; return how many
    were inserted.

    Duplicates inside ``rows`` are skipped the same way (the first one wins). Campaigns routed
    by one of the judges are re-ranked
    (:func:`data.services.routing.refresh_routing_for_judgements`).
    Runs inside the caller's transaction: nothing is committed here.
    """
    if not rows:
        return 0
    values = [_column_values(row) for row in rows]
    dialect = session.get_bind().dialect.name
    statement: Insert
    if dialect == "sqlite":
        statement = sqlite.insert(JUDGEMENTS).on_conflict_do_nothing(
            index_elements=list(_KEY_COLUMNS)
        )
    elif dialect == "postgresql":
        statement = postgresql.insert(JUDGEMENTS).on_conflict_do_nothing(
            constraint="uq_judgement_key"
        )
    else:
        raise RuntimeError(f"unsupported database dialect {dialect!r}: use SQLite or PostgreSQL")
    result = session.connection().execute(statement.returning(JUDGEMENTS.c.id), values)
    added = len(result.all())
    if added:  # judge-routed campaigns re-rank their units on their judges' new outputs
        refresh_routing_for_judgements(session, rows)
    return added


def count_judgements(session: Session, judge: str | None = None) -> int:
    """Number of stored judgements, optionally of one judge."""
    query = select(func.count()).select_from(JUDGEMENTS)
    if judge is not None:
        query = query.where(JUDGEMENTS.c.judge == judge)
    return int(session.connection().execute(query).scalar_one())


def _column_values(row: Judgement) -> dict[str, object]:
    return {
        column.name: getattr(row, column.name)
        for column in JUDGEMENTS.columns
        if column.name != "id"
    }
