"""Calibration dashboard: judges against the humans, the human ceiling, where judges go wrong.

Pick a campaign, the judges and a grouping; filter by task and model; choose the human reference
and the annotators to leave out of it (held and retired ones are left out by themselves), and see
the Annotators table (the Monitor's renderer). The numbers are those of
``critiquelab calibrate --campaign`` (same library); both the HTML audit report and the JSON can
be downloaded. The campaign is read and calibrated in the calibration worker process
(:mod:`annotate_app.calibration_worker`): this process, whose threads also serve the annotators,
only receives the results, and a million-unit campaign's rows never enter it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

import streamlit as st

from annotate_app.annotator_views import render_annotators
from annotate_app.audit_views import render_audits
from annotate_app.auth import require_role
from annotate_app.calibration_worker import (
    CampaignOverview,
    CampaignScope,
    PageCalibration,
    campaign_overview,
    page_calibration,
)
from annotate_app.charts import (
    agreement_scatter,
    confusion_heatmap,
    group_bars,
    headline_chart,
    ordered_bars,
)
from annotate_app.compare_view import render_comparison
from annotate_app.db import get_engine
from annotate_app.disagreement_review import report_html
from annotate_app.disagreement_views import render_disagreement_causes
from annotate_app.pickers import pick_campaign
from annotate_app.render import compact_page_top, render_content, render_history
from annotate_app.text import escape_markdown
from calibration import CalibrationReport
from calibration.disagreement import disagreement_rule_text
from calibration.headline import (
    METRIC_TITLES,
    agreement_cells,
    group_rows,
    headline_metric,
    headline_rows,
)
from calibration.pairwise import UnparsedRule
from calibration.reference import reference_choices
from calibration.tables import (
    MODEL_SCORES_NOTE,
    ceiling_table,
    group_table,
    judge_table,
    metric_name,
    model_score_table,
    model_table,
    with_metric_names,
)
from data.readmodels.campaign_input import campaign_version
from data.readmodels.frames import unit_content
from data.services.admin_audit import record_export
from data.storage.engine import read_scope, session_scope
from schemas.core import stored_id
from schemas.ids import account_name
from schemas.protocols import Protocol

GROUPINGS = ("(none)", "task", "category", "model", "group")


@st.cache_data(show_spinner="Reading the campaign…", max_entries=16)
def _overview(scope: CampaignScope) -> CampaignOverview:
    """What the pickers offer; read by the calibration worker, cached on the campaign's
    version (:func:`data.readmodels.campaign_input.campaign_version`)."""
    return campaign_overview(scope)


@st.cache_data(show_spinner="Computing agreement and bootstrap intervals…", max_entries=16)
def _report(
    scope: CampaignScope,
    judges: tuple[str, ...],
    by: tuple[str, ...],
    unparsed: str,
    bootstrap: int,
    seed: int,
    reference: str | None = None,
    exclude: tuple[str, ...] = (),
    baselines: bool = False,
) -> PageCalibration:
    """The campaign's calibration, computed by the calibration worker (the campaign's rows never
    enter this process, whose threads serve the annotators' submits), cached on the campaign's
    version, its filters and the options."""
    return page_calibration(
        scope,
        judges=judges,
        by=by,
        unparsed=unparsed,
        bootstrap=bootstrap,
        seed=seed,
        consensus=reference,
        exclude_annotators=exclude,
        baselines=baselines,
    )


def _headline(report: CalibrationReport, protocol: Protocol, grouping: str | None) -> None:
    """First on the page: the headline metric per judge beside the human ceiling, then each
    judge against the reference, then the metric per group. Every chart is built from the
    result's small tables, never from the campaign's rows."""
    result = report.result
    metric = headline_metric(result)
    st.subheader("Judges beside the human ceiling")
    st.altair_chart(
        headline_chart(headline_rows(result), title=METRIC_TITLES[metric]), width="stretch"
    )
    st.caption(
        f"Dot and bar: {METRIC_TITLES[metric]} of the judge against the reference, with its "
        "95% interval. "
        "Tick: the human ceiling, the same metric for one annotator against the consensus of "
        "the others on the units the judge scored (mean over annotators)."
    )
    judges = list(report.details)
    for start in range(0, len(judges), 3):
        for column, judge in zip(st.columns(3), judges[start : start + 3], strict=False):
            details = report.details[judge]
            cells = agreement_cells(details.confusion)
            with column:
                if cells is None:
                    chart = confusion_heatmap(details.confusion, judge=judge)
                else:
                    low, high = protocol.bounds
                    chart = agreement_scatter(cells, low=low, high=high, judge=judge)
                st.altair_chart(chart, width="stretch")
    st.caption(
        "Each judge against the reference: dot area = units; on the dashed diagonal the judge "
        "agrees with the humans."
        if protocol.is_pointwise
        else "Each judge against the reference: verdicts per (reference, verdict). A pair "
        "judged in both orders gives two verdicts (one per order), so a cell counts verdicts, "
        "not units."
    )
    if grouping:
        rows = group_rows(result, grouping)
        if rows:
            title = f"{METRIC_TITLES[metric]}, by {grouping}"
            st.altair_chart(group_bars(rows, title=title, field=grouping), width="stretch")


def _audited(
    make: Callable[[], str | bytes], user_id: int, campaign: str, export_format: str = "html"
) -> str | bytes:
    """A download's file, with its ``export.calibration`` event in the audit trail."""
    made = make()
    record_export(
        get_engine(), user_id, "calibration", source=campaign, export_format=export_format
    )
    return made


