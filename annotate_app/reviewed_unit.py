"""A unit as the reviewer pages show it (Adjudicate, Disagreements, Flags): earlier turns, the
question with its images, the reference answer (folded) and the response(s), all as text."""

from __future__ import annotations

import streamlit as st

from annotate_app.render import render_content, render_history
from annotate_app.text import escape_markdown
from data.services.adjudication import UnitReview


def render_reviewed_unit(review: UnitReview, *, show_reference: bool = True) -> None:
    """The unit of ``review``; its reference answer in an expander when it has one and
    ``show_reference``."""
    item = review.content.item
    if item.history:
        st.markdown("**Earlier turns**")
        render_history(item.history)
    st.markdown("**Question**")
    render_content(item.question)
    if show_reference and item.reference is not None:
        with st.expander("Reference answer"):
            render_content(item.reference)
    responses = review.content.responses
    titles = ("Response A", "Response B") if len(responses) == 2 else ("Response",)
    for title, response in zip(titles, responses, strict=True):
        with st.container(border=True):
            st.markdown(f"**{title}** · {escape_markdown(response.model)}")
            render_content(response.content)
