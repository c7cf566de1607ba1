"""Annotate: the next unit of a campaign beside the answer panel, the rubric under the panel.

Drafts are saved as the annotator types (and kept in the browser at every keystroke); a submit
stores the answer and leases the next unit in one transaction (:func:`data.queue.submit_step`),
and that unit appears in the same run. Nothing here decides anything: :mod:`data.queue` does.
Laid out for 1280×720: a one-line header with the progress bar, the answer column sticky.

Each tab (Streamlit session) holds the assignment it shows and shows it again on every rerun
(:func:`data.queue.assignment_view`) until it submits, skips or leaves: when another tab of the
same annotator answers that unit first, this tab keeps its unit and its text, says so, and its
submit becomes a revision. The server takes no draft for an answered unit, so the tab's session
keeps the last text it sent, and the panel gets it back even if the browser mounts it afresh.
The URL names the unit shown (``?unit=``, an assignment id checked against the user and the
campaign), so a reload of the tab comes back to it, and the panel's browser copy (kept per tab)
brings back its text.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import streamlit as st
from sqlmodel import Session
from streamlit.delta_generator import DeltaGenerator

from annotate_app.auth import require_role
from annotate_app.components.answer_box import AnswerPayload, answer_box, read_payload, store_key
from annotate_app.db import get_engine
from annotate_app.render import render_rubric, render_unit, safe_markdown
from annotate_app.text import escape_markdown
from data import queue
from data.storage.engine import DatabaseProblem, session_scope
from schemas.core import parse_row_id, stored_id

user = require_role("annotator", "reviewer", "admin")
engine = get_engine()
state = st.session_state

# Page-only layout for a 1280×720 screen: less space above the title, the answer column follows
# the scroll, images no taller than about a third of the screen (they open full size on click).
_LAYOUT = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.75rem; padding-bottom: 2rem; }
.st-key-cl-head h4 { padding: 0; margin: 0; }
.st-key-cl-head [data-testid="stCaptionContainer"] p { margin: 0; }
[data-testid="stColumn"]:has(.st-key-cl-answer-column) {
  position: sticky; top: 3.75rem; align-self: flex-start;
}
.st-key-cl-unit [data-testid="stImage"] img { max-height: 15rem; width: auto; }
</style>"""


@dataclass(frozen=True)
class _Saved:
    """The answer just stored, for the confirmation line and the way back to it."""

    campaign_id: int
    annotation_id: int
    what: str


def _which(view: queue.UnitView, progress: queue.UnitProgress) -> str:
    """Which of its item's units this is, counted in the annotator's own order (model-blind)."""
    noun = "pair" if len(view.responses) > 1 else "response"
    return f"{noun} {progress.item_position} of {progress.item_units} for item {view.item_id}"


def _saved_line(where: DeltaGenerator, saved: _Saved) -> None:
    """The line 'Saved: response k of n for item X' and the way back to that answer in My work."""
    confirm, back = where.columns([3, 2], vertical_alignment="center")
    confirm.markdown(f":green[:material/check_circle: **Saved**: {escape_markdown(saved.what)}.]")
    back.page_link(
        "pages/my_work.py",
        label="Revise the answer just saved",
        icon=":material/edit:",
        query_params={"annotation": str(saved.annotation_id)},
    )


def _answered_line(where: DeltaGenerator, revision: int) -> None:
    """Say that this tab's unit is answered already, what a submit here does, and the way out."""
    say, leave = where.columns([4, 1], vertical_alignment="center")
    say.warning(
        f"You already answered this unit (in another tab?). What you write here stays in this "
        f"tab: submit it to save it as revision {revision + 1}; the earlier answer is kept.",
        icon=":material/tab:",
    )
    leave.button("Go to my next unit", key="leave-answered", on_click=_leave_answered)


def _store_draft(assignment_id: int, payload: AnswerPayload) -> str | None:
    """Save what was typed as the unit's draft; the error's text when it was not saved."""
    try:
        with session_scope(engine) as session:
            queue.save_draft(
                session,
                assignment_id,
                user.id,
                score=payload.score,
                preference=payload.preference,
                rationale=payload.rationale,
                active_seconds=payload.seconds,
                edited_at=payload.edited_at,
            )
    except (queue.QueueError, DatabaseProblem) as error:
        return str(error)
    return None


def _save_draft(key: str, assignment_id: int) -> None:
    payload = read_payload(key, "draft")
    if payload is None or payload.unit != assignment_id:
        return
    error = _store_draft(assignment_id, payload)
    if error is not None:
        state["annotate_notice"] = f"Draft not saved: {error}"
    # This tab's own copy: if another tab answers the unit, the server drops the draft and takes
    # no new one (None above), and this is what the tab still shows (:func:`_kept_draft`).
    state["annotate_kept"] = payload


def _kept_draft(assignment_id: int) -> queue.DraftView | None:
    """The last text this tab sent for a unit that is answered now (the server keeps no draft of
    it), so that a panel mounted afresh does not come back empty."""
    kept: AnswerPayload | None = state.get("annotate_kept")
    if kept is None or kept.unit != assignment_id:
        return None
    return queue.DraftView(
        kept.score, kept.preference, kept.rationale, kept.seconds, kept.edited_at
    )


