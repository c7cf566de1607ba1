"""Monitor: progress, time per unit, agreement so far, low-effort signals, skips and flags."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from annotate_app.annotator_views import render_annotators
from annotate_app.auth import require_role
from annotate_app.campaign_calibration import campaign_annotator_exclusions
from annotate_app.db import get_engine
from annotate_app.gold_views import render_gold_monitor
from annotate_app.monitor_views import live_annotators, live_effort_report, live_task_agreement
from annotate_app.pickers import pick_campaign
from annotate_app.review_views import render_answer_review
from data.services.campaign_progress import campaign_progress
from data.services.effort import ABS_MIN_SECONDS, EFFORT_REASON_NAMES, SECONDS_PER_1000_CHARS
from data.services.monitor import unit_issues
from data.storage.campaign_lookup import campaign_protocol
from data.storage.engine import session_scope
from schemas.core import stored_id

user = require_role("admin")
engine = get_engine()

st.title("Monitor")
campaign = pick_campaign(engine, key="mon_campaign")
campaign_id = stored_id(campaign)
with session_scope(engine) as session:
    progress = campaign_progress(session, campaign_id)
    issues = unit_issues(session, campaign_id)
effort_report = live_effort_report(engine, campaign_id)  # in the worker, once per version
effort = effort_report.flags


def _seconds(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.0f} s"


complete, answers, median, status = st.columns(4)
complete.metric("Units complete", f"{progress.units_complete} / {progress.units}")
answers.metric("Answers", progress.annotations)
median.metric("Median active time per answer", _seconds(progress.median_seconds_per_unit))
status.metric("Status", progress.status)

st.subheader("Agreement so far")
st.caption(
    "Krippendorff's alpha among the human annotators, per task (interval for scores, nominal "
    "for preferences); n/a, with the reason, while it is undefined. Like calibration, it reads "
    "no answer a reviewer rejected and leaves out annotators held or retired in the campaign; "
    "Answers and Units complete count no rejected answer either."
)
agreement = live_task_agreement(engine, campaign_id)
st.dataframe(
    pd.DataFrame(
        {
            "Task": [row.task for row in agreement],
            "Annotators": [row.annotators for row in agreement],
            "Units": [row.units for row in agreement],
            "Alpha": [row.alpha_text for row in agreement],
            "Level": [row.level for row in agreement],
        }
    ),
    hide_index=True,
)

reliability = live_annotators(engine, campaign_id)
render_annotators(
    reliability,
    pairwise=not campaign_protocol(campaign).is_pointwise,
    reasons=campaign_annotator_exclusions(engine, campaign_id),
    names=[a.annotator for a in progress.by_annotator],
    leading={
        "Submitted": [a.submitted for a in progress.by_annotator],
        "Rejected": [a.rejected for a in progress.by_annotator],
        "Leased": [a.leased for a in progress.by_annotator],
        "Skipped": [a.skipped for a in progress.by_annotator],
        "Median time": [_seconds(a.median_seconds) for a in progress.by_annotator],
        "Low-effort signals": [
            sum(flag.annotator == a.annotator for flag in effort) for a in progress.by_annotator
        ],
    },
)

render_gold_monitor(engine, stored_id(user), campaign)
render_answer_review(engine, stored_id(user), campaign)

st.subheader("Possible low-effort answers")
st.caption(
    f"Too fast: less time than skimming the unit's text at 700 words a minute takes "
    f"({SECONDS_PER_1000_CHARS:g} s per 1,000 characters, plus a little per image; never under "
    f"{ABS_MIN_SECONDS:g} s); duplicate rationale: nearly the same rationale as on another unit "
    "with different responses (short stock phrases are not compared); copied rationale: mostly "
    "text of the response itself. Per annotator: a flag when a fifth of their answers carry one, "
    "or more than half their rationales are stock phrases; answering position and runs of one "
    "answer are the Annotators table's flags above, repeated here. Thresholds in METRICS.md."
)
reliability_flags = {
    row.annotator: [f.reason for f in row.flags if f.kind in ("position", "straight_lining")]
    for row in (reliability.rows if reliability else ())
}
st.dataframe(
    pd.DataFrame(
        {
            "Annotator": [a.annotator for a in effort_report.annotators],
            "Answers": [a.answers for a in effort_report.annotators],
            "Flagged answers": [a.flagged for a in effort_report.annotators],
            "Too fast": [a.counts["too_fast"] for a in effort_report.annotators],
            "Duplicate": [a.counts["duplicate_rationale"] for a in effort_report.annotators],
            "Copied": [a.counts["copied_rationale"] for a in effort_report.annotators],
            "Stock": [a.stock for a in effort_report.annotators],
            "Flags": ["; ".join(f.reason for f in a.flags) for a in effort_report.annotators],
            "Position / runs (Annotators table)": [
                "; ".join(reliability_flags.get(a.annotator, ())) for a in effort_report.annotators
            ],
        }
    ),
    hide_index=True,
)
st.dataframe(
    pd.DataFrame(
        {
            "Annotator": [f.annotator for f in effort],
            "Unit": [f.unit_key for f in effort],
            "Signal": [EFFORT_REASON_NAMES[f.reason] for f in effort],
            "Detail": [f.detail for f in effort],
        }
    ),
    hide_index=True,
)

st.subheader("Skipped and flagged units")
if not issues:
    st.caption("No unit was skipped or flagged in this campaign.")
st.dataframe(
    pd.DataFrame(
        {
            "Kind": [i.kind for i in issues],
            "Unit": [i.unit_key for i in issues],
            "Item": [i.item_id for i in issues],
            "By": [i.user for i in issues],
            "Reason": [i.reason for i in issues],
            "When": [i.at for i in issues],
            "Resolution": [i.resolution for i in issues],
        }
    ),
    hide_index=True,
)

st.subheader("Units")
st.dataframe(
    pd.DataFrame(
        {
            "Unit": [u.unit_key for u in progress.by_unit],
            "Item": [u.item_id for u in progress.by_unit],
            "Submitted": [f"{u.submitted} / {progress.overlap}" for u in progress.by_unit],
            "Leased": [u.leased for u in progress.by_unit],
            "Flagged": [u.flagged for u in progress.by_unit],
            "Median time": [_seconds(u.median_seconds) for u in progress.by_unit],
        }
    ),
    hide_index=True,
)
