"""judge-guided routing: campaign.routing / routing_judges / routing_share, unit.priority

Revision ID: 0004_campaign_routing
Revises: 0003_login_limits
Create Date: 2026-12-01 18:30:00

Plain ``ADD COLUMN`` (no table rebuild), like 0003.
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0004_campaign_routing"
down_revision = "0003_login_limits"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "campaign",
        sa.Column(
            "routing",
            sqlmodel.sql.sqltypes.AutoString(),
            nullable=False,
            server_default="least-annotated",
        ),
    )
    op.add_column("campaign", sa.Column("routing_judges", sa.JSON(), nullable=True))
    op.add_column("campaign", sa.Column("routing_share", sa.Float(), nullable=True))
    op.add_column("unit", sa.Column("priority", sa.BigInteger(), nullable=True))
    op.create_index(
        "ix_unit_route", "unit", ["campaign_id", "slots_taken", "priority", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_unit_route", table_name="unit")
    with op.batch_alter_table("unit", schema=None) as batch_op:
        batch_op.drop_column("priority")
    with op.batch_alter_table("campaign", schema=None) as batch_op:
        batch_op.drop_column("routing_share")
        batch_op.drop_column("routing_judges")
        batch_op.drop_column("routing")
