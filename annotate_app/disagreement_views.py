"""Disagreement review in other pages: the calibration page's "Why judges disagree" block (the
reviewers' causes per judge, the same table and examples as the HTML report's section,
:mod:`calibration.report_tags`) and the Campaigns page's settings form."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from annotate_app.disagreement_review import tag_summaries
from annotate_app.render import submit_row
from annotate_app.text import escape_markdown
from calibration.disagreement_tags import tags_table
from data.services.disagreements import DisagreementError, review_settings, set_review_settings
from data.services.roles import PermissionDenied
from data.storage.campaign_lookup import get_campaign
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.tables import Campaign


def render_disagreement_causes(engine: Engine, campaign: Campaign) -> None:
    """Per judge: each cause's count and share with its Wilson interval, and two examples."""
    st.subheader("Why judges disagree with the humans")
    summaries = tag_summaries(engine, stored_id(campaign))
    if not summaries:
        st.caption("No disagreement tagged yet: reviewers tag causes on the Disagreements page.")
        return
    st.caption(
        "Reviewers' causes of the units where a judge and the reference differ (live tags). "
        "Share of the judge's tagged units with a 95% Wilson interval."
    )
    for summary in summaries:
        st.markdown(f"**{escape_markdown(summary.judge)}** · {summary.tagged} tagged")
        st.dataframe(tags_table(summary))
        with st.expander(escape_markdown(f"Examples for {summary.judge}")):
            for cause in summary.causes:
                for tag in cause.examples:
                    st.markdown(
                        escape_markdown(
                            f"{cause.cause} — {tag.unit_key}: judge {tag.judge_value}, "
                            f"reference {tag.reference_value}"
                            + (f" — {tag.note}" if tag.note else "")
                        )
                    )


def render_review_settings(engine: Engine, actor_id: int, campaign: Campaign) -> None:
    """The Campaigns page's form for the disagreement review's threshold and taxonomy (admins;
    :func:`data.services.disagreements.set_review_settings` checks the role again)."""
    with session_scope(engine) as session:
        settings = review_settings(get_campaign(session, stored_id(campaign)))
    key = f"review_{campaign.id}"
    with st.form(key):
        st.markdown("**Disagreement review**: which judge–human differences reviewers tag, and how")
        threshold = None
        if settings.threshold is not None:
            threshold = st.number_input(
                "Smallest |judge − reference| to review",
                min_value=0.0,
                value=float(settings.threshold),
                key=f"{key}_threshold",
            )
        causes = st.text_area(
            "Causes, one per line", "\n".join(settings.taxonomy), key=f"{key}_taxonomy"
        )
        save, outcome = submit_row("Save the review settings")
    if not save:
        return
    try:
        with session_scope(engine) as session:
            saved = set_review_settings(
                session,
                actor_id,
                stored_id(campaign),
                threshold=threshold,
                taxonomy=[c for c in causes.splitlines() if c.strip()],
            )
    except (DisagreementError, PermissionDenied) as error:
        outcome.error(escape_markdown(str(error)))
    else:
        shown = "" if saved.threshold is None else f"threshold {saved.threshold:g}, "
        outcome.success(escape_markdown(f"Saved: {shown}{len(saved.taxonomy)} causes."))