def _dashboard() -> None:
    """The page: require a reviewer or admin, then pick, compute and show."""
    user = require_role("admin", "reviewer")
    engine = get_engine()
    compact_page_top()
    st.title("Calibration")
    picker_row = st.columns([2, 3, 1.2])
    campaign = pick_campaign(
        engine,
        key="cal_campaign",
        where=picker_row[0],
        describe=lambda c: f"{c.name} ({c.protocol})",
        none_yet="There is no campaign yet. Create one on the Campaigns page.",
    )
    campaign_id = stored_id(campaign)
    with read_scope(engine) as session:
        version = campaign_version(session, campaign_id)
    scope = CampaignScope(engine.url.render_as_string(hide_password=False), campaign_id, version)
    overview = _overview(scope)
    protocol, available = overview.protocol, overview.judges
    if not overview.rows:
        st.info("This campaign has no judgements yet, human or model.")
        st.stop()

    tasks, models = overview.tasks, overview.models
    # The judges and the grouping stay in view; the rarer choices fold into one expander, so
    # that the headline chart starts in the first screen (it started at y = 536 of 720).
    judges_column, group_column = picker_row[1], picker_row[2]
    judges = judges_column.multiselect("Judges", available, default=available)
    # by task unless there are no tasks: the per-task bars under the headline chart need it
    grouping = group_column.selectbox(
        "Group by", GROUPINGS, index=GROUPINGS.index("task") if tasks else 0
    )
    references = reference_choices(protocol)
    automatic = overview.standing_exclusions
    with st.expander("Filters, reference and bootstrap"):
        left, middle, right = st.columns(3)
        chosen_tasks = left.multiselect("Tasks", tasks, default=tasks)
        chosen_models = middle.multiselect("Models", models, default=models)
        bootstrap = right.number_input("Bootstrap resamples", 0, 5000, 1000, step=100)
        baselines = right.checkbox(
            "Shortcut baseline",
            key="cal_baselines",
            help="Add the judge 'baseline:shortcut': no language model, only the responses' "
            "lengths, list items and models, fitted to the reference over item folds "
            "(METRICS.md). A judge worth its cost beats it. As calibrate --baselines; fitting it "
            "takes a few seconds.",
        )
        left, middle, right = st.columns(3)
        reference_rule = left.selectbox(
            "Human reference",
            references,
            help="How the humans' labels of a unit become its reference (adjudications win): "
            "the plain rule, or a latent-class model that weighs each annotator by competence "
            "(dawid-skene for preferences, mace for scores on a scale with points; METRICS.md).",
        )
        listed = middle.multiselect(
            "Leave out of the reference",
            [name for name in overview.annotators if name not in automatic],
            format_func=account_name,
            key="cal_exclude",
            help="As calibrate --exclude-annotator: these annotators leave the reference and the "
            "human ceiling, and keep their row in the Annotators table, marked excluded.",
        )
        unparsed: UnparsedRule = right.selectbox(
            "Unparsed judge outputs",
            ("wrong", "tie", "drop"),
            disabled=protocol.is_pointwise,
            help="Pairwise only: count an unparsed verdict as wrong, as a tie, or leave it out.",
        )
    scope = replace(
        scope,
        tasks=tuple(chosen_tasks) if tasks and chosen_tasks != tasks else None,
        models=tuple(chosen_models) if models and chosen_models != models else None,
    )
    by = () if grouping == "(none)" else (grouping,)
    report = _report(
        scope,
        tuple(judges),
        by,
        unparsed,
        int(bootstrap),
        0,
        reference_rule,
        tuple(listed),
        baselines,
    ).report
    if report is None:
        st.info("No unit matches these filters.")
        st.stop()
    result = report.result
    reference = result.reference
    if reference.n_units == 0:  # every figure below compares a judge with the humans' reference
        st.info(
            f"No unit has a human reference yet ({reference.n_units_without_reference} judged "
            "units without one): agreement, the human ceiling and the charts need human "
            "answers. Annotate some units, or import labels (critiquelab annotations import)."
        )
        st.stop()
    if judges:
        _headline(report, protocol, grouping if by else None)

    if automatic:  # outside the folded options: the reference is not what was picked alone
        st.caption(
            "Left out of the reference by themselves (their standing in the campaign): "
            + ", ".join(
                f"{escape_markdown(account_name(name))} ({why})" for name, why in automatic.items()
            )
            + "."
        )
    st.caption(
        f"Reference: {reference.consensus} of the humans, adjudicated label where one exists "
        f"({reference.n_adjudicated}); {reference.n_units} units with a reference, "
        f"{reference.n_units_without_reference} without; answers a reviewer rejected, left "
        f"out: {reference.rejected_answers or 0}. "
        "95% intervals: bootstrap over units, "
        f"B = {result.options.bootstrap}, seed {result.options.seed}. Weights in the reference: "
        + (
            ", ".join(
                f"{escape_markdown(name)} {'n/a' if weight is None else f'{weight:.2f}'}"
                for name, weight in reference.weights.items()
            )
            or "none"
        )
        + "."
    )
    download_html, download_json = st.columns(2)
    download_html.download_button(
        "Download the HTML report",
        partial(  # rendered only when clicked, and audited then
            _audited, partial(report_html, report, engine, campaign_id), user.id, campaign.name
        ),
        file_name=f"calibration-{campaign.name}.html",
        mime="text/html",
        on_click="ignore",
    )
    download_json.download_button(
        "Download the JSON",
        # the JSON of critiquelab calibrate --json, made only when clicked, and audited then
        partial(_audited, result.to_json, user.id, campaign.name, "json"),
        file_name=f"calibration-{campaign.name}.json",
        mime="application/json",
        on_click="ignore",
    )

    st.subheader("Judges against the reference")
    if judges:
        st.dataframe(with_metric_names(judge_table(result)))
    else:
        st.info("No judge selected (or none has scored this campaign): only the humans are shown.")

    st.subheader("The human ceiling")
    human = result.human
    st.write(
        f"{human.n_annotators} annotators, {human.n_units} units. "
        + ", ".join(
            f"{metric_name(k)} = {v.value:.3f}"
            if v.value is not None
            else f"{metric_name(k)} = n/a"
            for k, v in human.alphas.items()
        )
    )
    for judge in judges:
        table = ceiling_table(result, judge)
        if not table.empty:
            st.markdown(
                f"**{escape_markdown(judge)}** against one more human (degradation = judge − "
                "human: for an error, such as the mean absolute error, below 0 is the judge "
                "erring less; for an agreement, such as Pearson r, below 0 is it agreeing less)"
            )
            st.dataframe(with_metric_names(table, axis="index"))

    render_annotators(
        result.annotators,
        pairwise=result.pairwise,
        reasons=reference.exclusion_reasons,
    )

    if by:
        st.subheader(f"By {grouping}")
        for judge in judges:
            st.markdown(f"**{escape_markdown(judge)}**")
            st.dataframe(with_metric_names(group_table(result, judge, grouping)))

    if result.models:
        st.subheader("Models")
        if protocol.name == "mmie":  # as MMIE's leaderboard shows them, not on the points scale
            st.caption(f"MMIE values are percent: mean points / {protocol.scale_max:g} × 100.")
        st.dataframe(model_table(result))

    # Model scores (issue 27): judge-only, humans-only and PPI++ per judge and model
    if result.model_estimates and result.model_estimates.estimates:
        st.subheader("Model scores")
        note = MODEL_SCORES_NOTE.format(sample=result.model_estimates.sample)
        if protocol.name == "mmie":
            note += f" MMIE values are percent: mean points / {protocol.scale_max:g} × 100."
        st.caption(note)
        st.dataframe(model_score_table(result), hide_index=True)

    render_comparison(
        scope, result.human.n_annotators, judges, unparsed=unparsed, bootstrap=int(bootstrap)
    )
    render_audits(engine, campaign, scope, protocol, judges, bootstrap=int(bootstrap))
    render_disagreement_causes(engine, campaign)

    for judge in judges:
        details = report.details[judge]
        block = result.judges[judge]
        st.subheader(f"Judge: {escape_markdown(judge)}")
        status = ", ".join(f"{k}: {v}" for k, v in block.parse_status.items())
        coverage = "n/a" if block.coverage is None else f"{block.coverage:.3f}"
        st.write(f"Parse coverage {coverage} ({escape_markdown(status)})")
        shares = details.distribution / details.distribution.sum().replace(0, 1)
        st.markdown("Distribution of values (share), judge beside the humans")
        st.altair_chart(ordered_bars(shares, x_title="value", y_title="share"), width="stretch")
        st.markdown("Confusion: reference (rows) × judge (columns)")
        st.dataframe(details.confusion)
        if not details.bias.empty:
            st.markdown("Bias by reference score: mean judge − reference")
            bias = details.bias[["mean_bias"]].rename(columns={"mean_bias": "judge − reference"})
            chart = ordered_bars(bias, x_title="reference score", y_title="mean judge − reference")
            st.altair_chart(chart, width="stretch")
        if details.disagreements.empty:
            continue
        rule = disagreement_rule_text(judge, details.disagreement_threshold)
        st.markdown(
            escape_markdown(
                f"Largest disagreements ({len(details.disagreements)} of "
                f"{details.disagreement_count}, where {rule}): select a row to see the item and "
                "every rationale"
            )
        )
        shown = details.disagreements[
            ["item_id", "unit", "task", "model", "judge", "reference", "gap"]
        ]
        event = st.dataframe(
            shown, on_select="rerun", selection_mode="single-row", key=f"disagreements-{judge}"
        )
        rows = event.selection.rows if event is not None else []
        if rows:
            chosen = details.disagreements.iloc[rows[0]]
            with session_scope(engine) as session:
                content = unit_content(session, campaign_id, chosen["unit"])
            with st.container(border=True):
                st.markdown(f"**Item {escape_markdown(content.item.item_id)}**")
                render_history(content.item.history)
                render_content(content.item.question)
                if content.item.reference is not None:
                    st.markdown("**Reference answer**")
                    render_content(content.item.reference)
                for label, response in zip("AB", content.responses, strict=False):
                    title = f"Response {label}" if len(content.responses) > 1 else "Response"
                    st.markdown(f"**{title}** ({escape_markdown(response.model)})")
                    render_content(response.content)
                st.markdown(
                    f"**Human rationales** (reference {escape_markdown(chosen['reference'])})"
                )
                for rater, value, text in chosen["human_rationales"]:
                    st.markdown(f"*{escape_markdown(rater)}* gave {escape_markdown(value)}")
                    st.text(text)
                st.markdown(f"**{escape_markdown(judge)}** gave {escape_markdown(chosen['judge'])}")
                for order, value, text in chosen["judge_rationales"]:
                    st.markdown(f"shown {escape_markdown(order)}: {escape_markdown(value)}")
                    st.text(text)


_dashboard()
