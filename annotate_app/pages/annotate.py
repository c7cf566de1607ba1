"""Annotate: the next unit of a campaign, the rubric beside it, the answer panel below it.

Drafts are saved as the annotator types; a submit stores the answer and leases the next unit in
one transaction (:func:`data.queue.submit_and_next`), and that unit appears in the same run.
Nothing here decides anything: :mod:`data.queue` does.
"""

from __future__ import annotations

from functools import partial

import streamlit as st

from annotate_app.auth import require_role
from annotate_app.components.answer_box import AnswerPayload, answer_box, read_payload
from annotate_app.db import get_engine
from annotate_app.render import render_rubric, render_unit, safe_markdown
from annotate_app.text import escape_markdown
from data import queue
from data.storage import DatabaseProblem, session_scope

user = require_role("annotator", "reviewer", "admin")
engine = get_engine()
state = st.session_state


def _save_draft(key: str, assignment_id: int) -> None:
    payload = read_payload(key, "draft")
    if payload is None or payload.unit != assignment_id:
        return
    try:
        with session_scope(engine) as session:
            queue.save_draft(
                session, assignment_id, user.id, score=payload.score,
                preference=payload.preference, rationale=payload.rationale,
                active_seconds=payload.seconds,
            )  # fmt: skip
    except (queue.QueueError, DatabaseProblem) as error:
        state["annotate_notice"] = f"Draft not saved: {error}"


def _submit(key: str, assignment_id: int) -> None:
    payload = read_payload(key, "submit")
    if payload is None or payload.unit != assignment_id:
        return
    try:
        with session_scope(engine) as session:
            step = queue.submit_and_next(
                session, assignment_id, user.id, score=payload.score,
                preference=payload.preference, rationale=payload.rationale,
                seconds=payload.seconds,
            )  # fmt: skip
            others = queue.others_answers(session, step.unit_id, user.id)
    except queue.LeaseLost as error:
        _save_draft_after_refusal(assignment_id, payload)
        state["annotate_lost"] = (str(error), payload.rationale)
        return
    except (queue.QueueError, DatabaseProblem) as error:
        attempt, _ = state.get("annotate_refused", {}).get(assignment_id, (0, ""))
        state["annotate_refused"] = {assignment_id: (attempt + 1, str(error))}
        _save_draft_after_refusal(assignment_id, payload)
        return
    if step.revision > 1:  # e.g. answered in another tab first: both answers are kept
        state["annotate_notice"] = (
            f"You had already answered this unit (in another tab?). This answer is saved as "
            f"revision {step.revision}; the earlier one is kept in My work."
        )
    state["annotate_next"] = (step.campaign_id, step.next_unit)  # leased in the same commit
    state["annotate_others"] = (step.campaign_id, others)  # shown until the next submit
    state.pop("annotate_refused", None)


def _save_draft_after_refusal(assignment_id: int, payload: AnswerPayload) -> None:
    """Keep what was typed when a submit is refused, so nothing is lost."""
    try:
        with session_scope(engine) as session:
            queue.save_draft(
                session, assignment_id, user.id, score=payload.score,
                preference=payload.preference, rationale=payload.rationale,
                active_seconds=payload.seconds,
            )  # fmt: skip
    except (queue.QueueError, DatabaseProblem):
        pass  # the refusal message already says what happened


def _give_back(action: str, assignment_id: int, reason_key: str) -> None:
    reason = str(state.get(reason_key) or "")
    try:
        with session_scope(engine) as session:
            if action == "skip":
                queue.skip(session, assignment_id, user.id, reason)
            else:
                queue.flag(session, assignment_id, user.id, reason)
    except (queue.QueueError, DatabaseProblem) as error:
        state["annotate_notice"] = str(error)
        return
    state["annotate_notice"] = (
        "Skipped: the unit goes to others." if action == "skip" else "Reported to the reviewers."
    )


with session_scope(engine) as session:
    campaigns = queue.open_campaigns(session)
if not campaigns:
    st.title("Annotate")
    st.info("No campaign is open for annotation yet.")
    st.stop()

names = [campaign.name for campaign in campaigns]
wanted = st.query_params.get("campaign")
if "annotate_campaign" not in state or state["annotate_campaign"] not in names:
    state["annotate_campaign"] = wanted if wanted in names else names[0]
with st.sidebar:
    chosen = st.selectbox("Campaign", names, key="annotate_campaign")
campaign = campaigns[names.index(chosen)]
st.query_params["campaign"] = campaign.name

notice = state.pop("annotate_notice", None)
if notice:
    st.toast(escape_markdown(notice))

prepared = state.pop("annotate_next", None)
with session_scope(engine) as session:
    if prepared is not None and prepared[0] == campaign.id:
        view = prepared[1]  # the unit the submit leased: no second write for this run
    else:
        view = queue.next_unit(session, campaign.id, user.id)  # type: ignore[arg-type]
    done = queue.submitted_count(session, campaign.id, user.id)  # type: ignore[arg-type]
others_campaign, others = state.get("annotate_others", (None, []))
if others_campaign != campaign.id:  # they rated a unit of another campaign
    others = []

st.title(escape_markdown(campaign.name))
lost = state.pop("annotate_lost", None)
if lost:
    message, rationale = lost
    st.warning(f"{escape_markdown(message[0].upper() + message[1:])}. What you wrote:")
    st.code(rationale, language=None, wrap_lines=True)
if others:
    with st.expander("How others rated the unit you just submitted"):
        for other in others:
            value = other.preference_shown or f"{other.score:g}"
            st.markdown(f"**{value}** —\n\n{safe_markdown(other.rationale)}")

if view is None:
    if campaign.status == "paused":
        st.info("This campaign is paused: no new units for now. Your answers are saved.")
    else:
        st.success(f"Nothing left for you in this campaign. You answered {done} units. Thank you!")
    st.page_link("pages/my_work.py", label="Review my answers", icon=":material/history:")
    st.stop()

where = " · ".join(part for part in (view.item_id, view.category, view.task) if part)
st.caption(f"{escape_markdown(where)} · {done} submitted by you")

unit_column, answer_column = st.columns([3, 2], gap="large")
with unit_column:
    render_unit(view)
with answer_column:
    key = f"answer-{view.assignment_id}"
    attempt, error = state.get("annotate_refused", {}).get(view.assignment_id, (0, None))
    if error:
        st.error(escape_markdown(error))
    answer_box(
        key=key,
        unit=view.assignment_id,
        protocol=view.protocol,
        rationale_min=view.rationale_min,
        draft=view.draft,
        on_draft=partial(_save_draft, key, view.assignment_id),
        on_submit=partial(_submit, key, view.assignment_id),
        attempt=attempt,
        error=error,
    )
    with st.popover("Skip or report a problem", icon=":material/flag:"):
        reason_key = f"reason-{view.assignment_id}"
        st.text_input("Reason", key=reason_key, placeholder="e.g. outside my expertise")
        skip_column, flag_column = st.columns(2)
        skip_column.button(
            "Skip this unit",
            key=f"skip-{view.assignment_id}",
            on_click=_give_back,
            args=("skip", view.assignment_id, reason_key),
            help="Someone else will annotate it; you will not see it again.",
        )
        flag_column.button(
            "Report as broken",
            key=f"flag-{view.assignment_id}",
            on_click=_give_back,
            args=("flag", view.assignment_id, reason_key),
            help="The item is broken (missing image, garbled text): reviewers will look at it.",
        )
    with st.container(border=True):
        render_rubric(view)
