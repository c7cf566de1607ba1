"""Adjudicate: units ordered by disagreement; record the final label with a note (reviewers).

The final-label form stands beside the unit, above the human answers and the judges, so that
a reviewer reads the unit and rules without scrolling; its message appears under its button. A
score or note chosen for a unit is kept for that unit (per session) when the reviewer switches
to another, and the unit picker marks the units with a draft.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotate_app.auth import require_role
from annotate_app.components.note_box import note_box
from annotate_app.db import get_engine
from annotate_app.pickers import pick_campaign
from annotate_app.render import compact_page_top, render_bands, safe_markdown
from annotate_app.review_views import FLASH as REVIEW_FLASH
from annotate_app.review_views import STATE_TEXT, answer_actions
from annotate_app.reviewed_unit import render_reviewed_unit
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

# Session state: unit id → the final-label fields chosen there and not yet recorded. (A comment:
# a bare string in a page is drawn by Streamlit.)
DRAFTS = "adj_drafts"


def _form_keys(unit_id: int) -> dict[str, str]:
    """Widget keys of the final-label form of one unit."""
    return {field: f"adj_{field}_{unit_id}" for field in ("score", "preference", "note")}


def _keep_draft(unit_id: int) -> None:
    """A field changed: keep the unit's fields (Streamlit forgets the widgets of a unit that is
    not shown, so switching units dropped a typed note)."""
    state = st.session_state
    draft = {field: state.get(key) for field, key in _form_keys(unit_id).items()}
    drafts: dict[int, dict[str, object]] = state.setdefault(DRAFTS, {})
    if any(value not in (None, "") for value in draft.values()):
        drafts[unit_id] = draft
    else:
        drafts.pop(unit_id, None)


def _restore_draft(unit_id: int) -> None:
    """Before the unit's widgets are drawn: give them the unit's kept fields."""
    state = st.session_state
    draft = state.get(DRAFTS, {}).get(unit_id, {})
    for field, key in _form_keys(unit_id).items():
        if key not in state and draft.get(field) not in (None, ""):
            state[key] = draft[field]


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

compact_page_top()
st.title("Adjudicate")
flash = st.session_state.pop(FLASH, None)
review_flash = st.session_state.pop(REVIEW_FLASH, None)
campaign_column, unit_column, done_column = st.columns([2.6, 3.4, 1.5], vertical_alignment="bottom")
campaign = pick_campaign(engine, key="adj_campaign", where=campaign_column)
include_done = done_column.checkbox("Include adjudicated", key="adj_include_done")
with session_scope(engine) as session:
    queue = adjudication_queue(session, stored_id(campaign), include_adjudicated=include_done)
if not queue:
    for done in (flash, review_flash):  # the last action emptied the queue
        if done:
            st.success(escape_markdown(done))
    st.info("No unit with two or more answers is waiting for a ruling.")
    st.stop()

drafted = st.session_state.get(DRAFTS, {})
entry = unit_column.selectbox(
    "Unit to review (most disagreement first)",
    queue,
    format_func=lambda e: (
        f"{e.unit_key} · {e.summary}" + (" · draft kept" if e.unit_id in drafted else "")
    ),
    key="adj_unit",
)
with st.expander(
    f"The queue: {len(queue)} unit{'' if len(queue) == 1 else 's'}, most disagreement first"
):
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
with session_scope(engine) as session:
    review: UnitReview = unit_review(session, entry.unit_id)

content_column, side_column = st.columns([3, 2])
with content_column:
    render_reviewed_unit(review)

protocol = review.protocol
# The widgets are keyed by unit: every unit opens with its own fields (empty, or what was chosen
# there and not recorded), never with what was chosen for the unit before.
keys = _form_keys(review.unit_id)
_restore_draft(review.unit_id)
with side_column:
    st.markdown("**Final label**")
    st.caption(_human_summary(review))
    if flash:  # beside the form just used, in view (the next unit is open now)
        st.success(escape_markdown(flash))
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
            on_change=_keep_draft,
            args=(review.unit_id,),
        )
    elif protocol.is_pointwise:
        low, high = protocol.bounds
        score = st.number_input(
            "Score",
            low,
            high,
            value=None,
            placeholder="Type a score",
            key=keys["score"],
            on_change=_keep_draft,
            args=(review.unit_id,),
        )
    else:
        preference = st.radio(
            "Better response",
            protocol.labels,
            index=None,
            horizontal=True,
            key=keys["preference"],
            on_change=_keep_draft,
            args=(review.unit_id,),
        )
    note = note_box(
        "Note: why this is the final label",
        key=keys["note"],
        hint="Kept for this unit if you switch units before recording it.",
        on_change=_keep_draft,
        args=(review.unit_id,),
    )
    if st.button("Record final label", type="primary", key="adj_save"):
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
            st.session_state.get(DRAFTS, {}).pop(review.unit_id, None)
            st.session_state[FLASH] = f"Final label recorded for {review.content.unit_key}."
            st.rerun()
    with st.expander("Scale and criteria"):
        _rubric(protocol)

    st.markdown("**Human answers**")
    if review_flash:
        st.success(escape_markdown(review_flash))
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
