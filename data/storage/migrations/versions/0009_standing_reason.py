"""who decided an annotator's standing, and why: annotator_standing.by_queue and .reason

Revision ID: 0009_standing_reason
Revises: 0008_account_names_folded
Create Date: 2026-12-04 00:10:00

Before, a standing with no ``decided_by`` was read as the queue's qualification verdict, so an
admin's hold from the command line (no account) told the annotator they had failed
qualification. ``by_queue`` says who decided; ``reason`` keeps the admin's words. Existing rows:
``by_queue`` is true where nobody is recorded and a qualification accuracy is (the queue's
verdicts); the audit trail keeps the full history either way.
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0009_standing_reason"
down_revision = "0008_account_names_folded"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "annotator_standing",
        sa.Column("by_queue", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column(
        "annotator_standing",
        sa.Column("reason", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    )
    op.execute(
        "UPDATE annotator_standing SET by_queue = true "
        "WHERE decided_by IS NULL AND accuracy IS NOT NULL AND status IN ('qualified','held')"
    )


def downgrade() -> None:
    with op.batch_alter_table("annotator_standing", schema=None) as batch_op:
        batch_op.drop_column("reason")
        batch_op.drop_column("by_queue")
