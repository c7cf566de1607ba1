"""external annotator accounts (annotations import)

Revision ID: 0002_external_accounts
Revises: 0001_initial
Create Date: 2026-12-01 17:45:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_external_accounts"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("user_account", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("external", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("user_account", schema=None) as batch_op:
        batch_op.drop_column("external")
