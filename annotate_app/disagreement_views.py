"""The calibration page's "Why judges disagree" block: the reviewers' causes per judge, the same
table and examples as the HTML report's section (:mod:`calibration.report_tags`)."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from annotate_app.disagreement_review import tag_summaries
from annotate_app.text import escape_markdown
from calibration.disagreement_tags import tags_table
from schemas.tables import Campaign


def render_disagreement_causes(engine: Engine, campaign: Campaign) -> None:
    """Per judge: each cause's count and share with its Wilson interval, and two examples."""
    st.subheader("Why judges disagree with the humans")
    summaries = tag_summaries(engine, campaign.id)  # type: ignore[arg-type]
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
