"""Admin services: account management and campaign settings.

Every function here that changes something takes the acting user's id and checks their role on
the server with :func:`data.services.roles.require_actor_role` before it touches anything, so a
page that forgot its own check, or a hand-typed URL, still cannot change data. Each change
records an audit event (``data.storage.audit.record_event``) in the same transaction, with
before/after values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from data.queue.priority import RoutingPlan
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.roles import require_actor_role
from data.services.routing import set_routing
from data.services.users import (
    PasswordReset,
    UserError,
    UserRecord,
    create_user,
    require_user,
    reset_password,
    set_active,
    set_role,
)
from data.storage.audit import record_event
from data.storage.campaign_imports import NOT_IMPORTING
from schemas.bounds import LEASE_SECONDS, OVERLAP, RATIONALE_MIN
from schemas.core import stored_id
from schemas.tables import Campaign, Dataset, Item, Response, User


class CampaignSettingsError(ValueError):
    """A campaign setting or status change that cannot be accepted, with what to do instead."""


# --- accounts -------------------------------------------------------------------------------


def add_account(
    session: Session, actor_id: int | None, name: str, password: str, role: str
) -> UserRecord:
    """Create an account (admins only)."""
    require_actor_role(session, actor_id, "admin")
    return create_user(session, name, password, role, actor_id=actor_id)


def change_role(session: Session, actor_id: int | None, name: str, role: str) -> UserRecord:
    """Give ``name`` another role (admins only); the last active admin keeps theirs."""
    require_actor_role(session, actor_id, "admin")
    user = require_user(session, name)
    if user.role == "admin" and role != "admin":
        _refuse_losing_last_admin(session, user)
    return set_role(session, name, role, actor_id=actor_id)


def change_active(session: Session, actor_id: int | None, name: str, active: bool) -> UserRecord:
    """Enable or disable ``name`` (admins only); disabling ends their login sessions."""
    require_actor_role(session, actor_id, "admin")
    user = require_user(session, name)
    if not active and user.role == "admin":
        _refuse_losing_last_admin(session, user)
    return set_active(session, name, active, actor_id=actor_id)


def change_password(
    session: Session, actor_id: int | None, name: str, password: str
) -> PasswordReset:
    """Set a new password for ``name`` (admins only): :func:`data.services.users.reset_password`,
    which ends their open sessions."""
    require_actor_role(session, actor_id, "admin")
    return reset_password(session, name, password, actor_id=actor_id)


def _refuse_losing_last_admin(session: Session, user: User) -> None:
    others = session.exec(
        select(User).where(User.role == "admin", User.active, User.id != user.id)
    ).first()
    if others is None:
        raise UserError(f"{user.name} is the last active admin: make another account admin first")


# --- campaigns ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CampaignSettings:
    """The settings of a campaign that may change while it runs.

    Dataset, protocol, models and pair generation shape the units and are fixed at creation.
    """

    overlap: int
    """annotators per unit (K); lowering it never removes an answer already given"""
    rationale_min: int
    """minimum rationale length in characters"""
    lease_seconds: int
    """how long a unit stays reserved for the annotator who opened it"""
    show_reference: bool
    """whether annotators see the item's reference answer"""
    show_others_after_submit: bool
    """whether annotators see the other answers once they have submitted their own"""
    instructions: str
    """markdown shown beside the rubric (rendered without HTML)"""


SETTING_NAMES: tuple[str, ...] = tuple(field.name for field in fields(CampaignSettings))
CAMPAIGN_TRANSITIONS: dict[str, tuple[str, ...]] = {
    "pause": ("active",),
    "resume": ("paused",),
    "close": ("active", "paused"),
}
_STATUS_AFTER = {"pause": "paused", "resume": "active", "close": "closed"}


def create_campaign_as(session: Session, actor_id: int | None, spec: CampaignSpec) -> Campaign:
    """Create a campaign with its units (admins only); ``data.services.campaigns`` audits it."""
    require_actor_role(session, actor_id, "admin")
    return create_campaign(session, spec, actor_id=actor_id)


def set_routing_as(
    session: Session,
    actor_id: int | None,
    campaign_id: int,
    routing: str,
    judges: list[str] | None = None,
    share: float | None = None,
) -> RoutingPlan:
    """Change a campaign's routing and re-rank its units (admins only); audited."""
    require_actor_role(session, actor_id, "admin")
    return set_routing(session, campaign_id, routing, judges, share, actor_id=actor_id)


def campaign_settings(campaign: Campaign) -> CampaignSettings:
    """The current editable settings of ``campaign``."""
    return CampaignSettings(**{name: getattr(campaign, name) for name in SETTING_NAMES})


