"""Gold units and qualification on the admin pages: the Campaigns page's gold settings form,
the Monitor page's gold accuracy and held annotators (with Release / Retire).

The services check the acting user's role on the server (:mod:`data.services.gold`); the pages
only show what they return.
"""

from __future__ import annotations

import shlex

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import col, func, select

from annotate_app.render import submit_row
from annotate_app.text import escape_markdown
from data.io.importers.errors import InvalidFile
from data.services.gold import (
    GoldSettings,
    change_standing_as,
    gold_accuracy_as,
    gold_settings,
    import_gold_upload_as,
    set_gold_settings_as,
    standings_as,
)
from data.services.roles import PermissionDenied
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.tables import Campaign, Unit

ERRORS = (ValueError, PermissionDenied)


def render_gold_settings(engine: Engine, user_id: int, campaign: Campaign) -> None:
    """The campaign's gold and qualification settings, saved (audited) by the form."""
    with session_scope(engine) as session:
        gold_units = session.exec(
            select(func.count()).where(Unit.campaign_id == campaign.id, col(Unit.gold).is_(True))
        ).one()
    current = gold_settings(campaign)
    key = f"g{campaign.id}"
    with st.form(f"gold_{campaign.id}"):
        st.markdown(
            f"**Gold units and qualification** (PROTOCOLS.md, *Gold units*): {gold_units} gold "
            "units; add more with the gold file upload below or with"
        )
        # a code block shows the name as it is (markdown escapes would show as backslashes in a
        # code span), quoted for the shell so that the line can be pasted
        st.code(
            f"critiquelab gold import FILE --campaign {shlex.quote(campaign.name)}", language="bash"
        )
        wanted = GoldSettings(
            gold_rate=float(
                st.number_input(
                    "Gold rate (share of units served; 0 = none, at most 0.5)",
                    0.0,
                    0.5,
                    float(current.gold_rate),
                    0.01,
                    key=f"{key}_rate",
                )
            ),
            gold_feedback=st.checkbox(
                "Show the expected answer after a gold unit (training campaigns)",
                current.gold_feedback,
                key=f"{key}_feedback",
            ),
            qualification_gold=int(
                st.number_input(
                    "Qualification: gold units to answer before real work (N; 0 = none)",
                    0,
                    1000,
                    int(current.qualification_gold),
                    key=f"{key}_n",
                )
            ),
            qualification_accuracy=float(
                st.number_input(
                    "Qualification: share of them that must be right (T)",
                    0.0,
                    1.0,
                    float(current.qualification_accuracy),
                    0.05,
                    key=f"{key}_t",
                )
            ),
        )
        save, outcome = submit_row("Save gold settings")
    if save:
        try:
            with session_scope(engine) as session:
                changes = set_gold_settings_as(session, user_id, stored_id(campaign), wanted)
        except ERRORS as error:
            outcome.error(escape_markdown(str(error)))
        else:
            outcome.success("Saved: " + ", ".join(changes) if changes else "Nothing changed.")
    _gold_upload(engine, user_id, campaign)


def _gold_upload(engine: Engine, user_id: int, campaign: Campaign) -> None:
    """Attach known answers from a gold file (FORMATS.md §6), read exactly as
    ``critiquelab gold import`` reads it: every bad line listed with its field, nothing stored."""
    with st.form(f"gold_upload_{campaign.id}"):
        upload = st.file_uploader(
            "Gold file (.jsonl: one known answer per line, FORMATS.md §6)",
            type=["jsonl"],
            key=f"g{campaign.id}_file",
        )
        send = st.form_submit_button("Import gold answers")
    if send and upload is None:
        st.error("Choose a .jsonl gold file first.")
    elif send and upload is not None:
        try:
            with session_scope(engine) as session:
                done = import_gold_upload_as(
                    session, user_id, stored_id(campaign), upload.name, upload.getvalue()
                )
        except InvalidFile as error:
            count = "1 problem" if len(error.problems) == 1 else f"{len(error.problems)} problems"
            st.error(f"Nothing was imported: {count}. Fix each line listed below and upload again.")
            st.code("\n".join(error.lines()), language=None, wrap_lines=True)
        except ERRORS as error:
            st.error(escape_markdown(str(error)))
        else:
            st.success(
                f"{done.added} gold answers added, {done.replaced} replaced; "
                f"{done.gold_units} gold units in all."
            )


def _act(engine: Engine, user_id: int, campaign_id: int, annotator: str, action: str) -> None:
    try:
        with session_scope(engine) as session:
            after = change_standing_as(session, user_id, campaign_id, annotator, action)
    except ERRORS as error:
        st.session_state["gold_outcome"] = ("error", str(error))
    else:
        st.session_state["gold_outcome"] = ("success", f"{annotator} is {after}.")


def render_gold_monitor(engine: Engine, user_id: int, campaign: Campaign) -> None:
    """Per-annotator gold accuracy, and the annotators held now with Release / Retire."""
    campaign_id = stored_id(campaign)
    with session_scope(engine) as session:
        accuracy = gold_accuracy_as(session, user_id, campaign_id)
        held = standings_as(session, user_id, campaign_id, ("held",))
    st.subheader("Gold accuracy")
    st.caption(
        "Each annotator's first answers to gold units: exact, and within one scale step "
        "(pairwise: agreement, the same in both), with 95% Wilson intervals."
        + ("" if accuracy else " No gold unit has been answered in this campaign yet.")
    )
    st.dataframe(
        pd.DataFrame(
            {
                "Annotator": [r.annotator for r in accuracy],
                "Gold answered": [r.answered for r in accuracy],
                "Exact": [r.exact_text for r in accuracy],
                "Within one step": [r.within_one_text for r in accuracy],
                "Standing": [r.standing for r in accuracy],
            }
        ),
        hide_index=True,
    )
    st.subheader("Held annotators")
    outcome = st.session_state.pop("gold_outcome", None)
    if outcome is not None:
        (st.error if outcome[0] == "error" else st.success)(escape_markdown(outcome[1]))
    if not held:
        st.caption("Nobody is held in this campaign.")
    for row in held:
        name, release, retire = st.columns([3, 1, 1], vertical_alignment="center")
        name.markdown(f"**{escape_markdown(row.annotator)}** — {escape_markdown(row.why)}")
        release.button(
            "Release",
            key=f"release-{row.annotator}",
            on_click=_act,
            args=(engine, user_id, campaign_id, row.annotator, "release"),
        )
        retire.button(
            "Retire",
            key=f"retire-{row.annotator}",
            on_click=_act,
            args=(engine, user_id, campaign_id, row.annotator, "retire"),
        )
