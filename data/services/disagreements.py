"""Disagreement review: the units where a judge and the human reference differ, and their causes.

Which units are a judge's *disagreements* is one rule, with the reference it compares with
(adjudication, else the humans' consensus): both belong to :mod:`calibration`
(:func:`calibration.disagreement.judge_disagreements`, METRICS.md "Disagreement"), which this
package may not import. So the disagreements are passed in, found: the page's caller
(:func:`annotate_app.disagreement_review.campaign_disagreements`) finds them on the campaign as
its calibration report reads it, so the queue holds exactly the report's disagreements, in the
report's order; this module adds the units' identity and their tags. Reviewers tag the cause
from the campaign's taxonomy (:data:`schemas.disagreements.DEFAULT_TAXONOMY` unless the campaign
sets its own), with a note. The campaign's threshold (pointwise) is a setting stored here.

Tags are append-only like adjudications: a new tag on the same unit and judge retires the live
one, and every tag is a ``disagreement.tag`` audit event written in the same transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlmodel import Session, col, select

from data.services.monitor import unit_infos
from data.services.roles import require_actor_role
from data.storage.audit import record_event
from data.storage.campaign_lookup import campaign_protocol, get_campaign, unit_key_map
from schemas.core import stored_id
from schemas.disagreements import (
    DEFAULT_TAXONOMY,
    JudgeDisagreement,
    TagRecord,
    default_threshold,
)
from schemas.ids import id_problem
from schemas.protocols import Protocol
from schemas.tables import Campaign, DisagreementTag, Unit, User

REVIEWER_ROLES: tuple[str, ...] = ("reviewer", "admin")
OPTIONS_KEY = "disagreement_review"
"""Where the settings live in ``campaign.options``."""
MAX_CAUSES = 30
MAX_CAUSE_LENGTH = 60


class DisagreementError(ValueError):
    """A disagreement setting or tag that cannot be accepted, with what to do instead."""


@dataclass(frozen=True)
class ReviewSettings:
    """A campaign's disagreement-review settings."""

    threshold: float | None
    """Pointwise: the smallest |judge − reference| that counts; None for pairwise campaigns."""
    taxonomy: tuple[str, ...]
    """The causes a reviewer may choose, in the order shown."""


@dataclass(frozen=True)
class Disagreement:
    """One unit where the judge and the reference differ, with its live tag if any."""

    campaign_id: int
    unit_id: int
    unit_key: str
    item_id: str
    task: str | None
    judge: str
    judge_value: str
    reference_value: str
    gap: float
    """Pointwise |judge − reference| in points; pairwise the share of verdicts that differ."""
    cause: str | None
    """The live tag's cause; None while untagged."""


def check_review_settings(
    protocol: Protocol,
    threshold: float | None,
    taxonomy: Sequence[str] | None,
    *,
    stored: bool = False,
) -> ReviewSettings:
    """Validated settings; ``None`` means the default (20% of the scale, the default taxonomy).

    ``stored``: settings read back from a campaign, whose causes may predate the id rule (they
    are shown as text, so they stay readable; a new setting must follow it)."""
    if protocol.is_pointwise:
        width = protocol.scale_range
        if threshold is None:
            threshold = default_threshold(protocol)
        elif not 0 < threshold <= width:
            raise DisagreementError(
                f"the disagreement threshold is {threshold:g}, but it must be more than 0 and at "
                f"most the scale's width ({width:g} for {protocol.describe_scale()})"
            )
    elif threshold is not None:
        raise DisagreementError(
            "a pairwise campaign has no disagreement threshold (a judge either agrees with the "
            "reference label or not): leave it out"
        )
    causes = DEFAULT_TAXONOMY if taxonomy is None else tuple(c.strip() for c in taxonomy)
    if not causes or any(not c for c in causes):
        raise DisagreementError("the taxonomy has an empty cause: name every cause, e.g. a,b,c")
    repeated = sorted(c for c, n in Counter(causes).items() if n > 1)
    if repeated:
        raise DisagreementError(f"the taxonomy names {', '.join(repeated)} twice: name it once")
    if len(causes) > MAX_CAUSES or any(len(c) > MAX_CAUSE_LENGTH for c in causes):
        raise DisagreementError(
            f"the taxonomy may have at most {MAX_CAUSES} causes of at most {MAX_CAUSE_LENGTH} "
            "characters each: shorten it"
        )
    for cause in () if stored else causes:  # the id rules: one per line, shown in reports
        if (problem := id_problem(cause)) is not None:
            raise DisagreementError(f"the taxonomy's cause {cause!r} {problem}")
    return ReviewSettings(threshold, causes)


