"""The role guard, account management and campaign settings of data.services.admin."""

from __future__ import annotations

from dataclasses import replace

import pytest
from admin_factory import add_campaign, add_dataset, add_people
from sqlalchemy import func
from sqlmodel import select

from data.services.admin import (
    CampaignSettingsError,
    add_account,
    campaign_settings,
    change_active,
    change_campaign_status,
    change_password,
    change_role,
    create_campaign_as,
    update_campaign_settings,
)
from data.services.campaigns import CampaignSpec
from data.services.roles import PermissionDenied, require_actor_role
from data.services.users import UserError, get_user, password_matches
from data.storage.audit import list_events
from data.storage.engine import session_scope
from schemas.tables import AuditEvent, AuthSession, Campaign, User, utcnow


def _world(engine):
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session)
        campaign = add_campaign(session, actor_id=people["root"])
    return engine, people, campaign.id


@pytest.fixture
def world(engine):
    return _world(engine)


@pytest.fixture
def any_world(any_engine):
    """The same world on SQLite and on PostgreSQL."""
    return _world(any_engine)


def _audit_count(session) -> int:
    return session.exec(select(func.count()).select_from(AuditEvent)).one()


def test_guard_returns_the_actor_with_an_allowed_role(world):
    engine, people, _ = world
    with session_scope(engine) as session:
        assert require_actor_role(session, people["rita"], "reviewer", "admin").name == "rita"


@pytest.mark.parametrize(
    ("actor", "message"),
    [
        (None, "you must be logged in as admin"),
        (99999, "account #99999 is unknown or disabled"),
        ("ann", "ann is annotator; only admin may do this"),
        ("rita", "rita is reviewer; only admin may do this"),
    ],
)
def test_guard_refuses_anonymous_unknown_and_wrong_roles(world, actor, message):
    engine, people, _ = world
    actor_id = people[actor] if isinstance(actor, str) else actor
    with session_scope(engine) as session, pytest.raises(PermissionDenied, match=message):
        require_actor_role(session, actor_id, "admin")


def test_guard_refuses_a_disabled_admin(world):
    engine, people, _ = world
    with session_scope(engine) as session:
        session.get(User, people["root"]).active = False
    with session_scope(engine) as session, pytest.raises(PermissionDenied, match="disabled"):
        require_actor_role(session, people["root"], "admin")


def test_guard_rejects_unknown_role_names(world):
    engine, people, _ = world
    with session_scope(engine) as session, pytest.raises(ValueError, match="roles"):
        require_actor_role(session, people["root"], "superuser")


def _actions(campaign_id: int):
    settings_change = {"overlap": 5}
    return {
        "add_account": lambda s, a: add_account(s, a, "newbie", "long enough pw", "annotator"),
        "change_role": lambda s, a: change_role(s, a, "bob", "reviewer"),
        "change_active": lambda s, a: change_active(s, a, "bob", False),
        "change_password": lambda s, a: change_password(s, a, "bob", "another long pw"),
        "create_campaign": lambda s, a: create_campaign_as(
            s, a, CampaignSpec(name="second", dataset="ds", protocol="mmie")
        ),
        "update_campaign_settings": lambda s, a: update_campaign_settings(
            s,
            a,
            campaign_id,
            replace(campaign_settings(s.get(Campaign, campaign_id)), **settings_change),
        ),  # fmt: skip
        "change_campaign_status": lambda s, a: change_campaign_status(s, a, campaign_id, "pause"),
    }


ADMIN_ACTIONS = list(_actions(0))


@pytest.mark.parametrize("action", ADMIN_ACTIONS)
@pytest.mark.parametrize("actor", ["ann", "rita"])
def test_every_admin_action_refuses_annotators_and_reviewers_and_changes_nothing(
    world, action, actor
):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        before = (_audit_count(session), session.get(Campaign, campaign_id).model_dump())
    with session_scope(engine) as session, pytest.raises(PermissionDenied):
        _actions(campaign_id)[action](session, people[actor])
    with session_scope(engine) as session:
        assert (_audit_count(session), session.get(Campaign, campaign_id).model_dump()) == before
        assert get_user(session, "bob").role == "annotator" and get_user(session, "bob").active
        assert get_user(session, "newbie") is None


@pytest.mark.parametrize("action", ADMIN_ACTIONS)
def test_every_admin_action_works_for_an_admin_and_is_audited(world, action):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        before = _audit_count(session)
        _actions(campaign_id)[action](session, people["root"])
    with session_scope(engine) as session:
        assert _audit_count(session) == before + 1
        assert list_events(session, limit=1)[0].actor_id == people["root"]


def test_role_change_is_audited_with_before_and_after(world):
    engine, people, _ = world
    with session_scope(engine) as session:
        change_role(session, people["root"], "bob", "reviewer")
    with session_scope(engine) as session:
        event = list_events(session, action_prefix="user.role")[0]
        assert event.detail == {"before": "annotator", "after": "reviewer"}
        assert event.entity_id == str(people["bob"])


