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

Before the first unit of a campaign its guidelines (instructions) stand above the unit until the
annotator closes them, which is stored per annotator and campaign
(:func:`data.queue.mark_guidelines_read`), so a reload does not show them again; the header's
*Guidelines* brings them back. *Previous* (and *Undo*, for
:data:`UNDO_WINDOW` after a submit) opens an earlier answer in the panel: a change is saved as
its next revision (:func:`data.queue.revise`, audited, the earlier revision kept, as in My work),
and the page goes back to the unit the annotator was on.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial

import streamlit as st
from sqlmodel import Session
from streamlit.delta_generator import DeltaGenerator

from annotate_app.auth import require_role
from annotate_app.components.answer_box import (
    AnswerPayload,
    answer_box,
    read_payload,
    save_revision,
    store_key,
)
from annotate_app.db import get_engine
from annotate_app.render import render_rubric, render_unit, safe_markdown
from annotate_app.text import escape_markdown
from data import queue
from data.storage.campaign_lookup import campaign_protocol
from data.storage.engine import DatabaseProblem, read_scope, session_scope
from schemas.core import parse_row_id, stored_id

user = require_role("annotator", "reviewer", "admin")
engine = get_engine()
state = st.session_state

# Page-only layout for a 1280×720 screen: less space above the title, the answer column follows
# the scroll; images small enough that the question and the start of the response(s) share the
# first screen (about a fifth of its height in the question, a quarter in a response; each opens
# full size on click), so a pairwise unit needs no scroll to reach both responses.
_LAYOUT = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.75rem; padding-bottom: 2rem; }
.st-key-cl-head h4 { padding: 0; margin: 0; }
.st-key-cl-head [data-testid="stCaptionContainer"] p { margin: 0; }
[data-testid="stColumn"]:has(.st-key-cl-answer-column) {
  position: sticky; top: 3.75rem; align-self: flex-start;
}
.st-key-cl-unit [data-testid="stImage"] img { max-height: 11rem; width: auto; }
.st-key-cl-unit .st-key-cl-question [data-testid="stImage"] img { max-height: 8.5rem; }
.st-key-cl-unit [data-testid="stMarkdownContainer"] p { margin-bottom: 0.35rem; }
.cl-saved { color: #15803d; margin: 0; }
</style>"""
# How long after a submit its confirmation offers "Undo": the answer opens again, and a change is
# saved as a revision (the first answer is kept, as in My work). "Previous unit" has no limit.
UNDO_WINDOW = timedelta(minutes=2)


@dataclass(frozen=True)
class _Saved:
    """The answer just stored, for the confirmation line and the way back to it."""

    campaign_id: int
    annotation_id: int
    what: str
    at: datetime  # when the page stored it (server clock), for the undo window


def _which(view: queue.UnitView, progress: queue.UnitProgress) -> str:
    """Which of its item's units this is, counted in the annotator's own order (model-blind)."""
    noun = "pair" if len(view.responses) > 1 else "response"
    return f"{noun} {progress.item_position} of {progress.item_units} for item {view.item_id}"


def _give_back_menu(assignment_id: int) -> None:
    """ "Skip or report a problem": one popover per unit, so that a new unit's opens closed (the
    old one stayed open over it)."""
    with st.popover(
        "Skip or report a problem",
        icon=":material/flag:",
        key=f"give-back-{assignment_id}",
        on_change="rerun",
    ):
        reason_key = f"reason-{assignment_id}"
        st.text_input("Reason", key=reason_key, placeholder="e.g. outside my expertise")
        for column, (action, label, tip) in zip(st.columns(2), _GIVE_BACK_ACTIONS, strict=True):
            column.button(
                label,
                key=f"{action}-{assignment_id}",
                on_click=_give_back,
                args=(action, assignment_id, reason_key),
                help=tip,
            )


_GIVE_BACK_ACTIONS = (
    ("skip", "Skip this unit", "Someone else will annotate it; you will not see it again."),
    (
        "flag",
        "Report as broken",
        "The item is broken (missing image, garbled text): reviewers will look at it.",
    ),
)


def _saved_line(where: DeltaGenerator, saved: _Saved) -> None:
    """The line 'Saved: response k of n for item X', "Undo" for a short while, and the way back
    to that answer in My work. The line is HTML-escaped text, not Markdown: the word joiners that
    keep Markdown plugins off an item key (:func:`annotate_app.text.escape_markdown`) would be
    copied with it."""
    confirm, undo, back = where.columns([5, 2, 3], vertical_alignment="center")
    confirm.html(f'<p class="cl-saved">✓ <b>Saved</b>: {html.escape(saved.what)}.</p>')
    if datetime.now(UTC) - saved.at <= UNDO_WINDOW:
        undo.button(
            "Undo",
            icon=":material/undo:",
            key=f"undo-{saved.annotation_id}",
            on_click=_undo,
            args=(saved,),
            help="Open the answer just saved again: a change is saved as a revision, and the "
            "answer as first sent is kept (My work lists both).",
        )
    back.page_link(
        "pages/my_work.py",
        label="Revise the answer just saved",
        icon=":material/edit:",
        query_params={"annotation": str(saved.annotation_id)},
    )


def _undo(saved: _Saved) -> None:
    if datetime.now(UTC) - saved.at > UNDO_WINDOW:
        state["annotate_notice"] = (
            f"Undo is offered for {UNDO_WINDOW.seconds // 60} minutes after a submit: use "
            "Previous unit, or My work, to change an older answer."
        )
        return
    state["annotate_back"] = (saved.campaign_id, saved.annotation_id)


def _go_back(campaign_id: int, before: int | None) -> None:
    """Open the annotator's answer on the unit given before ``before`` (the newest one when
    None) for a change, saved as a revision."""
    with session_scope(engine) as session:
        earlier = queue.previous_answer(session, campaign_id, user.id, before)
    if earlier is None:
        state["annotate_notice"] = "There is no earlier answer of yours in this campaign."
        return
    state["annotate_back"] = (campaign_id, earlier)


def _leave_back() -> None:
    state.pop("annotate_back", None)
    state.pop("annotate_back_refused", None)


def _save_back(key: str, annotation_id: int, campaign_id: int, what: str) -> None:
    """Save the change to an earlier answer as its next revision (audited, the old one kept)."""
    try:
        saved = save_revision(engine, key, annotation_id, user.id)
    except (queue.QueueError, DatabaseProblem) as error:
        attempt, _ = state.get("annotate_back_refused", (0, ""))
        state["annotate_back_refused"] = (attempt + 1, str(error))
        return
    if saved is None:
        return
    _leave_back()
    state["annotate_saved"] = _Saved(
        campaign_id,
        saved.annotation_id,
        f"revision {saved.revision} of {what}",
        datetime.now(UTC),
    )


def _guidelines(view: queue.UnitView) -> None:
    """The campaign's guidelines (its instructions), the scale and what each choice means."""
    if view.instructions.strip():
        st.markdown(safe_markdown(view.instructions))
    render_rubric(view, instructions=False)


