"""Who works here and what they did: accounts, login sessions and attempts, the audit trail."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, column, func
from sqlmodel import Field, SQLModel

from schemas.tables.columns import json_field, time_field, utcnow


class User(SQLModel, table=True):
    """A person who logs in: annotator, reviewer or admin."""

    __tablename__ = "user_account"
    __table_args__ = (
        CheckConstraint("role IN ('annotator','reviewer','admin')", name="ck_user_role"),
        # names equal up to case read as one person (ASCII names: lower() folds them everywhere)
        Index("uq_user_account_name_folded", func.lower(column("name")), unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True, max_length=64, description="login name")
    password_hash: str = Field(description="argon2 hash; the password itself is never stored")
    role: str = Field(description="annotator | reviewer | admin")
    active: bool = Field(default=True, description="disabled accounts cannot log in")
    synthetic: bool = Field(default=False, description="a demo account of the sample project")
    external: bool = Field(
        default=False,
        description="an annotator whose labels were imported (annotations import); never logs in",
    )
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)
    password_changed_at: datetime | None = time_field(nullable=True)
    """When an admin last reset the password; failed logins before it no longer lock the name."""


class AuthSession(SQLModel, table=True):
    """A login session; the browser keeps only the token, the database only its hash."""

    __tablename__ = "auth_session"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(unique=True, index=True, description="sha256 of the session token")
    user_id: int = Field(foreign_key="user_account.id", index=True)
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)
    expires_at: datetime = time_field(nullable=False, default_factory=utcnow)
    revoked_at: datetime | None = time_field(nullable=True)


class LoginAttempt(SQLModel, table=True):
    """Every login try, for rate limiting and the audit trail."""

    __tablename__ = "login_attempt"
    __table_args__ = (
        Index("ix_login_attempt_name_at", "user_name", "at"),
        Index("ix_login_attempt_client_at", "client", "at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    user_name: str = Field(max_length=64)
    ok: bool
    at: datetime = time_field(nullable=False, default_factory=utcnow)
    client: str | None = Field(default=None, max_length=64)
    """The client's address as the server saw it; None for a try that did not come over HTTP."""


class AuditEvent(SQLModel, table=True):
    """Who changed what, when: annotation revisions, adjudications, roles, campaign settings."""

    __tablename__ = "audit_event"
    __table_args__ = (Index("ix_audit_entity", "entity", "entity_id"),)

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = time_field(nullable=False, default_factory=utcnow, index=True)
    actor_id: int | None = Field(default=None, foreign_key="user_account.id")
    action: str = Field(description="e.g. annotation.revise, user.role, campaign.update")
    entity: str = Field(description="table name of the thing changed")
    entity_id: str
    detail: dict = json_field(default_factory=dict, description="before / after values")