def test_the_last_active_admin_can_be_neither_demoted_nor_disabled(any_world):
    world = any_world
    engine, people, _ = world
    with session_scope(engine) as session, pytest.raises(UserError, match="last active admin"):
        change_role(session, people["root"], "root", "reviewer")
    with session_scope(engine) as session, pytest.raises(UserError, match="last active admin"):
        change_active(session, people["root"], "root", False)
    with session_scope(engine) as session:
        change_role(session, people["root"], "rita", "admin")
        change_role(session, people["root"], "root", "reviewer")
    with session_scope(engine) as session:
        assert get_user(session, "root").role == "reviewer"


def test_disabling_an_account_ends_its_login_sessions(world):
    engine, people, _ = world
    with session_scope(engine) as session:
        session.add(AuthSession(token_hash="abc", user_id=people["bob"], expires_at=utcnow()))
    with session_scope(engine) as session:
        change_active(session, people["root"], "bob", False)
    with session_scope(engine) as session:
        assert session.exec(select(AuthSession)).one().revoked_at is not None
        assert get_user(session, "bob").active is False


def test_password_reset_replaces_the_hash_and_never_logs_the_password(world):
    engine, people, _ = world
    with session_scope(engine) as session:
        session.add(AuthSession(token_hash="abc", user_id=people["bob"], expires_at=utcnow()))
    with session_scope(engine) as session:
        reset = change_password(session, people["root"], "bob", "brand new secret")
    assert reset.sessions_ended == 1
    with session_scope(engine) as session:
        assert password_matches(get_user(session, "bob").password_hash, "brand new secret")
        assert session.exec(select(AuthSession)).one().revoked_at is not None
        event = list_events(session, action_prefix="user.password_reset")[0]
        assert "brand new secret" not in str(event.detail)


def test_settings_update_records_only_the_changed_values(any_world):
    world = any_world
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        current = campaign_settings(session.get(Campaign, campaign_id))
        changes = update_campaign_settings(
            session, people["root"], campaign_id,
            replace(current, overlap=2, instructions="Read **carefully**."),
        )  # fmt: skip
    assert changes == {
        "overlap": {"before": 3, "after": 2},
        "instructions": {"before": "", "after": "Read **carefully**."},
    }
    with session_scope(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        assert (campaign.overlap, campaign.instructions) == (2, "Read **carefully**.")
        event = list_events(session, action_prefix="campaign.update")[0]
        assert event.detail["changes"] == changes
        same = campaign_settings(campaign)
        before = _audit_count(session)
        assert update_campaign_settings(session, people["root"], campaign_id, same) == {}
        assert _audit_count(session) == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"overlap": 0}, "overlap is 0; give a whole number from 1 to 1,000"),
        ({"rationale_min": -1}, "rationale min is -1; give a whole number from 0 to 10,000"),
        ({"lease_seconds": 0}, "lease seconds is 0; give a whole number from 1 to 604,800"),
        ({"lease_seconds": 2**63 - 1}, "from 1 to 604,800"),  # stored, then next_unit crashed
        ({"overlap": 10**20}, "from 1 to 1,000"),  # OverflowError / DataError
        ({"overlap": 2.5}, "whole number"),
    ],
)
def test_invalid_settings_are_refused_and_nothing_changes(world, change, message):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        current = campaign_settings(session.get(Campaign, campaign_id))
        with pytest.raises(CampaignSettingsError, match=message):
            update_campaign_settings(
                session, people["root"], campaign_id, replace(current, **change)
            )
    with session_scope(engine) as session:
        assert campaign_settings(session.get(Campaign, campaign_id)) == current


def test_pause_resume_close_and_closed_is_final(any_world):
    world = any_world
    engine, people, campaign_id = world
    root = people["root"]
    with session_scope(engine) as session:
        with pytest.raises(CampaignSettingsError, match="is active: it cannot resume"):
            change_campaign_status(session, root, campaign_id, "resume")
        assert change_campaign_status(session, root, campaign_id, "pause").status == "paused"
        assert change_campaign_status(session, root, campaign_id, "resume").status == "active"
        assert change_campaign_status(session, root, campaign_id, "close").status == "closed"
    with session_scope(engine) as session:
        with pytest.raises(CampaignSettingsError, match="is closed: it cannot resume"):
            change_campaign_status(session, root, campaign_id, "resume")
        current = campaign_settings(session.get(Campaign, campaign_id))
        with pytest.raises(CampaignSettingsError, match="closed: its settings are final"):
            update_campaign_settings(session, root, campaign_id, replace(current, overlap=1))
        actions = [event.action for event in list_events(session, action_prefix="campaign.")]
    assert actions[:3] == ["campaign.close", "campaign.resume", "campaign.pause"]
