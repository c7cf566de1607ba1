"""the importing state: the campaign_import table (a campaign an import is still writing)

Revision ID: 0010_campaign_imports
Revises: 0009_standing_reason
Create Date: 2026-12-04 00:10:00

Until now an ``annotations import`` marked its campaign with ``options.importing``, which only
the campaign look-up read. The state becomes a row of its own that every reader's query excludes
and that names the importing process, so that a killed import can be told from a running one and
rolled back. A campaign still marked the old way was written by an import of an earlier version
that never finished: it gets a row naming no live process (rolled back on the next command).
"""

from datetime import UTC, datetime

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0010_campaign_imports"
down_revision = "0009_standing_reason"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "campaign_import",
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("host", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("accounts", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaign.id"]),
        sa.PrimaryKeyConstraint("campaign_id"),
    )
    campaigns = sa.table("campaign", sa.column("id", sa.Integer()), sa.column("options", sa.JSON()))
    stale = datetime(1970, 1, 1, tzinfo=UTC)
    unfinished = [
        {
            "campaign_id": campaign_id,
            "host": "",
            "pid": 0,
            "started_at": stale,
            "heartbeat_at": stale,
            "accounts": [],
        }
        for campaign_id, options in op.get_bind().execute(sa.select(campaigns.c.id, campaigns.c.options))
        if (options or {}).get("importing")
    ]
    if unfinished:
        op.bulk_insert(table, unfinished)


def downgrade() -> None:
    op.drop_table("campaign_import")
