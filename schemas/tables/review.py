"""Reviewers' work on units: final labels (adjudications), broken-unit flags, disagreement tags,
and accept / reject decisions on single answers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, text
from sqlmodel import Field, SQLModel

from schemas.tables.columns import time_field, utcnow


class Adjudication(SQLModel, table=True):
    """A reviewer's final label for a unit; the reference for calibration. Append-only."""

    __table_args__ = (
        Index(
            "uq_adjudication_live",
            "unit_id",
            unique=True,
            sqlite_where=text("is_live"),
            postgresql_where=text("is_live"),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    unit_id: int = Field(foreign_key="unit.id", index=True)
    reviewer_id: int = Field(foreign_key="user_account.id")
    score: float | None = None
    preference: str | None = Field(default=None, description="canonical order")
    note: str = ""
    is_live: bool = True
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)


class Flag(SQLModel, table=True):
    """A unit reported as broken by an annotator; reviewers resolve it."""

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    unit_id: int = Field(foreign_key="unit.id", index=True)
    user_id: int = Field(foreign_key="user_account.id")
    reason: str
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)
    resolved_by: int | None = Field(default=None, foreign_key="user_account.id")
    resolved_at: datetime | None = time_field(nullable=True)
    resolution: str | None = None


class DisagreementTag(SQLModel, table=True):
    """A reviewer's cause for a judge's disagreement with the human reference on one unit.

    Append-only like adjudications: a new tag for the same unit and judge retires the live one
    (``is_live`` false) and both stay. ``judge_value`` and ``reference_value`` keep what the
    reviewer saw when tagging (a score as ``%g``, or A / B / tie; a split pairwise verdict as
    e.g. ``A×1 B×1``).
    """

    __tablename__ = "disagreement_tag"
    __table_args__ = (
        Index(
            "uq_disagreement_tag_live",
            "unit_id",
            "judge",
            unique=True,
            sqlite_where=text("is_live"),
            postgresql_where=text("is_live"),
        ),
        Index("ix_disagreement_tag_campaign", "campaign_id", "judge", "is_live"),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id")
    unit_id: int = Field(foreign_key="unit.id", index=True)
    judge: str = Field(description="the model judge whose verdict was reviewed")
    reviewer_id: int = Field(foreign_key="user_account.id")
    cause: str = Field(description="one label of the campaign's disagreement taxonomy")
    note: str = ""
    judge_value: str = Field(default="", description="the judge's verdict as shown")
    reference_value: str = Field(default="", description="the human reference as shown")
    gap: float = Field(default=0.0, description="|judge − reference|, or share of verdicts off")
    is_live: bool = True
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)


class ReviewDecision(SQLModel, table=True):
    """A reviewer's accept or reject of one answer (one revision of an annotation).

    Append-only like adjudications: a decision is never edited; undoing it (``reopen``) or a new
    decision on the same answer revokes the live one (``revoked_at`` / ``revoked_by``) and both
    rows stay. At most one live (unrevoked) decision per answer; a rejection carries a comment
    for the annotator. What a rejection does to the queue (the slot given back, the answer out
    of the reference) is the assignment's ``rejected`` status: :mod:`data.queue.review`.
    """

    __tablename__ = "review_decision"
    __table_args__ = (
        CheckConstraint("decision IN ('accept','reject')", name="ck_review_decision"),
        CheckConstraint(
            "decision <> 'reject' OR length(trim(comment)) > 0", name="ck_review_reject_comment"
        ),
        CheckConstraint(
            "revoked_by IS NULL OR revoked_at IS NOT NULL", name="ck_review_revoked_when"
        ),
        Index(
            "uq_review_decision_live",
            "annotation_id",
            unique=True,
            sqlite_where=text("revoked_at IS NULL"),
            postgresql_where=text("revoked_at IS NULL"),
        ),
        Index("ix_review_decision_campaign", "campaign_id", "decided_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id")
    annotation_id: int = Field(foreign_key="annotation.id")
    decision: str = Field(description="accept | reject")
    comment: str = Field(default="", description="why; required for a rejection")
    decided_by: int | None = Field(default=None, foreign_key="user_account.id")
    decided_at: datetime = time_field(nullable=False, default_factory=utcnow)
    revoked_at: datetime | None = time_field(nullable=True)
    revoked_by: int | None = Field(default=None, foreign_key="user_account.id")
