"""What the table modules share: the closed value sets, UTC time, and the time and JSON columns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
)
from sqlmodel import Field

ROLES: tuple[str, ...] = ("annotator", "reviewer", "admin")
CAMPAIGN_STATUSES: tuple[str, ...] = ("active", "paused", "closed")
ASSIGNMENT_STATUSES: tuple[str, ...] = (
    "leased",
    "submitted",
    "expired",
    "skipped",
    "released",
    "rejected",
)
LIVE_ASSIGNMENT_STATUSES: tuple[str, ...] = ("leased", "submitted")
PARSE_STATUSES: tuple[str, ...] = ("ok", "unparsed", "out_of_scale", "error", "skipped")
SHOWN_ORDERS: tuple[str, ...] = ("AB", "BA")
REVIEW_DECISIONS: tuple[str, ...] = ("accept", "reject")
"""A reviewer's decision on an answer (:class:`~schemas.tables.ReviewDecision`)."""
STANDINGS: tuple[str, ...] = ("qualifying", "qualified", "held", "released", "retired")
"""An annotator's standing in a campaign (:class:`~schemas.tables.AnnotatorStanding`)."""


def utcnow() -> datetime:
    """Now, timezone-aware UTC."""
    return datetime.now(UTC)


def time_field(*, nullable: bool, default_factory: Any = None, index: bool = False) -> Any:
    column = Column(DateTime(timezone=True), nullable=nullable, index=index)
    if default_factory is None:
        return Field(default=None, sa_column=column)
    return Field(default_factory=default_factory, sa_column=column)


def json_field(**kwargs: Any) -> Any:
    nullable = kwargs.pop("nullable", False)
    return Field(sa_column=Column(JSON, nullable=nullable), **kwargs)
