"""disagreement review: the disagreement_tag table (append-only, live tag per unit and judge)

Revision ID: 0005_disagreement_tags
Revises: 0004_campaign_routing
Create Date: 2026-12-01 18:40:00

A new table only (the campaign's taxonomy and threshold live in ``campaign.options``), so no
existing table is rebuilt.
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0005_disagreement_tags"
down_revision = "0004_campaign_routing"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "disagreement_tag",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("unit_id", sa.Integer(), nullable=False),
        sa.Column("judge", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("reviewer_id", sa.Integer(), nullable=False),
        sa.Column("cause", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("note", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("judge_value", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("reference_value", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("gap", sa.Float(), nullable=False),
        sa.Column("is_live", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"]),
        sa.ForeignKeyConstraint(["reviewer_id"], ["user_account.id"]),
        sa.ForeignKeyConstraint(["unit_id"], ["unit.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_disagreement_tag_unit_id", "disagreement_tag", ["unit_id"], unique=False)
    op.create_index(
        "ix_disagreement_tag_campaign",
        "disagreement_tag",
        ["campaign_id", "judge", "is_live"],
        unique=False,
    )
    op.create_index(
        "uq_disagreement_tag_live",
        "disagreement_tag",
        ["unit_id", "judge"],
        unique=True,
        sqlite_where=sa.text("is_live"),
        postgresql_where=sa.text("is_live"),
    )


def downgrade() -> None:
    op.drop_index("uq_disagreement_tag_live", table_name="disagreement_tag")
    op.drop_index("ix_disagreement_tag_campaign", table_name="disagreement_tag")
    op.drop_index("ix_disagreement_tag_unit_id", table_name="disagreement_tag")
    op.drop_table("disagreement_tag")
