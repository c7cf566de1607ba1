"""Finding a stored campaign: the one look-up by name or id (:func:`get_campaign`, with its hot-path
twin :func:`campaign_row`), its protocol, its units' keys, and the errors that say it is not there.

Every part of :mod:`data` that starts from a campaign name or id (the queue, the readers for
calibration and the critic, the services) finds it here, below all of them. A campaign an import
is still writing (:mod:`data.storage.campaign_imports`) is found by none of them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam
from sqlalchemy import select as core_select
from sqlmodel import Session, col, select

from data.storage.campaign_imports import NOT_IMPORTING
from schemas.core_tables import CAMPAIGNS, RESPONSES
from schemas.ids import pair_unit_key, response_unit_key
from schemas.option_text import OptionError
from schemas.protocols import Protocol, get_protocol
from schemas.tables import Campaign, Item, Pair, Response, Unit

_CAMPAIGN_ROW = core_select(CAMPAIGNS).where(
    CAMPAIGNS.c.id == bindparam("campaign_id"), NOT_IMPORTING
)


class CampaignError(OptionError):
    """A campaign that cannot be created or found as asked, with what to do instead."""


class CampaignNotFound(CampaignError):
    """No campaign with that name or id."""


def campaign_protocol(campaign: Campaign) -> Protocol:
    """The campaign's :class:`Protocol`, with its own scale for ``score`` campaigns."""
    return get_protocol(
        campaign.protocol,
        scale_min=campaign.scale_min,
        scale_max=campaign.scale_max,
        step=campaign.scale_step,
    )


def get_campaign(session: Session, campaign: str | int) -> Campaign:
    """The one campaign look-up: by name, or by id (an ``int``, or a string of digits that is no
    campaign's name). :class:`CampaignNotFound` naming the known campaigns if there is none."""
    found = None
    visible = select(Campaign).where(NOT_IMPORTING)
    if isinstance(campaign, str):
        found = session.exec(visible.where(Campaign.name == campaign)).first()
    if found is None and str(campaign).isdigit():
        found = session.exec(visible.where(Campaign.id == int(campaign))).first()
    if found is None and _importing_named(session, campaign):
        raise CampaignNotFound(
            f"campaign {campaign!r} is still being imported: it can be used when the "
            "import has finished"
        )
    if found is None:
        known = list(
            session.exec(
                select(Campaign.name).where(NOT_IMPORTING).order_by(Campaign.name).limit(20)
            )
        )
        hint = "known campaigns: " + ", ".join(known) if known else "there are no campaigns yet"
        what = f"called {campaign!r}" if isinstance(campaign, str) else f"with id {campaign}"
        raise CampaignNotFound(
            f"no campaign {what} ({hint}); create one with critiquelab campaign create"
        )
    return found


def list_campaigns(session: Session) -> list[Campaign]:
    """Every campaign but those an ``annotations import`` is still writing."""
    query = select(Campaign).where(NOT_IMPORTING)
    return list(session.exec(query.order_by(col(Campaign.created_at), col(Campaign.id))))


def _importing_named(session: Session, campaign: str | int) -> bool:
    """Whether the campaign of that name or id exists but is still being imported."""
    match = Campaign.name == str(campaign)
    if str(campaign).isdigit():
        match = match | (Campaign.id == int(campaign))
    return session.exec(select(Campaign.id).where(match, ~NOT_IMPORTING)).first() is not None


def unit_key_map(session: Session, campaign_id: int) -> dict[int, str]:
    """``unit id -> unit key`` (``r:<response_id>`` or ``p:<a>|<b>``) for a campaign."""
    return {unit_id: key for unit_id, key, _, _ in unit_keys(session, campaign_id)}


def unit_keys(session: Session, campaign_id: int) -> list[tuple[int, str, str, bool]]:
    """``(unit id, unit key, item id, flagged)`` for every unit of the campaign, by unit id."""
    ra, rb = RESPONSES.alias("ra"), RESPONSES.alias("rb")
    pointwise = session.exec(
        select(Unit.id, Response.response_id, Item.item_id, Unit.flagged)
        .join(Response, col(Response.id) == col(Unit.response_pk))
        .join(Item, col(Item.id) == col(Unit.item_pk))
        .where(Unit.campaign_id == campaign_id)
    )
    # Stored rows: every unit id is set.
    rows = [(u, response_unit_key(r), i, f) for u, r, i, f in pointwise if u is not None]
    # SQLModel types select() and Session.exec() for at most four columns, so this five-column
    # query is SQLAlchemy's select() run by Session.execute() (same statement, same rows).
    pairwise = session.execute(
        core_select(
            col(Unit.id), ra.c.response_id, rb.c.response_id, col(Item.item_id), col(Unit.flagged)
        )
        .join(Pair, col(Pair.id) == col(Unit.pair_pk))
        .join(ra, ra.c.id == col(Pair.response_a_pk))
        .join(rb, rb.c.id == col(Pair.response_b_pk))
        .join(Item, col(Item.id) == col(Unit.item_pk))
        .where(col(Unit.campaign_id) == campaign_id)
    )
    rows += [(u, pair_unit_key(a, b), i, f) for u, a, b, i, f in pairwise]
    return sorted(rows)


def campaign_row(session: Session, campaign_id: int) -> Any:
    """The campaign for reading: the session's object if it has one, else a Core row.

    Same answer as :func:`get_campaign` (which returns the identity map's object without a query
    when there is one), without the cost of loading an ORM object on the hot path.
    """
    loaded = session.identity_map.get((Campaign, (campaign_id,), None))
    if loaded is not None:
        return loaded
    row = session.connection().execute(_CAMPAIGN_ROW, {"campaign_id": campaign_id}).first()
    return get_campaign(session, campaign_id) if row is None else row  # None: its error
