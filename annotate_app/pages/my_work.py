"""My work: progress in a campaign, one's own past answers, and editing one (a new revision).

Only the logged-in annotator's own answers are listed or opened; ``?annotation=ID`` of someone
else's answer is refused like one that does not exist. The list holds each answer's live
revision; the answer being edited shows its whole history (every revision is kept). Answers are
shown as the panel offers them: ``3 (50%)`` on MMIE
(:meth:`schemas.protocols.Protocol.score_label`).
"""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from annotate_app.auth import require_role
from annotate_app.components.answer_box import answer_box, save_revision
from annotate_app.db import get_engine
from annotate_app.render import render_rubric, render_unit, safe_markdown
from annotate_app.text import escape_markdown
from data import queue
from data.storage.campaign_lookup import campaign_protocol
from data.storage.engine import DatabaseProblem, session_scope
from schemas.core import parse_row_id, stored_id
from schemas.protocols import Protocol

PAGE_SIZE = 50
REVIEW_TEXT = {
    "pending": "",
    "accepted": "accepted",
    "rejected": "rejected: see the comment",
    "resubmitted": "revised, waiting for review",
}

user = require_role("annotator", "reviewer", "admin")
engine = get_engine()
state = st.session_state


def _save_revision(key: str, annotation_id: int) -> None:
    try:
        saved = save_revision(engine, key, annotation_id, user.id)
    except (queue.QueueError, DatabaseProblem) as error:
        attempt, _ = state.get("my_work_refused", (0, ""))
        state["my_work_refused"] = (attempt + 1, str(error))
        return
    if saved is None:
        return
    state.pop("my_work_refused", None)
    state["my_work_notice"] = f"Saved as revision {saved.revision}."
    st.query_params["annotation"] = str(saved.annotation_id)


def _asked_annotation() -> int | None:
    """The answer named by ``?annotation=ID`` (a link from Annotate, or the last saved revision)."""
    return parse_row_id(
        st.query_params.get("annotation")
    )  # any other text names no such annotation


def _campaign_changed() -> None:
    # another campaign: the answer being edited belongs to the old one
    st.query_params.pop("annotation", None)
    state.pop("my_work_edit", None)


def _edit_changed() -> None:
    chosen = state.get("my_work_edit")
    if chosen is None:
        st.query_params.pop("annotation", None)
    else:
        st.query_params["annotation"] = str(chosen)


def _entry_label(mine: queue.MyAnnotation) -> str:
    """Tells two answers on one item apart: which of its responses (or pairs), campaign, when."""
    revision = f" · revision {mine.revision}" if mine.revision > 1 else ""
    return (
        f"{mine.item_id} · {mine.unit_label} · {mine.campaign} · "
        f"{mine.created_at:%Y-%m-%d %H:%M} UTC{revision}"
    )


def _history_table(history: list[queue.MyAnnotation], shown: Protocol) -> None:
    """Every revision of the answer being edited, newest first: nothing a revision replaced is
    lost, and this is where the annotator sees it."""
    st.markdown(f"**History of this answer** ({len(history)} revision{'s' * (len(history) > 1)})")
    st.dataframe(
        pd.DataFrame(
            {
                "Revision": [m.revision for m in history],
                "Answer": [shown.answer_label(m.score, m.preference_shown) for m in history],
                "Rationale": [m.rationale for m in history],
                "When (UTC)": [m.created_at.strftime("%Y-%m-%d %H:%M:%S") for m in history],
                "Current": ["yes" if n == 0 else "" for n in range(len(history))],
            }
        ),
        hide_index=True,
        width="stretch",
        key="my_work_history",
    )


asked_id = _asked_annotation()
asked = None
asked_problem = None
with session_scope(engine) as session:
    campaigns = queue.my_campaigns(session, user.id)
    last_id = queue.last_worked_campaign_id(session, user.id)
    if asked_id is not None:
        try:
            asked = queue.my_annotation_view(session, asked_id, user.id)
        except queue.QueueError as error:
            asked_problem = str(error)
            st.query_params.pop("annotation", None)
st.title("My work")
if not campaigns:
    st.info("You have not annotated anything yet.")
    st.stop()

names = [campaign.name for campaign in campaigns]
by_id = {campaign.id: campaign.name for campaign in campaigns}
if asked is not None:
    # the linked answer decides the campaign, whatever was chosen before
    state["my_work_campaign"] = asked[1].campaign
elif "my_work_campaign" not in state or state["my_work_campaign"] not in names:
    wanted = st.query_params.get("campaign")
    last = by_id.get(last_id) if last_id is not None else None
    state["my_work_campaign"] = (
        wanted if wanted in names else last if last is not None else names[0]
    )
chosen = st.selectbox("Campaign", names, key="my_work_campaign", on_change=_campaign_changed)
campaign = campaigns[names.index(chosen)]
protocol = campaign_protocol(campaign)
st.query_params["campaign"] = campaign.name

notice = state.pop("my_work_notice", None)
if notice:
    st.success(escape_markdown(notice))
if asked_problem:
    st.error(escape_markdown(asked_problem))