def _leave_answered() -> None:
    """The annotator leaves a unit answered elsewhere without sending this tab's text."""
    state.pop("annotate_shown", None)
    state.pop("annotate_kept", None)
    st.query_params.pop("unit", None)


def _keep_in_url(name: str, value: str) -> None:
    """Set a URL parameter; only when it changes, since each set sends the browser a message and
    every pause in typing reruns this page."""
    if st.query_params.get(name) != value:
        st.query_params[name] = value


def _unit_in_url() -> int | None:
    """The unit (assignment id) the URL names: the one this tab showed before it was reloaded."""
    return parse_row_id(st.query_params.get("unit"))  # any other text names no such unit


def _submit(key: str, assignment_id: int) -> None:
    payload = read_payload(key, "submit")
    if payload is None or payload.unit != assignment_id:
        return
    try:
        step, others = queue.submit_step(
            engine,
            assignment_id,
            user.id,
            score=payload.score,
            preference=payload.preference,
            rationale=payload.rationale,
            seconds=payload.seconds,
        )
    except queue.LeaseLost as error:
        _save_draft_after_refusal(assignment_id, payload)
        state["annotate_lost"] = (str(error), payload.rationale)
        state.pop("annotate_shown", None)  # gone: the next run shows the next unit
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
    shown, which = state.get("annotate_which", (None, "this unit"))
    what = which if shown == assignment_id else "your answer"
    state["annotate_saved"] = _Saved(step.campaign_id, step.annotation_id, what)
    state["annotate_next"] = (step.campaign_id, step.next_unit)  # leased in the same commit
    state["annotate_others"] = (step.campaign_id, others)  # shown until the next submit
    state["annotate_feedback"] = (step.campaign_id, step.feedback)  # gold, feedback on: else None
    state.pop("annotate_refused", None)
    state.pop("annotate_kept", None)


def _save_draft_after_refusal(assignment_id: int, payload: AnswerPayload) -> None:
    """Keep what was typed when a submit is refused, so nothing is lost."""
    _store_draft(assignment_id, payload)  # the refusal message already says what happened


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
    state.pop("annotate_shown", None)
    state["annotate_notice"] = (
        "Skipped: the unit goes to others." if action == "skip" else "Reported to the reviewers."
    )


def _feedback_panel(campaign_id: int) -> None:
    """After a gold unit, in a campaign that gives feedback: the expected answer and why. The
    queue returns no feedback otherwise (:attr:`data.queue.SubmitStep.feedback`), so then nothing
    here differs between a gold unit and any other."""
    fed_campaign, told = state.get("annotate_feedback", (None, None))
    if told is None or fed_campaign != campaign_id:
        return
    expected = told.expected_preference_shown or f"{told.expected_score:g}"
    verdict = "Your answer matches it." if told.agrees else "Your answer differs from it."
    with st.container(border=True, key="cl-feedback"):
        st.markdown(
            f":material/school: **Check answer** — the expected answer to the unit you just "
            f"submitted is **{escape_markdown(expected)}**. {verdict}"
        )
        if told.explanation:
            st.markdown(safe_markdown(told.explanation))


def _held_view(session: Session, assignment_id: int, campaign_id: int) -> queue.UnitView | None:
    """The unit this tab showed, if it is still this annotator's to answer here (leased, or
    answered elsewhere); None, with a word why, when it was given back or lost meanwhile."""
    try:
        view = queue.assignment_view(session, assignment_id, user.id)
    except queue.AssignmentNotFound:
        return None  # not this user's (a stale session or URL): nothing to say about it
    if view is not None and view.campaign_id != campaign_id:
        return None  # a URL that names one campaign and a unit of another
    if view is None:
        st.toast(
            "The unit this tab showed was given back or its lease was lost (in another tab?): "
            "here is your next one."
        )
    elif view.answered_revision is not None:
        view = replace(view, draft=_kept_draft(assignment_id))
    return view


with session_scope(engine) as session:
    campaigns = queue.open_campaigns(session)
if not campaigns:
    st.title("Annotate")
    st.info("No campaign is open for annotation yet.")
    st.stop()

names = [campaign.name for campaign in campaigns]
# The URL names the campaign served (the page keeps it there); the last one served stands in.
asked = (st.query_params.get("campaign"), state.get("annotate_served"))
served = next((name for name in asked if name in names), names[0])
with st.sidebar:
    # Unkeyed, and its default is the campaign served: the browser may register the picker
    # afresh at its default with no choice made (seen under load, in a draft's rerun). With the
    # first campaign as default that moved the annotator there and leased a unit; now it is a
    # no-op. A choice changes the widget's identity with the next run's default, so it holds.
    chosen = st.selectbox("Campaign", names, index=names.index(served))
campaign = campaigns[names.index(chosen)]
campaign_id = stored_id(campaign)
state["annotate_served"] = campaign.name
_keep_in_url("campaign", campaign.name)

