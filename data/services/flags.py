"""Flag review: units that annotators reported as broken, and how reviewers resolve them.

A flag takes its unit out of the annotation queue until a reviewer resolves it, either returning
the unit to the queue or keeping it out; the flag row is kept with who resolved it and when.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from data.services.adjudication import REVIEWER_ROLES, AdjudicationError
from data.services.monitor import UnitInfo, unit_infos
from data.services.roles import require_actor_role
from data.storage.audit import record_event
from schemas.core import stored_id
from schemas.tables import Campaign, Flag, Unit, User, utcnow


@dataclass(frozen=True)
class FlagView:
    flag_id: int
    campaign_id: int
    campaign: str
    unit_id: int
    unit_key: str
    item_id: str
    reported_by: str
    reason: str
    created_at: datetime
    resolved_by: str | None
    resolved_at: datetime | None
    resolution: str | None
    unit_flagged: bool
    """whether the unit is still out of the annotation queue"""


def list_flags(
    session: Session, *, campaign_id: int | None = None, include_resolved: bool = False
) -> list[FlagView]:
    """Flags reported by annotators, oldest open first."""
    query = (
        select(Flag, Campaign.name, Unit.flagged)
        .join(Campaign, col(Campaign.id) == col(Flag.campaign_id))
        .join(Unit, col(Unit.id) == col(Flag.unit_id))
        .order_by(col(Flag.created_at), col(Flag.id))
    )
    if campaign_id is not None:
        query = query.where(Flag.campaign_id == campaign_id)
    if not include_resolved:
        query = query.where(col(Flag.resolved_at).is_(None))
    rows = list(session.exec(query))
    user_ids = {flag.user_id for flag, _, _ in rows} | {
        flag.resolved_by for flag, _, _ in rows if flag.resolved_by is not None
    }
    names = dict(session.exec(select(User.id, User.name).where(col(User.id).in_(user_ids))).all())
    infos: dict[int, UnitInfo] = {}
    for campaign in {flag.campaign_id for flag, _, _ in rows}:
        units = [flag.unit_id for flag, _, _ in rows if flag.campaign_id == campaign]
        infos.update(unit_infos(session, campaign, units))
    return [
        FlagView(
            flag_id=stored_id(flag),
            campaign_id=flag.campaign_id,
            campaign=campaign_name,
            unit_id=flag.unit_id,
            unit_key=infos[flag.unit_id].unit_key,
            item_id=infos[flag.unit_id].item_id,
            reported_by=names.get(flag.user_id, "?"),
            reason=flag.reason,
            created_at=flag.created_at,
            resolved_by=names.get(flag.resolved_by) if flag.resolved_by else None,
            resolved_at=flag.resolved_at,
            resolution=flag.resolution,
            unit_flagged=flagged,
        )
        for flag, campaign_name, flagged in rows
    ]


def resolve_flag(
    session: Session,
    actor_id: int | None,
    flag_id: int,
    resolution: str,
    *,
    return_to_queue: bool,
) -> Flag:
    """Close a flag with a note (reviewers and admins).

    With ``return_to_queue`` the unit goes back into the annotation queue once none of its flags
    is open; otherwise it stays out. The flag row is kept, with who resolved it and when.
    """
    reviewer = require_actor_role(session, actor_id, *REVIEWER_ROLES)
    flag = session.exec(select(Flag).where(Flag.id == flag_id).with_for_update()).first()
    if flag is None:
        raise AdjudicationError(f"no flag #{flag_id}: pick one from the list")
    if flag.resolved_at is not None:
        raise AdjudicationError(f"flag #{flag_id} is already resolved: {flag.resolution}")
    if not resolution.strip():
        raise AdjudicationError("write a note that says how the flag was resolved")
    unit = session.get(Unit, flag.unit_id)
    assert unit is not None
    flag.resolved_by, flag.resolved_at, flag.resolution = reviewer.id, utcnow(), resolution.strip()
    session.add(flag)
    session.flush()
    others_open = session.exec(
        select(Flag.id).where(Flag.unit_id == unit.id, col(Flag.resolved_at).is_(None))
    ).first()
    was_flagged = unit.flagged
    if return_to_queue and others_open is None:
        unit.flagged = False
    elif not return_to_queue:
        unit.flagged = True
    session.add(unit)
    record_event(
        session,
        actor_id=actor_id,
        action="flag.resolve",
        entity="flag",
        entity_id=flag_id,
        detail={
            "unit_id": unit.id,
            "resolution": flag.resolution,
            "unit_flagged": {"before": was_flagged, "after": unit.flagged},
        },
    )
    return flag