with session_scope(engine) as session:
    progress = queue.annotator_progress(session, stored_id(campaign), user.id)
fraction = progress.units_complete / progress.units_total if progress.units_total else 0.0
complete = f"Campaign: {progress.units_complete} of {progress.units_total} units complete"
st.progress(fraction, text=complete)
left, rejected, middle, right = st.columns(4)
left.metric("My answers", progress.my_submitted, help="Answers that count.")
rejected.metric(
    "Rejected",
    progress.my_rejected,
    help="Answers a reviewer rejected: they do not count. Open one below to read the comment "
    "and revise it; the revision goes back to a reviewer.",
)
middle.metric("Skipped", progress.my_skipped)
right.metric("Flagged units", progress.units_flagged)

# The picker and the answer being edited come first, the list of answers after them; the list's
# page is read first because the picker offers the answers of that page.
edit_area, list_area = st.container(), st.container()
with list_area:
    st.subheader("My answers")
    page = int(st.number_input("Page", min_value=1, value=1, step=1, key="my_work_page"))
    with session_scope(engine) as session:
        mine = queue.my_annotations(
            session,
            stored_id(campaign),
            user.id,
            limit=PAGE_SIZE,
            offset=(page - 1) * PAGE_SIZE,
        )
        reviews = queue.review_info(session, [m.annotation_id for m in mine])
    if not mine:
        st.info("No answers on this page.")
    else:
        table = pd.DataFrame(
            {
                "id": [m.annotation_id for m in mine],
                "Item": [m.item_id for m in mine],
                "Unit": [m.unit_label for m in mine],
                "Task": [m.task or "" for m in mine],
                "Answer": [protocol.answer_label(m.score, m.preference_shown) for m in mine],
                "Rationale": [m.rationale[:120] for m in mine],
                "Revision": [m.revision for m in mine],
                "Review": [REVIEW_TEXT[reviews[m.annotation_id].state] for m in mine],
                "Seconds": [round(m.seconds) for m in mine],
                "When (UTC)": [m.created_at.strftime("%Y-%m-%d %H:%M") for m in mine],
            }
        )
        st.dataframe(table, hide_index=True, width="stretch")

entries = {m.annotation_id: m for m in mine}
if asked is not None:
    entries.setdefault(asked[1].annotation_id, asked[1])  # linked, but not on this page
edit_id = None
if entries:
    # The picker stays after a save or a link: ?annotation=ID only chooses its entry.
    if asked is not None:
        state["my_work_edit"] = asked[1].annotation_id
    elif state.get("my_work_edit") not in entries:
        state["my_work_edit"] = None
    edit_id = edit_area.selectbox(
        "Edit an answer",
        [None, *entries],
        format_func=lambda i: "—" if i is None else _entry_label(entries[i]),
        key="my_work_edit",
        on_change=_edit_changed,
        placeholder="Choose an answer to edit",
    )

with edit_area:
    if edit_id is not None:
        try:
            with session_scope(engine) as session:
                view, own = queue.my_annotation_view(session, edit_id, user.id)
                others = queue.others_answers(session, own.unit_id, user.id)
                history = queue.answer_history(session, own.annotation_id, user.id)
                review = queue.review_info(session, [own.annotation_id])[own.annotation_id]
        except queue.QueueError as error:
            st.error(escape_markdown(str(error)))
            st.stop()
        st.subheader(
            f"Edit {escape_markdown(own.item_id)}, {own.unit_label} (revision {own.revision})"
        )
        if review.state == "rejected":
            st.warning(
                f"A reviewer ({escape_markdown(review.decided_by or 'the command line')}) "
                "rejected this answer: it does not count. Their comment: "
                f"{escape_markdown(review.comment)} — you may revise it below; the revision "
                "goes back to a reviewer."
            )
        elif review.state == "resubmitted":
            st.info(
                "You revised this answer after a reviewer rejected it; it waits for their "
                f"review. Their comment was: {escape_markdown(review.comment)}"
            )
        unit_column, answer_column = st.columns([3, 2], gap="large")
        with unit_column:
            render_unit(view)
        with answer_column:
            key = f"edit-{own.annotation_id}"
            attempt, refusal = state.get("my_work_refused", (0, None))
            if refusal:
                st.error(escape_markdown(refusal))
            current = queue.DraftView(own.score, own.preference_shown, own.rationale, 0.0)
            answer_box(
                key=key,
                unit=own.annotation_id,
                protocol=view.protocol,
                rationale_min=view.rationale_min,
                draft=current,
                on_draft=lambda: None,
                on_submit=partial(_save_revision, key, own.annotation_id),
                attempt=attempt,
                error=refusal,
                submit_label="Save revision",
            )
            with st.container(border=True):
                render_rubric(view)
            if others:
                with st.expander("How others rated this unit"):
                    for other in others:
                        value = view.protocol.answer_label(other.score, other.preference_shown)
                        st.markdown(
                            f"**{escape_markdown(value)}** —\n\n{safe_markdown(other.rationale)}"
                        )
        _history_table(history, view.protocol)
