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
    # A plain ADD COLUMN: batch mode would rebuild user_account, which SQLite refuses while
    # sessions and login tries refer to it.
    op.add_column(
        "user_account",
        sa.Column("external", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    with op.batch_alter_table("user_account", schema=None) as batch_op:
        batch_op.drop_column("external")
