"""The home page's list: the campaigns a user may see, with their progress.

Annotators see the campaigns that are not closed, plus closed ones they worked on; reviewers
and admins see every campaign. Counts use live annotations only (a revision counts once).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import Select

from data.services.counted_answers import not_rejected_anywhere
from data.services.users import UserRecord
from data.storage.campaign_imports import NOT_IMPORTING
from schemas.tables import Annotation, Assignment, Campaign, Dataset, Unit

STAFF_ROLES: tuple[str, ...] = ("reviewer", "admin")


@dataclass(frozen=True)
class CampaignSummary:
    """One campaign on the home page, with overall progress and the viewer's own share."""

    id: int
    name: str
    dataset: str
    protocol: str
    status: str
    overlap: int
    """Annotators per unit (K)."""
    synthetic: bool
    """A demo campaign with synthetic labels."""
    units: int
    units_complete: int
    """Units with at least ``overlap`` live annotations that count (a rejected one does not:
    :mod:`data.services.counted_answers`)."""
    annotations: int
    """Live annotations by everyone that count."""
    mine: int
    """Live annotations by the viewer that count."""
    open_to_me: int
    """Units the viewer could be given now: active campaign, not flagged, a free slot, and
    never assigned to the viewer before (a lease that expired but was not yet released still
    holds its slot)."""

    @property
    def fraction_complete(self) -> float:
        """Share of units with a full overlap of annotations; 0 for a campaign without units."""
        return self.units_complete / self.units if self.units else 0.0


def campaigns_for_user(session: Session, user: UserRecord) -> list[CampaignSummary]:
    """The campaigns ``user`` may see, newest first, with progress."""
    mine = _count_by_campaign(
        session,
        select(Annotation.campaign_id, func.count())
        .where(col(Annotation.is_live).is_(True), Annotation.annotator_id == user.id)
        .where(not_rejected_anywhere(col(Annotation.assignment_id)))
        .group_by(col(Annotation.campaign_id)),
    )
    campaigns = session.exec(
        select(Campaign, Dataset.name)
        .join(Dataset, col(Dataset.id) == col(Campaign.dataset_id))
        .where(NOT_IMPORTING)
        .order_by(col(Campaign.created_at).desc(), col(Campaign.id).desc())
    ).all()
    if user.role not in STAFF_ROLES:
        campaigns = [
            (campaign, dataset)
            for campaign, dataset in campaigns
            if campaign.status != "closed" or mine.get(campaign.id or 0, 0) > 0
        ]
    units = _count_by_campaign(
        session,
        select(Unit.campaign_id, func.count())
        .where(col(Unit.gold).is_(False))
        .group_by(col(Unit.campaign_id)),
    )
    live_per_unit = session.exec(
        select(Annotation.campaign_id, func.count())
        .join(Unit, col(Unit.id) == col(Annotation.unit_id))
        .where(col(Annotation.is_live).is_(True), col(Unit.gold).is_(False))
        .where(not_rejected_anywhere(col(Annotation.assignment_id)))
        .group_by(col(Annotation.campaign_id), col(Annotation.unit_id))
    ).all()
    annotation_counts: dict[int, list[int]] = defaultdict(list)
    for campaign_id, count in live_per_unit:
        annotation_counts[campaign_id].append(count)
    open_to_me = _open_units(session, user.id)
    summaries = []
    for campaign, dataset in campaigns:
        assert campaign.id is not None
        counts = annotation_counts[campaign.id]
        summaries.append(
            CampaignSummary(
                id=campaign.id,
                name=campaign.name,
                dataset=dataset,
                protocol=campaign.protocol,
                status=campaign.status,
                overlap=campaign.overlap,
                synthetic=campaign.synthetic,
                units=units.get(campaign.id, 0),
                units_complete=sum(1 for count in counts if count >= campaign.overlap),
                annotations=sum(counts),
                mine=mine.get(campaign.id, 0),
                open_to_me=open_to_me.get(campaign.id, 0) if campaign.status == "active" else 0,
            )
        )
    return summaries


def _count_by_campaign(session: Session, query: Select[int, int]) -> dict[int, int]:
    return {campaign_id: count for campaign_id, count in session.exec(query)}


def _open_units(session: Session, user_id: int) -> dict[int, int]:
    already_assigned = select(Assignment.id).where(
        Assignment.unit_id == Unit.id, Assignment.annotator_id == user_id
    )
    return _count_by_campaign(
        session,
        select(Unit.campaign_id, func.count())
        .join(Campaign, col(Campaign.id) == col(Unit.campaign_id))
        .where(
            col(Unit.flagged).is_(False),
            col(Unit.gold).is_(False),
            col(Unit.slots_taken) < col(Campaign.overlap),
            ~already_assigned.exists(),
        )
        .group_by(col(Unit.campaign_id)),
    )