def settings_options(settings: ReviewSettings) -> dict[str, object]:
    """The settings as stored under ``campaign.options[OPTIONS_KEY]``."""
    return {"threshold": settings.threshold, "taxonomy": list(settings.taxonomy)}


def review_settings(campaign: Campaign) -> ReviewSettings:
    """The campaign's settings; a campaign made before they existed gets the defaults."""
    stored = (campaign.options or {}).get(OPTIONS_KEY) or {}
    return check_review_settings(
        campaign_protocol(campaign), stored.get("threshold"), stored.get("taxonomy"), stored=True
    )


def set_review_settings(
    session: Session,
    actor_id: int | None,
    campaign: str | int,
    *,
    threshold: float | None,
    taxonomy: Sequence[str] | None,
) -> ReviewSettings:
    """Change a campaign's threshold and taxonomy (admins); a ``campaign.update`` audit event.

    Tags already stored keep their cause, even one the new taxonomy no longer offers.
    """
    require_actor_role(session, actor_id, "admin")
    found = get_campaign(session, campaign)
    before = review_settings(found)
    after = check_review_settings(campaign_protocol(found), threshold, taxonomy)
    found.options = {**(found.options or {}), OPTIONS_KEY: settings_options(after)}
    session.add(found)
    record_event(
        session,
        actor_id=actor_id,
        action="campaign.update",
        entity="campaign",
        entity_id=stored_id(found),
        detail={
            "field": OPTIONS_KEY,
            "before": settings_options(before),
            "after": settings_options(after),
        },
    )
    return after


def disagreement_queue(
    session: Session,
    actor_id: int | None,
    campaign_id: int,
    judge: str,
    found: Sequence[JudgeDisagreement],
    *,
    include_tagged: bool = False,
) -> list[Disagreement]:
    """The judge's disagreements ``found`` on the campaign's units, in their order (calibration's:
    largest gap first, then unit key), each with its live tag; tagged units only with
    ``include_tagged`` (reviewers, admins)."""
    require_actor_role(session, actor_id, *REVIEWER_ROLES)
    unit_ids = {key: unit_id for unit_id, key in unit_key_map(session, campaign_id).items()}
    others = sorted({entry.judge for entry in found} - {judge})
    unknown = sorted({entry.unit_key for entry in found} - set(unit_ids))
    if others or unknown:
        raise ValueError(
            f"disagreements of judge(s) {others} or on unit(s) {unknown[:3]} are not those of "
            f"{judge} on campaign #{campaign_id}"
        )
    causes = _live_causes(session, campaign_id, judge)
    wanted = [
        (unit_ids[entry.unit_key], entry)
        for entry in found
        if include_tagged or unit_ids[entry.unit_key] not in causes
    ]
    infos = unit_infos(session, campaign_id, [unit_id for unit_id, _ in wanted])
    return [
        Disagreement(
            campaign_id,
            unit_id,
            entry.unit_key,
            infos[unit_id].item_id,
            infos[unit_id].task,
            judge,
            entry.judge_value,
            entry.reference_value,
            entry.gap,
            causes.get(unit_id),
        )
        for unit_id, entry in wanted
    ]


def _live_causes(session: Session, campaign_id: int, judge: str) -> dict[int, str]:
    rows = session.exec(
        select(DisagreementTag.unit_id, DisagreementTag.cause).where(
            DisagreementTag.campaign_id == campaign_id,
            DisagreementTag.judge == judge,
            DisagreementTag.is_live,
        )
    )
    return dict(rows.all())


