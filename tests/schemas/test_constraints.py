"""The rules that must hold under concurrency are enforced by the database itself."""

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from schemas.tables import (
    Annotation,
    Assignment,
    Campaign,
    Dataset,
    Item,
    Response,
    Unit,
    User,
    utcnow,
)


def _seed(session: Session, overlap: int) -> tuple[Campaign, Unit, list[User]]:
    users = [User(name=f"u{i}", password_hash="x", role="annotator") for i in range(4)]
    dataset = Dataset(name="d", benchmark="generic")
    session.add_all([*users, dataset])
    session.flush()
    item = Item(
        dataset_id=dataset.id, item_id="i1", benchmark="generic", question="q", content_sha256="h"
    )
    session.add(item)
    session.flush()
    response = Response(
        response_id="i1/m", item_pk=item.id, model="m", content="a", content_sha256="h"
    )
    campaign = Campaign(name="c", dataset_id=dataset.id, protocol="alignmmbench", overlap=overlap)
    session.add_all([response, campaign])
    session.flush()
    unit = Unit(campaign_id=campaign.id, item_pk=item.id, response_pk=response.id)
    session.add(unit)
    session.flush()
    return campaign, unit, users


def _lease(campaign: Campaign, unit: Unit, user: User, slot: int, status: str = "leased"):
    return Assignment(
        campaign_id=campaign.id,
        unit_id=unit.id,
        annotator_id=user.id,
        slot=slot,
        overlap=campaign.overlap,
        status=status,
        expires_at=utcnow() + timedelta(minutes=15),
    )


def test_a_slot_beyond_the_overlap_is_refused(any_engine: Engine) -> None:
    with Session(any_engine) as session:
        campaign, unit, users = _seed(session, overlap=1)
        session.add(_lease(campaign, unit, users[0], slot=1))
        with pytest.raises(IntegrityError):
            session.flush()


def test_two_live_leases_cannot_share_a_slot(any_engine: Engine) -> None:
    with Session(any_engine) as session:
        campaign, unit, users = _seed(session, overlap=2)
        session.add(_lease(campaign, unit, users[0], slot=0))
        session.flush()
        session.add(_lease(campaign, unit, users[1], slot=0))
        with pytest.raises(IntegrityError):
            session.flush()


def test_an_expired_lease_frees_its_slot(any_engine: Engine) -> None:
    with Session(any_engine) as session:
        campaign, unit, users = _seed(session, overlap=1)
        session.add(_lease(campaign, unit, users[0], slot=0, status="expired"))
        session.add(_lease(campaign, unit, users[1], slot=0))
        session.flush()


def test_a_unit_is_never_leased_twice_to_one_annotator(any_engine: Engine) -> None:
    with Session(any_engine) as session:
        campaign, unit, users = _seed(session, overlap=3)
        session.add(_lease(campaign, unit, users[0], slot=0, status="skipped"))
        session.flush()
        session.add(_lease(campaign, unit, users[0], slot=1))
        with pytest.raises(IntegrityError):
            session.flush()


def test_one_live_annotation_per_annotator_and_unit(any_engine: Engine) -> None:
    with Session(any_engine) as session:
        campaign, unit, users = _seed(session, overlap=1)
        first = Annotation(
            campaign_id=campaign.id,
            unit_id=unit.id,
            annotator_id=users[0].id,
            revision=1,
            score=7,
            rationale="ok",
        )
        session.add(first)
        session.flush()
        session.add(
            Annotation(
                campaign_id=campaign.id,
                unit_id=unit.id,
                annotator_id=users[0].id,
                revision=2,
                score=8,
                rationale="edit",
            )
        )
        with pytest.raises(IntegrityError):
            session.flush()


def test_a_retired_revision_makes_room_for_the_edit(any_engine: Engine) -> None:
    with Session(any_engine) as session:
        campaign, unit, users = _seed(session, overlap=1)
        session.add(
            Annotation(
                campaign_id=campaign.id,
                unit_id=unit.id,
                annotator_id=users[0].id,
                revision=1,
                score=7,
                rationale="ok",
                is_live=False,
            )
        )
        session.add(
            Annotation(
                campaign_id=campaign.id,
                unit_id=unit.id,
                annotator_id=users[0].id,
                revision=2,
                score=8,
                rationale="edit",
            )
        )
        session.flush()


def test_a_unit_is_a_response_or_a_pair_never_both(any_engine: Engine) -> None:
    with Session(any_engine) as session:
        campaign, unit, _ = _seed(session, overlap=1)
        session.add(Unit(campaign_id=campaign.id, item_pk=unit.item_pk))
        with pytest.raises(IntegrityError):
            session.flush()
