"""account names unique up to case: a unique index on lower(name)

Revision ID: 0008_account_names_folded
Revises: 0007_review_decisions
Create Date: 2026-12-03 20:30:00

``Demo-Admin`` beside ``demo-admin`` reads as one person in every list, audit trail and report;
account names are ASCII (``data.services.users.USER_NAME_PATTERN``), so ``lower`` folds them the
same way on SQLite and PostgreSQL. A database that already holds two such names cannot take the
index: the upgrade stops, names them, and changes nothing, so that an admin renames one first.
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_account_names_folded"
down_revision = "0007_review_decisions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    twins = (
        op.get_bind()
        .execute(
            sa.text(
                "SELECT lower(name), count(*) FROM user_account GROUP BY lower(name) "
                "HAVING count(*) > 1 ORDER BY lower(name)"
            )
        )
        .all()
    )
    if twins:
        names = ", ".join(name for name, _ in twins)
        raise RuntimeError(
            f"accounts whose names differ only in case: {names}; rename all but one of each "
            "(with the previous CritiqueLab version) and start again"
        )
    op.create_index(
        "uq_user_account_name_folded", "user_account", [sa.text("lower(name)")], unique=True
    )


def downgrade() -> None:
    op.drop_index("uq_user_account_name_folded", table_name="user_account")
