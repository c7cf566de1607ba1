"""A campaign's progress: per annotator, per unit, and the totals, with the active time spent.

It counts the answers calibration reads: live answers to real units that no reviewer rejected
(:func:`~data.services.counted_answers.not_rejected`). A rejected answer gave its slot back, so
its unit is not complete until another annotator fills it; ``rejected`` says how many of each
annotator's answers are out.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from sqlmodel import Session, col, select

from data.services.counted_answers import not_rejected
from data.storage.campaign_lookup import get_campaign, unit_keys
from schemas.tables import Annotation, Assignment, Unit, User


@dataclass(frozen=True)
class AnnotatorProgress:
    """One annotator's work in a campaign (live annotations that count only; revisions count
    once)."""

    annotator: str
    submitted: int
    leased: int
    skipped: int
    total_seconds: float
    median_seconds: float
    """Median active seconds per submitted unit; NaN when nothing is submitted."""
    rejected: int = 0
    """Answers a reviewer rejected (not in ``submitted``: their slots were given back)."""


@dataclass(frozen=True)
class UnitProgress:
    """One unit: how many annotators submitted it out of the overlap, and the time they took."""

    unit_id: int
    unit_key: str
    item_id: str
    submitted: int
    leased: int
    flagged: bool
    median_seconds: float
    """Median active seconds of its live annotations; NaN when none."""


@dataclass(frozen=True)
class CampaignProgress:
    """Progress of a campaign: per annotator, per unit, and the totals."""

    campaign: str
    protocol: str
    status: str
    overlap: int
    units: int
    units_complete: int
    """Units with at least ``overlap`` live annotations."""
    annotations: int
    median_seconds_per_unit: float
    """Median active seconds over all live annotations; NaN when none."""
    by_annotator: list[AnnotatorProgress] = field(default_factory=list)
    by_unit: list[UnitProgress] = field(default_factory=list)
    gold_units: int = 0
    """Gold units of the campaign (left out of every count above)."""

    @property
    def fraction_complete(self) -> float:
        return self.units_complete / self.units if self.units else float("nan")


def campaign_progress(session: Session, campaign_id: int) -> CampaignProgress:
    """Progress per annotator and per unit, with the active time spent per unit.

    Gold units and their answers are left out (they are not the campaign's work, and never count
    toward its overlap); ``gold_units`` says how many there are. So are answers a reviewer
    rejected, and revisions of them not accepted yet (:func:`not_rejected`).
    """
    campaign = get_campaign(session, campaign_id)
    gold = set(
        session.exec(
            select(Unit.id).where(Unit.campaign_id == campaign_id, col(Unit.gold).is_(True))
        )
    )
    seconds_by_unit: dict[int, list[float]] = defaultdict(list)
    seconds_by_annotator: dict[str, list[float]] = defaultdict(list)
    live = session.exec(
        select(Annotation.unit_id, User.name, Annotation.seconds)
        .join(User, col(User.id) == col(Annotation.annotator_id))
        .where(Annotation.campaign_id == campaign_id, Annotation.is_live)
        .where(not_rejected(col(Annotation.assignment_id), campaign_id))
    )
    for unit_id, annotator, seconds in live:
        if unit_id in gold:
            continue
        seconds_by_unit[unit_id].append(float(seconds))
        seconds_by_annotator[annotator].append(float(seconds))
    status_counts: dict[tuple[str, str], int] = defaultdict(int)
    leased_by_unit: dict[int, int] = defaultdict(int)
    assignments = session.exec(
        select(Assignment.unit_id, User.name, Assignment.status)
        .join(User, col(User.id) == col(Assignment.annotator_id))
        .where(Assignment.campaign_id == campaign_id)
    )
    for unit_id, annotator, status in assignments:
        if unit_id in gold:
            continue
        status_counts[(annotator, status)] += 1
        if status == "leased":
            leased_by_unit[unit_id] += 1
    annotators = sorted(set(seconds_by_annotator) | {name for name, _ in status_counts})
    by_annotator = [
        AnnotatorProgress(
            annotator=name,
            submitted=len(seconds_by_annotator[name]),
            leased=status_counts[(name, "leased")],
            skipped=status_counts[(name, "skipped")],
            rejected=status_counts[(name, "rejected")],
            total_seconds=float(sum(seconds_by_annotator[name])),
            median_seconds=_median(seconds_by_annotator[name]),
        )
        for name in annotators
    ]
    by_unit = [
        UnitProgress(
            unit_id=unit_id,
            unit_key=unit_key,
            item_id=item_id,
            submitted=len(seconds_by_unit[unit_id]),
            leased=leased_by_unit[unit_id],
            flagged=flagged,
            median_seconds=_median(seconds_by_unit[unit_id]),
        )
        for unit_id, unit_key, item_id, flagged in unit_keys(session, campaign_id)
        if unit_id not in gold
    ]
    all_seconds = [s for values in seconds_by_unit.values() for s in values]
    return CampaignProgress(
        campaign=campaign.name,
        protocol=campaign.protocol,
        status=campaign.status,
        overlap=campaign.overlap,
        units=len(by_unit),
        units_complete=sum(1 for unit in by_unit if unit.submitted >= campaign.overlap),
        annotations=len(all_seconds),
        median_seconds_per_unit=_median(all_seconds),
        by_annotator=by_annotator,
        by_unit=by_unit,
        gold_units=len(gold),
    )


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")