def tag_disagreement(
    session: Session, actor_id: int | None, entry: Disagreement, *, cause: str, note: str = ""
) -> DisagreementTag:
    """Record why the judge disagrees on ``entry``'s unit (reviewers, admins).

    ``cause`` must be one of the campaign's taxonomy; ``other`` needs a note. A tag on a unit and
    judge already tagged retires the live tag (both rows stay). One ``disagreement.tag`` audit
    event with the cause before and after is written in the same transaction.
    """
    reviewer = require_actor_role(session, actor_id, *REVIEWER_ROLES)
    # the row lock serialises two reviewers tagging one unit (PostgreSQL; SQLite's writes are)
    unit = session.exec(select(Unit).where(Unit.id == entry.unit_id).with_for_update()).first()
    if unit is None or unit.campaign_id != entry.campaign_id:
        raise DisagreementError(
            f"no unit #{entry.unit_id} in this campaign: pick one from the queue"
        )
    campaign = get_campaign(session, entry.campaign_id)
    taxonomy = review_settings(campaign).taxonomy
    if cause not in taxonomy:
        raise DisagreementError(
            f"{cause!r} is not a cause of campaign {campaign.name!r}: choose one of "
            + ", ".join(taxonomy)
        )
    note = note.strip()
    if cause == "other" and not note:
        raise DisagreementError("write a note that says what the cause is when you choose 'other'")
    live = session.exec(
        select(DisagreementTag).where(
            DisagreementTag.unit_id == entry.unit_id,
            DisagreementTag.judge == entry.judge,
            DisagreementTag.is_live,
        )
    ).first()
    if live is not None:
        live.is_live = False
        session.add(live)
        session.flush()  # the partial unique index allows one live tag per unit and judge
    tag = DisagreementTag(
        campaign_id=entry.campaign_id,
        unit_id=entry.unit_id,
        judge=entry.judge,
        reviewer_id=stored_id(reviewer),
        cause=cause,
        note=note,
        judge_value=entry.judge_value,
        reference_value=entry.reference_value,
        gap=float(entry.gap),
    )
    session.add(tag)
    session.flush()
    record_event(
        session,
        actor_id=actor_id,
        action="disagreement.tag",
        entity="disagreement_tag",
        entity_id=stored_id(tag),
        detail={
            "campaign_id": entry.campaign_id,
            "unit_id": entry.unit_id,
            "judge": entry.judge,
            "before": None if live is None else live.cause,
            "after": cause,
            "note": note,
            "judge_value": entry.judge_value,
            "reference_value": entry.reference_value,
            "retired": None if live is None else live.id,
        },
    )
    return tag


def campaign_tags(
    session: Session, campaign: str | int, *, judge: str | None = None, live_only: bool = True
) -> list[TagRecord]:
    """The campaign's tags (live ones unless ``live_only`` is false), by judge, unit, time."""
    found = get_campaign(session, campaign)
    assert found.id is not None
    statement = (
        select(DisagreementTag, User.name)
        .join(User, col(User.id) == col(DisagreementTag.reviewer_id))
        .where(DisagreementTag.campaign_id == found.id)
    )
    if live_only:
        statement = statement.where(DisagreementTag.is_live)
    if judge is not None:
        statement = statement.where(DisagreementTag.judge == judge)
    rows = list(session.exec(statement.order_by(col(DisagreementTag.id))))
    infos = unit_infos(session, found.id, {tag.unit_id for tag, _ in rows})
    records = [
        TagRecord(
            tag_id=stored_id(tag),
            campaign=found.name,
            unit_key=infos[tag.unit_id].unit_key,
            item_id=infos[tag.unit_id].item_id,
            judge=tag.judge,
            cause=tag.cause,
            note=tag.note,
            judge_value=tag.judge_value,
            reference_value=tag.reference_value,
            gap=tag.gap,
            reviewer=name,
            created_at=tag.created_at,
        )
        for tag, name in rows
    ]
    return sorted(records, key=lambda r: (r.judge, r.unit_key, r.tag_id))


def _utc(moment: datetime) -> datetime:
    # SQLite gives back naive datetimes; every stored time is UTC (schemas.tables.utcnow)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
