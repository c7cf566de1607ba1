"""Campaigns: create one, edit its settings, pause / resume / close it, download its results."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from annotate_app.auth import require_role
from annotate_app.built_file import BuiltFile
from annotate_app.calibration_worker import (
    campaign_annotations_file,
    campaign_report,
    campaign_sft_file,
)
from annotate_app.campaign_report import CampaignReportFiles
from annotate_app.db import get_engine
from annotate_app.disagreement_views import render_review_settings
from annotate_app.gold_views import render_gold_settings
from annotate_app.render import safe_markdown, submit_row
from annotate_app.text import escape_markdown
from data.io.exporters.downloads import MEDIA_TYPES
from data.io.exporters.files import EXPORT_FORMATS
from data.queue.priority import ROUTING_MODES
from data.readmodels.frames import campaign_judges
from data.services.admin import (
    CAMPAIGN_TRANSITIONS,
    CampaignSettings,
    campaign_settings,
    change_campaign_status,
    create_campaign_as,
    dataset_overview,
    set_routing_as,
    update_campaign_settings,
)
from data.services.admin_audit import record_export
from data.services.campaigns import CampaignSpec, PairSampling, pair_sampling_text
from data.services.roles import PermissionDenied
from data.storage.campaign_lookup import list_campaigns
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.protocols import PROTOCOL_NAMES, parse_scale
from schemas.tables import Campaign

user = require_role("admin")
engine = get_engine()
# The database as the calibration worker opens it (password kept: the worker connects). A comment,
# not a string: Streamlit draws a bare string of a page (it showed above the title).
WORKER_URL = engine.url.render_as_string(hide_password=False)
SFT_KEY, REPORT_KEY = "campaign_sft_file", "campaign_calibration_report"
# Bad input is a ValueError across the project (CampaignError, CampaignSettingsError, the
# scale parser's errors); a wrong role is PermissionDenied. Anything else is a bug and shows.
ERRORS = (ValueError, PermissionDenied)


def _annotations_file(campaign_name: str, export_format: str) -> bytes:
    """``critiquelab export annotations``'s file, written by the calibration worker from a
    read-only snapshot (a large campaign's answers are read outside the annotators' process,
    and no writer waits for it)."""
    made = campaign_annotations_file(WORKER_URL, campaign_name, export_format)
    record_export(
        engine, stored_id(user), "annotations", source=campaign_name, export_format=export_format
    )
    return made


def _sft_file(campaign_name: str) -> BuiltFile:
    """The critic training file of ``critiquelab export sft`` with its default options, written
    to disk by the calibration worker (a large campaign's units are read outside the annotators'
    process, and its file stays out of the session)."""
    built = BuiltFile(".jsonl")
    try:
        campaign_sft_file(WORKER_URL, campaign_name, built.path)
    except BaseException:
        built.remove()
        raise
    record_export(engine, stored_id(user), "sft", source=campaign_name, export_format="jsonl")
    return built


def _calibration_report(campaign: Campaign) -> CampaignReportFiles:
    """The files of ``critiquelab calibrate --campaign``, computed by the calibration worker: a
    large campaign's rows are read and calibrated outside the process that serves annotators."""
    files = campaign_report(WORKER_URL, stored_id(campaign))
    record_export(
        engine, stored_id(user), "calibration", source=campaign.name, export_format="html+json"
    )
    return files


st.title("Campaigns")
listing = st.container()
# Each action's message is drawn under its own button or form, where the eyes are: a message at
# the top of this long page was drawn far above the viewport ("Routing applied", 672 px).

with session_scope(engine) as session:
    datasets = dataset_overview(session)

