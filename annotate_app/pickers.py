"""The campaign picker that the review and admin pages open with."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st
from sqlalchemy.engine import Engine
from streamlit.delta_generator import DeltaGenerator

from data.storage.campaign_lookup import list_campaigns
from data.storage.engine import session_scope
from schemas.tables import Campaign


def pick_campaign(
    engine: Engine,
    key: str,
    where: DeltaGenerator | None = None,
    *,
    describe: Callable[[Campaign], str] = lambda campaign: campaign.name,
    none_yet: str = "No campaigns yet.",
) -> Campaign:
    """The campaign chosen in a "Campaign" select box (in ``where``, default the page), each
    option shown as ``describe`` writes it; with no campaign at all, says ``none_yet`` and stops
    the page."""
    with session_scope(engine) as session:
        campaigns = list_campaigns(session)
    if not campaigns:
        st.info(none_yet)
        st.stop()
    box = where if where is not None else st
    chosen: Campaign = box.selectbox("Campaign", campaigns, format_func=describe, key=key)
    return chosen
