"""The calibration page's judge audits: "Judge bias and cost" and "Scores and preferences: do
they agree?" — the same tables as ``critiquelab calibrate`` (judge_audit, ``--consistency``)
and the HTML report, from the same library calls.
"""

from __future__ import annotations

import json
from functools import partial

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotate_app.text import escape_markdown
from calibration import CalibrationInputError
from calibration.audits import JudgeAudit, audit_judges
from calibration.consistency import ConsistencyReport, cross_protocol_consistency
from calibration.cost import Prices
from calibration.report_audits import (
    audit_caption,
    audit_section,
    bias_table,
    consistency_caption,
    consistency_cases,
    consistency_section,
    consistency_table,
    cost_caption,
    cost_table,
    length_controlled_table,
)
from calibration.report_html import audit_report_html
from data.io.frames import campaign_judgement_frame, campaign_reference_overrides
from data.io.judge_facts import campaign_judgement_usage, campaign_response_facts
from data.queue import campaign_protocol
from data.services.campaigns import get_campaign, list_campaigns
from data.storage.engine import session_scope
from schemas.protocols import Protocol
from schemas.tables import Campaign


@st.cache_data(show_spinner="Auditing the judges (bias, cost)…", max_entries=16)
def _audit(
    frame: pd.DataFrame,
    overrides: dict,
    campaign_id: int,
    protocol_name: str,
    _protocol: Protocol,
    _engine: Engine,
    judges: tuple[str, ...],
    prices: tuple[float, float] | None,
    families: tuple[tuple[str, str], ...],
    bootstrap: int,
) -> JudgeAudit:
    with session_scope(_engine) as session:
        facts = campaign_response_facts(session, campaign_id)
        usage = campaign_judgement_usage(session, campaign_id, judges=list(judges))
    units = set(frame["unit"].astype(str))
    return audit_judges(
        frame,
        _protocol,
        facts,
        [u for u in usage if u.unit in units],  # the units the page's filters keep
        families=dict(families),
        prices=Prices(input=prices[0], output=prices[1]) if prices else None,
        judges=judges,
        overrides=overrides,
        bootstrap=bootstrap,
    )


@st.cache_data(show_spinner="Checking scores against preferences…", max_entries=16)
def _consistency(
    pointwise_id: int, pairwise_id: int, _engine: Engine, delta: float, bootstrap: int
) -> ConsistencyReport:
    with session_scope(_engine) as session:
        campaigns = [get_campaign(session, i) for i in (pointwise_id, pairwise_id)]
        frames = [campaign_judgement_frame(session, c.id) for c in campaigns]
        overrides = tuple(campaign_reference_overrides(session, c.id) for c in campaigns)
        protocol = campaign_protocol(campaigns[0])
        names = (campaigns[0].name, campaigns[1].name)
    return cross_protocol_consistency(
        frames[0],
        frames[1],
        protocol,
        names=names,
        delta=delta,
        overrides=overrides,
        bootstrap=bootstrap,
    )


def render_audits(
    engine: Engine,
    campaign: Campaign,
    frame: pd.DataFrame,
    overrides: dict,
    protocol: Protocol,
    judges: list[str],
    *,
    bootstrap: int,
) -> None:
    """Both audit blocks for the chosen campaign, judges and filters."""
    audit = _render_bias_and_cost(engine, campaign, frame, overrides, protocol, judges, bootstrap)
    report = _render_consistency(engine, campaign, protocol, bootstrap)
    if audit is not None or report is not None:
        st.download_button(
            "Download the judge audit (HTML)",
            partial(audit_report_html, [consistency_section(report), audit_section(audit)]),
            file_name=f"judge-audit-{campaign.name}.html",
            mime="text/html",
            on_click="ignore",
        )


def _render_bias_and_cost(engine, campaign, frame, overrides, protocol, judges, bootstrap):
    st.subheader("Judge bias and cost")
    if not judges:
        st.info("Pick a judge above to see its cost, length and format preference.")
        return None
    left, middle, right = st.columns([1, 1, 2])
    price_in = left.number_input(
        "Price / M input tokens", min_value=0.0, value=None, key="audit-price-in"
    )
    price_out = middle.number_input(
        "Price / M output tokens", min_value=0.0, value=None, key="audit-price-out"
    )
    families_text = right.text_input(
        "Model families (JSON)",
        placeholder='{"my-judge": "gpt", "gpt-4o": "gpt"}',
        help="Judge and model names → family: the self-preference rows need it.",
        key="audit-families",
    )
    families = _families(families_text)
    prices = (price_in, price_out) if price_in is not None and price_out is not None else None
    audit = _audit(
        frame,
        overrides,
        campaign.id,
        protocol.name,
        protocol,
        engine,
        tuple(judges),
        prices,
        tuple(sorted(families.items())),
        bootstrap,
    )
    st.caption(cost_caption(audit))
    st.dataframe(cost_table(audit))
    st.caption(audit_caption(audit))
    st.dataframe(bias_table(audit), hide_index=True)
    st.markdown("**Length-controlled agreement**: how much agreement survives without length")
    st.dataframe(length_controlled_table(audit))
    return audit


def _families(text: str) -> dict[str, str]:
    if not text.strip():
        return {}
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        st.error(f"Model families: not JSON ({escape_markdown(str(error))}).")
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        st.error('Model families: give an object of names to families, e.g. {"a": "gpt"}.')
        return {}
    return {str(k): v for k, v in raw.items()}


def _render_consistency(engine, campaign, protocol, bootstrap) -> ConsistencyReport | None:
    st.subheader("Scores and preferences: do they agree?")
    with session_scope(engine) as session:
        partners = [
            c
            for c in list_campaigns(session)
            if c.dataset_id == campaign.dataset_id
            and c.id != campaign.id
            and (c.protocol == "pairwise") == protocol.is_pointwise
        ]
    if not partners:
        kind = "pairwise" if protocol.is_pointwise else "pointwise (scores)"
        st.info(f"No {kind} campaign of the same dataset to check this one against.")
        return None
    left, right = st.columns([3, 1])
    partner = left.selectbox(
        "Check against", partners, format_func=lambda c: c.name, key="consistency-partner"
    )
    pointwise, pairwise = (campaign, partner) if protocol.is_pointwise else (partner, campaign)
    step = campaign_protocol(pointwise).step or 1.0
    delta = right.number_input(
        "δ for ties (points)",
        min_value=0.0,
        value=float(step),
        step=float(step),
        key="consistency-delta",
    )
    try:
        report = _consistency(pointwise.id, pairwise.id, engine, float(delta), bootstrap)
    except CalibrationInputError as error:
        st.info(escape_markdown(str(error)))
        return None
    st.caption(consistency_caption(report))
    st.dataframe(consistency_table(report))
    cases = consistency_cases(report)
    if not cases.empty:
        st.markdown(f"Inconsistent pairs ({len(cases)}), largest score gap first")
        st.dataframe(cases, hide_index=True)
    return report