notice = state.pop("annotate_notice", None)
if notice:
    st.toast(escape_markdown(notice))

prepared = state.pop("annotate_next", None)
cached = state.get("annotate_progress")
if not state.get("annotate_began"):  # a new session: a new tab, or this one reloaded
    state["annotate_began"] = True
    shown_before = _unit_in_url()
    if shown_before is not None:
        state["annotate_shown"] = (campaign_id, shown_before)
held_campaign, held = state.get("annotate_shown", (None, None))

try:
    with session_scope(engine) as session:
        if prepared is not None and prepared[0] == campaign_id and prepared[1] is not None:
            view = prepared[1]  # the unit the submit leased: no second write for this run
        else:  # (asked again when the submit leased nothing: the queue may have held them)
            view = queue.next_unit(session, campaign_id, user.id)
            current = None if view is None else view.assignment_id
            if held_campaign == campaign_id and held != current and campaign.status == "active":
                view = _held_view(session, held, campaign_id) or view  # e.g. answered elsewhere
except queue.AnnotatorHeld as stopped:
    # The queue serves this annotator nothing here (qualification not passed, held or retired
    # by an admin): its words, and the way to the answers they gave.
    st.markdown(f"#### {escape_markdown(campaign.name)}")
    _feedback_panel(campaign_id)
    st.warning(escape_markdown(str(stopped)), icon=":material/pause_circle:")
    st.page_link("pages/my_work.py", label="Review my answers", icon=":material/history:")
    st.query_params.pop("unit", None)
    state.pop("annotate_shown", None)
    st.stop()
with session_scope(engine) as session:
    if view is None:
        progress = None
        done = queue.submitted_count(session, campaign_id, user.id)
    elif cached is not None and cached[0] == (view.assignment_id, view.answered_revision):
        progress = cached[1]  # drafts rerun the page: read once per unit (again once answered)
    else:
        progress = queue.unit_progress(session, view.assignment_id, user.id)
        state["annotate_progress"] = ((view.assignment_id, view.answered_revision), progress)
others_campaign, others = state.get("annotate_others", (None, []))
if others_campaign != campaign_id:  # they rated a unit of another campaign
    others = []
saved = state.get("annotate_saved")
if saved is not None and saved.campaign_id != campaign_id:
    saved = None

st.html(_LAYOUT)
head = st.container(key="cl-head", gap="small")
lost = state.pop("annotate_lost", None)
if lost:
    message, rationale = lost
    st.warning(f"{escape_markdown(message[0].upper() + message[1:])}. What you wrote:")
    st.code(rationale, language=None, wrap_lines=True)

_feedback_panel(campaign_id)
if others:
    with st.expander("How others rated the unit you just submitted"):
        for other in others:
            value = other.preference_shown or f"{other.score:g}"
            st.markdown(f"**{value}** —\n\n{safe_markdown(other.rationale)}")

if view is None:
    head.markdown(f"#### {escape_markdown(campaign.name)}")
    if saved is not None:
        _saved_line(head, saved)
    if campaign.status == "paused":
        st.info("This campaign is paused: no new units for now. Your answers are saved.")
    else:
        st.success(f"Nothing left for you in this campaign. You answered {done} units. Thank you!")
    st.page_link("pages/my_work.py", label="Review my answers", icon=":material/history:")
    st.query_params.pop("unit", None)
    st.stop()

assert progress is not None
which = _which(view, progress)
state["annotate_which"] = (view.assignment_id, which)
state["annotate_shown"] = (campaign_id, view.assignment_id)
_keep_in_url("unit", str(view.assignment_id))  # a reload of this tab comes back to it
with head:
    title, bar = st.columns([3, 2], vertical_alignment="bottom")
    title.markdown(f"#### {escape_markdown(campaign.name)}")
    where = " · ".join(part for part in (view.category, view.task) if part)
    title.caption(
        escape_markdown(f"{which[0].upper()}{which[1:]}" + (f" · {where}" if where else ""))
    )
    total = max(progress.units_total, 1)
    bar.progress(
        min(progress.my_submitted / total, 1.0),
        text=f"Unit {progress.my_submitted + (view.answered_revision is None)} of "
        f"{progress.units_total} in this campaign · "
        f"{progress.my_submitted} done by you",
    )
    if saved is not None:
        _saved_line(st.container(), saved)
    if view.answered_revision is not None:
        _answered_line(st.container(), view.answered_revision)

unit_column, answer_column = st.columns([3, 2], gap="medium")
with unit_column, st.container(key="cl-unit"):
    render_unit(view)
with answer_column, st.container(key="cl-answer-column"):
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
        store=store_key(user.id, campaign_id, view.assignment_id),
    )
    # One popover per unit: a new unit's opens closed (the old one stayed open over it). An
    # answered unit has nothing to give back: the line above the unit offers the way on.
    if view.answered_revision is None:
        with st.popover(
            "Skip or report a problem",
            icon=":material/flag:",
            key=f"give-back-{view.assignment_id}",
            on_change="rerun",
        ):
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
    with st.expander("Rubric and guidance", expanded=True):
        render_rubric(view, bands=False)
