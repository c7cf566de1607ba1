"""Disagreements: where a judge and the human reference differ, reviewers tag why (reviewers).

The human rationales stand beside the judge's rationale and raw output. A cause button (keys
1–9) records the tag with the note and opens the next untagged disagreement.
"""

from __future__ import annotations

import streamlit as st

from annotate_app.auth import require_role
from annotate_app.components.note_box import note_box
from annotate_app.db import get_engine
from annotate_app.disagreement_review import open_disagreements
from annotate_app.pickers import pick_campaign
from annotate_app.reviewed_unit import render_reviewed_unit
from annotate_app.text import escape_markdown, safe_markdown
from data.readmodels.frames import campaign_judges
from data.services.adjudication import UnitReview, unit_review
from data.services.disagreements import Disagreement, DisagreementError, tag_disagreement
from data.services.roles import PermissionDenied
from data.storage.engine import session_scope
from schemas.core import stored_id

FLASH = "disagreements_flash"
ERROR = "disagreements_error"
SHORTCUT_KEYS = tuple("123456789")


def _next_unit(queue: list[Disagreement], current: Disagreement) -> int | None:
    """The next untagged disagreement after ``current`` in queue order, else the first before."""
    position = queue.index(current)
    later = [e for e in queue[position + 1 :] + queue[:position] if e.cause is None]
    return later[0].unit_id if later else None


def _tag(
    actor_id: int,
    entry: Disagreement,
    cause: str,
    note_key: str,
    unit_key: str,
    next_id: int | None,
) -> None:
    """Button callback: runs before the page, so it may move the unit picker to the next one."""
    try:
        with session_scope(get_engine()) as session:
            tag_disagreement(
                session, actor_id, entry, cause=cause, note=st.session_state.get(note_key, "")
            )
    except (DisagreementError, PermissionDenied) as error:
        st.session_state[ERROR] = str(error)
        return
    st.session_state.pop(note_key, None)
    st.session_state[FLASH] = f"Tagged {entry.unit_key}: {cause}."
    if next_id is not None:
        st.session_state[unit_key] = next_id


def _judge_panel(review: UnitReview, judge: str) -> None:
    outputs = [j for j in review.judges if j.judge == judge]
    for output in outputs:
        value = output.preference or (f"{output.score:g}" if output.score is not None else "—")
        with st.container(border=True):
            st.markdown(
                escape_markdown(
                    f"{judge}: {value} · shown {output.shown_order} · sample {output.sample} · "
                    f"{output.parse_status}"
                )
            )
            if output.rationale:
                st.markdown(safe_markdown(output.rationale))
            with st.expander("Raw output"):
                st.code(output.raw_output or "(empty)", language=None, wrap_lines=True)


user = require_role("reviewer", "admin")
engine = get_engine()

st.title("Disagreements")

picker, judge_picker, done_box = st.columns([2, 2, 1], vertical_alignment="bottom")
campaign = pick_campaign(engine, key="dis_campaign", where=picker)
campaign_id = stored_id(campaign)
with session_scope(engine) as session:
    judges = campaign_judges(session, campaign_id)
if not judges:
    st.info("No judge has scored this campaign yet: import or run one first.")
    st.stop()
judge = judge_picker.selectbox("Judge", judges, key=f"dis_judge_{campaign_id}")
include_tagged = done_box.checkbox("Include tagged", key="dis_include_tagged")
try:
    queue = open_disagreements(engine, user.id, campaign_id, judge, include_tagged=include_tagged)
except PermissionDenied as error:
    st.error(escape_markdown(str(error)))
    st.stop()

settings = queue.settings
untagged = sum(entry.cause is None for entry in queue.entries)
st.caption(
    escape_markdown(
        f"{untagged} untagged of the {queue.found} disagreements the calibration report "
        f"counts: units where {queue.rule}, over its parsed verdicts in every shown order and "
        f"sample; {queue.references} units have a reference (adjudicated label, else the "
        "humans' consensus)."
    )
)
if not queue.entries:
    st.info("No disagreement to review for this judge.")
    st.stop()

by_id = {entry.unit_id: entry for entry in queue.entries}
unit_key = f"dis_unit_{campaign_id}_{judge}"
if st.session_state.get(unit_key) not in by_id:
    st.session_state.pop(unit_key, None)
unit_id = st.selectbox(
    "Unit (largest gap first)",
    list(by_id),
    format_func=lambda u: (
        f"{by_id[u].unit_key} · judge {by_id[u].judge_value} · reference "
        f"{by_id[u].reference_value}" + (f" · tagged: {by_id[u].cause}" if by_id[u].cause else "")
    ),
    key=unit_key,
)
entry = by_id[unit_id]
with session_scope(engine) as session:
    review = unit_review(session, entry.unit_id)

content_column, reasons_column = st.columns([3, 2])
with content_column:
    render_reviewed_unit(review, show_reference=False)

with reasons_column:
    st.markdown(
        escape_markdown(
            f"Judge {entry.judge_value} · reference {entry.reference_value} · gap {entry.gap:.2g}"
        )
    )
    st.markdown("**Human rationales**")
    for answer in review.answers:
        value = answer.preference if answer.preference is not None else f"{answer.score:g}"
        with st.container(border=True):
            st.markdown(f"**{escape_markdown(answer.annotator)}**: {escape_markdown(value)}")
            st.markdown(safe_markdown(answer.rationale))
    live = review.live_adjudication
    if live is not None:
        value = live.preference or f"{live.score:g}"
        st.caption(escape_markdown(f"Final label {value} by {live.reviewer}: {live.note}"))
    st.markdown("**The judge's reasoning**")
    _judge_panel(review, judge)

st.subheader("Why does the judge disagree?")
note_key = f"dis_note_{campaign_id}_{judge}_{entry.unit_id}"
note_box(
    "Note (needed for 'other')",
    key=note_key,
    hint="Esc leaves the note; then keys 1–9 record the cause with the note and open the next "
    "untagged disagreement.",
)
next_id = _next_unit(queue.entries, entry)
columns = st.columns(3)
for index, cause in enumerate(settings.taxonomy):
    shortcut = SHORTCUT_KEYS[index] if index < len(SHORTCUT_KEYS) else None
    columns[index % 3].button(
        escape_markdown(cause),  # Streamlit shows the key beside the label
        key=f"dis_cause_{index}",
        shortcut=shortcut,
        on_click=_tag,
        args=(user.id, entry, cause, note_key, unit_key, next_id),
        type="primary" if cause == entry.cause else "secondary",
        width="stretch",
    )
# What the last key or click did, under the buttons where the eyes are (the title is far above)
if FLASH in st.session_state:
    st.success(escape_markdown(st.session_state.pop(FLASH)))
if ERROR in st.session_state:
    st.error(escape_markdown(st.session_state.pop(ERROR)))
