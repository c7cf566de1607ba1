"""The *importing* state of a campaign: the one place that decides whether an ``annotations
import`` is still writing a campaign, and what becomes of one whose import was killed.

A campaign is importing while it has a ``campaign_import`` row
(:class:`schemas.tables.CampaignImport`). The import adds the row with the campaign, renews its
heartbeat with each of its short transactions and deletes it with its last one; until then
every reader of :mod:`data` excludes the campaign in its query (:data:`NOT_IMPORTING`): the
look-ups and listings of :mod:`data.storage.campaign_lookup`, which the queue, the services and
the calibration, critic and export readers start from, and the queries that list campaigns
without a name.

All or nothing for the user: an import killed half-way (its process gone, or silent for
:data:`STALE_AFTER`) left a campaign that no reader sees;
:func:`data.storage.engine.roll_back_abandoned_imports`
deletes it, with the accounts the import added, and records ``campaign.import_rolled_back``.
Every command runs it when it opens the database (:func:`data.storage.engine.upgrade_database`),
and an import of the same campaign name runs it first; the labels are then imported again from
their file, which is cheaper to trust than a resumed half.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, delete, exists, update
from sqlalchemy import select as core_select
from sqlmodel import Session, select

from data.storage.audit import record_event
from schemas.core import core_table
from schemas.core_tables import ANNOTATIONS, ASSIGNMENTS, CAMPAIGNS, UNITS, USERS
from schemas.tables import CampaignImport, utcnow

CAMPAIGN_IMPORTS = core_table(CampaignImport)
NOT_IMPORTING: ColumnElement[bool] = ~exists().where(
    CAMPAIGN_IMPORTS.c.campaign_id == CAMPAIGNS.c.id
)
"""A ``WHERE`` condition on the ``campaign`` table: the campaign is not being imported."""
STALE_AFTER = timedelta(minutes=10)
"""An import whose heartbeat is older than this is taken as dead even when its process cannot be
checked (another host, as with a shared PostgreSQL server). Each of its transactions renews the
heartbeat and takes seconds, so ten minutes of silence is no live import."""


@dataclass(frozen=True)
class RolledBackImport:
    """A half-written campaign deleted because its import had died."""

    campaign: str
    units: int
    annotations: int
    accounts: int


def begin_import(session: Session, campaign_id: int, accounts: list[int]) -> None:
    """Put campaign ``campaign_id`` (just added, same transaction) in the importing state, owned
    by this process; ``accounts``: the external accounts the import added."""
    session.connection().execute(
        CAMPAIGN_IMPORTS.insert().values(
            campaign_id=campaign_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            started_at=utcnow(),
            heartbeat_at=utcnow(),
            accounts=accounts,
        )
    )


def renew_import(session: Session, campaign_id: int) -> None:
    """Say, in the import's current transaction, that its process is still writing."""
    session.connection().execute(
        update(CAMPAIGN_IMPORTS)
        .where(CAMPAIGN_IMPORTS.c.campaign_id == campaign_id)
        .values(heartbeat_at=utcnow())
    )


def finish_import(session: Session, campaign_id: int) -> None:
    """Leave the importing state (in the import's last transaction: its rows appear with it)."""
    session.connection().execute(
        delete(CAMPAIGN_IMPORTS).where(CAMPAIGN_IMPORTS.c.campaign_id == campaign_id)
    )


def importing(session: Session, campaign_id: int) -> CampaignImport | None:
    """The importing state of the campaign; None when it is not being imported."""
    return session.get(CampaignImport, campaign_id)


def is_abandoned(state: CampaignImport, now: datetime | None = None) -> bool:
    """Whether the import that owns ``state`` is dead: its process is gone from this host, or
    it has not renewed its heartbeat for :data:`STALE_AFTER`."""
    now = now or utcnow()
    beat = state.heartbeat_at
    if beat.tzinfo is None:  # SQLite gives stored UTC back naive
        beat = beat.replace(tzinfo=UTC)
    if now - beat > STALE_AFTER:
        return True
    return state.host == socket.gethostname() and not _process_alive(state.pid)


def roll_back_import(session: Session, campaign_id: int) -> RolledBackImport:
    """Delete a half-written imported campaign: its answers, assignments, units, state and row,
    and the external accounts its import added that nothing else uses. In ``session``'s
    transaction; the caller commits."""
    connection = session.connection()
    state = importing(session, campaign_id)
    accounts = list(state.accounts) if state is not None else []
    name = connection.execute(
        core_select(CAMPAIGNS.c.name).where(CAMPAIGNS.c.id == campaign_id)
    ).scalar_one()
    counts = {}
    for table in (ANNOTATIONS, ASSIGNMENTS, UNITS):
        result = connection.execute(delete(table).where(table.c.campaign_id == campaign_id))
        counts[table.name] = result.rowcount
    finish_import(session, campaign_id)
    connection.execute(delete(CAMPAIGNS).where(CAMPAIGNS.c.id == campaign_id))
    removed = 0
    if accounts:
        unused = (
            USERS.c.id.in_(accounts)
            # another import may have reused an account this one added before it died
            & ~exists().where(ASSIGNMENTS.c.annotator_id == USERS.c.id)
            & ~exists().where(ANNOTATIONS.c.annotator_id == USERS.c.id)
        )
        removed = connection.execute(delete(USERS).where(unused)).rowcount
    session.expire_all()
    return RolledBackImport(
        campaign=name,
        units=counts[UNITS.name],
        annotations=counts[ANNOTATIONS.name],
        accounts=removed,
    )


def roll_back_abandoned(
    session: Session, campaign_id: int, now: datetime | None = None
) -> RolledBackImport | None:
    """Roll back campaign ``campaign_id`` if an import that died left it half-written (audited
    as ``campaign.import_rolled_back``); None when it is not importing or its import is alive.
    In ``session``'s transaction; the caller commits."""
    state = session.exec(
        select(CampaignImport).where(CampaignImport.campaign_id == campaign_id).with_for_update()
    ).first()
    if state is None or not is_abandoned(state, now):
        return None
    owner = {"host": state.host, "pid": state.pid, "started_at": state.started_at.isoformat()}
    done = roll_back_import(session, campaign_id)
    record_event(
        session,
        actor_id=None,
        action="campaign.import_rolled_back",
        entity="campaign",
        entity_id=campaign_id,
        detail={
            "campaign": done.campaign,
            "units": done.units,
            "annotations": done.annotations,
            "accounts": done.accounts,
            **owner,
        },
    )
    return done


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (a zombie counts as alive until reaped)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
