"""Reviewers' accept / reject of answers on the pages: the per-annotator list of answers (the
Monitor's, for admins, and the *Review answers* page, for reviewers and admins), and the Reject /
Accept / Reopen controls beside one answer (those two and Adjudicate).

The services check the acting user's role on the server (:mod:`data.services.answer_review`);
the pages only show what they return. Names, comments and rationales are shown as typed
(:func:`~annotate_app.text.escape_markdown`, :func:`~annotate_app.text.safe_markdown`).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotate_app.reviewed_unit import render_reviewed_unit
from annotate_app.text import escape_markdown, safe_markdown
from data.queue import ReviewOutcome
from data.services.adjudication import unit_review
from data.services.answer_review import (
    accept_answer_as,
    annotator_answers_as,
    reject_answer_as,
    reopen_answer_as,
)
from data.services.campaign_progress import campaign_progress
from data.services.roles import PermissionDenied
from data.storage.engine import DatabaseProblem, session_scope
from schemas.core import stored_id
from schemas.tables import Campaign

ERRORS = (ValueError, PermissionDenied, DatabaseProblem)
FLASH = "answer_review_flash"
STATE_TEXT = {
    "pending": "not reviewed",
    "accepted": "accepted",
    "rejected": "rejected",
    "resubmitted": "revised after rejection, waiting for review",
}


def answer_actions(engine: Engine, user_id: int, annotation_id: int, state: str, key: str) -> None:
    """Reject (with a comment), Accept and Reopen for one current answer, as its state allows.
    A refusal (e.g. the freed slot was taken again) is shown in words; a change reruns the page
    with a notice."""
    if state != "rejected":
        with st.form(f"{key}_reject_{annotation_id}", border=False):
            comment = st.text_area(
                "Comment for the annotator (required to reject)",
                key=f"{key}_comment_{annotation_id}",
            )
            reject = st.form_submit_button("Reject", key=f"{key}_reject_button_{annotation_id}")
        if reject:
            _act(engine, "rejected", lambda s: reject_answer_as(s, user_id, annotation_id, comment))
    left, right = st.columns(2)
    if state != "accepted" and left.button("Accept", key=f"{key}_accept_{annotation_id}"):
        _act(engine, "accepted", lambda s: accept_answer_as(s, user_id, annotation_id))
    if state in ("accepted", "rejected") and right.button(
        "Undo decision", key=f"{key}_reopen_{annotation_id}"
    ):
        _act(engine, "reopened", lambda s: reopen_answer_as(s, user_id, annotation_id))


def _act(engine: Engine, done: str, action: Callable[[Session], ReviewOutcome]) -> None:
    try:
        with session_scope(engine) as session:
            outcome = action(session)
    except ERRORS as error:
        st.error(escape_markdown(str(error)))
        return
    st.session_state[FLASH] = f"Answer {outcome.annotation_id} of {outcome.annotator} {done}."
    st.rerun()


def render_answer_review(
    engine: Engine, user_id: int, campaign: Campaign, *, key: str = "monitor", heading: bool = True
) -> None:
    """The per-annotator answers (the Monitor's and the *Review answers* page's): pick an
    annotator, see each current answer with its review state (only the states chosen), and
    reject (with a comment), accept or undo one. ``key`` keeps two pages' widgets apart;
    ``heading``: a *Review answers* subheader (the Monitor's section; the page of that name has
    it as its title).

    Every annotator who holds a current answer is offered, also one whose answers all left the
    adjudication queue: a unit with fewer than two counted answers after a rejection is not
    adjudicated, and its remaining answer is reviewed here (PROTOCOLS.md, *Review of answers*).
    """
    if heading:
        st.subheader("Review answers")
    st.caption(
        "A rejected answer leaves the reference, the SFT export and the judge metrics; its unit "
        "goes back to the queue for another annotator, and the annotator sees your comment in "
        "My work and may revise. Accepting it again, or undoing the rejection, needs a free "
        "slot on its unit. Every decision is audited."
    )
    flash = st.session_state.pop(FLASH, None)
    if flash:
        st.success(escape_markdown(flash))
    with session_scope(engine) as session:
        names = [a.annotator for a in campaign_progress(session, stored_id(campaign)).by_annotator]
    if not names:
        st.info("No annotator has answered in this campaign yet.")
        return
    prefix = "review" if key == "monitor" else key
    left, right = st.columns(2)
    annotator = left.selectbox("Annotator", names, key=f"{prefix}_annotator")
    states = right.multiselect(
        "Review state",
        list(STATE_TEXT),
        format_func=STATE_TEXT.__getitem__,
        key=f"{prefix}_states",
        help="Only answers in these states (none chosen: every current answer).",
    )
    try:
        with session_scope(engine) as session:
            rows = annotator_answers_as(
                session, user_id, stored_id(campaign), annotator, states=tuple(states) or None
            )
    except ERRORS as error:
        st.error(escape_markdown(str(error)))
        return
    if not rows:
        st.info(
            "No current answer of this annotator" + (" in these review states." if states else ".")
        )
        return
    st.dataframe(
        pd.DataFrame(
            {
                "id": [r.annotation_id for r in rows],
                "Unit": [r.unit_key for r in rows],
                "Item": [r.item_id for r in rows],
                "Answer": [r.value for r in rows],
                "Revision": [r.revision for r in rows],
                "Review": [STATE_TEXT[r.state] for r in rows],
                "Comment": [r.comment for r in rows],
                "Rationale": [r.rationale[:120] for r in rows],
            }
        ),
        hide_index=True,
    )
    by_id = {r.annotation_id: r for r in rows}
    chosen = st.selectbox(
        "Answer to review",
        list(by_id),
        # no review state in the label: the box would keep showing the state the answer had
        # when it was chosen (the card below and the table say the state now)
        format_func=lambda i: f"{i} · {by_id[i].unit_key} · {by_id[i].value}",
        key=f"{prefix}_answer",
    )
    row = by_id[chosen]
    with session_scope(engine) as session:
        reviewed = unit_review(session, row.unit_id)
    with st.expander("The unit answered: question and response(s)"):
        render_reviewed_unit(reviewed)
    with st.container(border=True):
        st.markdown(
            f"**{escape_markdown(annotator)}** · {escape_markdown(row.value)} · "
            f"revision {row.revision} · {escape_markdown(STATE_TEXT[row.state])}"
        )
        st.markdown(safe_markdown(row.rationale))
        if row.comment:
            st.caption("Rejected: " + escape_markdown(row.comment))
        answer_actions(engine, user_id, row.annotation_id, row.state, key=key)
