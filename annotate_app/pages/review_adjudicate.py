"""Adjudicate: units ordered by disagreement; record the final label with a note (reviewers)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotate_app.auth import require_role
from annotate_app.db import get_engine
from annotate_app.pickers import pick_campaign
from annotate_app.render import render_bands, render_content, render_history, safe_markdown
from annotate_app.review_views import FLASH as REVIEW_FLASH
from annotate_app.review_views import STATE_TEXT, answer_actions
from annotate_app.text import escape_markdown
from data.services.adjudication import (
    AdjudicationError,
    UnitReview,
    adjudicate,
    adjudication_queue,
    unit_review,
)
from data.services.roles import PermissionDenied
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.protocols import InvalidJudgement, Protocol


def _form_keys(unit_id: int) -> dict[str, str]:
    """Widget keys of the final-label form of one unit."""
    return {field: f"adj_{field}_{unit_id}" for field in ("score", "preference", "note")}


def _human_summary(review: UnitReview) -> str:
    """The humans at a glance: mean and median of the scores, or the count of each preference."""
    if review.protocol.is_pointwise:
        if review.human_mean is None or review.human_median is None:
            return "No human score yet."
        return (
            f"{len(review.answers)} answers · mean {review.human_mean:.2f} · "
            f"median {review.human_median:g}"
        )
    counts = ", ".join(f"{label}×{n}" for label, n in review.preference_counts.items())
    return f"{len(review.answers)} answers · {counts or 'no preference yet'}"


def _rubric(protocol: Protocol) -> None:
    """The protocol's scale with each band's description, and its criteria."""
    st.markdown(f"**{escape_markdown(protocol.title)}**")
    if protocol.bands:
        render_bands(protocol)
    for criterion in protocol.criteria:
        st.caption(escape_markdown(criterion))


user = require_role("reviewer", "admin")
engine = get_engine()
FLASH = "adjudicate_flash"

st.title("Adjudicate")
for flash in (FLASH, REVIEW_FLASH):
    if flash in st.session_state:
        st.success(escape_markdown(st.session_state.pop(flash)))

campaign = pick_campaign(engine, key="adj_campaign")
include_done = st.checkbox("Include units already adjudicated", key="adj_include_done")
with session_scope(engine) as session:
    queue = adjudication_queue(session, stored_id(campaign), include_adjudicated=include_done)
if not queue:
    st.info("No unit with two or more answers is waiting for a ruling.")
    st.stop()

st.dataframe(
    pd.DataFrame(
        {
            "Unit": [entry.unit_key for entry in queue],
            "Item": [entry.item_id for entry in queue],
            "Task": [entry.task for entry in queue],
            "Answers": [entry.summary for entry in queue],
            "Disagreement": [entry.disagreement for entry in queue],
            "Adjudicated": [entry.adjudicated for entry in queue],
        }
    ),
    hide_index=True,
)
entry = st.selectbox(
    "Unit to review (most disagreement first)",
    queue,
    format_func=lambda e: f"{e.unit_key} · {e.summary}",
    key="adj_unit",
)
with session_scope(engine) as session:
    review: UnitReview = unit_review(session, entry.unit_id)

content_column, answers_column = st.columns([3, 2])
with content_column:
    if review.content.item.history:
        st.markdown("**Earlier turns**")
        render_history(review.content.item.history)
    st.markdown("**Question**")
    render_content(review.content.item.question)
    if review.content.item.reference is not None:
        with st.expander("Reference answer"):
            render_content(review.content.item.reference)
    titles = ("Response A", "Response B") if len(review.content.responses) == 2 else ("Response",)
    for title, response in zip(titles, review.content.responses, strict=True):
        with st.container(border=True):
            st.markdown(f"**{title}** · {escape_markdown(response.model)}")
            render_content(response.content)

with answers_column:
    st.markdown("**Human answers**")
    st.caption(_human_summary(review))
    for answer in review.answers:
        value = answer.preference if answer.preference is not None else f"{answer.score:g}"
        with st.container(border=True):
            st.markdown(
                f"**{escape_markdown(answer.annotator)}**: {value} · {answer.seconds:.0f} s"
                + (f" · revision {answer.revision}" if answer.revision > 1 else "")
                + f" · {STATE_TEXT[answer.review]}"
            )
            st.markdown(safe_markdown(answer.rationale))
            if answer.review_comment:
                st.caption("Rejected: " + escape_markdown(answer.review_comment))
            if answer.annotation_id is not None:
                with st.expander("Review this answer"):
                    answer_actions(
                        engine, user.id, answer.annotation_id, answer.review, key="adjudicate"
                    )
    st.markdown("**Judges**")
    if not review.judges:
        st.caption("No judge output for this unit.")
    for judge in review.judges:
        value = judge.preference or (f"{judge.score:g}" if judge.score is not None else "—")
        title = f"{judge.judge} · {value} · shown {judge.shown_order} · {judge.parse_status}"
        with st.expander(escape_markdown(title)):
            st.code(judge.raw_output or judge.rationale, language=None, wrap_lines=True)
    for ruling in review.adjudications:
        value = ruling.preference or f"{ruling.score:g}"
        state = "final label" if ruling.is_live else "replaced"
        st.caption(escape_markdown(f"{state}: {value} by {ruling.reviewer} — {ruling.note}"))

st.subheader("Final label")
protocol = review.protocol
rubric_column, form_column = st.columns([3, 2])
with rubric_column, st.container(border=True):
    _rubric(protocol)
# The widgets are keyed by unit: every unit opens with an empty form (no score chosen, no note),
# never with what was chosen for the unit before. One form: the label and the note reach the
# server together with the click, never half-updated.
keys = _form_keys(review.unit_id)
with form_column, st.form(f"adjudication_form_{review.unit_id}", border=False):
    score: float | None = None
    preference: str | None = None
    if protocol.is_pointwise and protocol.is_discrete:
        score = st.selectbox(
            "Score",
            protocol.scale_points(),
            index=None,
            format_func="{:g}".format,
            placeholder="Choose a score",
            key=keys["score"],
        )
    elif protocol.is_pointwise:
        low, high = protocol.bounds
        score = st.number_input(
            "Score", low, high, value=None, placeholder="Type a score", key=keys["score"]
        )
    else:
        preference = st.radio(
            "Better response", protocol.labels, index=None, key=keys["preference"]
        )
    note = st.text_area("Note: why this is the final label", key=keys["note"])
    record = st.form_submit_button("Record final label", type="primary", key="adj_save")
if record:
    try:
        with session_scope(engine) as session:
            adjudicate(
                session, user.id, review.unit_id, score=score, preference=preference, note=note
            )
    except (AdjudicationError, InvalidJudgement, PermissionDenied) as error:
        st.error(escape_markdown(str(error)))
    else:
        for key in keys.values():
            st.session_state.pop(key, None)
        st.session_state[FLASH] = f"Final label recorded for {review.content.unit_key}."
        st.rerun()
