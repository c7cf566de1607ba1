"""Flags: units annotators reported as broken; resolve each with a note (reviewers).

The flagged unit stands beside the form, as annotators saw it (earlier turns, question with its
images, response(s), reference), so a report such as "image missing" is checked on the page.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotate_app.auth import require_role
from annotate_app.db import get_engine
from annotate_app.reviewed_unit import render_reviewed_unit
from annotate_app.text import escape_markdown
from data.services.adjudication import AdjudicationError, unit_review
from data.services.flags import list_flags, resolve_flag
from data.services.roles import PermissionDenied
from data.storage.engine import session_scope

user = require_role("reviewer", "admin")
engine = get_engine()
FLASH = "flags_flash"
RETURN, KEEP_OUT = "Return the unit to the queue", "Keep the unit out of the queue"

st.title("Flags")
# the last resolution's message: under the Resolve button where the eyes are, or here when no
# open flag (and so no button) is left
flash = st.session_state.pop(FLASH, None)
include_resolved = st.checkbox("Show resolved flags too", key="flags_resolved")
with session_scope(engine) as session:
    flags = list_flags(session, include_resolved=include_resolved)
if not flags:
    if flash:
        st.success(escape_markdown(flash))
    st.info("No flags, open or resolved." if include_resolved else "No open flags.")
    st.stop()

st.dataframe(
    pd.DataFrame(
        {
            "Flag": [f.flag_id for f in flags],
            "Campaign": [f.campaign for f in flags],
            "Unit": [f.unit_key for f in flags],
            "Reported by": [f.reported_by for f in flags],
            "Reason": [f.reason for f in flags],
            "Reported": [f.created_at for f in flags],
            "Resolved by": [f.resolved_by for f in flags],
            "Resolution": [f.resolution for f in flags],
            "Out of queue": [f.unit_flagged for f in flags],
        }
    ),
    hide_index=True,
)
open_flags = [f for f in flags if f.resolved_at is None]
if not open_flags:
    if flash:
        st.success(escape_markdown(flash))
    st.stop()

st.subheader("Resolve a flag")
chosen = st.selectbox(
    "Flag",
    open_flags,
    format_func=lambda f: f"#{f.flag_id} · {f.unit_key} · {f.reason}",
    key="flag_choice",
)
with session_scope(engine) as session:
    review = unit_review(session, chosen.unit_id)

unit_column, form_column = st.columns([3, 2])
with unit_column:
    st.caption(escape_markdown(f"{chosen.campaign} · {chosen.unit_key} · item {chosen.item_id}"))
    render_reviewed_unit(review)
with form_column:
    st.markdown(
        escape_markdown(f"{chosen.reported_by} reported: {chosen.reason}"),
        help="What the annotator wrote when flagging the unit.",
    )
    outcome = st.radio("Outcome", (RETURN, KEEP_OUT), key="flag_outcome")
    note = st.text_area("Note: what was wrong and what was done", key="flag_note")
    if st.button("Resolve flag", type="primary", key="flag_resolve"):
        try:
            with session_scope(engine) as session:
                resolve_flag(
                    session, user.id, chosen.flag_id, note, return_to_queue=outcome == RETURN
                )
        except (AdjudicationError, PermissionDenied) as error:
            st.error(escape_markdown(str(error)))
        else:
            st.session_state[FLASH] = f"Flag #{chosen.flag_id} resolved."
            st.rerun()
    if flash:
        st.success(escape_markdown(flash))