def _mark_read(campaign_id: int) -> None:
    """The annotator closed the guidelines: stored, so they do not stand before the unit again."""
    try:
        with session_scope(engine) as session:
            queue.mark_guidelines_read(session, campaign_id, user.id)
    except DatabaseProblem as error:
        state["annotate_notice"] = f"Not recorded, the guidelines will show again: {error}"
        return
    state.setdefault("annotate_read", set()).add(campaign_id)


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
    state["annotate_saved"] = _Saved(step.campaign_id, step.annotation_id, what, datetime.now(UTC))
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
    expected = protocol.answer_label(told.expected_score, told.expected_preference_shown)
    if told.exact:
        verdict = "Your answer matches it."
    elif told.agrees:  # pointwise, one scale step away: counted right in gold accuracy
        verdict = "Yours is one step from it, which counts as right."
    else:
        verdict = "Your answer differs from it."
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
        _tell(
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
protocol = campaign_protocol(campaign)
state["annotate_served"] = campaign.name
_keep_in_url("campaign", campaign.name)


# What the page has to tell (a skip done, a draft not saved, a unit lost): drawn in the page's
# flow right under the header (:func:`_say`), never as a toast: a toast sits in the bottom right
# corner, over the answer panel's choices and its submit button at 1280×720 (issue 25).
def _tell(line: str) -> None:
    """Have the page tell ``line`` (:func:`_say`) until the annotator moves to another unit."""
    state.setdefault("annotate_said", []).append((line, None))


def _say(shown: object) -> None:
    """Draw what the page has to tell, in the place it is called (the notes under the header).
    A line stays while the page shows what it showed when the line was first drawn (``shown``:
    the unit, or the answer opened), through the reruns of drafts, and goes with the next unit:
    a toast stayed a few seconds; a line drawn once would vanish with the next draft's rerun."""
    kept = [(line, shown if at is None else at) for line, at in state.get("annotate_said", [])]
    state["annotate_said"] = [(line, at) for line, at in kept if at == shown]
    for line, _ in state["annotate_said"]:
        st.info(escape_markdown(line), icon=":material/info:")


notice = state.pop("annotate_notice", None)
if notice:
    _tell(notice)


def _revise_earlier(annotation_id: int) -> None:
    """The page when the annotator went back (Undo, or Previous unit): their answer to an earlier
    unit in the panel; a change is saved as its next revision, then the page goes on to the unit
    they were on (still leased to them)."""
    try:
        with session_scope(engine) as session:
            view, own = queue.my_annotation_view(session, annotation_id, user.id)
    except queue.QueueError as problem:  # e.g. revised meanwhile in My work (a newer revision)
        _leave_back()
        _tell(f"That answer cannot be opened here: {problem}")
        return
    what = f"{own.unit_label} for item {own.item_id}"
    st.html(_LAYOUT)
    with st.container(key="cl-head", gap="small"):
        title, earlier, onward = st.columns([4, 2, 2], vertical_alignment="bottom")
        title.markdown(f"#### {escape_markdown(campaign.name)}")
        title.caption(
            escape_markdown(
                f"Changing your answer to {what} (revision {own.revision}). It stays saved as "
                f"it is unless you save a change, which becomes revision {own.revision + 1}; "
                "My work keeps every revision."
            )
        )
        earlier.button(
            "Previous unit",
            icon=":material/arrow_back:",
            key=f"previous-{own.annotation_id}",
            on_click=_go_back,
            args=(campaign_id, view.assignment_id),
        )
        onward.button(
            "Back to my next unit",
            icon=":material/arrow_forward:",
            key="leave-back",
            on_click=_leave_back,
            type="primary",
        )
    with st.container(key="cl-notes"):  # as on a unit's page: the columns keep their place
        _say(("answer", own.annotation_id))
    unit_column, answer_column = st.columns([3, 2], gap="medium")
    with answer_column, st.container(key="cl-answer-column"):
        key = f"revise-{own.annotation_id}"
        attempt, refusal = state.get("annotate_back_refused", (0, None))
        if refusal:
            st.error(escape_markdown(refusal))
        answer_box(
            key=key,
            unit=own.annotation_id,
            protocol=view.protocol,
            rationale_min=view.rationale_min,
            draft=queue.DraftView(own.score, own.preference_shown, own.rationale, 0.0),
            on_draft=lambda: None,  # the saved answer stands until a change is saved
            on_submit=partial(_save_back, key, own.annotation_id, campaign_id, what),
            attempt=attempt,
            error=refusal,
            submit_label="Save revision",
        )
        with st.expander("Rubric and guidance"):
            render_rubric(view, bands=False)
    with unit_column, st.container(key="cl-unit"):
        render_unit(view)
    st.stop()


back = state.get("annotate_back")
if back is not None and back[0] == campaign_id:
    _revise_earlier(back[1])

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
    _say(("held", campaign_id))
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
# Always drawn, right under the header, whatever it holds this run: the columns below then keep
# their place on the page from one run to the next, so Streamlit replaces the previous unit's
# panel in place instead of keeping a stale copy of it elsewhere until the run ends.
notes = st.container(key="cl-notes", gap="small")
with notes:
    _say(("unit", campaign_id, None if view is None else view.assignment_id))
    lost = state.pop("annotate_lost", None)
    if lost:
        message, rationale = lost
        st.warning(f"{escape_markdown(message[0].upper() + message[1:])}. What you wrote:")
        st.code(rationale, language=None, wrap_lines=True)
    _feedback_panel(campaign_id)
    if others:
        with st.expander("How others rated the unit you just submitted"):
            for other in others:
                value = protocol.answer_label(other.score, other.preference_shown)
                st.markdown(f"**{escape_markdown(value)}** —\n\n{safe_markdown(other.rationale)}")

if view is None:
    head.markdown(f"#### {escape_markdown(campaign.name)}")
    if saved is not None:
        _saved_line(head, saved)
    if campaign.status == "paused":
        st.info("This campaign is paused: no new units for now. Your answers are saved.")
    else:
        st.success(f"Nothing left for you in this campaign. You answered {done} units. Thank you!")
    if done:
        st.button(
            "Previous unit",
            icon=":material/arrow_back:",
            key="previous-done",
            on_click=_go_back,
            args=(campaign_id, None),
        )
    st.page_link("pages/my_work.py", label="Review my answers", icon=":material/history:")
    st.query_params.pop("unit", None)
    st.stop()

assert progress is not None
which = _which(view, progress)
state["annotate_which"] = (view.assignment_id, which)
state["annotate_shown"] = (campaign_id, view.assignment_id)
_keep_in_url("unit", str(view.assignment_id))  # a reload of this tab comes back to it
read = state.setdefault("annotate_read", set())  # campaigns whose guidelines this user read
# Asked only while the banner could show (before the first answer), in a read that takes no
# write turn: this runs on every rerun of the page, a draft save included.
first_unit = progress.my_submitted == 0 and campaign_id not in read
if first_unit and view.instructions.strip():
    with read_scope(engine) as session:  # stored: a reload or another device knows it
        if queue.guidelines_read(session, campaign_id, user.id):
            read.add(campaign_id)
            first_unit = False
with head:
    title, tools, bar = st.columns([4, 4, 4], vertical_alignment="bottom")
    title.markdown(f"#### {escape_markdown(campaign.name)}")
    where = " · ".join(part for part in (view.category, view.task) if part)
    title.caption(
        escape_markdown(f"{which[0].upper()}{which[1:]}" + (f" · {where}" if where else ""))
    )
    with tools.container(horizontal=True, gap="small"):
        if progress.my_submitted:
            st.button(
                "Previous",
                icon=":material/arrow_back:",
                key="previous",
                on_click=_go_back,
                args=(campaign_id, None),
                help="Open your answer to the unit before this one: a change is saved as a "
                "revision, and then you come back here.",
            )
        with st.popover("Guidelines", icon=":material/menu_book:", key="guidelines"):
            _guidelines(view)
    total = max(progress.units_total, 1)
    bar.progress(
        min(progress.my_submitted / total, 1.0),
        text=f"Unit {progress.my_submitted + (view.answered_revision is None)} of "
        f"{progress.units_total} in this campaign · "
        f"{progress.my_submitted} done by you",
    )
    # In the sidebar, under the campaign: always on screen (under the panel, a message above
    # the unit pushed it below the fold; in the header, three buttons broke over two lines). An
    # answered unit has nothing to give back: the line above the unit offers the way on.
    if view.answered_revision is None:
        with st.sidebar:
            _give_back_menu(view.assignment_id)
    if saved is not None:
        _saved_line(st.container(), saved)
    if view.answered_revision is not None:
        _answered_line(st.container(), view.answered_revision)
if first_unit and view.instructions.strip():
    # Before the first unit of a campaign: its guidelines, open until the annotator closes them
    # (the Guidelines button above brings them back).
    with notes, st.container(border=True, key="cl-guidelines"):
        st.markdown("**Guidelines for this campaign** — please read them before your first unit.")
        _guidelines(view)
        st.button(
            "I have read them",
            key="guidelines-read",
            on_click=_mark_read,
            args=(campaign_id,),
            type="primary",
        )

unit_column, answer_column = st.columns([3, 2], gap="medium")
# The panel first: after a submit, the next unit's panel replaces the old one before the unit
# column (images and all) is drawn.
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
    # Closed: the panel shows what each choice means, and Guidelines (above) holds all of it.
    with st.expander("Rubric and guidance"):
        render_rubric(view, bands=False)
with unit_column, st.container(key="cl-unit"):
    render_unit(view)