def _locked_campaign(session: Session, campaign_id: int) -> Campaign:
    """The campaign row, locked until commit so two admins' edits apply one after the other."""
    query = select(Campaign).where(Campaign.id == campaign_id, NOT_IMPORTING).with_for_update()
    campaign = session.exec(query).first()
    if campaign is None:
        raise CampaignSettingsError(f"no campaign #{campaign_id}: pick one from the list")
    return campaign


def update_campaign_settings(
    session: Session, actor_id: int | None, campaign_id: int, settings: CampaignSettings
) -> dict[str, dict[str, Any]]:
    """Apply ``settings`` to the campaign (admins only); return the changes as before/after.

    Only changed values are written, and each save records one ``campaign.update`` audit event
    listing them. Nothing is written when nothing changed.
    """
    require_actor_role(session, actor_id, "admin")
    campaign = _locked_campaign(session, campaign_id)
    _check_settings(settings)
    if campaign.status == "closed":
        raise CampaignSettingsError(f"campaign {campaign.name!r} is closed: its settings are final")
    return apply_campaign_changes(
        session, actor_id, campaign, campaign_settings(campaign), settings, SETTING_NAMES
    )


def apply_campaign_changes(
    session: Session,
    actor_id: int | None,
    campaign: Campaign,
    before: object,
    after: object,
    names: Iterable[str],
) -> dict[str, dict[str, Any]]:
    """Write to ``campaign`` the settings ``names`` whose value in ``after`` differs from
    ``before``, and record one ``campaign.update`` audit event listing them; return the changes
    as before/after (nothing is written when nothing changed)."""
    changes = {
        name: {"before": getattr(before, name), "after": getattr(after, name)}
        for name in names
        if getattr(before, name) != getattr(after, name)
    }
    if not changes:
        return {}
    for name, change in changes.items():
        setattr(campaign, name, change["after"])
    session.add(campaign)
    record_event(
        session,
        actor_id=actor_id,
        action="campaign.update",
        entity="campaign",
        entity_id=stored_id(campaign),
        detail={"campaign": campaign.name, "changes": changes},
    )
    return changes


def _check_settings(settings: CampaignSettings) -> None:
    for bound in (OVERLAP, RATIONALE_MIN, LEASE_SECONDS):
        if (problem := bound.problem(getattr(settings, bound.option))) is not None:
            raise CampaignSettingsError(str(problem))


def change_campaign_status(
    session: Session, actor_id: int | None, campaign_id: int, action: str
) -> Campaign:
    """``pause``, ``resume`` or ``close`` a campaign (admins only); closing is final."""
    require_actor_role(session, actor_id, "admin")
    if action not in CAMPAIGN_TRANSITIONS:
        raise ValueError(f"action {action!r} is not one of: " + ", ".join(CAMPAIGN_TRANSITIONS))
    campaign = _locked_campaign(session, campaign_id)
    if campaign.status not in CAMPAIGN_TRANSITIONS[action]:
        raise CampaignSettingsError(
            f"campaign {campaign.name!r} is {campaign.status}: it cannot {action}"
        )
    before, campaign.status = campaign.status, _STATUS_AFTER[action]
    session.add(campaign)
    record_event(
        session,
        actor_id=actor_id,
        action=f"campaign.{action}",
        entity="campaign",
        entity_id=campaign_id,
        detail={"campaign": campaign.name, "before": before, "after": campaign.status},
    )
    return campaign


# --- datasets -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetRow:
    """One dataset in the admin lists, with what a campaign over it can use."""

    name: str
    benchmark: str
    items: int
    responses: int
    models: tuple[str, ...]
    synthetic: bool


def dataset_overview(session: Session) -> list[DatasetRow]:
    """Every dataset by name with its item and response counts and its models."""
    items = dict(
        session.exec(select(Item.dataset_id, func.count()).group_by(col(Item.dataset_id))).all()
    )
    responses: dict[int, int] = {}
    models: dict[int, list[str]] = {}
    rows = session.exec(
        select(Item.dataset_id, Response.model, func.count())
        .join(Item, col(Item.id) == col(Response.item_pk))
        .group_by(col(Item.dataset_id), col(Response.model))
        .order_by(col(Response.model))
    )
    for dataset_id, model, count in rows:
        responses[dataset_id] = responses.get(dataset_id, 0) + count
        models.setdefault(dataset_id, []).append(model)
    return [
        DatasetRow(
            dataset.name,
            dataset.benchmark,
            items.get(stored_id(dataset), 0),
            responses.get(stored_id(dataset), 0),
            tuple(models.get(stored_id(dataset), ())),
            dataset.synthetic,
        )
        for dataset in session.exec(select(Dataset).order_by(col(Dataset.name)))
    ]