with st.expander("Create a campaign", expanded=False):
    if not datasets:
        st.info("Upload a dataset on the Data page first.")
    else:
        dataset = st.selectbox("Dataset", datasets, format_func=lambda row: row.name, key="c_ds")
        with st.form("create_campaign"):
            name = st.text_input("Campaign name", key="c_name")
            protocol = st.selectbox("Protocol", PROTOCOL_NAMES, key="c_protocol")
            scale = st.text_input("Scale MIN:MAX[:STEP] (score protocol only)", key="c_scale")
            models = st.multiselect("Models (none selected: all)", dataset.models, key="c_models")
            pairs: PairSampling = st.radio(
                "Pairs (pairwise only)",
                ("dataset", "all", "sample"),
                horizontal=True,
                format_func={
                    "dataset": "from the dataset",
                    "all": "all pairs per item",
                    "sample": "K per item",
                }.get,
                key="c_pairs",
            )
            pair_k = st.number_input("K pairs per item", min_value=1, value=1, key="c_pair_k")
            seed = st.number_input("Seed of the pair sample", min_value=0, value=0, key="c_seed")
            overlap = st.number_input("Annotators per unit (K)", min_value=1, value=3, key="c_k")
            rationale_min = st.number_input(
                "Minimum rationale length (characters)", min_value=0, value=20, key="c_rmin"
            )
            lease = st.number_input("Lease (seconds)", min_value=1, value=900, key="c_lease")
            show_reference = st.checkbox("Show the reference answer", value=True, key="c_ref")
            show_others = st.checkbox("Show others' answers after submit", key="c_others")
            instructions = st.text_area("Instructions (Markdown)", key="c_instructions")
            create = st.form_submit_button("Create campaign", type="primary")
        if create:
            try:
                spec = CampaignSpec(
                    name=name.strip(),
                    dataset=dataset.name,
                    protocol=protocol,
                    scale=parse_scale(scale) if protocol == "score" else None,
                    overlap=int(overlap),
                    rationale_min=int(rationale_min),
                    lease_seconds=int(lease),
                    show_reference=show_reference,
                    show_others_after_submit=show_others,
                    instructions=instructions,
                    models=tuple(models) or None,
                    pairs=pairs,
                    pairs_per_item=int(pair_k) if pairs == "sample" else None,
                    seed=int(seed),
                )
                with session_scope(engine) as session:
                    create_campaign_as(session, user.id, spec)
            except ERRORS as error:
                st.error(escape_markdown(str(error)))
            else:
                st.success(escape_markdown(f"Campaign {spec.name} created."))

with session_scope(engine) as session:
    campaigns = list_campaigns(session)
listing.dataframe(
    pd.DataFrame(
        {
            "Campaign": [c.name for c in campaigns],
            "Protocol": [c.protocol for c in campaigns],
            "Status": [c.status for c in campaigns],
            "Overlap": [c.overlap for c in campaigns],
            "Created": [c.created_at for c in campaigns],
        }
    ),
    hide_index=True,
)
if not campaigns:
    st.stop()

st.subheader("Manage a campaign")
campaign = st.selectbox("Campaign", campaigns, format_func=lambda c: c.name, key="m_campaign")
current = campaign_settings(campaign)
model_names = ", ".join((campaign.options or {}).get("models") or ["all"])
pairs_text = pair_sampling_text(campaign)
st.caption(
    escape_markdown(
        f"Status: {campaign.status} · protocol {campaign.protocol} · models {model_names}"
        + (f" · {pairs_text}" if pairs_text else "")
    )
)

pause, resume, close = st.columns(3)
for column, action in ((pause, "pause"), (resume, "resume"), (close, "close")):
    allowed = campaign.status in CAMPAIGN_TRANSITIONS[action]  # a closed campaign stays closed
    if column.button(action.capitalize(), key=f"status_{action}", disabled=not allowed):
        try:
            with session_scope(engine) as session:
                change_campaign_status(session, user.id, stored_id(campaign), action)
        except ERRORS as error:
            st.error(escape_markdown(str(error)))
        else:
            st.rerun()

key = f"s{campaign.id}"
with st.form(f"settings_{campaign.id}"):
    settings = CampaignSettings(
        overlap=int(
            st.number_input("Annotators per unit (K)", 1, None, current.overlap, key=f"{key}_k")
        ),
        rationale_min=int(
            st.number_input(
                "Minimum rationale length", 0, None, current.rationale_min, key=f"{key}_rmin"
            )
        ),
        lease_seconds=int(
            st.number_input("Lease (seconds)", 1, None, current.lease_seconds, key=f"{key}_lease")
        ),
        show_reference=st.checkbox(
            "Show the reference answer", current.show_reference, key=f"{key}_ref"
        ),
        show_others_after_submit=st.checkbox(
            "Show others' answers after submit",
            current.show_others_after_submit,
            key=f"{key}_others",
        ),
        instructions=st.text_area(
            "Instructions (Markdown)", current.instructions, key=f"{key}_instructions"
        ),
    )
    save, saved_message = submit_row("Save settings", primary=True)
