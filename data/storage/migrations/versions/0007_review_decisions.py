"""reviewer accept / reject of answers: review_decision, assignment status ``rejected``

Revision ID: 0007_review_decisions
Revises: 0006_gold_units
Create Date: 2026-12-15 10:00:00

A new table, and one more value in ``ck_assignment_status``. PostgreSQL replaces the check in
place; SQLite cannot alter a check, so the assignment table is rebuilt in batch mode (annotations
refer to it: the migration environment turns foreign keys off while it runs and checks every one
before the commit). The partial unique index on live slots is dropped first and created again
after the rebuild with its ``WHERE``, which a batch copy would not be sure to keep.

The downgrade turns rejected assignments into ``released`` (the slot stays given back, the row
is kept) and drops the decisions.
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0007_review_decisions"
down_revision = "0006_gold_units"
branch_labels = None
depends_on = None

_LIVE = "status IN ('leased','submitted')"
_WITH_REJECTED = "status IN ('leased','submitted','expired','skipped','released','rejected')"
_WITHOUT_REJECTED = "status IN ('leased','submitted','expired','skipped','released')"


def _replace_status_check(condition: str) -> None:
    op.drop_index(
        "uq_assignment_live_slot",
        table_name="assignment",
        sqlite_where=sa.text(_LIVE),
        postgresql_where=sa.text(_LIVE),
    )
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.drop_constraint("ck_assignment_status", type_="check")
        batch_op.create_check_constraint("ck_assignment_status", condition)
    op.create_index(
        "uq_assignment_live_slot",
        "assignment",
        ["unit_id", "slot"],
        unique=True,
        sqlite_where=sa.text(_LIVE),
        postgresql_where=sa.text(_LIVE),
    )


def upgrade() -> None:
    _replace_status_check(_WITH_REJECTED)
    op.create_table(
        "review_decision",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("annotation_id", sa.Integer(), nullable=False),
        sa.Column("decision", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("comment", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("decided_by", sa.Integer(), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_by", sa.Integer(), nullable=True),
        sa.CheckConstraint("decision IN ('accept','reject')", name="ck_review_decision"),
        sa.CheckConstraint(
            "decision <> 'reject' OR length(trim(comment)) > 0", name="ck_review_reject_comment"
        ),
        sa.CheckConstraint(
            "revoked_by IS NULL OR revoked_at IS NOT NULL", name="ck_review_revoked_when"
        ),
        sa.ForeignKeyConstraint(["annotation_id"], ["annotation.id"]),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"]),
        sa.ForeignKeyConstraint(["decided_by"], ["user_account.id"]),
        sa.ForeignKeyConstraint(["revoked_by"], ["user_account.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "uq_review_decision_live",
        "review_decision",
        ["annotation_id"],
        unique=True,
        sqlite_where=sa.text("revoked_at IS NULL"),
        postgresql_where=sa.text("revoked_at IS NULL"),
    )
    op.create_index(
        "ix_review_decision_campaign",
        "review_decision",
        ["campaign_id", "decided_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_review_decision_campaign", table_name="review_decision")
    op.drop_index(
        "uq_review_decision_live",
        table_name="review_decision",
        sqlite_where=sa.text("revoked_at IS NULL"),
        postgresql_where=sa.text("revoked_at IS NULL"),
    )
    op.drop_table("review_decision")
    op.execute("UPDATE assignment SET status = 'released' WHERE status = 'rejected'")
    _replace_status_check(_WITHOUT_REJECTED)
