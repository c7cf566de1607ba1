"""gold units and qualification: campaign gold settings, unit.gold, gold_answer,
annotator_standing

Revision ID: 0006_gold_units
Revises: 0005_disagreement_tags
Create Date: 2026-12-08 10:00:00

Plain ``ADD COLUMN`` with server defaults and two new tables, so no existing table is rebuilt
(the campaign table is referenced by most others). The campaign's checks are written on the new
columns themselves (``ADD COLUMN ... CHECK``), which SQLite and PostgreSQL both accept; the
downgrade drops the columns in batch mode (a rebuild on SQLite, as 0004's downgrade does).
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0006_gold_units"
down_revision = "0005_disagreement_tags"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "campaign",
        sa.Column(
            "gold_rate",
            sa.Float(),
            sa.CheckConstraint("gold_rate >= 0 AND gold_rate <= 0.5", name="ck_campaign_gold_rate"),
            nullable=False,
            server_default="0",
        ),
    )
    op.add_column(
        "campaign",
        sa.Column("gold_feedback", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column(
        "campaign",
        sa.Column(
            "qualification_gold",
            sa.Integer(),
            sa.CheckConstraint("qualification_gold >= 0", name="ck_campaign_qualification_gold"),
            nullable=False,
            server_default="0",
        ),
    )
    op.add_column(
        "campaign",
        sa.Column(
            "qualification_accuracy",
            sa.Float(),
            sa.CheckConstraint(
                "qualification_accuracy >= 0 AND qualification_accuracy <= 1",
                name="ck_campaign_qualification_accuracy",
            ),
            nullable=False,
            server_default="0",
        ),
    )
    op.add_column(
        "unit", sa.Column("gold", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.create_index(
        "ix_unit_gold",
        "unit",
        ["campaign_id", "id"],
        unique=False,
        sqlite_where=sa.text("gold"),
        postgresql_where=sa.text("gold"),
    )
    op.create_table(
        "gold_answer",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("unit_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("preference", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("explanation", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("(score IS NULL) <> (preference IS NULL)", name="ck_gold_score_xor_pref"),
        sa.CheckConstraint(
            "preference IS NULL OR preference IN ('A','B','tie')", name="ck_gold_preference"
        ),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"]),
        sa.ForeignKeyConstraint(["created_by"], ["user_account.id"]),
        sa.ForeignKeyConstraint(["unit_id"], ["unit.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("unit_id"),
    )
    op.create_index("ix_gold_answer_campaign_id", "gold_answer", ["campaign_id"], unique=False)
    op.create_table(
        "annotator_standing",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("accuracy", sa.Float(), nullable=True),
        sa.Column("decided_by", sa.Integer(), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('qualifying','qualified','held','released','retired')",
            name="ck_standing_status",
        ),
        sa.ForeignKeyConstraint(["annotator_id"], ["user_account.id"]),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"]),
        sa.ForeignKeyConstraint(["decided_by"], ["user_account.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("campaign_id", "annotator_id", name="uq_standing_campaign_annotator"),
    )
    op.create_index(
        "ix_annotator_standing_annotator_id", "annotator_standing", ["annotator_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_annotator_standing_annotator_id", table_name="annotator_standing")
    op.drop_table("annotator_standing")
    op.drop_index("ix_gold_answer_campaign_id", table_name="gold_answer")
    op.drop_table("gold_answer")
    op.drop_index("ix_unit_gold", table_name="unit")
    with op.batch_alter_table("unit", schema=None) as batch_op:
        batch_op.drop_column("gold")
    with op.batch_alter_table("campaign", schema=None) as batch_op:
        batch_op.drop_constraint("ck_campaign_qualification_accuracy", type_="check")
        batch_op.drop_constraint("ck_campaign_qualification_gold", type_="check")
        batch_op.drop_constraint("ck_campaign_gold_rate", type_="check")
        batch_op.drop_column("qualification_accuracy")
        batch_op.drop_column("qualification_gold")
        batch_op.drop_column("gold_feedback")
        batch_op.drop_column("gold_rate")