if save:
    try:
        with session_scope(engine) as session:
            changes = update_campaign_settings(session, user.id, stored_id(campaign), settings)
    except ERRORS as error:
        saved_message.error(escape_markdown(str(error)))
    else:
        saved_message.success("Saved: " + ", ".join(changes) if changes else "Nothing changed.")
        current = settings

with st.form(f"routing_{campaign.id}"):
    st.markdown("**Routing**: which units annotators get first (PROTOCOLS.md, *Routing*)")
    with session_scope(engine) as session:
        judged_by = campaign_judges(session, stored_id(campaign))
    routing = st.selectbox(
        "Routing", ROUTING_MODES, ROUTING_MODES.index(campaign.routing), key=f"{key}_routing"
    )
    routing_judges = st.multiselect(
        "Judges that order the queue",
        judged_by,
        [j for j in campaign.routing_judges or () if j in judged_by],
        key=f"{key}_rjudges",
    )
    share = st.number_input(
        "Stratified: share of units served at random",
        0.05,
        0.95,
        campaign.routing_share or 0.2,
        0.05,
        key=f"{key}_share",
    )
    apply_routing, routing_message = submit_row("Apply routing")
if apply_routing:
    try:
        with session_scope(engine) as session:
            plan = set_routing_as(
                session,
                stored_id(user),
                stored_id(campaign),
                routing,
                routing_judges if routing != "least-annotated" else None,
                float(share) if routing == "stratified" else None,
            )
    except ERRORS as error:
        routing_message.error(escape_markdown(str(error)))
    else:
        routing_message.success(escape_markdown(f"Routing {plan.routing}: {plan.note}"))

render_review_settings(engine, user.id, campaign)
render_gold_settings(engine, stored_id(user), campaign)

with st.expander("Instructions as annotators see them"):
    st.markdown(safe_markdown(current.instructions or "*(none)*"))

st.subheader("Downloads")
annotation_columns = st.columns(len(EXPORT_FORMATS))
for column, export_format in zip(annotation_columns, EXPORT_FORMATS, strict=True):
    column.download_button(
        f"Annotations ({export_format.upper()})",
        partial(_annotations_file, campaign.name, export_format),
        f"{campaign.name}-annotations.{export_format}",
        MEDIA_TYPES[export_format],
        key=f"dl_{export_format}",
        on_click="ignore",
    )
sft_column, report_column = st.columns(2)
if sft_column.button("Build critic training data (SFT)", key="build_sft"):
    try:
        st.session_state[SFT_KEY] = (campaign.id, _sft_file(campaign.name))
    except ValueError as error:
        sft_column.error(escape_markdown(str(error)))
if report_column.button("Build calibration report", key="build_report"):
    try:
        st.session_state[REPORT_KEY] = (campaign.id, _calibration_report(campaign))
    except ValueError as error:
        report_column.error(escape_markdown(str(error)))
built_sft = st.session_state.get(SFT_KEY)
if built_sft and built_sft[0] == campaign.id:
    sft_column.download_button(
        "Download SFT (JSONL)",
        built_sft[1].path.read_bytes,
        f"{campaign.name}-sft.jsonl",
        "application/jsonl",
        key="dl_sft",
        on_click="ignore",
    )
built_report = st.session_state.get(REPORT_KEY)
if built_report and built_report[0] == campaign.id:
    report_files: CampaignReportFiles = built_report[1]
    result = report_files.result
    report_column.caption(
        f"{result.reference.n_units} units with a reference, {result.reference.n_adjudicated} "
        "of them adjudicated by a reviewer."
    )
    report_column.download_button(
        "Calibration report (HTML)",
        report_files.html,
        f"{campaign.name}-calibration.html",
        "text/html",
        key="dl_report_html",
        on_click="ignore",
    )
    report_column.download_button(
        "Calibration metrics (JSON)",
        result.to_json(),
        f"{campaign.name}-calibration.json",
        "application/json",
        key="dl_report_json",
        on_click="ignore",
    )
