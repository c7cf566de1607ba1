"""The calibration page's judge audits: "Judge bias and cost" and "Scores and preferences: do
they agree?" — the same tables as ``critiquelab calibrate`` (judge_audit, ``--consistency``)
and the HTML report, from the same library calls, made in the calibration worker process so that
a large campaign's rows never enter the app's process (:mod:`annotate_app.calibration_worker`).
"""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from annotate_app.calibration_worker import (
    CampaignScope,
    page_audit,
    page_consistency,
)
from annotate_app.text import escape_markdown
from calibration import CalibrationInputError
from calibration.audits import JudgeAudit, parse_families
from calibration.consistency import ConsistencyReport
from calibration.report_audits import (
    PRICE_COLUMN,
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
from data.io.importers.errors import InvalidRecord
from data.io.importers.strict_json import loads
from data.readmodels.campaign_input import campaign_version
from data.storage.campaign_lookup import campaign_protocol, list_campaigns
from data.storage.engine import read_scope, session_scope
from schemas.core import stored_id
from schemas.protocols import Protocol
from schemas.tables import Campaign


@st.cache_data(show_spinner="Auditing the judges (bias, cost)…", max_entries=16)
def _audit(
    scope: CampaignScope,
    judges: tuple[str, ...],
    prices: tuple[float, float] | None,
    families: tuple[tuple[str, str], ...],
    bootstrap: int,
) -> JudgeAudit:
    """Computed in the calibration worker (:mod:`annotate_app.calibration_worker`), cached on
    the campaign's version and filters."""
    return page_audit(scope, judges, prices, families, bootstrap)


@st.cache_data(show_spinner="Checking scores against preferences…", max_entries=16)
def _consistency(
    url: str,
    versions: tuple[tuple[int, ...], tuple[int, ...]],
    pointwise_id: int,
    pairwise_id: int,
    delta: float,
    bootstrap: int,
) -> ConsistencyReport:
    """Computed in the calibration worker, cached on both campaigns' versions."""
    return page_consistency(url, pointwise_id, pairwise_id, delta, bootstrap)


def render_audits(
    engine: Engine,
    campaign: Campaign,
    scope: CampaignScope,
    protocol: Protocol,
    judges: list[str],
    *,
    bootstrap: int,
) -> None:
    """Both audit blocks for the chosen campaign (``scope``: its version and filters), judges."""
    audit = _render_bias_and_cost(scope, judges, bootstrap)
    report = _render_consistency(engine, campaign, scope, protocol, bootstrap)
    if audit is not None or report is not None:
        st.download_button(
            "Download the judge audit (HTML)",
            partial(audit_report_html, [consistency_section(report), audit_section(audit)]),
            file_name=f"judge-audit-{campaign.name}.html",
            mime="text/html",
            on_click="ignore",
        )


def _render_bias_and_cost(scope: CampaignScope, judges: list[str], bootstrap: int):
    st.subheader("Judge bias and cost")
    if not judges:
        st.info("Pick a judge above to see its cost, length and format preference.")
        return None
    left, middle, currency_column, right = st.columns([1, 1, 0.6, 1.6])
    price_in = left.number_input(
        "Price / M input tokens", min_value=0.0, value=None, key="audit-price-in"
    )
    price_out = middle.number_input(
        "Price / M output tokens", min_value=0.0, value=None, key="audit-price-out"
    )
    currency = currency_column.text_input(
        "Currency",
        "USD",
        max_chars=8,
        help="The currency of the prices: the cost column names it.",
        key="audit-currency",
    ).strip()
    families_text = right.text_input(
        "Model families (JSON)",
        placeholder='{"my-judge": "gpt", "gpt-4o": "gpt"}',
        help="Judge and model names → family: the self-preference rows need it.",
        key="audit-families",
    )
    families = _families(families_text)
    prices = (price_in, price_out) if price_in is not None and price_out is not None else None
    audit = _audit(scope, tuple(judges), prices, tuple(sorted(families.items())), bootstrap)
    st.caption(cost_caption(audit))
    st.dataframe(with_currency(cost_table(audit), currency))
    st.caption(audit_caption(audit))
    st.dataframe(bias_table(audit), hide_index=True)
    st.markdown("**Length-controlled agreement**: how much agreement survives without length")
    st.dataframe(length_controlled_table(audit))
    return audit


def with_currency(table: pd.DataFrame, currency: str) -> pd.DataFrame:
    """The cost table with its price column naming the currency the prices were given in."""
    if not currency:
        return table
    return table.rename(columns={PRICE_COLUMN: f"{PRICE_COLUMN} ({currency})"})


def _families(text: str) -> dict[str, str]:
    if not text.strip():
        return {}
    try:  # the import files' JSON rules: no NaN, no duplicate keys, bounded nesting
        return parse_families(loads(text, "Model families", None), "Model families")
    except (InvalidRecord, CalibrationInputError) as error:
        st.error(escape_markdown(str(error)))
        return {}


def _render_consistency(
    engine: Engine, campaign: Campaign, scope: CampaignScope, protocol: Protocol, bootstrap: int
) -> ConsistencyReport | None:
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
        with read_scope(engine) as session:
            versions = (
                campaign_version(session, stored_id(pointwise)),
                campaign_version(session, stored_id(pairwise)),
            )
        report = _consistency(
            scope.url, versions, stored_id(pointwise), stored_id(pairwise), float(delta), bootstrap
        )
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
