"""login limits: the client of each login try, the time of a password reset

Revision ID: 0003_login_limits
Revises: 0002_external_accounts
Create Date: 2026-12-01 18:15:00

Plain ``ADD COLUMN`` (no table rebuild), so that it runs on a SQLite database whose accounts are
referenced by sessions and answers.
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0003_login_limits"
down_revision = "0002_external_accounts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "login_attempt",
        sa.Column("client", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    )
    op.create_index("ix_login_attempt_client_at", "login_attempt", ["client", "at"], unique=False)
    op.add_column(
        "user_account", sa.Column("password_changed_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("user_account", schema=None) as batch_op:
        batch_op.drop_column("password_changed_at")
    op.drop_index("ix_login_attempt_client_at", table_name="login_attempt")
    with op.batch_alter_table("login_attempt", schema=None) as batch_op:
        batch_op.drop_column("client")
